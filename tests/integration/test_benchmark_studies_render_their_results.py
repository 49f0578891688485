"""Benchmark studies: each has the harness's shape, renders its committed JSON into what RESULTS.md
shows between its markers, and the suite runs end to end through the harness (fake embedder)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from hybrid_rag.evaluation.bench import quick_dataset

pytestmark = pytest.mark.integration

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

harness: ModuleType = importlib.import_module("harness")
STUDIES = harness.study_names()


def test_the_studies_are_found() -> None:
    assert {"suite", "peers", "fusion_study", "rerank_eval", "mixed_corpus", "lifecycle"} <= set(STUDIES)


@pytest.mark.parametrize("name", STUDIES)
def test_a_study_has_run_and_render(name: str) -> None:
    study = harness.load_study(name)
    assert callable(study.run) and callable(study.render)


@pytest.mark.parametrize("name", [n for n in STUDIES if harness.result_path(n).is_file()])
def test_results_md_shows_what_the_committed_json_renders(name: str) -> None:
    """RESULTS.md is the rendering of the committed JSON: re-rendering it changes nothing."""
    document = harness.DOCUMENT.read_text(encoding="utf-8")
    begin, _ = harness.markers(name)
    if begin not in document:
        pytest.skip(f"{name} has no section in RESULTS.md yet")
    result = harness.read_result(name)
    body = harness.load_study(name).render(result)
    assert "|---" in body  # a markdown table
    rendered = harness.replace_block(document, name, f"{body.rstrip()}\n\n{harness.environment_line(result)}")
    assert rendered == document


def test_the_environment_line_names_the_machine_and_leaves_out_the_unknown() -> None:
    env = {"cores": 2, "cpu_model": "AMD EPYC", "date": "2026-11-23", "git": {"commit": "577ea265d6"}}
    line = harness.environment_line({"environment": {**env, "load_average": [1.02], "seconds": 844.2}})
    assert line.startswith("_Measured 2026-11-23 at commit 577ea26: 2 cores (AMD EPYC)")
    assert "load average ? before and 1.02 after, 844.2 s" in line
    assert "RAM" not in line and "`" not in line
    assert harness.environment_line({}) == "_Machine not recorded._"
    wide = harness.environment_line({"environment": {**env, "cpu_simd": "AVX-512 VNNI"}})
    assert "2 cores (AMD EPYC, AVX-512 VNNI)" in wide


def _write_beir(root: Path) -> Path:
    data = quick_dataset(docs=8, queries=4)
    folder = root / data.name
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for doc_id, (title, text) in data.corpus.items():
            out.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as out:
        for query_id, text in data.queries.items():
            out.write(json.dumps({"_id": query_id, "text": text}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\t{d}\t{g}" for q, docs in data.qrels.items() for d, g in docs.items()]
    (folder / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_the_suite_runs_through_the_harness_into_another_file(tmp_path: Path) -> None:
    folder = _write_beir(tmp_path / "datasets")
    out = tmp_path / "suite.json"
    committed = harness.result_path("suite").read_bytes() if harness.result_path("suite").is_file() else None
    argv = ["--out", str(out), "--fake", "--datasets", str(folder.parent), "--work", str(tmp_path / "work")]
    argv += ["--configs", "bm25", "default", "--warmup", "0", "--torch-threads", "0"]
    assert harness.run_study("suite", argv) == out
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["environment"]["cores"] and result["environment"]["command"].startswith(
        "benchmarks/harness"
    )
    assert [r["config"] for r in result["results"]] == ["bm25", "default"]
    ids = result["query_ids"][folder.name]
    assert len(ids) == 4 and all(len(v) == 4 for v in result["results"][0]["per_query"].values())
    table = harness.load_study("suite").render(result)
    assert f"| **{folder.name}** |" in table and "| default | hybrid:" in table
    now = harness.result_path("suite").read_bytes() if harness.result_path("suite").is_file() else None
    assert now == committed  # the committed JSON is left alone
