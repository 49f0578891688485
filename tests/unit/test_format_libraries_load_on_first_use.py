"""A format's library is imported only when a file of that format is read: ingesting text loads
none of pypdfium2, python-docx, python-pptx, openpyxl; reading a PDF loads pypdfium2 alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import document_files as make

LIBRARIES = ("pypdfium2", "docx", "pptx", "openpyxl")
PROBE = """
import json, sys
from pathlib import Path
from hybrid_rag.engine import Engine
from hybrid_rag.ingest.loaders import load_file
for path in sys.argv[1:]:
    load_file(Path(path), 10**6)
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & set(LIBRARIES))))
""".replace("LIBRARIES", repr(LIBRARIES))


def loaded(*paths: Path) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *map(str, paths)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_libraries_load_with_their_format_only(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# notes\n\nplain text\n")
    (tmp_path / "m.pdf").write_bytes(make.pdf(["a page"]))
    (tmp_path / "s.csv").write_text("a,b\n1,2\n")
    assert loaded(tmp_path / "a.md", tmp_path / "s.csv") == []
    assert loaded(tmp_path / "m.pdf") == ["pypdfium2"]
