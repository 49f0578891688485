"""Escape sequences and bidi overrides in document text and file names are printed as visible
escapes by every plain-text command (query, context, documents, symbols, outline, ingest's
skip lines); ``--json`` keeps the exact text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hybrid_rag.cli import main
from hybrid_rag.terminal import terminal_safe

CLEAR = "\x1b[2J\x1b]8;;http://evil.example\x07"  # clear the screen, open a hyperlink
OVERRIDE = "\u202e"  # right-to-left override
BAD = (CLEAR, OVERRIDE, "\x9b", "\u2066", "\x08", "\r")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The corpus below, ingested once for the module (its tests only print what it holds); the
    fake embedder stays set while they run."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
        yield _ingested(tmp_path_factory.mktemp("escapes"))


def _ingested(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    name = f"evil{OVERRIDE}gpj.py"
    (root / name).write_text(
        f'def pelican_{OVERRIDE}x():\n    """Pelicans {CLEAR} fly\x9b low {OVERRIDE}."""\n    return 1\n'
    )
    (root / "notes.md").write_text(f"# Pelicans\n\nPelicans{CLEAR} glide over\u2066 the bay.\x08\r\n")
    (root / "bad\x1b[2J.md").write_bytes(b"\xff\xfe\x00binary")  # skipped: its name is printed
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "ingest", str(root)]) == 0
    return data


def _clean(text: str) -> None:
    for bad in ("\x1b", "\u202e", "\x9b", "\u2066", "\x08", "\r", "\x07"):
        assert bad not in text, repr(text)


@pytest.mark.parametrize(
    "argv",
    [
        ["query", "pelicans"],
        ["context", "pelicans"],
        ["documents"],
        ["symbols", "pelican", "--mode", "prefix"],
    ],
)
def test_plain_output_is_neutralised(data: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    main(["--data-dir", str(data), *argv])
    out = capsys.readouterr()
    _clean(out.out)
    _clean(out.err)
    assert "\\x1b[2J" in out.out or "\\u202e" in out.out  # shown, not dropped


def test_outline_and_ingest_lines_are_neutralised(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    corpus = data.parent / "corpus"
    main(["--data-dir", str(data), "outline", str(corpus / f"evil{OVERRIDE}gpj.py")])
    out = capsys.readouterr()
    _clean(out.out + out.err)
    assert "evil\\u202egpj.py" in out.out
    main(["--data-dir", str(data), "ingest", str(corpus)])  # unchanged: it prints its skip line
    out = capsys.readouterr()
    _clean(out.out + out.err)


def test_json_keeps_the_exact_text(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    main(["--data-dir", str(data), "query", "pelicans glide", "--json"])
    found = json.loads(capsys.readouterr().out)
    assert any(CLEAR in r["text"] for r in found["results"])


def test_the_helper_keeps_newlines_tabs_and_ordinary_text() -> None:
    text = "línea\tdos\nпривет 日本 ✓"
    assert terminal_safe(text) == text
    assert terminal_safe("\x00\x1f\x7f\x85\u202a\u2069") == "\\x00\\x1f\\x7f\\x85\\u202a\\u2069"


def test_progress_bars_keep_their_own_control_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    """tqdm's bars move the cursor with \\r: they write to the terminal itself, not through the
    neutralising stream (they show stage names and numbers only)."""
    import io
    import sys

    from hybrid_rag.cli import _Bars, safe_terminal

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    with safe_terminal(stdout=True):
        bars = _Bars(True)
        for done in range(0, 101, 25):
            bars("chunks", done, 100)
        bars.close()
    assert "\r" in tty.getvalue() and "\\x0d" not in tty.getvalue()
