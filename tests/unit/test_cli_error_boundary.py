"""A bug never shows a bare traceback: one line naming the error, exit 1, the traceback in the
data dir's logs/errors.log, and on stderr with --debug. Settings refuse true/false as numbers."""

from __future__ import annotations

import pytest

import hybrid_rag.cli as cli
from hybrid_rag.errors import ConfigError
from hybrid_rag.settings import load_settings


def boom(args, settings):
    raise ZeroDivisionError("division by zero")


@pytest.fixture
def buggy_stats(monkeypatch):
    parser = cli.build_parser()
    original = cli.build_parser

    def patched():
        p = original()
        for action in p._subparsers._group_actions:
            action.choices["stats"].set_defaults(func=boom)
        return p

    monkeypatch.setattr(cli, "build_parser", patched)
    return parser


def test_a_bug_is_one_line_and_logged(buggy_stats, tmp_path, capsys) -> None:
    data = tmp_path / "data"
    data.mkdir()
    assert cli.main(["--data-dir", str(data), "stats"]) == cli.EXIT_BUG
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "unexpected ZeroDivisionError: division by zero" in err and "--debug" in err
    log = (data / "logs" / "errors.log").read_text()
    assert "Traceback" in log and "ZeroDivisionError" in log


def test_debug_prints_the_traceback(buggy_stats, tmp_path, capsys) -> None:
    assert cli.main(["--debug", "--data-dir", str(tmp_path), "stats"]) == cli.EXIT_BUG
    assert "Traceback (most recent call last)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "key", ["retrieval.top_k", "rerank.weight", "retrieval.min_score_code", "chunking.max_tokens"]
)
def test_true_is_not_a_number(tmp_path, key: str) -> None:
    section, name = key.split(".")
    config = tmp_path / "c.yaml"
    config.write_text(f"{section}:\n  {name}: true\n")
    with pytest.raises(ConfigError, match=f"{key}: .*not true or false"):
        load_settings(config, environ={})
