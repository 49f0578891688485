"""The data dir is its owner's alone, as docs/serving.md says, whatever the umask: folders 0700
(the data dir, ``indices/``, each version folder), files 0600 (``CURRENT``, BM25 segments, the
store, ``api_keys``), so another local user cannot swap ``CURRENT`` or read the keys."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from hybrid_rag.cli import main
from hybrid_rag.server.auth import generate_key


@pytest.fixture(params=[0o000, 0o022])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _wrong_modes(data: Path) -> list[str]:
    wrong = []
    for path in [data, *sorted(data.rglob("*"))]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode != (0o700 if path.is_dir() else 0o600):
            wrong.append(f"{oct(mode)} {path.relative_to(data.parent)}")
    return wrong


def test_every_folder_is_0700_and_every_file_0600(
    umask: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nbees and flowers\n")
    (corpus / "b.py").write_text("def pollinate():\n    return 1\n")
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "ingest", str(corpus)]) == 0
    (corpus / "c.md").write_text("# C\n\nmore bees\n")
    assert main(["--data-dir", str(data), "ingest", str(corpus)]) == 0  # a second version
    assert main(["--data-dir", str(data), "query", "bees"]) == 0
    generate_key(data / "api_keys")
    names = {p.name for p in data.rglob("*")}
    assert {"CURRENT", "v000001", "v000002", "api_keys", "store.sqlite3"} <= names
    assert any(n.endswith(".npz") for n in names)
    assert _wrong_modes(data) == []


def test_a_keys_file_in_a_new_folder_is_private(umask: int, tmp_path: Path) -> None:
    generate_key(tmp_path / "new" / "keys")
    assert _wrong_modes(tmp_path / "new") == []
