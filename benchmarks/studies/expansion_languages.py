"""PRF per language and per set, and the English BM25 stemmer (issue 44, RESULTS.md#beside-the-frameworks).

Per judged set, through ``Engine.query`` as the languages study does (``languages.py``: its
memoised embedder, its spread subsets and its cross-lingual set ``xquad_ru>en``):

* ``bm25``, ``dense``: each stage alone, the optional stages off;
* ``default``: the shipped settings (the lexical PRF skipped where BM25 cannot read the question,
  ``retrieval/expansion.py``: ``lexical_skip_reason``);
* ``lexical PRF always``: the rule off (the expansion of before);
* ``lexical PRF never``: only the dense half of PRF (Rocchio);
* ``no expansion``: ``features.expansion`` off;
* on the English sets, ``bm25.stemmer: english`` with BM25 alone and with the default.

XQuAD with multilingual-e5-small (``configs/multilingual.yaml``, as RESULTS.md#languages and
RESULTS.md#russian-question-english-code measured it); cranfield and cosqa with all-MiniLM-L6-v2,
what ``embedding.model: auto`` picks for them.
Each variant is compared to ``default`` query by query (mean difference and its 95% half-width).

    nice -n 10 .venv/bin/python benchmarks/harness.py run expansion_languages --max-queries 200
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import evaluate_engine, ingest_dataset
from hybrid_rag.evaluation.metrics import BeirDataset, load_beir
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.retrieval import expansion
from hybrid_rag.settings import Settings
from studies._suite_configs import OPTIONAL_STAGES_OFF
from studies.languages import DATASETS, ROOT, MemoEmbedder, cross_lingual, log, paired, subset

WORK = ROOT / "benchmarks" / "work" / "expansion_languages"
ENGLISH = ("xquad_en", "cranfield", "cosqa")
MODEL_OF = {"cranfield": "all-MiniLM-L6-v2", "cosqa": "all-MiniLM-L6-v2"}  # others: e5
E5 = "multilingual-e5-small"
METRIC = "mrr@10"
STEM = {"bm25.stemmer": "english"}


@contextmanager
def lexical_rule(kind: str | None, counter: list[int] | None = None) -> Iterator[None]:
    """The lexical PRF's rule as shipped (None; ``counter`` counts the questions it skipped),
    never applied (``always``) or always skipping (``never``)."""
    real = expansion.lexical_skip_reason

    def counting(*args: Any, **kwargs: Any) -> str | None:
        reason = real(*args, **kwargs)
        if reason and counter is not None:
            counter.append(1)
        return reason

    rule: Callable[..., str | None] = {
        None: counting,
        "always": lambda *a, **k: None,
        "never": lambda *a, **k: "off for the study",
    }[kind]
    expansion.lexical_skip_reason = rule  # type: ignore[assignment]
    try:
        yield
    finally:
        expansion.lexical_skip_reason = real


# (name, mode, features, settings overrides, lexical rule)
Variant = tuple[str, str, Mapping[str, bool], Mapping[str, Any], str | None]
VARIANTS: tuple[Variant, ...] = (
    ("bm25", "bm25", OPTIONAL_STAGES_OFF, {}, None),
    ("dense", "dense", OPTIONAL_STAGES_OFF, {}, None),
    ("default", "hybrid", {}, {}, None),
    ("lexical PRF always", "hybrid", {}, {}, "always"),
    ("lexical PRF never", "hybrid", {}, {}, "never"),
    ("no expansion", "hybrid", {"expansion": False}, {}, None),
)
STEMMED: tuple[Variant, ...] = (
    ("bm25, stemmer english", "bm25", OPTIONAL_STAGES_OFF, STEM, None),
    ("default, stemmer english", "hybrid", {}, STEM, None),
)


def measure_set(ds: BeirDataset, model: str, work: Path, variants: Sequence[Variant]) -> dict[str, Any]:
    base = Settings()
    if model == "fake":  # BM25 alone: no vectors needed
        memo: Any = FakeEmbedder(8)
        memo.save = lambda: None
    else:
        inner = make_embedder(base.embedding.model_copy(update={"model": model, "threads": 1}))
        tag = hashlib.sha1(f"{ds.name}/{model}".encode()).hexdigest()[:8]
        memo = MemoEmbedder(inner, work / f"vectors-{tag}-{os.getpid()}.npz")
    out: dict[str, Any] = {"model": model, "queries": len(ds.qrels), "configs": {}}
    per_query: dict[str, dict[str, float]] = {}
    groups: dict[str, list[Variant]] = {}
    for v in variants:  # one data dir per settings that change the index
        groups.setdefault(json.dumps(dict(v[3]), sort_keys=True), []).append(v)
    for key, members in groups.items():
        with tempfile.TemporaryDirectory(prefix="hybrid-rag-exp-") as tmp:
            overrides = {"paths.data_dir": tmp, "embedding.model": model, **json.loads(key)}
            engine = Engine(base.with_overrides(overrides), embedder=memo)
            try:
                ingest_dataset(engine, ds)
                memo.save()
                for name, mode, features, _, rule in members:
                    skipped: list[int] = []
                    with lexical_rule(rule, skipped):
                        res = evaluate_engine(engine, ds, mode=mode, features=features, warmup=0)
                    per_query[name] = res.report.per_query[METRIC]
                    out["configs"][name] = {
                        "mrr@10": round(res.report.means[METRIC], 4),
                        "ndcg@10": round(res.report.means["ndcg@10"], 4),
                        **({"lexical_skipped": len(skipped)} if name == "default" else {}),
                    }
                    log(f"  {ds.name} {name}: {out['configs'][name]}")
            finally:
                engine.close()
                memo.save()
    out["vs_default"] = (
        {name: paired(per_query[name], per_query["default"]) for name in per_query if name != "default"}
        if "default" in per_query
        else {}
    )
    out["stem_vs_bm25"] = (
        paired(per_query["bm25, stemmer english"], per_query["bm25"])
        if "bm25, stemmer english" in per_query
        else None
    )
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--datasets", default=str(DATASETS), help="folder of the judged sets (%(default)s)")
    p.add_argument("--only", nargs="*", default=(), help="these sets (xquad_ru, xquad_ru>en, cranfield, ...)")
    p.add_argument("--max-queries", type=int, default=None, help="judged questions per set, spread evenly")
    p.add_argument("--work", default=str(WORK), help="memoised vectors, kept between runs (%(default)s)")
    p.add_argument("--bm25-only", action="store_true", help="BM25 with and without the stemmer, English sets")


def run(args: argparse.Namespace) -> dict[str, Any]:
    root, work = Path(args.datasets), Path(args.work)
    names = sorted(p.name for p in root.glob("xquad_*") if (p / "corpus.jsonl").is_file())
    sets = [subset(load_beir(root / n), args.max_queries) for n in names]
    sets.append(cross_lingual(root, args.max_queries))
    sets += [
        subset(load_beir(root / n), args.max_queries) for n in ("cranfield", "cosqa") if (root / n).is_dir()
    ]
    if args.only:
        by_name = {s.name: s for s in sets}
        sets = [by_name[n] for n in args.only if n in by_name]
    result: dict[str, Any] = {"max_queries": args.max_queries, "sets": {}}
    for ds in sets:
        model = "fake" if args.bm25_only else MODEL_OF.get(ds.name, E5)
        log(f"{ds.name} ({model}): {len(ds.corpus)} documents, {len(ds.qrels)} questions")
        t0 = time.perf_counter()
        variants = VARIANTS + (STEMMED if ds.name in ENGLISH else ())
        if args.bm25_only:
            variants = (VARIANTS[0], STEMMED[0])
        result["sets"][ds.name] = measure_set(ds, model, work, variants)
        result["sets"][ds.name]["seconds"] = round(time.perf_counter() - t0, 1)
        (work / f"partial-{os.getpid()}.json").write_text(json.dumps(result), encoding="utf-8")
    return result


def _cell(row: Mapping[str, Any], name: str) -> str:
    c = row["configs"].get(name)
    if c is None:
        return ""
    d = row["vs_default"].get(name)
    return f"{c['mrr@10']:.3f}" + (f" ({d['diff']:+.3f} ± {d['ci95']:.3f})" if d else "")


def render(result: Mapping[str, Any]) -> str:
    lines = [
        "| set | model | questions | BM25 | dense | **default** (lexical PRF skipped: questions) |"
        " lexical PRF always (before) | lexical PRF never | no expansion |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in result["sets"].items():
        c = row["configs"]
        if "default" not in c:
            continue
        lines.append(
            f"| {name} | {row['model']} | {row['queries']} | {c['bm25']['mrr@10']:.3f} | "
            f"{c['dense']['mrr@10']:.3f} | **{c['default']['mrr@10']:.3f}** "
            f"({c['default'].get('lexical_skipped', 0)}) | {_cell(row, 'lexical PRF always')} | "
            f"{_cell(row, 'lexical PRF never')} | {_cell(row, 'no expansion')} |"
        )
    lines += [
        "",
        "MRR@10; in brackets each variant minus the default, query by query, with its 95% half-width. "
        "Judged questions spread evenly over each set (the questions column; all when it is the set's size).",
        "",
        "| set | BM25 | BM25, `stemmer: english` (− BM25, 95%) | default |"
        " default, `stemmer: english` (− default) |",
        "|---|---|---|---|---|",
    ]
    for name, row in result["sets"].items():
        c, s = row["configs"], row.get("stem_vs_bm25")
        if not s:
            continue
        default = f"{c['default']['mrr@10']:.3f}" if "default" in c else ""
        lines.append(
            f"| {name} | {c['bm25']['mrr@10']:.3f} | {c['bm25, stemmer english']['mrr@10']:.3f} "
            f"({s['diff']:+.3f} ± {s['ci95']:.3f}) | {default} | {_cell(row, 'default, stemmer english')} |"
        )
    return "\n".join(lines)
