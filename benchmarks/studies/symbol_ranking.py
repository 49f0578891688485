"""The symbol list in ranking (``features.symbols``, ``retrieval.symbol_weight``): identifier
questions, doc-comment questions and hand-judged questions of the multi-language repository
benchmark (``repo_search_languages``: its projects, corpora and questions), each asked with the
symbol list off and at several weights, every other setting the default.

Per configuration and question kind (and per language): MRR@10 and success@1, with a paired
t-test against the list off. The stores are the study's own (``--stores``), built once with
``Engine.ingest``; a re-run embeds nothing.

    HF_HUB_OFFLINE=1 nice -n 5 .venv/bin/python benchmarks/harness.py run symbol_ranking
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run symbol_ranking --projects click \\
        --out /tmp/sym.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hybrid_rag.models.factory import make_embedder
from hybrid_rag.settings import load_settings
from studies import suite
from studies._repo_corpus import Target, overlaps, relative
from studies._repo_questions import identifier_targets, judged_targets
from studies.repo_search_languages import CAP, IDENTIFIERS, PROJECTS, SEED, SHORT, WORK, prepare

TOP_K = 10
WEIGHTS = (0.5, 1.0, 2.0, 4.0)
KINDS = ("identifier", "doc", "judged")
log = suite.log


def configs(weights: Sequence[float]) -> list[tuple[str, dict[str, bool], dict[str, Any]]]:
    """(name, features, overrides): the list off, then on at each weight."""
    out: list[tuple[str, dict[str, bool], dict[str, Any]]] = [("symbols off", {"symbols": False}, {})]
    out += [(f"symbols w={w:g}", {"symbols": True}, {"retrieval.symbol_weight": w}) for w in weights]
    return out


def first_hit(result: Any, target: Target, root: Path) -> int | None:
    for i, c in enumerate(result.chunks[:TOP_K], 1):
        if overlaps(target, relative(c.path, root), c.start_line, c.end_line):
            return i
    return None


def paired_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided paired t-test; 1.0 when no query changed, None for fewer than two queries."""
    if len(a) < 2:
        return None
    if list(a) == list(b):
        return 1.0
    from scipy.stats import ttest_rel

    p = float(ttest_rel(a, b).pvalue)
    return round(p, 4) if p == p else 1.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--projects", nargs="*", default=[], help="names (default: all of repo_search_languages)")
    p.add_argument("--weights", nargs="*", type=float, default=list(WEIGHTS), help="%(default)s")
    p.add_argument("--cap", type=int, default=CAP)
    p.add_argument("--identifiers", type=int, default=IDENTIFIERS)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--work", default=str(WORK), help="archives and judged corpora (%(default)s)")
    p.add_argument("--stores", default=str(WORK.parent / "symbol_ranking"), help="%(default)s")
    p.add_argument("--fake", action="store_true", help="the hash embedder (plumbing only)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    base = load_settings(None)
    if args.fake:
        base = base.with_overrides({"embedding.model": "fake"})
    embedder = make_embedder(base.embedding)
    rows = configs(args.weights)
    chosen = [p for p in PROJECTS if not args.projects or p.name in args.projects]
    per: dict[str, dict[str, dict[str, float]]] = {
        name: {"mrr@10": {}, "success@1": {}} for name, _, _ in rows
    }
    where: dict[str, tuple[str, str, str]] = {}  # qid -> (kind, project, language)
    projects = []
    for project in chosen:
        src, dest, doc_targets, _info = prepare(project, Path(args.work), args.cap, args.seed)
        asked = {dest: doc_targets + identifier_targets(dest, project, args.identifiers, args.seed)}
        judged = judged_targets(project)
        if judged:
            asked[src] = judged
        name = SHORT.get(project.name, project.name)
        for root, targets in asked.items():
            store = Path(args.stores) / (dest.name if root == dest else f"{dest.name}-unmodified")
            engine, _ = suite.open_engine(base, store, embedder)
            try:
                report = engine.ingest([root])
                log(f"{name}: ingested ({report.embedded} embedded), {engine.store.symbol_count()} symbols")
                for config, features, overrides in rows:
                    engine.retriever.retrieval = (
                        base.with_overrides(overrides).retrieval if overrides else base.retrieval
                    )
                    for t in targets:
                        first = first_hit(engine.query(t.query, top_k=TOP_K, features=features), t, root)
                        per[config]["mrr@10"][t.qid] = 1.0 / first if first else 0.0
                        per[config]["success@1"][t.qid] = float(first == 1)
                        where[t.qid] = (t.kind, name, project.language)
            finally:
                engine.close()
        projects.append({"name": name, "language": project.language, "spec": project.spec})
        for config, _, _ in rows:
            ids = [q for q, (k, n, _) in where.items() if k == "identifier" and n == name]
            s1 = statistics.fmean(per[config]["success@1"][q] for q in ids) if ids else float("nan")
            log(f"{name:24} {config:14} identifier S@1 {s1:.3f}")
    groups: dict[str, list[str]] = {}
    for q, (kind, name, language) in where.items():
        for g in (kind, f"{kind}|{name}", f"{kind}|lang:{'python' if language == 'python' else 'other'}"):
            groups.setdefault(g, []).append(q)
    baseline = rows[0][0]
    summary = {}
    for config, _, _ in rows:
        summary[config] = {}
        for g, qids in sorted(groups.items()):
            cell = {m: round(statistics.fmean(per[config][m][q] for q in qids), 4) for m in per[config]}
            if config != baseline and "|" not in g:
                for m in per[config]:
                    a = [per[baseline][m][q] for q in qids]
                    b = [per[config][m][q] for q in qids]
                    cell[f"p_{m}"] = paired_p(a, b)
            summary[config][g] = cell | {"n": len(qids)}
    return {
        "format": "hybrid-rag-symbol-ranking/1",
        "protocol": {
            "top_k": TOP_K,
            "cap": args.cap,
            "identifiers": args.identifiers,
            "seed": args.seed,
            "embedder": "fake" if args.fake else base.embedding.model,
        },
        "projects": projects,
        "configs": [{"name": n, "features": f, "overrides": o} for n, f, o in rows],
        "summary": summary,
    }


def render(result: dict[str, Any]) -> str:
    configs_ = [c["name"] for c in result["configs"]]
    groups = sorted({g for c in configs_ for g in result["summary"][c]}, key=lambda g: (g.split("|")[0], g))
    lines = ["| questions | n | " + " | ".join(f"{c} MRR@10 / S@1" for c in configs_) + " |"]
    lines.append("|---|---:|" + "---:|" * len(configs_))
    for g in groups:
        cells = []
        for c in configs_:
            s = result["summary"][c].get(g)
            if s is None:
                cells.append("-")
                continue
            p = s.get("p_success@1")
            mark = f" (p={p:.2f})" if p is not None else ""
            cells.append(f"{s['mrr@10']:.3f} / {s['success@1']:.3f}{mark}")
        n = next(result["summary"][c][g]["n"] for c in configs_ if g in result["summary"][c])
        lines.append(f"| {g} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + json.dumps(result["protocol"])
