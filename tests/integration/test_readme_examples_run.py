"""Every ```bash and ```python block of README.md and of every page of docs/ runs as written, so no
example can drift again: README.md first, then the pages in name order, each in its own order, all
in one workspace. A failing block fails with its file and line (``README.md:123``,
``docs/serving.md:20``).

How the blocks run (a reader following the README from the top):

* in a copy of this repository (its tracked and new files) in a temp dir, next to a ``shared``
  link to the judged datasets (``../shared/datasets`` as in a checkout), with the ``hybrid-rag``
  command and ``python`` of this venv first on PATH (what ``source .venv/bin/activate`` does),
  ``PYTHONPATH`` at this repository and the fake embedder (``HYBRID_RAG_EMBEDDING__MODEL=fake``);
  every block sees what the blocks before it left (``./data``, files they wrote);
* a bash block runs under ``set -e`` (as pasted into a shell: no ``pipefail``, so ``| head``
  stays quiet): any failing command fails it, with the README
  line of that command; a python block runs as a script.

A comment on the line just before a block's fence says how to run it:

* ``<!-- readme-test: skip (REASON) -->``: not run; the reason is required;
* ``<!-- readme-test: slow -->``: run, marked ``slow`` (minutes; CI runs it);
* ``<!-- readme-test: server -->``: run while a server is up: the test starts the block's
  ``hybrid-rag serve ... &`` line itself (on a free port, which replaces every ``8000`` of the
  block; with ``KEY`` set to the key it generates), waits for ``/readyz``, and runs the rest of the
  block; a later ``server`` block (the Python client) talks to the same server.

Adding an example needs nothing here: write it so it runs in this repository (or mark it).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
LANGS = {"bash": "bash", "sh": "bash", "python": "python"}
FENCE = re.compile(r"^```(\w+)\s*$")
MARK = re.compile(r"^<!--\s*readme-test:\s*(\w+)(?:\s*\((.*)\))?\s*-->\s*$")
SERVE = re.compile(r"^(?P<cmd>[^#]*\bhybrid-rag serve\b[^#&]*)&")
BLOCK_SECONDS = 900
DATASETS = "../shared/datasets"  # where an example finds the judged datasets (the workspace links them)

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Block:
    line: int  # line of the opening fence (1-based) in its file
    lang: str  # "bash" or "python"
    code: str
    mark: str = ""  # "", "skip", "slow" or "server"
    reason: str = ""
    source: str = "README.md"  # the file, relative to the repository

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


def readme_blocks(text: str, source: str = "README.md") -> list[Block]:
    """The bash and python blocks of ``text``, in order, each with the mark on the line before it."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("~~~"):  # a sample of output: a ``` fence inside it is its text
            i = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("~~~")), len(lines)) + 1
            continue
        fence = FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
        lang = LANGS.get(fence.group(1))
        if lang is not None:
            before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            mark = MARK.match(before.strip())
            blocks.append(
                Block(
                    line=i + 1,
                    lang=lang,
                    code="\n".join(lines[i + 1 : end]) + "\n",
                    mark=mark.group(1) if mark else "",
                    reason=(mark.group(2) or "").strip() if mark else "",
                    source=source,
                )
            )
        i = end + 1
    return blocks


BLOCKS = [
    block
    for page in PAGES
    for block in readme_blocks(page.read_text(encoding="utf-8"), str(page.relative_to(REPO)))
]


def test_every_mark_is_known_and_every_skip_says_why():
    for block in BLOCKS:
        assert block.mark in ("", "skip", "slow", "server"), f"{block.where}: unknown mark {block.mark!r}"
        if block.mark == "skip":
            assert block.reason, f"{block.where}: `readme-test: skip` needs a reason in parentheses"
    assert any(b.mark == "" for b in BLOCKS), "no README example runs"
    assert {b.source for b in BLOCKS} > {"README.md"}, "the docs/ pages' examples are not collected"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Workspace:
    """The repository copy the blocks run in, their environment, and the server of ``server`` blocks."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "repo"
        files = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout.decode()
        for name in filter(None, files.split("\0")):
            src = REPO / name
            if src.is_file() and not src.is_symlink():
                dest = self.dir / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
        datasets = Path(os.environ.get("HYBRID_RAG_DATASETS") or REPO.parent / "shared" / "datasets")
        self.datasets = datasets.is_dir()  # else an example reading them skips, as the judged-set tests do
        if self.datasets:
            (root / "shared").mkdir()
            (root / "shared" / "datasets").symlink_to(datasets.resolve())
        bin_dir = Path(sys.executable).parent
        self.env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("HYBRID_RAG_") or key == "HYBRID_RAG_DATASETS"
        }
        self.env.update(
            {
                "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                "PYTHONPATH": str(REPO),
                "HYBRID_RAG_EMBEDDING__MODEL": "fake",
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
            }
        )
        self.server: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start_server(self, command: str, block: Block) -> None:
        """Run a block's ``hybrid-rag serve`` line (on a free port) and wait until it is ready."""
        if self.server is not None:
            return
        self.port = _free_port()
        self.env["HYBRID_RAG_SERVER__PORT"] = str(self.port)
        log = (self.dir / "server.log").open("wb")
        self.server = subprocess.Popen(
            ["bash", "-c", command],
            cwd=self.dir,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.server.poll() is not None:
                pytest.fail(f"{block.where}: `{command.strip()}` exited: {self._server_log()}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail(f"{block.where}: the server never became ready: {self._server_log()}")
        keys = (self.dir / "data" / "api_keys").read_text().splitlines()
        self.env["KEY"] = next(k.strip() for k in keys if k.strip() and not k.startswith("#"))

    def _server_log(self) -> str:
        return (self.dir / "server.log").read_text(errors="replace")[-2000:]

    def stop_server(self) -> None:
        if self.server is not None and self.server.poll() is None:
            os.killpg(self.server.pid, signal.SIGTERM)
            try:
                self.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.server.pid, signal.SIGKILL)
                self.server.wait()

    def run(self, block: Block) -> None:
        code = block.code
        if DATASETS in code and not self.datasets:  # a fresh clone with nothing beside it
            pytest.skip(
                f"{block.where}: the judged datasets are not here ({DATASETS}; set HYBRID_RAG_DATASETS)"
            )
        if block.mark == "server":
            kept = []
            for text in code.splitlines():
                serve = SERVE.match(text)
                if serve is not None:
                    self.start_server(serve.group("cmd"), block)
                    text = ""  # the test started it; keep the line count for line numbers
                kept.append(text)
            if self.server is None:
                pytest.fail(f"{block.where}: a `server` block, but no `hybrid-rag serve ... &` line yet")
            code = "\n".join(kept).replace("8000", str(self.port)) + "\n"
        failure = run_block(block, code, self.dir, self.env)
        if failure is not None:
            pytest.fail(failure, pytrace=False)


def run_block(block: Block, code: str, cwd: Path, env: dict[str, str]) -> str | None:
    """Run ``code`` (the block, as the test adapted it) in ``cwd``: None when it succeeds, else
    the failure, starting with the README line of the command that failed."""
    stem = Path(block.source).stem.replace("-", "_")
    script = cwd / f"readme_{stem}_{block.line}.{'sh' if block.lang == 'bash' else 'py'}"
    script.write_text(code, encoding="utf-8")
    if block.lang == "bash":
        trap = "trap 'echo \"readme-test: failed at block line $LINENO\" >&2' ERR"
        argv = ["bash", "--noprofile", "--norc", "-c", f"set -eE; {trap}; source {script.name}"]
    else:
        argv = [sys.executable, script.name]
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=BLOCK_SECONDS, check=False)
    if done.returncode == 0:
        return None
    err = done.stderr.decode(errors="replace")
    where = block.where
    failed = re.search(r"readme-test: failed at block line (\d+)", err)
    if failed:
        where = f"{block.source}:{block.line + int(failed.group(1))}"
    elif block.lang == "python":
        lines = re.findall(rf'File ".*{re.escape(script.name)}", line (\d+)', err)
        if lines:
            where = f"{block.source}:{block.line + int(lines[-1])}"
    return (
        f"{where}: the {block.lang} example of {block.where} fails (exit {done.returncode}):\n"
        f"{err[-3000:]}\n{done.stdout.decode(errors='replace')[-1500:]}"
    )


def test_a_broken_example_fails_with_its_readme_line(tmp_path):
    text = (
        "# Title\n\n"  # lines 1-2
        "```bash\n"  # line 3: the fence
        "echo fine\n"  # line 4
        "false    # a command that fails\n"  # line 5
        "```\n\n"
        "<!-- readme-test: skip (needs a generator server) -->\n"
        "```python\n"  # line 9
        "```\n\n"
        "```python\n"  # line 12
        "x = 1\n"
        "raise SystemExit(undefined_name)\n"  # line 14
        "```\n"
    )
    bash, skipped, python = readme_blocks(text)
    assert (bash.line, bash.lang, bash.mark) == (3, "bash", "")
    assert (skipped.mark, skipped.reason) == ("skip", "needs a generator server")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    assert (run_block(bash, bash.code, tmp_path, env) or "").startswith("README.md:5: ")
    assert (run_block(python, python.code, tmp_path, env) or "").startswith("README.md:14: ")


def test_a_fence_inside_a_sample_of_output_is_not_an_example():
    text = "~~~\n$ hybrid-rag context q\n```python\ndef cut(points):\n```\n~~~\n```bash\necho ok\n```\n"
    (only,) = readme_blocks(text)
    assert (only.lang, only.code) == ("bash", "echo ok\n")


def test_an_example_on_the_judged_datasets_skips_where_they_are_absent(tmp_path, monkeypatch):
    """A fresh clone with nothing beside it: the README's `eval` example skips, it does not fail."""
    monkeypatch.setenv("HYBRID_RAG_DATASETS", str(tmp_path / "no-datasets-here"))
    ws = Workspace(tmp_path / "clone")
    eval_block = next(b for b in BLOCKS if b.source == "README.md" and DATASETS in b.code)
    with pytest.raises(pytest.skip.Exception, match="the judged datasets are not here"):
        ws.run(eval_block)


def _installed_package(where: Path) -> str:
    """Where this venv's python imports ``hybrid_rag`` from, run outside any checkout."""
    code = "import hybrid_rag; print(hybrid_rag.__file__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=where, capture_output=True, text=True)
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = Workspace(tmp_path_factory.mktemp("readme"))
    installed = _installed_package(ws.dir.parent)
    yield ws
    ws.stop_server()
    # a block that installs the package (``pip install -e .``) in the copy re-points this venv at the
    # copy, which the tests after it then import, and which is deleted later: mark such a block skip
    assert _installed_package(ws.dir.parent) == installed, "a README/docs block reinstalled the package"


def _params() -> list[object]:
    params = []
    for block in BLOCKS:
        marks = []
        if block.mark == "skip":
            marks.append(pytest.mark.skip(reason=f"{block.where}: {block.reason}"))
        elif block.mark == "slow":
            marks.append(pytest.mark.slow)
        params.append(pytest.param(block, id=f"{block.where}-{block.lang}", marks=marks))
    return params


@pytest.mark.parametrize("block", _params())
def test_readme_example_runs_as_written(workspace, block):
    workspace.run(block)
