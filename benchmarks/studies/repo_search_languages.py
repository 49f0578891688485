"""Repository search in every language: judged queries over pinned projects in Python, Rust, Go,
Java, JavaScript, TypeScript and C++, each ingested as a user would with ``Engine.ingest``.

The projects (``PROJECTS``) come from the registries reachable here (``_repo_fetch.py``: PyPI
sdists, npm tarballs, Debian's packages of Rust crates, Go modules and C++ headers), a subfolder
where the package is larger than a few hundred chunks. Three kinds of question, scored apart:

* **doc**: the method of RESULTS.md#repository-answers in every language: a function's doc
  comment's first sentence is
  the query, the comment is removed from the corpus (``_repo_corpus.build_corpus``; the comments
  of other languages are found by ``_repo_docs.py``), 50 a project (seeded);
* **identifier**: a question naming a definition of the corpus (``where is X defined?``,
  ``Owner.method``), 30 a project (``_repo_questions.identifier_targets``);
* **judged**: natural questions written by reading the code (``benchmarks/judged/*.jsonl``),
  scored on the project's unmodified folder in a store of its own.

A result is relevant when it cites an answer's file and overlaps its lines. Per configuration
(BM25 alone, dense alone, the default hybrid, ``configs/repository.yaml``'s bge-small): MRR@10,
success@1/@10, per question kind, project and language. Stores are kept under
``benchmarks/work/repo_search/stores/`` (a re-run embeds only changed chunks).

    HF_HUB_OFFLINE=1 nice -n 5 .venv/bin/python benchmarks/harness.py run repo_search_languages
    # one project, the default alone (a few minutes): identifier questions of commander (JS)
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/harness.py run repo_search_languages \\
        --projects commander --configs default --out /tmp/rsl.json
    .venv/bin/python benchmarks/harness.py report repo_search_languages
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hybrid_rag.engine import Engine
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import Settings, load_settings
from studies import suite
from studies._repo_configs import CONFIGS, MEASURED_APART
from studies._repo_corpus import TARGET_RULE, Project, Target, build_corpus, overlaps, relative, sha256_of
from studies._repo_fetch import fetch_project
from studies._repo_merge import _run, merge
from studies._repo_questions import identifier_targets, judged_targets
from studies._repo_render import render_languages
from studies._suite_configs import BenchConfig, group_by_index, select_configs

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "benchmarks" / "work" / "repo_search"
PROJECTS = (
    Project("click", "8.1.7"),
    Project("attrs", "23.2.0"),
    Project("more-itertools", "10.2.0"),
    Project("librust-itertools-dev", "0.10.3-1", "rust", "apt", "usr/share/cargo/registry/itertools-0.10.3"),
    Project(
        "golang-github-spf13-pflag-dev",
        "1.0.6~git20210604-d5e0c0615ace-1",
        "go",
        "apt",
        "usr/share/gocode/src/github.com/spf13/pflag",
    ),
    Project("JPype1", "1.5.0", "java", "pip", "native/java"),
    Project("eslint", "8.57.0", "javascript", "npm", "lib/linter"),
    Project("commander", "12.1.0", "javascript", "npm", "lib"),
    Project("rxjs", "7.8.1", "typescript", "npm", "src/internal/operators"),
    Project("libfmt-dev", "9.1.0+ds1-2", "cpp", "apt", "usr/include/fmt"),
)
SHORT = {  # how the tables name a project
    "librust-itertools-dev": "itertools (Rust)",
    "golang-github-spf13-pflag-dev": "pflag (Go)",
    "libfmt-dev": "fmt (C++)",
    "JPype1": "JPype1 native/java",
}
DEFAULT_CONFIGS = ("default", "bm25", "dense", "bge-small")
CAP, IDENTIFIERS, SEED, TOP_K, WARMUP = 50, 30, 0, 10, 3
METRICS = ("mrr@10", "success@1", "success@10")
KINDS = ("doc", "identifier", "judged")
log = suite.log


def prepare(project: Project, work: Path, cap: int, seed: int) -> tuple[Path, Path, list[Target], dict]:
    """(the unmodified folder, the judged corpus, its doc targets, info), the corpus rebuilt only
    when the archive, cap, seed or rule changed."""
    src, archive = fetch_project(project, work / "sdists")
    key = {"archive": archive.name, "sha256": sha256_of(archive), "subdir": project.subdir}
    key |= {"cap": cap, "seed": seed, "targets": TARGET_RULE, "language": project.language}
    name = f"{project.name}-{project.version}".replace("~", "_").replace("+", "_")
    dest, manifest = work / "corpus" / name, work / "corpus" / f"{name}.json"
    if manifest.is_file() and dest.is_dir():
        kept = json.loads(manifest.read_text())
        if kept["key"] == key:
            return src, dest, [Target.from_dict(t) for t in kept["targets"]], kept["info"]
    dest.parent.mkdir(parents=True, exist_ok=True)
    targets, counts = build_corpus(src, dest, cap, seed, project.language)
    info = {"project": project.spec, "language": project.language, "source": project.source, **key, **counts}
    manifest.write_text(json.dumps({"key": key, "info": info, "targets": [t.to_dict() for t in targets]}))
    return src, dest, targets, info


def score(targets: Sequence[Target], root: Path, engine: Engine, config: BenchConfig, mode: str) -> dict:
    """Per query: reciprocal rank within the top 10, success at 1 and 10."""
    features = dict(config.features)
    for t in targets[:WARMUP]:
        engine.query(t.query, top_k=TOP_K, mode=mode, features=features)
    per: dict[str, dict[str, float]] = {m: {} for m in METRICS}
    shown = Path(engine.ingested_root() or root)  # results show paths relative to this folder
    for t in targets:
        result = engine.query(t.query, top_k=TOP_K, mode=mode, features=features)
        cited = [
            (relative(str(shown / c.path), root), c.start_line, c.end_line) for c in result.chunks[:TOP_K]
        ]
        first = next((i for i, (rel, a, b) in enumerate(cited, 1) if overlaps(t, rel, a, b)), None)
        per["mrr@10"][t.qid] = 1.0 / first if first else 0.0
        per["success@1"][t.qid] = float(first == 1)
        per["success@10"][t.qid] = float(first is not None)
    return per


def seed_store(store: Path, stores: Path, seeds: Path | None) -> bool | str:
    """Copy the same store of an earlier run (``--seed-stores``) where this run has none yet: its
    embedding cache (by model and text) spares every chunk whose text did not change."""
    seed = seeds / store.relative_to(stores) if seeds else None
    if store.exists() or seed is None or not seed.is_dir():
        return False
    shutil.copytree(seed, store, ignore=shutil.ignore_patterns(".writer.lock"))
    return True


def _ingest(
    settings: Settings,
    store: Path,
    embedder: Embedder,
    root: Path,
    collection: str,
    replace: bool = False,
) -> dict[str, Any]:
    engine, _ = suite.open_engine(settings, store, embedder)
    try:
        start = time.perf_counter()
        stale = [d.path for d in engine.documents()] if replace else []
        if stale:  # the seed held another folder (the judged corpus, for the unmodified one): its
            engine.delete(stale)  # documents go first, or their chunks would stand for this one's
        # another collection than the seed's: every file is chunked again by this code
        report = engine.ingest([root], collection=collection)
        seconds = round(time.perf_counter() - start, 2)
        return {"seconds": seconds, "embedded": report.embedded, "chunks": engine.stats().chunks}
    finally:
        engine.close()


def run_project(
    project: Project,
    configs: Sequence[BenchConfig],
    base: Settings,
    args: argparse.Namespace,
    embedders: dict,
) -> tuple[dict[str, Any], dict[str, dict[str, dict[str, float]]], dict[str, str]]:
    """The project's info, per configuration its per-query metrics, and each query's kind."""
    work = Path(args.work)
    src, dest, targets, info = prepare(project, work, args.cap, args.seed)
    asked = {  # the judged corpus first: the unmodified folder's store starts from its embeddings
        dest: targets[: args.queries] if args.queries else targets,
        src: judged_targets(project),
    }
    asked[dest] = asked[dest] + identifier_targets(dest, project, args.identifiers, args.seed)
    info |= {"name": SHORT.get(project.name, project.name), "ingest": {}}
    info["scored"] = {k: sum(t.kind == k for ts in asked.values() for t in ts) for k in KINDS}
    per_config: dict[str, dict[str, dict[str, float]]] = {c.name: {m: {} for m in METRICS} for c in configs}
    for group, members in group_by_index(configs, base).items():
        settings = members[0].settings(base)
        key = json.dumps(settings.embedding.model_dump(mode="json"), sort_keys=True)
        embedder = embedders.setdefault(key, make_embedder(settings.embedding))
        for root, targets_here in asked.items():
            if not targets_here:
                continue
            stores = Path(args.stores or work / "stores")
            store = stores / (dest.name if root == dest else f"{dest.name}-unmodified") / group
            seeded = seed_store(store, stores, Path(args.seed_stores) if args.seed_stores else None)
            if not seeded and root == src and (stores / dest.name / group).is_dir() and not store.exists():
                # the unmodified folder shares most chunks with the judged corpus: start from it
                shutil.copytree(
                    stores / dest.name / group, store, ignore=shutil.ignore_patterns(".writer.lock")
                )
                seeded = "judged corpus"
            try:
                got = _ingest(settings, store, embedder, root, args.collection, seeded == "judged corpus")
            except Exception as e:  # a seed this code refuses (another index format): start afresh
                if not seeded:
                    raise
                log(f"{store}: the seeded store was refused ({e}); ingesting afresh")
                shutil.rmtree(store)
                got = _ingest(settings, store, embedder, root, args.collection)
            got["seeded"] = seeded
            info["ingest"].setdefault(group, {})["judged" if root == src else "corpus"] = got
            log(f"{dest.name}: group {group} ingested {got}")
            for config in members:
                engine, _ = suite.open_engine(config.settings(base), store, embedder)
                try:
                    per = score(targets_here, root, engine, config, config.resolved_mode(base))
                finally:
                    engine.close()
                for m in METRICS:
                    per_config[config.name][m].update(per[m])
    kinds = {t.qid: t.kind for ts in asked.values() for t in ts}
    for name, per in per_config.items():
        for kind in KINDS:
            values = [per["mrr@10"][q] for q, k in kinds.items() if k == kind]
            if values:
                log(f"{dest.name} {name:12} {kind:10} MRR@10 {statistics.fmean(values):.3f} ({len(values)})")
    return info, per_config, kinds


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--configs", nargs="*", default=list(DEFAULT_CONFIGS), help="%(default)s")
    p.add_argument("--projects", nargs="*", default=[], help="names (default: all); e.g. commander click")
    p.add_argument("--languages", nargs="*", default=[], help="only these languages (python, rust, ...)")
    p.add_argument("--cap", type=int, default=CAP, help="doc queries a project at most (seeded sample)")
    p.add_argument("--identifiers", type=int, default=IDENTIFIERS, help="identifier questions a project")
    p.add_argument("--queries", type=int, default=None, help="score the first N doc targets a project")
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--work", default=str(WORK), help="archives, judged corpora and stores (%(default)s)")
    p.add_argument("--stores", default=None, help="where the stores are kept (default: WORK/stores)")
    p.add_argument("--seed-stores", default=None, help="an earlier run's stores to reuse embeddings from")
    p.add_argument("--collection", default="default", help="the collection files are ingested into")
    p.add_argument("--fake", action="store_true", help="the hash embedder (plumbing only)")
    p.add_argument(
        "--before", nargs="*", default=[], help="JSONs of this study to show beside (the old code's)"
    )
    p.add_argument(
        "--merge", nargs="*", default=[], help="merge these JSONs of this study (disjoint projects)"
    )
    p.add_argument("--torch-threads", type=int, default=1, help="torch threads (0: torch's default)")


def _mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 4) if values else float("nan")


def summarize(per: dict[str, dict[str, float]], groups: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    return {
        g: {m: _mean([per[m][q] for q in qids]) for m in METRICS} | {"n": len(qids)}
        for g, qids in groups.items()
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.merge:
        result = merge([json.loads(Path(p).read_text()) for p in args.merge])
        return _with_before(result, args.before)
    if args.torch_threads > 0:
        import torch

        torch.set_num_threads(args.torch_threads)
    base = load_settings(None)
    if args.fake:
        base = base.with_overrides({"embedding.model": "fake"})
    configs = select_configs(args.configs, CONFIGS + MEASURED_APART)
    chosen = [
        p
        for p in PROJECTS
        if (
            not args.projects
            or p.name in args.projects
            or SHORT.get(p.name, "").split(" ")[0] in args.projects
        )
        and (not args.languages or p.language in args.languages)
    ]
    if not chosen:
        raise SystemExit(f"no project chosen of {[p.name for p in PROJECTS]}")
    embedders: dict[str, Embedder] = {}
    projects, per_config, kinds, where = [], {c.name: {m: {} for m in METRICS} for c in configs}, {}, {}
    for project in chosen:
        info, per, k = run_project(project, configs, base, args, embedders)
        projects.append(info)
        kinds |= k
        where |= {q: (info["name"], project.language) for q in k}
        for name in per:
            for m in METRICS:
                per_config[name][m].update(per[name][m])
    qids = list(kinds)
    groups: dict[str, list[str]] = {}
    for q in qids:
        name, language = where[q]
        for g in (kinds[q], f"{kinds[q]}|{name}", f"{kinds[q]}|lang:{language}"):
            groups.setdefault(g, []).append(q)
        if kinds[q] == "doc":
            groups.setdefault("doc|" + ("python" if language == "python" else "other"), []).append(q)
    rows = [
        {
            "config": c.name,
            "description": c.description,
            "summary": summarize(per_config[c.name], groups),
            "per_query": {m: [round(per_config[c.name][m][q], 4) for q in qids] for m in METRICS},
        }
        for c in configs
    ]
    result = {
        "format": "hybrid-rag-repo-search-languages/1",
        "protocol": {
            "top_k": TOP_K,
            "cap": args.cap,
            "identifiers": args.identifiers,
            "seed": args.seed,
            "embedder": "fake" if args.fake else base.embedding.model,
        },
        "projects": projects,
        "query_ids": qids,
        "kinds": [kinds[q] for q in qids],
        "rows": rows,
    }
    return _with_before(result, args.before)


def _with_before(result: dict[str, Any], before_paths: Sequence[str]) -> dict[str, Any]:
    """``result`` with the summaries of earlier runs (the old code's) to show beside it."""
    if not before_paths:
        return result
    before = merge([json.loads(Path(p).read_text()) for p in before_paths])
    runs = before.get("runs") or [_run(before)]
    result["before"] = {
        "commit": runs[0]["commit"],
        "names": [p["name"] for p in before["projects"]],
        "runs": runs,
        "rows": [{"config": r["config"], "summary": r["summary"]} for r in before["rows"]],
    }
    return result


def render(result: dict[str, Any]) -> str:
    return render_languages(result)
