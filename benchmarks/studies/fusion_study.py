"""Which rule should fuse the dense and BM25 lists by default? Evidence on both shared datasets.

Step 1 (slow, cached): per dataset, ingest with the default settings into
``benchmarks/work/fusion_study/<name>/`` and save, for every judged query, the dense and BM25
score of every chunk (chunk id, raw score; BM25 only where a query term occurs) and every
chunk's path and source type to ``runs.json`` there.
Step 2 (fast, pure): fuse the top-50 of each (the engine's ``dense_top_k`` / ``bm25_top_k``)
with every rule, map chunks to documents at their best rank, score with
``hybrid_rag.evaluation.evaluate``. The ``exact`` rules first give every candidate its own score
in both lists, as the engine does (``fusion.complete_runs``); the full score tables stand in for
the indices' ``score``. Rules are compared by their *worst-case margin*: the
smallest, over the two datasets and nDCG@10, MRR@10 and P@3, of the rule's figure minus that of
the better single retriever (by nDCG@10) on that dataset; nDCG@10 alone is shown beside it.
Overfitting checks: weight sweeps per family, leave-one-dataset-out tuning, split-half
cross-validation over queries, and ranx's paired tests of the chosen default (the randomisation
test's p moves in the third decimal from run to run: ranx does not honour its seed).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run fusion_study [--refresh]
    .venv/bin/python benchmarks/harness.py report fusion_study  # RESULTS.md#fusion-never-below-its-best-stage
    .venv/bin/python benchmarks/studies/fusion_study.py [FILE]      # every table of the study
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.engine import Engine
from hybrid_rag.errors import IndexMismatchError
from hybrid_rag.evaluation.experiment import ingest_dataset
from hybrid_rag.evaluation.metrics import BeirDataset, EvalReport, compare, evaluate, load_beir
from hybrid_rag.retrieval.fusion import (
    Fused,
    complete_runs,
    minmax_normalize,
    rank_order,
    reciprocal_rank_fusion,
    single_list,
    weighted_fusion,
    zscore_fusion,
    zscore_normalize,
)
from hybrid_rag.settings import Settings, load_settings
from hybrid_rag.types import Hit

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ("cranfield", "cosqa")
DATA = Path(os.environ.get("HYBRID_RAG_DATASETS", ROOT.parent / "shared" / "datasets"))
WORK = ROOT / "benchmarks" / "work" / "fusion_study"
OUT = ROOT / "benchmarks" / "results" / "fusion_study.json"
METRICS = ("ndcg@10", "mrr@10", "precision@3", "recall@50")
TOP_METRICS = METRICS[:3]  # the ranking criterion; recall@50 is set by the union of candidates
DEPTH = 50
WEIGHTS = (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
# the shipped default: exact scores, weights by source type (cosqa ingests as code, cranfield as
# text: experiment.looks_like_code); PREVIOUS is the rule it replaced
DEFAULT_FAMILY, DEFAULT_WEIGHTS = "zscore exact", {"text": 0.65, "code": 0.85}
DEFAULT_KEY = "o:default: zscore exact, text 0.65 / code 0.85"
PREVIOUS = "w:zscore@0.75"
INDEX_SECTIONS = ("chunking", "dedupe", "embedding", "bm25", "index")  # a change re-collects


class Runs(dict[str, list[Hit]]):
    """One query's top lists by name, with ``full``: every chunk's score in each list."""

    full: Mapping[str, Mapping[int, float]] = {}


Rule = Callable[[Runs], list[Fused]]


# -- step 1: collect the two lists per query ---------------------------------------------------


def collect(name: str, settings: Settings, refresh: bool) -> dict[str, Any]:
    """Dense and BM25 top-``COLLECT_DEPTH`` per judged query, cached as JSON beside the store
    (collected again when a setting that shapes the indices has changed since)."""
    cache = WORK / name / "runs.json"
    params = {k: getattr(settings, k).model_dump(mode="json") for k in INDEX_SECTIONS}
    if cache.is_file() and not refresh:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached.get("params") == params and "types" in cached:
            return cached
    dataset = load_beir(DATA / name)
    engine = Engine(settings.with_overrides({"paths.data_dir": str(WORK / name)}))
    try:
        ingest_dataset(engine, dataset)
        try:
            live = engine.indices.get()
        except IndexMismatchError:  # the kept work dir was indexed with older settings
            engine.rebuild()
            live = engine.indices.get()
        qids = list(dataset.qrels)
        vectors = engine.embedder.embed_queries([dataset.queries[q] for q in qids])
        n = engine.store.chunk_count()
        runs = {
            q: {
                "dense": [[h.id, round(h.score, 6)] for h in live.dense.search(v, n)],
                "bm25": [[h.id, round(h.score, 6)] for h in live.bm25.search(dataset.queries[q], n)],
            }
            for q, v in zip(qids, vectors, strict=True)
        }
        chunks = engine.store.chunks({i for r in runs.values() for hits in r.values() for i, _ in hits})
        out = {"chunks": n, "model": engine.embedder.model_name, "runs": runs, "params": params}
        out["paths"] = {str(i): c.path for i, c in chunks.items()}
        out["types"] = {str(i): c.source_type.value for i, c in chunks.items()}
    finally:
        engine.close()
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(out), encoding="utf-8")
    return out


def query_runs(raw: Mapping[str, Any], depth: int = DEPTH) -> dict[str, Runs]:
    out: dict[str, Runs] = {}
    for q, r in raw["runs"].items():
        lists = Runs({name: [Hit(int(i), float(s)) for i, s in hits[:depth]] for name, hits in r.items()})
        lists.full = {name: {int(i): float(s) for i, s in hits} for name, hits in r.items()}
        out[q] = lists
    return out


def exact(runs: Runs) -> dict[str, list[Hit]]:
    """``runs`` with every candidate at its own score in each list (a chunk BM25 did not match: 0)."""

    def scorer(name: str) -> Callable[[np.ndarray], np.ndarray]:
        table = runs.full[name]
        return lambda ids: np.array([table.get(int(i), 0.0) for i in ids])

    return complete_runs(runs, {name: scorer(name) for name in runs})


# -- rules that only the study needs (the shipped ones live in hybrid_rag.retrieval.fusion) ---


def _sum(
    runs: Runs, weights: Mapping[str, float], norm: Callable[[np.ndarray, str], np.ndarray], **kw: Any
) -> list[Fused]:
    """Weighted sum of normalised scores; ``absent``: "zero" or "min" (the list's lowest value)."""
    totals: dict[int, float] = {}
    seen: dict[int, int] = {}
    floors: dict[str, float] = {}
    tables: dict[str, dict[int, float]] = {}
    for name in sorted(runs):
        if runs[name]:
            values = norm(np.array([h.score for h in runs[name]]), name)
            tables[name] = {h.id: float(v) for h, v in zip(runs[name], values, strict=True)}
            floors[name] = float(values.min()) if kw.get("absent") == "min" else 0.0
    for i in {i for t in tables.values() for i in t}:
        totals[i] = sum(weights[n] * t.get(i, floors[n]) for n, t in tables.items())
        seen[i] = sum(i in t for t in tables.values())
    if kw.get("mnz"):
        totals = {i: s * seen[i] for i, s in totals.items()}
    return [Fused(i, s) for i, s in rank_order(totals)]


def dbsf(scores: np.ndarray, _name: str) -> np.ndarray:
    """Qdrant's distribution-based score fusion: (s - (mu - 3 sd)) / 6 sd, clipped to [0, 1]."""
    mu, sd = float(scores.mean()), float(scores.std())
    return np.ones_like(scores) if sd <= 1e-12 else np.clip((scores - mu + 3 * sd) / (6 * sd), 0, 1)


def theoretical_minmax(scores: np.ndarray, name: str) -> np.ndarray:
    """Bruch et al. (TOIS 2023) TMM: min is the scale's floor (cosine -1, BM25 0), max the list's."""
    low = -1.0 if name == "dense" else 0.0
    return (scores - low) / max(float(scores.max()) - low, 1e-12)


def top_z(hits: Sequence[Hit]) -> float:
    """How far the first hit stands out of its list, in standard deviations (a QPP signal)."""
    return float(zscore_normalize(np.array([h.score for h in hits]))[0]) if len(hits) > 1 else 1.0


def softmax_sharpness(hits: Sequence[Hit]) -> float:
    """1 - normalised entropy of softmax(z-scores): 1 = one hit takes all, 0 = flat."""
    if len(hits) < 2:
        return 1.0
    z = zscore_normalize(np.array([h.score for h in hits]))
    p = np.exp(z - z.max())
    p /= p.sum()
    return float(1 + (p * np.log(p + 1e-300)).sum() / np.log(len(hits)))


def overlap(runs: Runs, k: int = 10) -> float:
    a, b = ({h.id for h in runs[n][:k]} for n in ("dense", "bm25"))
    return len(a & b) / k


def inverse_square_rank(runs: Runs) -> list[Fused]:
    """ISR (Mourão et al. 2014): score(d) = sum over lists of 1 / rank(d)^2."""
    totals: dict[int, float] = {}
    for hits in runs.values():
        for rank, hit in enumerate(hits, start=1):
            totals[hit.id] = totals.get(hit.id, 0.0) + 1.0 / rank**2
    return [Fused(i, s) for i, s in rank_order(totals)]


def pair(w: float) -> dict[str, float]:
    return {"dense": w, "bm25": round(1 - w, 4)}


def adaptive(signal: Callable[[Sequence[Hit]], float], prior: float = 0.5) -> Rule:
    """zscore fusion, each list weighted by prior x its own confidence signal, per query."""

    def rule(runs: Runs) -> list[Fused]:
        raw = {n: pair(prior)[n] * max(signal(runs[n]), 1e-9) for n in ("dense", "bm25")}
        return zscore_fusion(runs, {n: v / sum(raw.values()) for n, v in raw.items()})

    return rule


def rrf_equal(k: int) -> Rule:
    return lambda runs: reciprocal_rank_fusion(runs, k=k)


def weighted_families() -> dict[str, Callable[[float], Rule]]:
    """Families with one free parameter, the dense weight w (BM25 gets 1 - w)."""
    return {
        "rrf k=60": lambda w: lambda r: reciprocal_rank_fusion(r, k=60, weights=pair(w)),
        "rrf k=20": lambda w: lambda r: reciprocal_rank_fusion(r, k=20, weights=pair(w)),
        "rrf k=5": lambda w: lambda r: reciprocal_rank_fusion(r, k=5, weights=pair(w)),
        "minmax": lambda w: lambda r: weighted_fusion(r, pair(w)),
        "zscore": lambda w: lambda r: zscore_fusion(r, pair(w)),
        "zscore exact": lambda w: lambda r: zscore_fusion(exact(r), pair(w)),
        "minmax exact": lambda w: lambda r: weighted_fusion(exact(r), pair(w)),
        "zscore absent=min": lambda w: (
            lambda r: _sum(r, pair(w), lambda s, n: zscore_normalize(s), absent="min")
        ),
        "dbsf": lambda w: lambda r: _sum(r, pair(w), dbsf),
        "tmm": lambda w: lambda r: _sum(r, pair(w), theoretical_minmax),
        "combmnz minmax": lambda w: lambda r: _sum(r, pair(w), lambda s, n: minmax_normalize(s), mnz=True),
    }


def other_rules() -> dict[str, Rule]:
    """Rules without a weight: rank-based, per-query adaptive, and RRF's k at equal weights."""
    rules: dict[str, Rule] = {f"rrf k={k} equal": rrf_equal(k) for k in (1, 5, 10, 20, 60, 100)}
    rules["isr (sum of 1/rank^2)"] = inverse_square_rank
    rules["adaptive: zscore x top-z"] = adaptive(top_z)
    rules["adaptive: zscore x sharpness"] = adaptive(softmax_sharpness)
    rules["adaptive: 0.75 prior x top-z"] = adaptive(top_z, prior=0.75)
    rules["adaptive: w_bm25 = overlap@10 / 2"] = lambda r: zscore_fusion(r, pair(1 - overlap(r) / 2))
    return rules


# -- step 2: evaluate -------------------------------------------------------------------------


def score(rule: Rule, runs: Mapping[str, Runs], dataset: BeirDataset, paths: Mapping[str, str]) -> EvalReport:
    """Fuse per query, collapse chunks to documents at their best rank, evaluate."""
    run: dict[str, dict[str, float]] = {}
    for qid, lists in runs.items():
        fused = rule(lists)
        docs: dict[str, float] = {}
        for rank, f in enumerate(fused):
            docs.setdefault(paths[str(f.id)], float(len(fused) - rank))
        run[qid] = docs
    return evaluate(run, dataset.qrels, METRICS)


def margins(row: Mapping[str, Mapping[str, float]], best: Mapping[str, float]) -> dict[str, float]:
    return {d: row[d]["ndcg@10"] - best[d] for d in best}


def split_half_cv(
    per_query: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]],
    best_name: Mapping[str, str],
    repeats: int = 200,
) -> dict[str, Any]:
    """Tune (family, w) on a random half of each dataset's queries by the study's criterion (worst
    margin over datasets and TOP_METRICS, then worst nDCG@10); report that pick's on the rest."""
    rng = np.random.default_rng(0)
    configs = sorted(c for c in per_query if c.startswith("w:"))
    qids = {d: sorted(per_query[configs[0]][d]["ndcg@10"]) for d in best_name}
    diffs = {  # config -> dataset -> (metric, query) array of rule minus best single
        c: {
            d: np.array(
                [
                    [per_query[c][d][m][q] - per_query["single:" + best_name[d]][d][m][q] for q in qids[d]]
                    for m in TOP_METRICS
                ]
            )
            for d in best_name
        }
        for c in [*configs, DEFAULT_KEY]
    }

    def criterion(c: str, halves: Mapping[str, np.ndarray]) -> tuple[float, float]:
        means = np.array([diffs[c][d][:, halves[d]].mean(axis=1) for d in best_name])  # (dataset, metric)
        return float(means.min()), float(means[:, 0].min())

    default = DEFAULT_KEY
    test_worst, test_ndcg, fixed_worst, fixed_ndcg, chosen = [], [], [], [], []
    for _ in range(repeats):
        perms = {d: rng.permutation(len(qids[d])) for d in best_name}
        tune = {d: perms[d][: len(qids[d]) // 2] for d in best_name}
        test = {d: perms[d][len(qids[d]) // 2 :] for d in best_name}
        pick = max(configs, key=lambda c: criterion(c, tune))
        chosen.append(pick)
        worst, ndcg = criterion(pick, test)
        test_worst.append(worst)
        test_ndcg.append(ndcg)
        worst, ndcg = criterion(default, test)  # the shipped default, untuned, on the same halves
        fixed_worst.append(worst)
        fixed_ndcg.append(ndcg)
    counts: dict[str, int] = {}
    for c in chosen:
        counts[c] = counts.get(c, 0) + 1
    w, n = np.array(test_worst), np.array(test_ndcg)
    return {
        "repeats": repeats,
        "test_worst_top_metrics_mean": float(w.mean()),
        "test_worst_top_metrics_p05": float(np.percentile(w, 5)),
        "test_worst_ndcg_mean": float(n.mean()),
        "test_worst_ndcg_p05": float(np.percentile(n, 5)),
        "share_test_worst_ndcg_below_0": float((n < 0).mean()),
        "chosen": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
        "default_worst_top_metrics_mean": float(np.mean(fixed_worst)),
        "default_worst_ndcg_mean": float(np.mean(fixed_ndcg)),
        "default_share_worst_ndcg_below_0": float((np.array(fixed_ndcg) < 0).mean()),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--refresh", action="store_true", help="re-collect the lists (re-ingest if needed)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    settings = load_settings(environ={})
    data = {n: load_beir(DATA / n) for n in DATASETS}
    raw = {n: collect(n, settings, args.refresh) for n in DATASETS}
    runs = {n: query_runs(raw[n]) for n in DATASETS}

    rows: dict[str, dict[str, dict[str, float]]] = {}
    per_query: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    reports: dict[str, dict[str, EvalReport]] = {}

    def add(key: str, rule: Rule, datasets: Sequence[str] = DATASETS, depth: int = DEPTH) -> None:
        for d in datasets:
            lists = runs[d] if depth == DEPTH else query_runs(raw[d], depth)
            rep = score(rule, lists, data[d], raw[d]["paths"])
            rows.setdefault(key, {})[d] = dict(rep.means)
            per_query.setdefault(key, {})[d] = {m: dict(rep.per_query[m]) for m in TOP_METRICS}
            reports.setdefault(key, {})[d] = rep

    for name in ("dense", "bm25"):
        add("single:" + name, lambda r, name=name: single_list(r[name], name))
    best_name = {d: max(("dense", "bm25"), key=lambda n: rows["single:" + n][d]["ndcg@10"]) for d in DATASETS}
    best = {d: rows["single:" + best_name[d]][d]["ndcg@10"] for d in DATASETS}
    families = weighted_families()
    for fam, make in families.items():
        for w in WEIGHTS:
            add(f"w:{fam}@{w}", make(w))
    for key, rule in other_rules().items():
        add("o:" + key, rule)
    # a setting per source type: cosqa ingests as code, cranfield as text (experiment.looks_like_code)
    types = {d: set(raw[d]["types"].values()) for d in DATASETS}
    assert types == {"cranfield": {"text"}, "cosqa": {"code"}}, types
    source_type = {"cranfield": "text", "cosqa": "code"}
    for d in DATASETS:
        add(
            "o:zscore per source type (text 0.5, code 0.75)",
            families["zscore"]({"text": 0.5, "code": 0.75}[source_type[d]]),
            datasets=[d],
        )
        w = DEFAULT_WEIGHTS[source_type[d]]
        add(DEFAULT_KEY, families[DEFAULT_FAMILY](w), datasets=[d])
        for depth in (20, 100):
            add(f"depth:{depth}", families[DEFAULT_FAMILY](w), datasets=[d], depth=depth)

    default_key = DEFAULT_KEY
    best_rows = {d: rows["single:" + best_name[d]][d] for d in DATASETS}
    table = sorted(
        (
            {
                "rule": k,
                "margins": margins(v, best),
                "worst_ndcg": min(margins(v, best).values()),
                "worst_top_metrics": min(v[d][m] - best_rows[d][m] for d in DATASETS for m in TOP_METRICS),
            }
            for k, v in rows.items()
            if not k.startswith(("single:", "depth:"))
        ),
        key=lambda row: (-row["worst_top_metrics"], -row["worst_ndcg"], row["rule"]),
    )
    safe = {
        fam: [w for w in WEIGHTS if min(margins(rows[f"w:{fam}@{w}"], best).values()) >= 0]
        for fam in families
    }
    lodo = {}
    for fam in families:
        for tune, test in (("cranfield", "cosqa"), ("cosqa", "cranfield")):
            w = max(WEIGHTS, key=lambda w: (rows[f"w:{fam}@{w}"][tune]["ndcg@10"], -abs(w - 0.5)))
            lodo.setdefault(fam, {})[f"tune {tune}"] = {
                "w": w,
                f"margin on {test}": margins(rows[f"w:{fam}@{w}"], best)[test],
            }
    candidates = [k for k in rows if not k.startswith(("single:", "depth:"))]
    best_rule = {d: max(candidates, key=lambda k: rows[k][d]["ndcg@10"]) for d in DATASETS}
    versus_best_rule = {}
    for d in DATASETS:
        res = compare(reports[best_rule[d]][d], reports[default_key][d], n_permutations=10_000)
        versus_best_rule[d] = {
            "best_rule": best_rule[d],
            **{m: {"delta": c.delta, "p": c.p_value, "significant": c.significant} for m, c in res.items()},
        }
    significance = {}
    for d in DATASETS:
        base = reports["single:" + best_name[d]][d]
        for key in (default_key, PREVIOUS, "w:zscore exact@0.75", "w:rrf k=60@0.5"):
            for test in ("student", "fisher"):
                res = compare(base, reports[key][d], test=test, n_permutations=10_000)
                significance.setdefault(d, {}).setdefault(key, {})[test] = {
                    m: {"delta": c.delta, "p": c.p_value, "significant": c.significant}
                    for m, c in res.items()
                }
    timing = fusion_latency(runs)
    return {
        "setup": {
            "depth": DEPTH,
            "model": raw[DATASETS[0]]["model"],
            "params": raw[DATASETS[0]]["params"],
            "datasets": {
                d: {"docs": len(data[d].corpus), "chunks": raw[d]["chunks"], "queries": len(runs[d])}
                for d in DATASETS
            },
            "best_single": best_name,
        },
        "default": {"rule": default_key, "metrics": rows[default_key]},
        "rows": rows,
        "ranking_by_worst_margin": table,
        "safe_weights": safe,
        "leave_one_dataset_out": lodo,
        "split_half_cv": split_half_cv(per_query, best_name),
        "significance_vs_best_single": significance,
        "default_vs_best_rule": versus_best_rule,
        "fusion_latency_us": timing,
    }


def fusion_latency(runs: Mapping[str, Mapping[str, Runs]]) -> dict[str, float]:
    """Mean microseconds per query to fuse two top-50 lists (provisional: the cores are shared)."""
    out = {}
    lists = [r for d in runs.values() for r in d.values()]
    for name, rule in (
        ("zscore", lambda r: zscore_fusion(r, pair(0.75))),
        ("zscore exact (table lookups)", lambda r: zscore_fusion(exact(r), pair(0.75))),
        ("rrf", lambda r: reciprocal_rank_fusion(r, weights=pair(0.5))),
    ):
        start = time.perf_counter()
        for r in lists:
            rule(r)
        out[name] = (time.perf_counter() - start) / len(lists) * 1e6
    return out


# -- markdown ---------------------------------------------------------------------------------

# RESULTS.md#fusion-never-below-its-best-stage:
# (label, row key, bold: "row" or the cell (dataset, "margin"), or None)
HEADLINE: tuple[tuple[str, str, Any], ...] = (
    ("dense alone", "single:dense", None),
    ("BM25 alone", "single:bm25", None),
    ("RRF k=60, equal weights", "w:rrf k=60@0.5", ("cosqa", "margin")),
    ("min-max, equal", "w:minmax@0.5", None),
    ("z-score, equal", "w:zscore@0.5", None),
    ("z-score 0.75 (previous default)", PREVIOUS, None),
    ("z-score exact 0.75", "w:zscore exact@0.75", None),
    ("z-score exact, text 0.65 / code 0.85 (default)", DEFAULT_KEY, "row"),
)
SHOWN = {"cranfield": METRICS, "cosqa": TOP_METRICS}  # cosqa's R@50 is 1.000 or nearly for every rule
HEADERS = {"ndcg@10": "nDCG@10", "mrr@10": "MRR@10", "precision@3": "P@3", "recall@50": "R@50"}


def render(result: Mapping[str, Any]) -> str:
    """The headline rules on both datasets: metrics and the margin over the better single retriever."""
    rows, setup = result["rows"], result["setup"]
    best = {d: rows["single:" + setup["best_single"][d]][d]["ndcg@10"] for d in DATASETS}
    header = []
    for d in DATASETS:
        names = [HEADERS[m] for m in SHOWN[d]]
        header += [f"{d} {names[0]}", *names[1:], "margin"]
    lines = ["| rule | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
    for label, key, bold in HEADLINE:
        cells = []
        for d in DATASETS:
            m = rows[key][d]
            margin = f"{m['ndcg@10'] - best[d]:+.3f}"
            cells += [f"{m[x]:.3f}" for x in SHOWN[d]]
            cells.append(f"**{margin}**" if bold == (d, "margin") else margin)
        if bold == "row":
            label, cells = f"**{label}**", [f"**{c}**" for c in cells]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def details(result: Mapping[str, Any], families: Sequence[str]) -> str:
    """Every table of the study: main rules, worst-case ranking, sweeps, checks, paired tests."""
    rows, setup = result["rows"], result["setup"]
    best = {d: rows["single:" + setup["best_single"][d]][d]["ndcg@10"] for d in DATASETS}
    lines = [
        f"# Fusion study: {setup['model']} + Faiss and BM25, top-{setup['depth']} of each; "
        + ", ".join(f"{d} {v['docs']} docs / {v['queries']} queries" for d, v in setup["datasets"].items()),
        "",
        "## Main rules (margin = nDCG@10 minus the better single retriever's)",
        "",
        "| rule | " + " | ".join(f"{d} nDCG@10 | MRR@10 | P@3 | R@50 | margin" for d in DATASETS) + " |",
        "|---" * (1 + 5 * len(DATASETS)) + "|",
    ]
    main_rows = [
        "single:dense",
        "single:bm25",
        "w:rrf k=60@0.5",
        "w:minmax@0.5",
        "w:zscore@0.5",
        "w:dbsf@0.5",
        "w:rrf k=60@0.75",
        "w:minmax@0.75",
        "w:zscore@0.8",
        PREVIOUS,
        "w:zscore exact@0.5",
        "w:zscore exact@0.75",
        "w:minmax exact@0.65",
        "o:zscore per source type (text 0.5, code 0.75)",
        result["default"]["rule"],
    ]
    for key in main_rows:
        cells = []
        for d in DATASETS:
            m = rows[key][d]
            cells += [f"{m[x]:.3f}" for x in METRICS] + [f"{m['ndcg@10'] - best[d]:+.3f}"]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## All rules by worst-case margin over nDCG@10, MRR@10 and P@3 on both datasets (top 20)",
        "",
        "| rule | "
        + " | ".join(f"{d} nDCG@10" for d in DATASETS)
        + " | worst nDCG@10 | worst of 3 metrics |",
        "|---|---|---|---|---|",
    ]
    for row in result["ranking_by_worst_margin"][:20]:
        m = row["margins"]
        lines.append(
            f"| {row['rule']} | "
            + " | ".join(f"{m[d]:+.3f}" for d in DATASETS)
            + f" | {row['worst_ndcg']:+.3f} | {row['worst_top_metrics']:+.3f} |"
        )
    lines += ["", "## Rules without a weight", "", "| rule | " + " | ".join(DATASETS) + " |", "|---|---|---|"]
    for key in (k for k in rows if k.startswith("o:")):
        lines.append(
            f"| {key[2:]} | "
            + " | ".join(f"{rows[key][d]['ndcg@10'] - best[d]:+.3f}" for d in DATASETS)
            + " |"
        )
    lines += [
        "",
        "## Sensitivity: margin (" + " / ".join(DATASETS) + ") by dense weight w (BM25 1 - w)",
        "",
        "| family | " + " | ".join(str(w) for w in WEIGHTS) + " | safe w |",
        "|---" * (len(WEIGHTS) + 2) + "|",
    ]
    for fam in families:
        cells = []
        for w in WEIGHTS:
            m = rows[f"w:{fam}@{w}"]
            cells.append("/".join(f"{m[d]['ndcg@10'] - best[d]:+.3f}" for d in DATASETS))
        safe = result["safe_weights"][fam]
        lines.append(f"| {fam} | " + " | ".join(cells) + f" | {', '.join(map(str, safe)) or 'none'} |")
    lines += [
        "",
        "## Leave one dataset out: w tuned on one, margin on the other",
        "",
        "| family | tuned on cranfield: w, cosqa margin | tuned on cosqa: w, cranfield margin |",
        "|---|---|---|",
    ]
    for fam, v in result["leave_one_dataset_out"].items():
        a, b = v["tune cranfield"], v["tune cosqa"]
        lines.append(
            f"| {fam} | {a['w']}, {a['margin on cosqa']:+.3f} | {b['w']}, {b['margin on cranfield']:+.3f} |"
        )
    cv = result["split_half_cv"]
    top = ", ".join(f"{k[2:]} x{v}" for k, v in list(cv["chosen"].items())[:5])
    lines += [
        "",
        f"## Split-half CV ({cv['repeats']} splits: pick (family, w) by the worst-case criterion on half "
        "the queries of each dataset, score the pick on the other half)",
        "",
        f"held-out worst margin over nDCG@10, MRR@10, P@3: mean {cv['test_worst_top_metrics_mean']:+.4f}, "
        f"5th percentile {cv['test_worst_top_metrics_p05']:+.4f}; held-out worst nDCG@10 margin: mean "
        f"{cv['test_worst_ndcg_mean']:+.4f}, 5th percentile {cv['test_worst_ndcg_p05']:+.4f}, below 0 in "
        f"{cv['share_test_worst_ndcg_below_0']:.0%} of splits; picked most often: {top}. "
        "The default (per source type, untuned) on the same held-out halves: worst of 3 "
        f"metrics {cv['default_worst_top_metrics_mean']:+.4f}, "
        f"worst nDCG@10 {cv['default_worst_ndcg_mean']:+.4f}, "
        f"below 0 in {cv['default_share_worst_ndcg_below_0']:.0%} (a minimum over noisy half-sample means "
        "is biased low).",
    ]
    lines += [
        "",
        "## Paired tests against the better single retriever (two-sided; p)",
        "",
        "| dataset | run | metric | delta | t-test p | randomisation p |",
        "|---|---|---|---|---|---|",
    ]
    for d, by_run in result["significance_vs_best_single"].items():
        for key, tests in by_run.items():
            for metric in METRICS:
                t, f = tests["student"][metric], tests["fisher"][metric]
                lines.append(
                    f"| {d} (vs {setup['best_single'][d]}) | {key} | {metric} | {t['delta']:+.3f} | "
                    f"{t['p']:.3g} | {f['p']:.3g} |"
                )
    lines += [
        "",
        "## Depth of each list for the default (margin)",
        "",
        "| depth | " + " | ".join(DATASETS) + " |",
        "|---|---|---|",
    ]
    for depth, key in ((20, "depth:20"), (DEPTH, result["default"]["rule"]), (100, "depth:100")):
        lines.append(
            f"| {depth} | " + " | ".join(f"{rows[key][d]['ndcg@10'] - best[d]:+.3f}" for d in DATASETS) + " |"
        )
    lines += [
        "",
        "## The default against the best rule on each dataset (two-sided paired t-test)",
        "",
        "| dataset | best rule | metric | default minus best | p |",
        "|---|---|---|---|---|",
    ]
    for d, v in result["default_vs_best_rule"].items():
        for metric in METRICS:
            lines.append(
                f"| {d} | {v['best_rule']} | {metric} | {v[metric]['delta']:+.3f} | {v[metric]['p']:.3g} |"
            )
    lat = result["fusion_latency_us"]
    lines += ["", "Fusion cost per query: " + ", ".join(f"{k} {v:.0f} us" for k, v in lat.items()) + "."]
    return "\n".join(lines)


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    print(details(json.loads(path.read_text(encoding="utf-8")), list(weighted_families())))
