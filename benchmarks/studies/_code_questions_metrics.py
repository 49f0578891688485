"""The code-question benchmark's measures, from a ranked list of cited chunks (pure functions).

* **file-level NDCG@10**: the chunks' files in rank order, each at its first occurrence, cut to 10;
  a file is relevant (1) when it is one of the question's answer files; the ideal DCG puts
  ``min(#answer files, 10)`` relevant files first;
* **chunk-level MRR@10**: 1 / the rank of the first of the top 10 chunks that cites an answer's
  file and overlaps its lines (0 when none does);
* :func:`paired`: the mean of per-question differences and its 95% half-width (Student's t).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

from studies._code_questions_data import Question

TOP = 10
Cited = tuple[str, int, int]  # (path relative to the ingested folder, first line, last line)


def ranked_files(cited: Iterable[Cited], top: int = TOP) -> list[str]:
    """The files of ``cited`` in rank order, each once (its first occurrence), at most ``top``."""
    out: list[str] = []
    for path, _a, _b in cited:
        if path not in out:
            out.append(path)
            if len(out) == top:
                break
    return out


def file_ndcg(files: Sequence[str], relevant: Iterable[str], top: int = TOP) -> float:
    wanted = set(relevant)
    if not wanted:
        raise ValueError("a question needs at least one answer file")
    dcg = sum(1.0 / math.log2(i + 2) for i, f in enumerate(files[:top]) if f in wanted)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(wanted), top)))
    return dcg / ideal


def chunk_rr(cited: Sequence[Cited], question: Question, top: int = TOP) -> float:
    for rank, (path, a, b) in enumerate(cited[:top], 1):
        if any(ans.overlaps(path, a, b) for ans in question.answers):
            return 1.0 / rank
    return 0.0


def score(cited: Sequence[Cited], question: Question, file_depth: Sequence[Cited] | None = None) -> dict:
    """``{"ndcg": file-level NDCG@10, "mrr": chunk-level RR@10}``; ``file_depth`` (a longer list of
    the same ranking, ``--top-files``) supplies the files when given."""
    files = ranked_files(file_depth if file_depth is not None else cited)
    return {"ndcg": file_ndcg(files, question.files), "mrr": chunk_rr(cited, question)}


def _t95(df: int) -> float:
    try:
        from scipy.stats import t

        return float(t.ppf(0.975, df))
    except ImportError:  # pragma: no cover - scipy ships with the project's dependencies
        return 1.96


def paired(a: Mapping[str, float], b: Mapping[str, float], qids: Sequence[str]) -> dict[str, float]:
    """Mean of ``a - b`` over ``qids`` and its 95% half-width (t, n - 1 degrees of freedom)."""
    d = [a[q] - b[q] for q in qids]
    if not d:
        return {"diff": float("nan"), "ci95": float("nan"), "n": 0}
    half = _t95(len(d) - 1) * statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return {"diff": round(statistics.fmean(d), 4), "ci95": round(half, 4), "n": len(d)}


def mean(values: Iterable[float]) -> float:
    v = list(values)
    return round(statistics.fmean(v), 4) if v else float("nan")


def groups_of(questions: Sequence[Question]) -> dict[str, list[str]]:
    """Question ids by group: ``all``, ``kind:K``, ``lang:L``, ``project:P``, ``lang:L|kind:K``."""
    out: dict[str, list[str]] = {}
    for q in questions:
        for g in (
            "all",
            f"kind:{q.kind}",
            f"lang:{q.language}",
            f"project:{q.project}",
            f"lang:{q.language}|kind:{q.kind}",
        ):
            out.setdefault(g, []).append(q.qid)
    return out


def summarize(per: Mapping[str, Mapping[str, float]], groups: Mapping[str, Sequence[str]]) -> dict:
    """Per group: mean NDCG@10, mean MRR@10 and the count."""
    return {
        g: {
            "ndcg": mean(per["ndcg"][q] for q in qids),
            "mrr": mean(per["mrr"][q] for q in qids),
            "n": len(qids),
        }
        for g, qids in groups.items()
    }


def versus_best_stage(
    per: Mapping[str, Mapping[str, Mapping[str, float]]],
    groups: Mapping[str, Sequence[str]],
    default: str = "default",
    stages: Sequence[str] = ("bm25", "dense"),
    metric: str = "ndcg",
) -> dict[str, dict]:
    """Per group: the default minus the stage with the higher mean in that group, paired."""
    present = [s for s in stages if s in per]
    if default not in per or not present:
        return {}
    out = {}
    for g, qids in groups.items():
        best = max(present, key=lambda s: statistics.fmean(per[s][metric][q] for q in qids))
        out[g] = {"stage": best, **paired(per[default][metric], per[best][metric], qids)}
    return out
