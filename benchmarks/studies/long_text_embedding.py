"""What embedding long passages as windows buys over truncating them, on Cranfield.

Passages are three consecutive Cranfield abstracts (docs 1-3, 4-6, ...), so the third one
mostly lies past all-MiniLM-L6-v2's 256 word pieces and truncation never sees it. For every
judged query, a *target* is a passage whose third abstract is relevant and whose first two are
not; passages with a relevant abstract only in first or second place are left out of that
query's ranking (they are neither fair negatives nor tail hits). Each target's rank among all
other passages gives MRR@10 and recall@10, for ``long_text: truncate`` and ``windows``.
A second table ranks all passages for all queries (a passage's grade is its best abstract's)
to check that windows do not cost anything on the heads.

    .venv/bin/python benchmarks/harness.py run long_text_embedding [--limit N]
    .venv/bin/python benchmarks/harness.py report long_text_embedding   # RESULTS.md#long-chunks's table
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.evaluation.metrics import BeirDataset, EvalReport, compare, evaluate, load_beir
from hybrid_rag.models.embedders import SentenceTransformerEmbedder
from hybrid_rag.settings import EmbeddingSettings
from hybrid_rag.tokens import count_tokens
from hybrid_rag.vectors import pool_windows

ROOT = Path(__file__).resolve().parents[2]
DATASET = Path(os.environ.get("HYBRID_RAG_DATASETS", ROOT.parent / "shared" / "datasets")) / "cranfield"
DOCS_PER_PASSAGE = 3
SEPARATOR = "\n\n"
TAIL_METRICS = ("mrr@10", "recall@10")
ALL_METRICS = ("ndcg@10", "mrr@10", "recall@10")


@dataclass(frozen=True)
class Passage:
    id: str
    doc_ids: tuple[str, ...]
    text: str


def build_passages(data: BeirDataset) -> list[Passage]:
    """Consecutive, non-overlapping groups of three abstracts in corpus order (the last may be short)."""
    doc_ids = sorted(data.corpus, key=int)
    groups = [tuple(doc_ids[i : i + DOCS_PER_PASSAGE]) for i in range(0, len(doc_ids), DOCS_PER_PASSAGE)]
    return [
        Passage(f"p{n}", group, SEPARATOR.join(data.corpus[d][1] for d in group))
        for n, group in enumerate(groups)
    ]


def tail_qrels(
    data: BeirDataset, passages: list[Passage]
) -> tuple[dict[str, dict[str, int]], dict[str, set[str]]]:
    """Per query: target passages (third abstract relevant, first two not) and passages to leave out."""
    targets: dict[str, dict[str, int]] = {}
    ignored: dict[str, set[str]] = {}
    for qid, relevant in data.qrels.items():
        for p in passages:
            head = [d for d in p.doc_ids[: DOCS_PER_PASSAGE - 1] if d in relevant]
            third = p.doc_ids[DOCS_PER_PASSAGE - 1] if len(p.doc_ids) == DOCS_PER_PASSAGE else None
            if third in relevant and not head:
                targets.setdefault(qid, {})[p.id] = 1
            elif head:
                ignored.setdefault(qid, set()).add(p.id)
    return targets, {q: ignored.get(q, set()) for q in targets}


def passage_qrels(data: BeirDataset, passages: list[Passage]) -> dict[str, dict[str, int]]:
    """Every query: a passage is as relevant as its best abstract."""
    out: dict[str, dict[str, int]] = {}
    for qid, relevant in data.qrels.items():
        for p in passages:
            grade = max((relevant.get(d, 0) for d in p.doc_ids), default=0)
            if grade > 0:
                out.setdefault(qid, {})[p.id] = grade
    return out


def dense_run(
    scores: np.ndarray,
    qids: list[str],
    passages: list[Passage],
    leave_out: dict[str, set[str]],
) -> dict[str, dict[str, float]]:
    """A run from a (query, passage) score matrix, leaving out each query's excluded passages."""
    return {
        qid: {
            p.id: float(s)
            for p, s in zip(passages, scores[i], strict=True)
            if p.id not in leave_out.get(qid, ())
        }
        for i, qid in enumerate(qids)
    }


def pooled_scores(queries: np.ndarray, windows: list[np.ndarray]) -> np.ndarray:
    """One vector per passage, the normalised mean of its windows (``dense_scoring: pooled``)."""
    return queries @ np.vstack([pool_windows(w) for w in windows]).T


def maxp_scores(queries: np.ndarray, windows: list[np.ndarray]) -> np.ndarray:
    """A passage scores as its best window (``dense_scoring: maxp``)."""
    return np.stack([(queries @ w.T).max(axis=1) for w in windows], axis=1)


def embed_interleaved(
    modes: dict[str, SentenceTransformerEmbedder], texts: list[str], block: int = 32
) -> dict[str, tuple[np.ndarray, float, float]]:
    """Window vectors, wall seconds and CPU seconds per mode, embedding block by block in alternating
    order, so that load from other processes on a shared machine falls on both modes alike."""
    parts: dict[str, list[np.ndarray]] = {name: [] for name in modes}
    wall = dict.fromkeys(modes, 0.0)
    cpu = dict.fromkeys(modes, 0.0)
    for n, start in enumerate(range(0, len(texts), block)):
        names = list(modes) if n % 2 == 0 else list(reversed(modes))
        for name in names:
            w, c = time.perf_counter(), time.process_time()
            parts[name].extend(modes[name].embed_passage_windows(texts[start : start + block]))
            wall[name] += time.perf_counter() - w
            cpu[name] += time.process_time() - c
    return {name: (parts[name], wall[name], cpu[name]) for name in modes}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--limit", type=int, default=0, help="only the first N passages (0: all)")


def run(args: argparse.Namespace) -> dict[str, Any]:

    data = load_beir(args.dataset)
    passages = build_passages(data)
    if args.limit:
        passages = passages[: args.limit]
    texts = [p.text for p in passages]
    modes = {
        "truncate": SentenceTransformerEmbedder(EmbeddingSettings(long_text="truncate")),
        "windows": SentenceTransformerEmbedder(EmbeddingSettings(long_text="windows")),
    }
    probe = modes["windows"]
    for embedder in modes.values():  # warm-up: load the model, first batches
        embedder.embed_passages(texts[:8])
    limit = probe.max_seq_length or 0
    budget = limit - probe.model.tokenizer.num_special_tokens_to_add(pair=False)

    tiktoken_lengths = [count_tokens(t) for t in texts]
    wordpieces = [probe.tokenizer_count(t) for t in texts]
    third_starts = [
        probe.tokenizer_count(SEPARATOR.join(data.corpus[d][1] for d in p.doc_ids[:2]) + SEPARATOR)
        for p in passages
        if len(p.doc_ids) == DOCS_PER_PASSAGE
    ]
    windows_per_passage = [len(probe.passage_windows([t])[0]) for t in texts]

    targets, leave_out = tail_qrels(data, passages)
    hidden = {
        p.id
        for p, start in zip((p for p in passages if len(p.doc_ids) == 3), third_starts, strict=True)
        if start >= budget
    }
    hidden_targets = {q: {p: g for p, g in t.items() if p in hidden} for q, t in targets.items()}
    hidden_targets = {q: t for q, t in hidden_targets.items() if t}
    all_qrels = passage_qrels(data, passages)

    qids = sorted(data.queries)
    query_vectors = probe.embed_queries([data.queries[q] for q in qids])
    results: dict[str, dict[str, object]] = {}
    reports: dict[str, dict[str, EvalReport]] = {}
    embedded = embed_interleaved(modes, texts)
    variants = {  # result name -> (embedding mode, scoring)
        "truncate": ("truncate", pooled_scores),
        "windows": ("windows", pooled_scores),
        "windows_maxp": ("windows", maxp_scores),
    }
    for name, (mode, scoring) in variants.items():
        windows, seconds, cpu_seconds = embedded[mode]
        scores = scoring(query_vectors, windows)
        tail_run = dense_run(scores, qids, passages, leave_out)
        all_run = dense_run(scores, qids, passages, {})
        reports[name] = {
            "tail": evaluate(tail_run, targets, TAIL_METRICS),
            "tail_hidden": evaluate(tail_run, hidden_targets, TAIL_METRICS),
            "all": evaluate(all_run, all_qrels, ALL_METRICS),
        }
        results[name] = {
            "embed_seconds": seconds,
            "embed_cpu_seconds": cpu_seconds,
            "ms_per_passage": 1000 * seconds / len(texts),
            "cpu_ms_per_passage": 1000 * cpu_seconds / len(texts),
            **{k: r.means for k, r in reports[name].items()},
        }
    significance = {
        k: {m: vars(c) for m, c in compare(reports["truncate"][k], reports["windows"][k]).items()}
        for k in ("tail", "tail_hidden", "all")
    }
    significance_maxp = {
        k: {m: vars(c) for m, c in compare(reports["windows"][k], reports["windows_maxp"][k]).items()}
        for k in ("tail", "tail_hidden", "all")
    }

    import torch

    payload = {
        "benchmark": "long_text_embedding",
        "dataset": str(args.dataset),
        "model": probe.model_id,
        "max_seq_length": limit,
        "window_budget_wordpieces": budget,
        "window_overlap_tokens": probe.settings.window_overlap_tokens,
        "batch_size": probe.settings.batch_size,
        "passages": len(passages),
        "docs_per_passage": DOCS_PER_PASSAGE,
        "passage_tiktoken": _summary(tiktoken_lengths),
        "passage_wordpieces": _summary(wordpieces),
        "third_doc_start_wordpiece": _summary(third_starts),
        "passages_past_limit": sum(w > budget for w in wordpieces),
        "windows_per_passage": _summary(windows_per_passage),
        "tail_queries": len(targets),
        "tail_targets": sum(len(t) for t in targets.values()),
        "tail_hidden_queries": len(hidden_targets),
        "all_queries": len(all_qrels),
        "results": results,
        "significance_truncate_vs_windows": significance,
        "significance_windows_vs_maxp": significance_maxp,
        "torch_threads": torch.get_num_threads(),
        "protocol": (
            "warm-up of 8 passages per mode, then one pass, modes interleaved in blocks of 32 passages "
            "(alternating order); wall and process CPU time; the machine may be shared with other jobs"
        ),
    }
    return payload


def _summary(values: list[int]) -> dict[str, float]:
    return {
        "min": min(values),
        "median": statistics.median(values),
        "mean": round(statistics.fmean(values), 1),
        "max": max(values),
    }


LABELS = {
    "truncate": "truncate",
    "windows": "windows, mean-pooled",
    "windows_maxp": "windows, MaxP (default)",
}
DEFAULT_MODE = "windows_maxp"


def render(payload: dict[str, Any]) -> str:
    """One row a passage embedding: tail and all-passage quality, CPU time a passage."""
    lines = [
        "| passage embedding | tail MRR@10 | tail R@10 | hidden-tail MRR@10 | all nDCG@10 | all MRR@10 "
        "| all R@10 | CPU ms / passage |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode, r in payload["results"].items():
        cells = [
            LABELS.get(mode, mode),
            *(f"{v:.3f}" for v in (r["tail"]["mrr@10"], r["tail"]["recall@10"], r["tail_hidden"]["mrr@10"])),
            *(f"{r['all'][m]:.3f}" for m in ALL_METRICS),
        ]
        if mode == DEFAULT_MODE:
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join([*cells, f"{r['cpu_ms_per_passage']:.0f}"]) + " |")
    return "\n".join(lines)
