"""``hybrid-rag query``: each per-call stage flag changes what runs, as the JSON trace shows."""

from __future__ import annotations

import json
import re

import pytest
from fake_http import closed_port

pytestmark = pytest.mark.integration


@pytest.fixture
def cli(cli, corpus):
    """The shared ``cli`` (tests/conftest.py) after an ingest of the corpus with a long guide."""
    long_doc = corpus / "docs" / "guide.md"
    sections = [
        f"## Part {i}\n\n" + "\n".join(f"Step {i}.{j}: water the compost heap." for j in range(40))
        for i in range(4)
    ]
    long_doc.write_text("# Guide\n\n" + "\n\n".join(sections) + "\n")
    assert cli("ingest", str(corpus)) == 0
    return cli


def query_json(cli, capsys, *flags: str) -> dict:
    capsys.readouterr()
    assert cli("query", "compost drainage clay soil", "--json", *flags) == 0
    return json.loads(capsys.readouterr().out)


def stages(data: dict) -> set[str]:
    return {t["stage"] for t in data["trace"]["timings"]}


def test_expansion_is_on_by_default_and_off_per_call(cli, capsys):
    assert "expansion" in stages(query_json(cli, capsys))
    assert "expansion" not in stages(query_json(cli, capsys, "--no-expansion"))


def test_mode_picks_the_retrievers(cli, capsys):
    bm25 = query_json(cli, capsys, "--mode", "bm25", "--no-expansion")
    assert bm25["mode"] == "bm25" and {"bm25"} <= stages(bm25) and "dense" not in stages(bm25)
    dense = query_json(cli, capsys, "--mode", "dense", "--no-expansion")
    assert "dense" in stages(dense) and "bm25" not in stages(dense)


def test_mmr_and_rerank_switch_on_per_call(cli, capsys):
    data = query_json(cli, capsys, "--mmr", "--rerank")
    assert {"mmr", "rerank"} <= stages(data)
    assert "embedding_windows" in data["results"][0]["breakdown"]
    assert not {"mmr", "rerank"} & stages(query_json(cli, capsys, "--no-mmr", "--no-rerank"))


def test_multi_query_without_a_generator_is_a_note(cli, capsys):
    data = query_json(cli, capsys, "--multi-query", "--no-expansion")
    assert data["results"] and "expansion" in stages(data)
    assert (
        "expansion skipped (multi_query): no generator configured (set generator.base_url)"
        in data["trace"]["notes"]
    )


def test_routing_sends_a_code_question_to_code(cli, capsys):
    capsys.readouterr()
    assert cli("query", "parse_config_file returns dict", "--json", "--routing") == 0
    data = json.loads(capsys.readouterr().out)
    assert any("routed to source_type=code" in n for n in data["trace"]["notes"])
    assert {r["source_type"] for r in data["results"]} == {"code"}


def test_parent_context_is_printed_in_plain_output_and_in_json(cli, capsys, monkeypatch):
    monkeypatch.setenv("HYBRID_RAG_RETRIEVAL__PARENT_MODE", "enclosing")
    capsys.readouterr()
    assert cli("query", "water the compost heap step", "--parent-context", "--top-k", "3") == 0
    out = capsys.readouterr().out
    assert re.search(r"\n    parent context \(section\) \S*guide\.md:\d+-\d+:\n      ## Part \d\n", out)
    assert cli("query", "water the compost heap step", "--no-parent-context", "--top-k", "3") == 0
    assert "parent context" not in capsys.readouterr().out
    data = query_json(cli, capsys, "--parent-context")
    assert "parent_context" in stages(data)
    assert any(r.get("parent", {}).get("kind") == "section" for r in data["results"])


def test_a_feature_flag_value_must_be_a_bool(cli, capsys, monkeypatch):
    monkeypatch.setenv("HYBRID_RAG_FEATURES__RERANK", "maybe")
    assert cli("query", "soil") == 2
    assert "features.rerank" in capsys.readouterr().err


def test_query_runs_the_self_check_only_when_asked(cli, capsys):
    assert "self_check" not in query_json(cli, capsys)
    data = query_json(cli, capsys, "--self-check")
    assert data["results"] and data["self_check"]["attempts"][0]["strategy"] == "original"
    assert 0 <= data["self_check"]["confidence"] <= 1
    assert cli("query", "compost drainage clay soil", "--self-check") == 0
    line = r"\n# self-check: confidence [01]\.\d{3}.*, attempts: original [01]\.\d{3}"
    assert re.search(line, capsys.readouterr().out)


def test_context_tells_the_user_on_stderr_that_expansion_was_skipped(cli, capsys, monkeypatch):
    monkeypatch.setenv("HYBRID_RAG_GENERATOR__BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    monkeypatch.setenv("HYBRID_RAG_GENERATOR__RETRIES", "0")
    monkeypatch.setenv("HYBRID_RAG_EXPANSION__METHOD", "hyde")
    capsys.readouterr()
    assert cli("context", "compost drainage clay soil", "--max-tokens", "400") == 0
    captured = capsys.readouterr()
    assert "[1] " in captured.out and "expansion skipped" not in captured.out  # the LLM's text stays clean
    assert "# note: expansion skipped (hyde): generator at " in captured.err
    assert "# note: expansion: offline prf used instead of hyde" in captured.err


def test_hubness_switches_on_per_call_and_rescores_dense(cli, capsys):
    off = query_json(cli, capsys, "--mode", "dense", "--no-expansion")
    on = query_json(cli, capsys, "--mode", "dense", "--no-expansion", "--hubness")
    dense_off = {r["id"]: r["breakdown"]["dense"] for r in off["results"]}
    dense_on = {r["id"]: r["breakdown"]["dense"] for r in on["results"]}
    shared = set(dense_off) & set(dense_on)
    assert shared and any(abs(dense_on[i] - dense_off[i]) > 1e-6 for i in shared)  # 2cos - r, not cos
    assert not any("hubness" in note for note in on["trace"]["notes"])  # the version has its table
