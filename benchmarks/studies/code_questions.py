"""A judged benchmark of natural questions about code, in every language (issue 37, item 5).

Reads every project of ``benchmarks/judged/code/`` (``<project>.json`` pins the package,
``<project>.jsonl`` holds its questions; format in ``_code_questions_data.py``), fetches it through
its registry's ordinary client (``_repo_fetch.py``), ingests the pinned folder in a store of its
own with the shipped settings (``embedding.model: auto``, as a user gets) and asks every question
through ``Engine.query``, top 10 chunks. Scored per question (``_code_questions_metrics.py``):

* **file-level NDCG@10**: the cited chunks' files in rank order, first occurrence, binary
  relevance over the answer files, ideal = min(#answer files, 10); ``--top-files N`` asks N chunks
  for this pass (the chunk measures keep the first 10);
* **chunk-level MRR@10**: the first chunk that cites an answer's file and overlaps its lines.

Per language, kind, project and overall, for ``default`` (the shipped settings), ``bm25`` and
``dense`` (each stage alone, optional stages off) and any labelled override given as
``--config label:key=value,key=value`` (``mode=bm25``, a feature flag ``expansion=false``, or a
dotted settings key ``retrieval.rrf_k=30``; values read as YAML), so a ranking flag can be ablated
without editing the study; with paired 95% intervals for default minus its best stage.

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python benchmarks/harness.py run code_questions
    .venv/bin/python benchmarks/harness.py run code_questions --projects commander --configs default \\
        --config 'no-exp:expansion=false' --out /tmp/cq.json
    .venv/bin/python benchmarks/harness.py report code_questions

Stores are kept under ``benchmarks/work/code_questions/stores/`` (a re-run embeds nothing new);
per-question figures go to ``benchmarks/work/code_questions/per_query.json`` (not committed; beside
``--out``'s file when given).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path
from typing import Any

import yaml

from hybrid_rag.engine import Engine
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import FeatureFlags, Settings, load_settings
from studies import suite
from studies._code_questions_data import KINDS, Question, Spec, fetch, load_specs
from studies._code_questions_metrics import TOP, groups_of, score, summarize, versus_best_stage
from studies._code_questions_render import render_result
from studies._repo_corpus import relative
from studies._suite_configs import OPTIONAL_STAGES_OFF, BenchConfig, group_by_index

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "benchmarks" / "work" / "code_questions"
BUILTIN = (
    BenchConfig("default", "the shipped settings, unchanged"),
    BenchConfig("bm25", "BM25 alone", "bm25", OPTIONAL_STAGES_OFF),
    BenchConfig("dense", "dense alone", "dense", OPTIONAL_STAGES_OFF),
)
WARMUP = 2
log = suite.log


def parse_config(text: str) -> BenchConfig:
    """``label:key=value,key=value`` as a configuration: ``mode=`` the retrieval mode, a
    :class:`FeatureFlags` name a per-call flag, any other (dotted) key a settings override."""
    label, sep, body = text.partition(":")
    if not sep or not label.strip() or not re.fullmatch(r"[\w.+-]+", label.strip()):
        raise SystemExit(f"--config {text!r}: expected label:key=value,key=value")
    mode, features, overrides = None, {}, {}
    for item in re.split(r",(?=\s*[\w.]+\s*=)", body) if body.strip() else []:
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise SystemExit(f"--config {text!r}: {item!r} is not key=value")
        value = yaml.safe_load(raw) if raw.strip() else ""
        if key == "mode":
            mode = str(value)
        elif key in FeatureFlags.model_fields:
            if not isinstance(value, bool):
                raise SystemExit(f"--config {text!r}: the flag {key} takes true or false, got {raw!r}")
            features[key] = value
        else:
            overrides[key] = value
    return BenchConfig(label.strip(), f"overrides: {body.strip() or 'none'}", mode, features, overrides)


def choose_configs(names: list[str], extra: list[str], base: Settings) -> list[BenchConfig]:
    known = {c.name: c for c in BUILTIN}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown configuration {unknown}; built in: {list(known)} (others: --config)")
    configs = [known[n] for n in names] + [parse_config(t) for t in extra]
    labels = [c.name for c in configs]
    if len(set(labels)) != len(labels):
        raise SystemExit(f"configuration labels must differ: {labels}")
    for c in configs:
        c.settings(base)  # an unknown key or a bad value fails here, before any ingest
    return configs


def ask(
    engine: Engine, q: Question, root: Path, config: BenchConfig, mode: str, depth: int
) -> tuple[dict, float]:
    start = time.perf_counter()
    result = engine.query(q.text, top_k=depth, mode=mode, features=dict(config.features))
    seconds = time.perf_counter() - start
    shown = Path(engine.ingested_root() or root)  # results cite paths relative to this folder
    cited = [(relative(str(shown / c.path), root), c.start_line, c.end_line) for c in result.chunks]
    return score(cited[:TOP], q, cited if depth > TOP else None), seconds


def run_project(
    spec: Spec, configs: list[BenchConfig], base: Settings, args: argparse.Namespace, embedders: dict
) -> tuple[dict[str, Any], dict[str, dict[str, dict[str, float]]]]:
    work = Path(args.work)
    root = fetch(spec, work / "sdists")
    questions = [q for q in spec.questions if not args.only_kind or q.kind in args.only_kind]
    questions = questions[: args.max_questions] if args.max_questions else questions
    info: dict[str, Any] = {
        "project": spec.project,
        "language": spec.language,
        "package": f"{spec.registry}:{spec.package}=={spec.version}",
        "folder": spec.folder,
        "files": sum(1 for p in root.rglob("*") if p.is_file()),
        "questions": {k: sum(q.kind == k for q in questions) for k in KINDS},
        "ingest": {},
        "ms_p50": {},
    }
    per: dict[str, dict[str, dict[str, float]]] = {c.name: {"ndcg": {}, "mrr": {}} for c in configs}
    for group, members in group_by_index(configs, base).items():
        settings = members[0].settings(base)
        key = json.dumps(settings.embedding.model_dump(mode="json"), sort_keys=True)
        embedder = embedders.setdefault(key, make_embedder(settings.embedding))
        store = (
            Path(args.stores or work / "stores") / f"{spec.project}-{spec.version}".replace("~", "_") / group
        )
        engine, _ = suite.open_engine(settings, store, embedder)
        try:
            start = time.perf_counter()
            report = engine.ingest([root])
            got = {
                "seconds": round(time.perf_counter() - start, 1),
                "embedded": report.embedded,
                "chunks": engine.stats().chunks,
            }
            if args.rebuild:  # a new version from the store: what a build writes now (a hubness table)
                got["rebuild_seconds"] = engine.rebuild().seconds
        finally:
            engine.close()
        info["ingest"][group] = got
        log(f"{spec.project}: group {group} {got}")
        for config in members:
            engine, _ = suite.open_engine(config.settings(base), store, embedder)
            mode = config.resolved_mode(base)
            try:
                for q in questions[:WARMUP]:
                    engine.query(q.text, top_k=TOP, mode=mode, features=dict(config.features))
                times = []
                for q in questions:
                    got_q, seconds = ask(engine, q, root, config, mode, max(TOP, args.top_files))
                    times.append(seconds)
                    for m, v in got_q.items():
                        per[config.name][m][q.qid] = round(v, 4)
            finally:
                engine.close()
            info["ms_p50"][config.name] = round(1000 * statistics.median(times), 1) if times else None
            values = per[config.name]["ndcg"].values()
            log(
                f"{spec.project} {config.name:12} file NDCG@10 {statistics.fmean(values):.3f} ({len(values)})"
            )
    info["chunks"] = max((g["chunks"] for g in info["ingest"].values()), default=0)
    return info, per


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--configs", nargs="*", default=[c.name for c in BUILTIN], help="built in: %(default)s")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="LABEL:KEY=VALUE,...",
        help="a labelled override (repeatable): mode=, a feature flag, or a dotted settings key",
    )
    p.add_argument("--projects", nargs="*", default=[], help="projects or languages (default: every one)")
    p.add_argument("--max-questions", type=int, default=0, help="the first N questions a project (0: all)")
    p.add_argument("--only-kind", nargs="*", default=[], choices=KINDS, help="only these kinds")
    p.add_argument("--top-files", type=int, default=TOP, help="chunks asked for the file ranking (>= 10)")
    p.add_argument(
        "--judged", default=None, help="the folder of judged files (default benchmarks/judged/code)"
    )
    p.add_argument("--work", default=str(WORK), help="archives and stores (%(default)s)")
    p.add_argument("--stores", default=None, help="where the stores are kept (default: WORK/stores)")
    p.add_argument("--fake", action="store_true", help="the hash embedder (plumbing only)")
    p.add_argument("--rebuild", action="store_true", help="rebuild each store's index after its ingest")
    p.add_argument("--torch-threads", type=int, default=1, help="torch threads (0: torch's default)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.torch_threads > 0:
        import torch

        torch.set_num_threads(args.torch_threads)
    base = load_settings(None)
    if args.fake:
        base = base.with_overrides({"embedding.model": "fake"})
    configs = choose_configs(args.configs, args.config, base)
    specs = load_specs(Path(args.judged), args.projects) if args.judged else load_specs(names=args.projects)
    specs = [s for s in specs if s.questions]
    if not specs:
        raise SystemExit("code_questions: no project with questions chosen")
    embedders: dict[str, Embedder] = {}
    projects, per = [], {c.name: {"ndcg": {}, "mrr": {}} for c in configs}
    asked: list[Question] = []
    for spec in specs:
        info, got = run_project(spec, configs, base, args, embedders)
        projects.append(info)
        asked += [q for q in spec.questions if q.qid in got[configs[0].name]["ndcg"]]
        for name in got:
            for m in ("ndcg", "mrr"):
                per[name][m].update(got[name][m])
    groups = groups_of(asked)
    out = getattr(args, "out", None)  # harness.py's --out: the per-question figures go beside it
    dump = Path(out).with_suffix(".per_query.json") if out else Path(args.work) / "per_query.json"
    dump.parent.mkdir(parents=True, exist_ok=True)
    dump.write_text(json.dumps({"questions": {q.qid: q.text for q in asked}, "per": per}))
    return {
        "format": "hybrid-rag-code-questions/1",
        "protocol": {
            "top_k": TOP,
            "top_files": max(TOP, args.top_files),
            "embedder": "fake" if args.fake else base.embedding.model,
            "only_kind": args.only_kind,
            "max_questions": args.max_questions,
        },
        "configs": [c.to_dict() for c in configs],
        "projects": projects,
        "summary": {c.name: summarize(per[c.name], groups) for c in configs},
        "versus_best_stage": {m: versus_best_stage(per, groups, metric=m) for m in ("ndcg", "mrr")},
    }


def render(result: dict[str, Any]) -> str:
    return render_result(result)
