"""The quick bench behind ``hybrid-rag bench``, and what the benchmark suite shares with it.

* :func:`run_quick_bench`: a small synthetic corpus with a tiny judged query set, ingested into a
  throwaway folder and queried in every mode, in seconds; CI runs it as a smoke test.
* Synthetic text with realistic token statistics: a Zipfian vocabulary (exponent ~1, as in
  English) whose most frequent ranks are English stop words, so that about half of all tokens
  are stop words, as in prose. The scale study (``benchmarks/studies/scale.py``) uses them too.
* :func:`machine_info` and :func:`git_info`: what every benchmark result records.

>>> vocab = build_vocabulary(1000)
>>> text = render_words(vocab, sample_word_ids(zipf_cdf(len(vocab)), 20, np.random.default_rng(0)))
>>> len(text.split())
20
"""

from __future__ import annotations

import os
import platform
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import InputError
from hybrid_rag.evaluation.metrics import BeirDataset
from hybrid_rag.settings import Settings

ZIPF_EXPONENT = 1.0  # English word frequencies (Zipf 1949; Piantadosi 2014 reviews the fits)
LINE_WORDS = 12  # words a line of synthetic text: the chunker cuts on whole lines
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st", "tr", "pl")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")  # consonant onsets, vowel nuclei: one way to read a word
QUICK_MODES = ("bm25", "dense", "hybrid")


# -- synthetic text ------------------------------------------------------------------------------


def made_up_word(index: int) -> str:
    """A pronounceable word, unique per ``index``, longer for larger indices (rarer words are longer)."""
    if index < 0:
        raise ValueError(f"index must be >= 0, got {index}")
    syllables = []
    n = index
    while True:  # bijective numeration in base len(_ONSETS) * len(_VOWELS): one word per index
        n, onset = divmod(n, len(_ONSETS))
        n, vowel = divmod(n, len(_VOWELS))
        syllables.append(_ONSETS[onset] + _VOWELS[vowel])
        if n == 0:
            break
        n -= 1
    return "".join(syllables)


def build_vocabulary(
    size: int, *, real_words: Sequence[str] = (), stop_words: Sequence[str] | None = None
) -> list[str]:
    """``size`` distinct lowercase words ranked by frequency: stop words, then the alphabetic
    ``real_words`` in the order given (a model's word-piece vocabulary lists frequent words
    first), then made-up words."""
    if size <= 0:
        raise ValueError(f"vocabulary size must be positive, got {size}")
    if stop_words is None:
        from hybrid_rag.lang.tokenize import spacy_english_stop_words

        stop_words = sorted(spacy_english_stop_words(), key=lambda w: (len(w), w))
    words: list[str] = []
    seen: set[str] = set()
    for word in [*stop_words, *real_words]:
        if word not in seen and word.isalpha():
            seen.add(word)
            words.append(word)
    index = 0
    while len(words) < size:
        word = made_up_word(index)
        index += 1
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words[:size]


def zipf_cdf(size: int, exponent: float = ZIPF_EXPONENT) -> np.ndarray:
    """Cumulative probabilities of ranks 1..size under Zipf's law p(r) ∝ r^-exponent."""
    weights = np.arange(1, size + 1, dtype=np.float64) ** -float(exponent)
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


def sample_word_ids(cdf: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` word ranks (0-based) drawn from the distribution ``cdf``."""
    ids = np.searchsorted(cdf, rng.random(n), side="right")
    return np.minimum(ids, len(cdf) - 1).astype(np.int32)


def render_words(vocab: Sequence[str], ids: Sequence[int], line_words: int = LINE_WORDS) -> str:
    """Words joined by spaces, ``line_words`` to a line."""
    words = [vocab[i] for i in ids]
    return "\n".join(" ".join(words[i : i + line_words]) for i in range(0, len(words), line_words))


def lucene_bm25_csc(
    blocks: Iterable[tuple[np.ndarray, np.ndarray]], k1: float = 1.5, b: float = 0.75
) -> tuple[dict[str, Any], np.ndarray]:
    """The score matrix bm25s precomputes for ``method="lucene"``, built with numpy in blocks.

    Each block is (the term ids of its documents, concatenated; each document's length), documents
    numbered in block order. Returns bm25s's ``scores`` mapping (CSC: ``data``, ``indices``,
    ``indptr``, ``num_docs``) over the terms that occur, and those terms' ids in column order.
    For corpora too large to index through Python lists of tokens (1M chunks x 600 tokens).
    """
    docs, terms, tfs, lengths = [], [], [], []
    start = 0
    for term_ids, doc_lengths in blocks:
        term_ids = np.asarray(term_ids, dtype=np.int64)
        doc_lengths = np.asarray(doc_lengths, dtype=np.int64)
        owner = np.repeat(np.arange(len(doc_lengths), dtype=np.int64), doc_lengths)
        width = int(term_ids.max(initial=0)) + 1
        pairs, counts = np.unique(owner * width + term_ids, return_counts=True)
        docs.append((pairs // width + start).astype(np.int32))
        terms.append((pairs % width).astype(np.int32))
        tfs.append(counts.astype(np.float32))
        lengths.append(doc_lengths)
        start += len(doc_lengths)
    doc = np.concatenate(docs) if docs else np.zeros(0, dtype=np.int32)
    term = np.concatenate(terms) if terms else np.zeros(0, dtype=np.int32)
    tf = np.concatenate(tfs) if tfs else np.zeros(0, dtype=np.float32)
    doc_len = np.concatenate(lengths).astype(np.float32) if lengths else np.zeros(0, dtype=np.float32)
    del docs, terms, tfs
    df = np.bincount(term, minlength=1)
    present = np.flatnonzero(df)
    column = np.cumsum(df > 0) - 1
    idf = np.log(1.0 + (start - df + 0.5) / (df + 0.5)).astype(np.float32)
    avg_len = float(doc_len.mean()) if start else 1.0
    data = (
        idf[term] * tf / (tf + np.float32(k1) * (np.float32(1 - b) + np.float32(b) * doc_len[doc] / avg_len))
    )
    del tf
    order = np.argsort(column[term], kind="stable")  # by term, each term's documents in order
    scores = {
        "data": data[order].astype(np.float32),
        "indices": doc[order].astype(np.int32),
        "indptr": np.concatenate([[0], np.cumsum(df[present])]).astype(
            np.int32 if len(doc) < 2**31 else np.int64
        ),
        "num_docs": start,
    }
    return scores, present


# -- machine and repository ------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# the widest vector instructions a CPU offers, as /proc/cpuinfo names them: they set what one
# core's matrix products reach (two cores with AVX-512 embedded Django twice as fast as two with
# AVX2 only: RESULTS.md#cpu-vector-width)
_SIMD = (
    ("amx_int8", "AMX"),
    ("avx512_vnni", "AVX-512 VNNI"),
    ("avx512f", "AVX-512"),
    ("avx_vnni", "AVX-VNNI"),
    ("avx2", "AVX2"),
)


def cpu_simd(flags: set[str] | None = None) -> str | None:
    """The widest of AMX, AVX-512 VNNI, AVX-512, AVX-VNNI and AVX2 that the CPU offers (``flags``:
    /proc/cpuinfo's when None); None where none of them is there or the file cannot be read."""
    if flags is None:
        try:
            flags = next(
                (
                    set(line.split(":", 1)[1].split())
                    for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("flags")
                ),
                set(),
            )
        except OSError:
            return None
    return next((name for flag, name in _SIMD if flag in flags), None)


def _ram_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _version(module: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    """Cores, CPU model and vector width, RAM, load average and library versions: the context of a
    measurement."""
    libraries = ("numpy", "faiss-cpu", "bm25s", "rank-bm25", "torch", "sentence-transformers", "ranx")
    return {
        "cores": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "cpu_simd": cpu_simd(),
        "ram_bytes": _ram_bytes(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "libraries": {name: _version(name) for name in libraries},
    }


def git_info(root: Path) -> dict[str, Any]:
    """The commit checked out at ``root`` and whether the tree has uncommitted changes (read-only)."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "dirty": None if status is None else bool(status)}


# -- the quick bench -------------------------------------------------------------------------------


def quick_dataset(docs: int = 30, queries: int = 15, seed: int = 0) -> BeirDataset:
    """A judged set that a working engine answers well: each judged document carries three topic
    words that no other document has, among Zipfian filler of 150-1500 words (so some documents
    are several chunks); its query is two of them in a question, and it is the one relevant answer."""
    if not 0 < queries <= docs:
        raise InputError(f"the quick bench needs 0 < queries <= docs, got {queries} queries for {docs} docs")
    from hybrid_rag.lang.tokenize import spacy_english_stop_words

    rng = np.random.default_rng(seed)
    vocab = build_vocabulary(20_000)
    cdf = zipf_cdf(len(vocab))
    stop = spacy_english_stop_words()
    topics = [made_up_word(100_000 + 3 * i + j) for i in range(docs) for j in range(3)]
    corpus: dict[str, tuple[str, str]] = {}
    query_texts: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for i in range(docs):
        words = [vocab[w] for w in sample_word_ids(cdf, int(rng.integers(150, 1500)), rng)]
        mine = topics[3 * i : 3 * i + 3]
        for position in rng.choice(len(words), size=6, replace=False):
            words[int(position)] = mine[int(position) % 3]
        for start in range(0, len(words), LINE_WORDS):  # a line of stop words only is not searchable,
            if all(w in stop for w in words[start : start + LINE_WORDS]):  # and a chunk may start with it
                words[start] = vocab[len(stop) + start % 100]
        doc_id = f"d{i:03d}"
        corpus[doc_id] = (f"note {mine[0]}", render_words(words, range(len(words))))
        if i < queries:
            query_texts[f"q{i:03d}"] = f"what is known about {mine[0]} and {mine[1]}?"
            qrels[f"q{i:03d}"] = {doc_id: 1}
    return BeirDataset("quick-bench", corpus, query_texts, qrels)


def run_quick_bench(
    settings: Settings, *, docs: int = 30, queries: int = 15, seed: int = 0
) -> dict[str, Any]:
    """Ingest :func:`quick_dataset` into a throwaway folder and evaluate bm25, dense and hybrid.

    The embedder is the one ``settings.embedding.model`` names (``fake`` for the hash embedder).
    ``result["ok"]`` is False when a check fails: every mode must answer every query, every metric
    must lie in [0, 1], and BM25 must find the planted documents (nDCG@10 >= 0.9).
    """
    from hybrid_rag.evaluation.experiment import run_experiment
    from hybrid_rag.models.factory import make_embedder

    start = time.perf_counter()
    dataset = quick_dataset(docs, queries, seed)
    embedder = make_embedder(settings.embedding)
    with tempfile.TemporaryDirectory(prefix="hybrid-rag-bench-") as tmp:
        results = run_experiment(
            dataset, settings, modes=QUICK_MODES, work_dir=Path(tmp), embedder=embedder, warmup=2
        )
    modes: dict[str, Any] = {}
    checks: list[dict[str, Any]] = []
    for r in results:
        answered = sum(1 for run in r.run.values() if run)
        modes[r.mode] = {
            "metrics": {k: round(v, 4) for k, v in r.report.means.items()},
            "latency_ms": {s: {k: round(v, 3) for k, v in p.items()} for s, p in r.latency_ms.items()},
            "answered": answered,
            "notes": list(r.notes),
        }
        checks.append(
            _check(f"{r.mode}: every query answered", answered == r.queries, f"{answered}/{r.queries}")
        )
        in_range = all(0.0 <= v <= 1.0 for v in r.report.means.values())
        checks.append(_check(f"{r.mode}: metrics in [0, 1]", in_range, ""))
    bm25 = modes.get("bm25", {}).get("metrics", {}).get("ndcg@10", 0.0)
    checks.append(_check("bm25 finds the planted documents", bm25 >= 0.9, f"nDCG@10 {bm25:.3f} (>= 0.9)"))
    return {
        "kind": "quick-bench",
        "ok": all(c["ok"] for c in checks),
        "checks": checks,
        "notes": [n for n in [fusion_shortfall(modes)] if n],
        "corpus": {
            "docs": len(dataset.corpus),
            "queries": len(dataset.queries),
            "chunks": results[0].chunks,
        },
        "embedder": embedder.model_name,
        "ingest_seconds": round(results[0].ingest_seconds, 3),
        "seconds": round(time.perf_counter() - start, 3),
        "modes": modes,
        "machine": machine_info(),
    }


def _check(name: str, ok: bool, detail: str) -> dict[str, Any]:
    return {"name": name, "ok": bool(ok), "detail": detail}


def fusion_shortfall(
    modes: Mapping[str, Any], *, fused: str = "hybrid", stages: Sequence[str] = ("bm25", "dense")
) -> str | None:
    """A line saying that ``fused``'s nDCG@10 is below its best single stage's, which stage, by
    how much, and why that is a trade-off rather than a fault; None when it is not below (or a
    mode is missing). See docs/retrieval.md, "When fusion falls below its best stage".

    >>> modes = {m: {"metrics": {"ndcg@10": v}} for m, v in [("bm25", 1.0), ("dense", .46), ("hybrid", .942)]}
    >>> fusion_shortfall(modes).split("; ")[0]
    'note: hybrid nDCG@10 0.942 is 0.058 below bm25 alone (1.000)'
    """
    try:
        have = {m: float(modes[m]["metrics"]["ndcg@10"]) for m in (fused, *stages)}
    except (KeyError, TypeError, ValueError):
        return None
    best = max(stages, key=lambda m: (have[m], m == stages[0]))
    gap = have[best] - have[fused]
    if round(gap, 3) <= 0:
        return None
    weaker = ", ".join(f"{m} {have[m]:.3f}" for m in stages if m != best)
    return (
        f"note: {fused} nDCG@10 {have[fused]:.3f} is {gap:.3f} below {best} alone ({have[best]:.3f}); "
        f"fusion is a trade-off on this set: it weighs the weaker stage too ({weaker}), whose wrong "
        f"hits outrank some of {best}'s right ones; it can fall below its best stage where one stage "
        'is far weaker than the other (docs/retrieval.md, "When fusion falls below its best stage")'
    )


def format_quick_bench(result: Mapping[str, Any]) -> str:
    """The quick bench as a few lines of text: the corpus, a row per mode, a note when the fused
    mode is below its best stage (``fusion_shortfall``), the checks."""
    c = result["corpus"]
    lines = [
        f"quick bench: {c['docs']} docs, {c['chunks']} chunks, {c['queries']} judged queries, "
        f"embedder {result['embedder']}; ingest {result['ingest_seconds']:.2f} s, "
        f"total {result['seconds']:.2f} s",
        f"{'mode':8} {'nDCG@10':>8} {'MRR@10':>8} {'R@50':>8} {'p50 ms':>8} {'p95 ms':>8}",
    ]
    for mode, row in result["modes"].items():
        m, lat = row["metrics"], row["latency_ms"]["total"]
        lines.append(
            f"{mode:8} {m['ndcg@10']:8.3f} {m['mrr@10']:8.3f} {m['recall@50']:8.3f} "
            f"{lat['p50']:8.2f} {lat['p95']:8.2f}"
        )
    shortfall = fusion_shortfall(result["modes"])
    if shortfall:
        lines.append(shortfall)
    for check in result["checks"]:
        mark = "ok  " if check["ok"] else "FAIL"
        lines.append(f"{mark} {check['name']}" + (f" ({check['detail']})" if check["detail"] else ""))
    return "\n".join(lines)
