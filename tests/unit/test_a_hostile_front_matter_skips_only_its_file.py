"""Front matter is bounded: YAML aliases that expand without end ("billion laughs"), nesting
hundreds of levels deep, a block over the size limit and a date the calendar lacks each skip their
own file with the reason; the other files of the folder are stored, and a caller's metadata over
the limits is refused before any file is read."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.ingest.metadata import (
    FRONT_MATTER_MAX_ALIASES,
    FRONT_MATTER_MAX_BYTES,
    METADATA_MAX_DEPTH,
    METADATA_MAX_VALUES,
)


def laughs(levels: int) -> str:
    """Each level a list of nine aliases of the one before: 9 ** (levels + 1) values expanded."""
    names = "abcdefghij"[: levels + 1]
    return "\n".join(
        ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
        + [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in itertools.pairwise(names)]
    )


DEEP = "x: " + "[" * 600 + "]" * 600
HOSTILE = {
    "laughs.md": f"---\n{laughs(8)}\n---\n# Laughs\n\nlol\n",  # ~600 bytes, 9 ** 9 values
    "laughs-few-aliases.md": f"---\n{laughs(5)}\n---\n# Laughs\n\nlol\n",  # 45 aliases, 9 ** 6
    "year-zero.md": "---\ndate: 0000-01-01\n---\n# Year zero\n\ntext\n",
    "feb-30.md": "---\ndate: 2024-02-30\n---\n# February\n\ntext\n",
    "deep.md": f"---\n{DEEP}\n---\n# Deep\n\ntext\n",
    "deep-block.md": "---\n" + "".join(" " * i + f"k{i}:\n" for i in range(200)) + "---\n# Block\n",
    "big.md": "---\n" + "".join(f"k{i}: v\n" for i in range(FRONT_MATTER_MAX_BYTES // 6)) + "---\n# Big\n",
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    for name, text in HOSTILE.items():
        (root / name).write_text(text)
    (root / "good.md").write_text("---\ntype: guide\ndate: 2024-06-01\n---\n# Good\n\nbees and flowers\n")
    return root


def test_each_hostile_block_skips_its_file_and_the_rest_is_stored(engine: Engine, folder: Path) -> None:
    start = time.perf_counter()
    report = engine.ingest([folder])
    assert time.perf_counter() - start < 30  # the laughs alone took 82 s and 3.5 GB before
    assert [Path(p).name for p in report.plan.added] == ["good.md"]
    reasons = {Path(s.path).name: s.reason for s in report.plan.skipped}
    assert set(reasons) == set(HOSTILE)
    assert reasons["laughs.md"] == f"front matter has over {FRONT_MATTER_MAX_ALIASES} YAML aliases"
    assert reasons["laughs-few-aliases.md"] == f"front matter expands to over {METADATA_MAX_VALUES} values"
    assert "year 0 is out of range" in reasons["year-zero.md"]
    assert "day is out of range" in reasons["feb-30.md"]
    for name in ("deep.md", "deep-block.md"):
        assert f"nested over {METADATA_MAX_DEPTH} levels" in reasons[name]
    assert f"over {FRONT_MATTER_MAX_BYTES}" in reasons["big.md"]
    found = engine.query("bees flowers", mode="bm25", filters="meta.type=guide").chunks
    assert [Path(c.path).name for c in found] == ["good.md"]


def test_the_cli_stores_the_good_file_and_exits_0(
    tmp_path: Path, folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    code = main(["--data-dir", str(tmp_path / "data"), "ingest", str(folder)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "year 0 is out of range" in out.out + out.err


def test_a_callers_metadata_over_the_limits_is_refused_first(engine: Engine, folder: Path) -> None:
    deep: dict = {}
    node = deep
    for _ in range(500):
        node["k"] = {}
        node = node["k"]
    with pytest.raises(InputError, match=f"metadata nested over {METADATA_MAX_DEPTH} levels"):
        engine.ingest([folder / "good.md"], metadata={"deep": deep})
    with pytest.raises(InputError, match="metadata holds over 10000 values"):
        engine.ingest([folder / "good.md"], metadata={"many": list(range(20_000))})
    assert not engine.documents()
