"""The code rules (``retrieval/code_rank.py``) act only when a question's candidates hold code: on
a corpus of prose (cranfield, a docs folder) the ranking is the same with them on or off and no
stage of theirs is in the trace; on a repository each is timed, and a call can turn each off."""

from __future__ import annotations

from pathlib import Path

from engine_fixtures import make_settings

from hybrid_rag.engine import Engine

RULES = ("path_roles", "path_match", "file_coherence", "definition_first")


def _engine(tmp_path: Path) -> Engine:
    return Engine(make_settings(tmp_path))


def test_on_prose_the_rules_change_nothing(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "tests").mkdir(parents=True)
    (docs / "install.md").write_text("# Install\n\nInstall the wing tunnel with pip; configure the flow.\n")
    (docs / "tests" / "flow.md").write_text("# Flow tests\n\nThe boundary layer flow was tested at mach 2.\n")
    (docs / "config.yaml").write_text("flow: laminar\nboundary: layer\n")
    (docs / "README.txt").write_text("Boundary layer flow over a wing, measured in the tunnel.\n")
    engine = _engine(tmp_path)
    try:
        engine.ingest([docs])
        for question in ("boundary layer flow over a wing", "where is the flow configured?", "FlowTests"):
            on = engine.query(question, top_k=4)
            off = engine.query(question, top_k=4, features=dict.fromkeys(RULES, False))
            assert [(c.id, c.score) for c in on.chunks] == [(c.id, c.score) for c in off.chunks]
            assert not set(RULES) & {t.stage for t in on.trace.timings}
    finally:
        engine.close()


def test_on_code_each_rule_is_timed_and_a_call_turns_it_off(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "retry.py").write_text(
        "def retry_delay(attempt):\n    return 2 ** attempt\n\n\ndef jitter():\n    return 0\n"
    )
    (repo / "tests" / "test_retry.py").write_text("def test_retry_delay():\n    assert retry_delay(1) == 2\n")
    (repo / "README.md").write_text("# Retry\n\nThe retry delay doubles each attempt.\n")
    engine = _engine(tmp_path)
    try:
        engine.ingest([repo])
        question = "how does retry_delay grow with each attempt?"
        stages = {t.stage for t in engine.query(question, top_k=3).trace.timings}
        assert set(RULES) <= stages
        for rule in RULES:
            off = engine.query(question, top_k=3, features={rule: False})
            assert rule not in {t.stage for t in off.trace.timings}
        first = engine.query(question, top_k=3).chunks[0]
        assert first.path == "retry.py" and first.breakdown["definition_first"] == 1.0
    finally:
        engine.close()


def test_the_folders_above_the_repository_are_no_role_and_no_path_words(tmp_path: Path) -> None:
    repo = tmp_path / "tests" / "benchmarks" / "retry"  # the checkout lives below such folders
    repo.mkdir(parents=True)
    (repo / "delay.py").write_text("def backoff(attempt):\n    return 2 ** attempt\n")
    (repo / "jitter.py").write_text("def jitter(attempt):\n    return attempt % 3\n")
    engine = _engine(tmp_path)
    try:
        engine.ingest([repo])
        result = engine.query("how is the retry wait grown?", top_k=2)
        assert [c.breakdown.get("role") for c in result.chunks] == [None, None]
        assert [c.breakdown.get("path_match") for c in result.chunks] == [None, None]
    finally:
        engine.close()
