"""Repository search: judged queries over real projects as a user ingests them (code, tests, docs).

Three pinned open-source Python projects' source distributions (``PROJECTS``; pip downloads each
sdist once into ``benchmarks/work/repo_search/``) are made into judged repositories by
``_repo_corpus.py`` (CodeSearchNet's method: a docstring's first sentence is the query, the
docstring is removed, a sentence still found anywhere in the repository is dropped; a seeded
sample of at most ``--cap`` queries a project). Each project is ingested into its own store with
``Engine.ingest`` (kept under ``benchmarks/work/repo_search/stores/``, one a project and index
settings, so a re-run that changes no chunk text or embedding embeds nothing), then every
configuration answers every query through ``Engine.query`` (top 10) and ``Engine.context``
(the default budget, 3,000 tokens), as a user would.

Per configuration: MRR@10, success@1/5/10 (a result is relevant when it cites the target's file
and overlaps its line range), the share of top-10 results from test files, context evidence
recall (a quote overlaps the target's lines) and the context's tokens, query latency p50; a
paired t-test per metric against ``default``. The same configurations run on the judged datasets
(cranfield, cosqa) through the suite's machinery (``suite.run_dataset``), so a change that wins
here is seen where it costs.

    HF_HUB_OFFLINE=1 \\
      flock /tmp/hybrid-rag-bench.lock .venv/bin/python benchmarks/harness.py run repo_search [--datasets DIR]
    .venv/bin/python benchmarks/harness.py run repo_search --out /tmp/r.json --fake --cap 10 --no-judged
    .venv/bin/python benchmarks/harness.py report repo_search
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import percentiles
from hybrid_rag.evaluation.metrics import EvalReport, compare
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.protocols import Embedder, Reranker
from hybrid_rag.settings import Settings, load_settings
from hybrid_rag.types import ScoredChunk
from studies import suite
from studies._repo_configs import BASELINE, CONFIGS, CONTEXT_CONFIGS, MEASURED_APART, query_unchanged
from studies._repo_corpus import (
    TARGET_RULE,
    Project,
    Target,
    build_corpus,
    fetch,
    is_test_path,
    overlaps,
    relative,
    sha256_of,
)
from studies._suite_configs import BenchConfig, group_by_index, index_key, select_configs
from studies._suite_tables import compact, expand, quality_section

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "benchmarks" / "work" / "repo_search"
PROJECTS = (Project("click", "8.1.7"), Project("attrs", "23.2.0"), Project("more-itertools", "10.2.0"))
JUDGED = ("cranfield", "cosqa")
CAP = 50
SEED = 0
TOP_K = 10
WARMUP = 3
METRICS = ("mrr@10", "success@1", "success@5", "success@10", "test_share@10", "evidence")
HEADERS = {
    "mrr@10": "MRR@10",
    "success@1": "S@1",
    "success@5": "S@5",
    "success@10": "S@10",
    "test_share@10": "tests in top 10",
    "evidence": "evidence recall",
}
log = suite.log


def prepare(project: Project, work: Path, cap: int, seed: int) -> tuple[Path, list[Target], dict[str, Any]]:
    """The project's judged corpus (rebuilt only when the sdist, cap or seed changed)."""
    src = fetch(project, work / "sdists")
    sdist = next(p for p in (work / "sdists").glob("*.tar.gz") if p.name.lower().startswith(src.name.lower()))
    key = {"sdist": sdist.name, "sha256": sha256_of(sdist), "cap": cap, "seed": seed, "targets": TARGET_RULE}
    dest = work / "corpus" / src.name
    manifest = work / "corpus" / f"{src.name}.json"
    if manifest.is_file() and dest.is_dir():
        kept = json.loads(manifest.read_text())
        if kept["key"] == key:
            return dest, [Target(**t) for t in kept["targets"]], kept["info"]
    targets, counts = build_corpus(src, dest, cap, seed)
    info = {"project": project.spec, **key, **counts}
    manifest.write_text(json.dumps({"key": key, "info": info, "targets": [t.to_dict() for t in targets]}))
    return dest, targets, info


class MemoReranker:
    """A reranker whose (query, chunk) scores are kept, so the configurations that differ only in
    the cross-encoder's depth and blend score each pair once (the pipeline itself is unchanged)."""

    def __init__(self, inner: Reranker) -> None:
        self.inner = inner
        self.kept: dict[tuple[str, str], float] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    def score(self, query: str, candidates: Sequence[ScoredChunk]) -> np.ndarray:
        new = [c for c in candidates if (query, c.id) not in self.kept]
        if new:
            self.kept.update(zip(((query, c.id) for c in new), self.inner.score(query, new), strict=True))
        return np.array([self.kept[(query, c.id)] for c in candidates], dtype=np.float64)


def score(targets: Sequence[Target], root: Path, engine: Engine, config: BenchConfig, mode: str) -> dict:
    """Per query: the ranking metrics, the context's evidence and tokens, the query's time."""
    features = dict(config.features)
    for t in targets[:WARMUP]:
        engine.query(t.query, top_k=TOP_K, mode=mode, features=features)
    per: dict[str, dict[str, float]] = {m: {} for m in (*METRICS, "context_tokens")}
    if config.name not in CONTEXT_CONFIGS:
        del per["evidence"], per["context_tokens"]
    seconds, context_seconds = [], []
    for t in targets:
        start = time.perf_counter()
        result = engine.query(t.query, top_k=TOP_K, mode=mode, features=features)
        seconds.append(time.perf_counter() - start)
        cited = [(relative(c.path, root), c.start_line, c.end_line) for c in result.chunks[:TOP_K]]
        ranks = [i for i, (rel, a, b) in enumerate(cited, 1) if overlaps(t, rel, a, b)]
        first = ranks[0] if ranks else None
        per["mrr@10"][t.qid] = 1.0 / first if first else 0.0
        for k in (1, 5, 10):
            per[f"success@{k}"][t.qid] = float(first is not None and first <= k)
        per["test_share@10"][t.qid] = (
            sum(is_test_path(rel) for rel, _, _ in cited) / len(cited) if cited else 0.0
        )
        if "evidence" not in per:
            continue
        start = time.perf_counter()
        context, _ = engine.context(t.query, mode=mode, features=features)
        context_seconds.append(time.perf_counter() - start)
        quoted = any(overlaps(t, relative(q.path, root), q.start_line, q.end_line) for q in context.quotes)
        per["evidence"][t.qid] = float(quoted)
        per["context_tokens"][t.qid] = float(context.token_count)
    return {"per_query": per, "seconds": seconds, "context_seconds": context_seconds}


def run_repo(
    configs: Sequence[BenchConfig], base: Settings, args: argparse.Namespace
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    work = Path(args.work)
    projects, rows = [], []
    embedders: dict[str, Embedder] = {}
    per_config: dict[str, dict[str, dict[str, float]]] = {c.name: {} for c in configs}
    seconds: dict[str, list[float]] = {c.name: [] for c in configs}
    context_seconds: dict[str, list[float]] = {c.name: [] for c in configs}
    for project in PROJECTS:
        root, targets, info = prepare(project, work, args.cap, args.seed)
        targets = targets[: args.queries] if args.queries else targets
        info["scored"] = len(targets)
        info["ingest"] = {}
        projects.append(info)
        rerankers: dict[str, MemoReranker] = {}  # one a project and cross-encoder model
        for group, members in group_by_index(configs, base).items():
            settings = members[0].settings(base)
            key = json.dumps(settings.embedding.model_dump(mode="json"), sort_keys=True)
            embedder = embedders.setdefault(key, make_embedder(settings.embedding))
            store = work / "stores" / root.name / group
            engine, _ = suite.open_engine(settings, store, embedder)
            try:
                start = time.perf_counter()
                report = engine.ingest([root])
                info["ingest"][group] = {
                    "seconds": round(time.perf_counter() - start, 2),
                    "embedded": report.embedded,
                    "chunks": engine.stats().chunks,
                }
            finally:
                engine.close()
            log(f"{root.name}: group {group} ingested {info['ingest'][group]}")
            for config in members:
                engine, _ = suite.open_engine(config.settings(base), store, embedder)
                if config.features.get("rerank") and engine.retriever.reranker is not None:
                    model = f"{engine.settings.rerank.backend}:{engine.settings.rerank.model}"
                    kept = rerankers.setdefault(model, MemoReranker(engine.retriever.reranker))
                    engine.retriever.reranker = kept
                try:
                    got = score(targets, root, engine, config, config.resolved_mode(base))
                finally:
                    engine.close()
                for metric, values in got["per_query"].items():
                    per_config[config.name].setdefault(metric, {}).update(values)
                seconds[config.name].extend(got["seconds"])
                context_seconds[config.name].extend(got["context_seconds"])
                mrr = statistics.fmean(got["per_query"]["mrr@10"].values())
                log(f"{root.name} {config.name:24} MRR@10 {mrr:.3f}")
    qids = [q for q in per_config[configs[0].name]["mrr@10"]]
    for config in configs:
        per = per_config[config.name]
        ms = percentiles(seconds[config.name])
        timing = {"query_ms_p50": round(ms["p50"], 2), "query_ms_p95": round(ms["p95"], 2)}
        if context_seconds[config.name]:
            ms = percentiles(context_seconds[config.name])
            timing |= {"context_ms_p50": round(ms["p50"], 1), "context_ms_p95": round(ms["p95"], 1)}
        rows.append(
            {
                "config": config.name,
                "description": config.description,
                "index_group": index_key(config.settings(base)),
                "metrics": {m: round(statistics.fmean(per[m].values()), 4) for m in per},
                "per_query": {m: [round(per[m][q], 4) for q in qids] for m in per},
                **timing,
            }
        )
    return projects, [{"query_ids": qids, "rows": rows}]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--configs", nargs="*", default=[], help=f"configurations (default: all of {len(CONFIGS)})"
    )
    p.add_argument("--cap", type=int, default=CAP, help="queries a project at most (seeded sample)")
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument(
        "--queries", type=int, default=None, help="score the first N targets a project (all: None)"
    )
    p.add_argument("--work", default=str(WORK), help="sdists, judged corpora and stores (%(default)s)")
    p.add_argument("--fake", action="store_true", help="the hash embedder (plumbing only)")
    p.add_argument("--no-judged", action="store_true", help="skip cranfield and cosqa")
    p.add_argument("--datasets", default=str(suite.DATASETS), help="BEIR datasets folder")
    p.add_argument("--max-queries", type=int, default=None, help="judged datasets: this many queries")
    p.add_argument("--torch-threads", type=int, default=1, help="torch threads (0: torch's default)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.torch_threads > 0:
        import torch

        torch.set_num_threads(args.torch_threads)
    base = load_settings(None)
    if args.fake:
        base = base.with_overrides({"embedding.model": "fake"})
    configs = select_configs(args.configs, CONFIGS + MEASURED_APART) if args.configs else list(CONFIGS)
    projects, repo = run_repo(configs, base, args)
    judged: dict[str, Any] = {"datasets": [], "results": []}
    if not args.no_judged:
        ns = argparse.Namespace(
            max_queries=args.max_queries, work=str(suite.WORK), fresh=False, warmup=WARMUP
        )
        for folder in suite.find_datasets(Path(args.datasets), JUDGED):
            measured = [c for c in configs if c.name == BASELINE or not query_unchanged(c)]
            info, records, _ = suite.run_dataset(folder, measured, base, ns)
            judged["datasets"].append(info)
            judged["results"].extend(records)
    judged_suite = compact(
        {
            "protocol": {
                "warmup_queries": WARMUP,
                "repeats": 1,
                "top_k": 100,
                "embedder": "fake" if args.fake else base.embedding.model,
                "max_queries": args.max_queries,
                "torch_threads": args.torch_threads or "default",
            },
            "configs": [c.to_dict() for c in configs],
            "baseline": BASELINE,
            **judged,
        }
    )
    return {
        "format": "hybrid-rag-repo-search/1",
        "protocol": {
            "top_k": TOP_K,
            "cap": args.cap,
            "queries": args.queries,
            "seed": args.seed,
            "embedder": judged_suite["protocol"]["embedder"],
        },
        "configs": [c.to_dict() for c in configs],
        "baseline": BASELINE,
        "projects": projects,
        "repo": repo[0],
        "judged": judged_suite,
    }


def _report(row: Mapping[str, Any], qids: Sequence[str]) -> EvalReport:
    metrics = tuple(m for m in METRICS if m in row["per_query"])
    per = {m: dict(zip(qids, row["per_query"][m], strict=True)) for m in metrics}
    return EvalReport(metrics, {m: float(row["metrics"][m]) for m in metrics}, per)


def render(result: dict[str, Any]) -> str:
    repo = result["repo"]
    qids = repo["query_ids"]
    projects = ", ".join(
        f"{p['project']} ({p.get('scored', p['queries'])} queries of {p['candidates']} candidates, "
        f"{next(iter(p['ingest'].values()))['chunks']} chunks)"
        for p in result["projects"]
    )
    lines = [
        f"Projects: {projects}; {len(qids)} queries scored, top {result['protocol']['top_k']}, "
        f"embedder `{result['protocol']['embedder']}`. Δ and p: paired two-sided t-test per query "
        f"against `{result['baseline']}`; * p < 0.05.",
        "",
        "| configuration | what | "
        + " | ".join(HEADERS[m] for m in METRICS)
        + " | context tokens | Δ MRR@10 (p) | Δ evidence (p) | query ms p50 |",
        "|---|---|" + "---:|" * (len(METRICS) + 4),
    ]
    rows = repo["rows"]
    base = next((r for r in rows if r["config"] == result["baseline"]), None)
    for r in rows:
        deltas = ["–", "–"]
        if base is not None and r is not base:
            tests = compare(_report(base, qids), _report(r, qids))
            deltas = [
                f"{tests[m].delta:+.3f} ({tests[m].p_value:.3f}{' *' if tests[m].significant else ''})"
                if m in tests
                else "–"
                for m in ("mrr@10", "evidence")
            ]
        cells = [f"{r['metrics'][m]:.3f}" if m in r["metrics"] else "–" for m in METRICS]
        tokens = f"{r['metrics']['context_tokens']:.0f}" if "context_tokens" in r["metrics"] else "–"
        lines.append(
            f"| {r['config']} | {r['description']} | "
            + " | ".join(cells)
            + f" | {tokens} | {deltas[0]} | {deltas[1]}"
            + f" | {r['query_ms_p50']:.1f} |"
        )
    timed = [r for r in rows if "context_ms_p50" in r]
    if timed:
        each = "; ".join(
            f"{r['config']} {r['context_ms_p50']:,.0f} / {r['context_ms_p95']:,.0f}" for r in timed
        )
        lines += ["", f"`Engine.context` (default budget, self-check on) ms p50 / p95: {each}."]
    judged = expand(result["judged"])
    if judged["results"]:
        lines += ["", "The same configurations on the judged datasets (the suite's protocol):", ""]
        lines += quality_section(judged)
    return "\n".join(lines)
