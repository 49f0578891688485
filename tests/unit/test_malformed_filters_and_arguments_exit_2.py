"""A malformed filter or argument is a clear error and exit 2, never "0 results" and exit 1:
``--filter 'page>>1'``, ``'page>=two'``, ``--top-k -3``; the unknown-field message lists the place
fields and ``meta.*`` among the valid ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_rag.cli import main
from hybrid_rag.errors import InputError
from hybrid_rag.filters import FIELDS, parse_filter
from hybrid_rag.filters.language import LOCATOR_FIELDS


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("malformed")
    (tmp / "docs").mkdir()
    (tmp / "docs" / "a.md").write_text("# Pages\n\nPages and slides are places in a document.\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
        assert main(["--data-dir", str(tmp / "data"), "ingest", str(tmp / "docs")]) == 0
    return tmp / "data"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--filter", "page>>1"], "page needs a number, got '>1'"),
        (["--filter", "page>=two"], "page needs a number, got 'two'"),
        (["--filter", "slide=third"], "slide needs a number"),
        (["--filter", "pgae=1"], "did you mean 'page'?"),
        (["--top-k", "-3"], "--top-k: must be a positive whole number, got '-3'"),
        (["--top-k", "0"], "--top-k: must be a positive whole number, got '0'"),
    ],
)
@pytest.mark.parametrize("command", ["query", "context"])
def test_a_malformed_argument_exits_2_with_the_reason(
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    args: list[str],
    message: str,
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    capsys.readouterr()
    try:
        code = main(["--data-dir", str(data_dir), command, "pages and slides", *args])
    except SystemExit as exc:  # argparse's own usage error
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err


def test_the_unknown_field_message_lists_every_field_kind() -> None:
    with pytest.raises(InputError) as caught:
        parse_filter("colour=red")
    listed = str(caught.value).split("valid fields: ")[1]
    names = set(listed.split(", "))
    assert {"page", "slide", "sheet", "row", "cell", "chapter", "meta.<key>"} <= names
    assert set(FIELDS) | set(LOCATOR_FIELDS) <= names
