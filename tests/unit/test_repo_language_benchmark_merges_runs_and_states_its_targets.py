"""The multi-language repository benchmark's results (``repo_search_languages``): runs made apart
merge into one with each group's means weighted by its questions, and the rendering states the
issue's targets (non-Python within 0.05 of Python, the default at least its best single stage,
identifier success@1 >= 0.90) from the summaries alone."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from studies._repo_merge import merge  # noqa: E402
from studies._repo_render import render_languages  # noqa: E402


def _s(mrr: float, n: int) -> dict[str, float]:
    return {"mrr@10": mrr, "success@1": mrr, "success@10": 1.0, "n": n}


def _result(name: str, language: str, default: float, bm25: float, ident: float) -> dict:
    group = "python" if language == "python" else "other"
    project = {
        "name": name,
        "project": f"{name}==1",
        "language": language,
        "source": "pip",
        "ingest": {"g": {"corpus": {"chunks": 10}}},
        "scored": {"doc": 2, "identifier": 1, "judged": 0},
    }
    rows = []
    for config, mrr in (("default", default), ("bm25", bm25)):
        summary = {
            "doc": _s(mrr, 2),
            f"doc|{name}": _s(mrr, 2),
            f"doc|lang:{language}": _s(mrr, 2),
            f"doc|{group}": _s(mrr, 2),
            "identifier": _s(ident, 1),
            f"identifier|{name}": _s(ident, 1),
        }
        per_query = {"mrr@10": [mrr, mrr, ident]}
        rows.append({"config": config, "description": config, "summary": summary, "per_query": per_query})
    return {
        "format": "f",
        "protocol": {"top_k": 10, "embedder": "fake"},
        "projects": [project],
        "query_ids": [f"{name}:0", f"{name}:1", f"{name}:id:0"],
        "kinds": ["doc", "doc", "identifier"],
        "rows": rows,
    }


def test_runs_merge_with_means_weighted_by_questions() -> None:
    merged = merge([_result("click", "python", 0.6, 0.4, 1.0), _result("fmt", "cpp", 0.3, 0.5, 0.0)])
    default = next(r for r in merged["rows"] if r["config"] == "default")
    assert default["summary"]["doc"] == {"mrr@10": 0.45, "success@1": 0.45, "success@10": 1.0, "n": 4}
    assert default["summary"]["doc|fmt"]["mrr@10"] == 0.3 and default["summary"]["identifier"]["n"] == 2
    assert default["per_query"]["mrr@10"] == [0.6, 0.6, 1.0, 0.3, 0.3, 0.0]
    assert merged["query_ids"][3] == "fmt:0" and [p["name"] for p in merged["projects"]] == ["click", "fmt"]


def test_the_rendering_states_each_target() -> None:
    merged = merge([_result("click", "python", 0.6, 0.4, 1.0), _result("fmt", "cpp", 0.3, 0.5, 0.0)])
    text = render_languages(merged)
    assert "| cpp | 2 | 0.300 | 0.500 |" in text
    assert "non-Python doc MRR@10 0.300 against Python's 0.600 (within 0.05: not met)" in text
    assert "fmt 0.300 < 0.500" in text and "click" not in text.split("single stage")[1].split(";")[0]
    assert "identifier success@1 0.500 (>= 0.90: not met)" in text
