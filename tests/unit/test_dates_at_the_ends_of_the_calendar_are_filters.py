"""Dates at the ends of the calendar in a filter (``mtime<9999-12-31``, ``meta.date=9999-12-31``)
filter as any other date; one out of range in UTC is a clear error naming it (exit 2, HTTP 400)."""

from __future__ import annotations

import pytest
from engine_fixtures import engine_over, write_tree

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    end = {"end.md": "---\ndate: 9999-12-31\n---\n# End\n\nsoil at the end of time\n"}
    with engine_over(write_tree(tmp_path_factory.mktemp("dates") / "docs", end)) as eng:
        yield eng


@pytest.mark.parametrize("text", ["mtime<9999-12-31", "meta.date=9999-12-31", "mtime>0001-01-01"])
def test_the_last_and_first_days_filter(engine: Engine, text: str) -> None:
    assert engine.query("soil", filters=text).chunks


def test_a_date_out_of_range_in_utc_names_it(engine: Engine) -> None:
    with pytest.raises(InputError, match="0001-01-01T00:00"):
        engine.query("soil", filters="mtime>0001-01-01T00:00+05:00")


def test_the_cli_exits_2(
    engine: Engine, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    data = str(engine.settings.data_dir)
    code = main(["--data-dir", data, "query", "soil", "--filter", "mtime>0001-01-01T00:00+05:00"])
    assert code == 2 and "out of range" in capsys.readouterr().err
