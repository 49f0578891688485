"""The command line: exit codes, one-line errors on stderr, JSON output."""

import json
from pathlib import Path

import pytest
from fake_http import serve

pytestmark = pytest.mark.integration


def _one_error_line(err: str) -> str:
    """The one error line on stderr; ``# note:`` lines (a stage the retrieval skipped) are not errors."""
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("# note: ")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_ingest_query_stats_round_trip(cli, corpus, capsys):
    assert cli("ingest", str(corpus), "--collection", "demo") == 0
    out = capsys.readouterr().out
    assert "2 new" in out and "index version 1" in out

    assert cli("query", "compost drainage clay soil", "--json", "--top-k", "2") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["results"][0]["path"].endswith("garden.md")
    assert data["results"][0]["collection"] == "demo"
    assert {t["stage"] for t in data["trace"]["timings"]} >= {"dense", "bm25", "fuse"}

    assert cli("stats", "--json") == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["documents"] == 2 and stats["live_version"] == 1 and stats["model"] == "fake-hash"


def test_query_before_ingest(cli, capsys):
    assert cli("query", "anything") == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "no index yet in " in line and "run `hybrid-rag ingest PATH`" in line


def test_missing_path(cli, tmp_path, capsys):
    assert cli("ingest", str(tmp_path / "nope")) == 2
    assert "does not exist" in _one_error_line(capsys.readouterr().err)


def test_malformed_config(cli, tmp_path, capsys):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("retrieval:\n  dense_top_k: -4\n")
    assert cli("--config", str(cfg), "stats") == 2
    assert "retrieval.dense_top_k" in _one_error_line(capsys.readouterr().err)


def test_a_model_that_is_not_available_offline_is_one_clear_line(cli, corpus, capsys, monkeypatch):
    assert cli("ingest", str(corpus)) == 0
    capsys.readouterr()
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "no-such-org/no-such-model")
    assert cli("query", "soil") == 2
    assert "no-such-org/no-such-model" in _one_error_line(capsys.readouterr().err)


def test_dry_run_lists_changes(cli, corpus, capsys):
    assert cli("ingest", str(corpus), "--dry-run") == 0
    out = capsys.readouterr().out
    assert "would ingest: 2 new" in out and "garden.md" in out
    assert cli("query", "soil") == 2  # nothing was written


def test_context_and_ask_cite_real_lines_and_log_the_query(cli, corpus, capsys, tmp_path):
    assert cli("ingest", str(corpus)) == 0
    capsys.readouterr()
    question = "compost drainage clay soil"
    assert cli("context", question, "--json", "--max-tokens", "400", "--absolute-paths") == 0
    ctx = json.loads(capsys.readouterr().out)
    assert ctx["token_count"] <= 400 and ctx["sources"]
    for quote in ctx["quotes"]:
        assert quote["path"].endswith(("garden.md", "geometry.py")) and not quote["fragment"]
        lines = Path(quote["path"]).read_text().split("\n")
        assert quote["text"] == "\n".join(lines[quote["start_line"] - 1 : quote["end_line"]])
    assert {Path(q["path"]).suffix for q in ctx["quotes"]} == {".md", ".py"}
    assert cli("ask", "compost drainage clay soil") == 0
    captured = capsys.readouterr()
    assert "[1]" in captured.out and "no generator configured" in captured.err
    assert cli("query", "soil", "--filter", "source_type=code", "--no-rerank", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert all(r["source_type"] == "code" for r in data["results"])
    assert cli("stats", "--json") == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["queries"]["queries"] == 3  # context, ask and query were logged


def _completion(text: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}).encode()


def _with_generator(monkeypatch, url: str) -> None:
    monkeypatch.setenv("HYBRID_RAG_GENERATOR__BASE_URL", url)
    monkeypatch.setenv("HYBRID_RAG_GENERATOR__RETRIES", "0")
    monkeypatch.setenv("HYBRID_RAG_GENERATOR__TIMEOUT_SECONDS", "5")


def test_ask_prints_the_context_then_the_generators_answer_and_sources(cli, corpus, capsys, monkeypatch):
    assert cli("ingest", str(corpus)) == 0
    capsys.readouterr()
    with serve("/v1") as server:
        server.replies = [(200, _completion("Mix compost into clay soil for drainage [1]."))]
        _with_generator(monkeypatch, server.url)
        assert cli("ask", "compost drainage clay soil") == 0
        sent = json.loads(server.requests[-1]["body"])["messages"][-1]["content"]
    out = capsys.readouterr().out
    context, answer = out.split("# Answer", 1)
    assert context.strip() == sent.strip()  # what was printed is what was sent
    assert "[1]" in context and "garden.md:" in context
    assert "Mix compost into clay soil for drainage [1]." in answer
    assert "Sources:" in answer and "garden.md:" in answer.split("Sources:", 1)[1]


def test_ask_with_a_failing_generator_keeps_the_context_and_says_why(cli, corpus, capsys, monkeypatch):
    assert cli("ingest", str(corpus)) == 0
    capsys.readouterr()
    with serve("/v1") as server:
        server.replies = [(500, b'{"error": "model crashed"}')]
        _with_generator(monkeypatch, server.url)
        assert cli("ask", "compost drainage clay soil") == 2
    captured = capsys.readouterr()
    assert "[1]" in captured.out and "garden.md:" in captured.out and "# Answer" not in captured.out
    line = _one_error_line(captured.err)
    assert "no answer" in line and "500" in line and "context above" in line


def _records(tmp_path) -> list[dict]:
    path = tmp_path / "home" / "logs" / "queries.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_ask_lists_the_sources_the_answer_cites_and_logs_its_generate_time(
    cli, corpus, capsys, monkeypatch, tmp_path
):
    assert cli("ingest", str(corpus)) == 0
    capsys.readouterr()
    with serve("/v1") as server:
        _with_generator(monkeypatch, server.url)
        server.replies = [(200, _completion("Compost helps [1]; see also [7]."))]
        assert cli("ask", "compost drainage clay soil", "--no-self-check") == 0
        cited = capsys.readouterr()
        server.replies = [(200, _completion("Compost helps drainage."))]
        assert cli("ask", "compost drainage clay soil", "--no-self-check") == 0
        uncited = capsys.readouterr()
    context, answer = cited.out.split("# Answer", 1)
    first = next(line for line in context.splitlines() if line.startswith("[1] "))  # "[1] path:a-b"
    assert answer.split("Sources:", 1)[1].strip() == first  # only the cited id, as the context cites it
    assert "[7]" in cited.err and "not in the context" in cited.err
    assert "none: the answer cites no [n]" in uncited.out.split("Sources:", 1)[1]
    records = _records(tmp_path)
    assert len(records) == 2 and all(r["stages_ms"]["generate"] > 0 for r in records)
    assert all({"context", "dense", "total"} <= set(r["stages_ms"]) for r in records)


def test_query_self_check_flag_runs_it_and_stats_names_the_denominator(cli, corpus, capsys, tmp_path):
    assert cli("ingest", str(corpus)) == 0
    assert cli("query", "world cup 1998 final", "--json") == 0  # the self-check is not run by default
    assert cli("query", "world cup 1998 final", "--self-check", "--json") == 0
    assert cli("context", "compost drainage clay soil", "--json", "--no-self-check") in (0, 1)
    capsys.readouterr()
    plain, checked, unchecked_context = _records(tmp_path)
    assert "attempts" not in plain and "attempts" not in unchecked_context
    assert checked["retried"] is True and checked["weak"] is True
    assert any(n.startswith("self-check") for n in checked["notes"])
    assert cli("stats") == 0
    out = capsys.readouterr().out
    assert "3 logged, 1 of them self-checked" in out
    assert "retried 1 of 1 self-checked queries (100%)" in out and "left weak 1 of 1 (100%)" in out


def test_context_json_has_the_trace_with_the_context_stage(cli, corpus, capsys):
    assert cli("ingest", str(corpus)) == 0
    capsys.readouterr()
    assert cli("context", "compost drainage clay soil", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    stages = [t["stage"] for t in data["trace"]["timings"]]
    assert "context" in stages and "dense" in stages
    verdict = data["self_check"]
    assert (data["confidence"], data["weak_evidence"]) == (verdict["confidence"], verdict["weak"])
