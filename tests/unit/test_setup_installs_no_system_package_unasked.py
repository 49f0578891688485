"""``scripts/setup.sh`` (which ``scripts/test.sh`` runs) installs Python packages into .venv and
nothing system-wide unless asked: chromium for the browser test only with ``--with-browser`` or
``SETUP_INSTALL_BROWSER=1``; otherwise it says how, and the browser test skips. Run on a copy
of the script with stand-ins for ``.venv/bin/python``, ``apt-get`` and ``id`` (as root) that
record their calls."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _stub(path: Path, body: str) -> None:
    path.write_text(f"#!/usr/bin/env bash\n{body}\n")
    path.chmod(0o755)


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "setup.sh", root / "scripts" / "setup.sh")
    (root / ".venv" / "bin").mkdir(parents=True)
    _stub(root / ".venv" / "bin" / "python", f'echo "python $*" >> {tmp_path}/calls; echo 0.0')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stub(bin_dir / "apt-get", f'echo "apt-get $*" >> {tmp_path}/calls')
    _stub(bin_dir / "id", "echo 0")  # root: the case that used to install unasked
    return root


def _setup(sandbox: Path, *args: str, **env: str) -> tuple[list[str], str]:
    environ = {k: v for k, v in os.environ.items() if k != "SETUP_INSTALL_BROWSER"}
    environ.update(
        PATH=f"{sandbox.parent / 'bin'}{os.pathsep}{environ['PATH']}",
        SETUP_CHROMIUM=str(sandbox / "no-chromium-here"),
        **env,
    )
    done = subprocess.run(
        ["bash", str(sandbox / "scripts" / "setup.sh"), *args], env=environ, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    calls = sandbox.parent / "calls"
    return (calls.read_text().splitlines() if calls.exists() else []), done.stderr


def test_without_asking_no_system_package_is_installed_and_it_says_how(sandbox: Path) -> None:
    calls, err = _setup(sandbox)
    assert not [c for c in calls if c.startswith("apt-get")]
    assert any("pip install" in c for c in calls)  # the Python packages, into .venv
    assert "the browser test will skip" in err and "--with-browser" in err


@pytest.mark.parametrize(("args", "env"), [(("--with-browser",), {}), ((), {"SETUP_INSTALL_BROWSER": "1"})])
def test_asked_it_installs_chromium(sandbox: Path, args: tuple[str, ...], env: dict[str, str]) -> None:
    calls, _ = _setup(sandbox, *args, **env)
    assert "apt-get install -y -qq chromium" in calls


def test_no_torch_installs_no_browser_either(sandbox: Path) -> None:
    calls, _ = _setup(sandbox, "--no-torch", "--with-browser")
    assert not [c for c in calls if c.startswith("apt-get")] and not any("torch==" in c for c in calls)
