"""Shared fixtures: a small mixed corpus on disk and an Engine with the deterministic fake embedder."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from engine_fixtures import engine_over, write_tree
from fake_settings import fake_settings
from pg_server import STORES, fresh_database

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings

PY_SOURCE = textwrap.dedent(
    '''\
    """Geometry helpers."""

    import math


    def circle_area(radius: float) -> float:
        """Area of a circle of the given radius."""
        return math.pi * radius * radius


    def parse_config_file(path: str) -> dict:
        """Read a key=value configuration file into a dictionary."""
        result = {}
        with open(path) as handle:
            for line in handle:
                key, _, value = line.partition("=")
                result[key.strip()] = value.strip()
        return result
    '''
)

MD_SOURCE = textwrap.dedent(
    """\
    # Gardening notes

    Tomatoes need full sun and regular watering. Pinch out the side shoots
    so that the plant puts its energy into the fruit.

    ## Soil

    Compost improves drainage in heavy clay soil and keeps moisture in sandy soil.
    Earthworms thrive when the soil is rich in organic matter.
    """
)


CORPUS = {"src/geometry.py": PY_SOURCE, "docs/garden.md": MD_SOURCE}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "corpus", CORPUS)


@pytest.fixture(scope="module")
def module_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``corpus`` written once per module, for the module-scoped engines of tests that only read."""
    return write_tree(tmp_path_factory.mktemp("shared") / "corpus", CORPUS)


@pytest.fixture(scope="module")
def ingested_corpus(module_corpus: Path):
    """``corpus`` ingested once per module by a fake-embedder Engine, for tests that only ask it
    questions (a test that ingests, deletes or rebuilds takes ``engine`` and ingests itself)."""
    with engine_over(module_corpus) as eng:
        yield eng


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return fake_settings(tmp_path / "data")


@pytest.fixture
def engine(settings: Settings):
    with Engine(settings) as eng:
        yield eng


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``hybrid-rag`` in this process (``cli("query", "...")`` -> exit code), with the fake embedder
    and a fresh ``HYBRID_RAG_HOME``; a module that needs more overrides it, asking for this one."""
    from hybrid_rag.cli import main

    monkeypatch.setenv("HYBRID_RAG_EMBEDDING__MODEL", "fake")
    monkeypatch.setenv("HYBRID_RAG_HOME", str(tmp_path / "home"))
    return lambda *args: main(list(args))


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest):
    """None (the SQLite file in the data dir), then the URL of a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield None
        return
    with fresh_database() as url:
        yield url


# --- Ctrl-C of the test run --------------------------------------------------------------------
# A test that runs the CLI in this process (``main([...])``) catches KeyboardInterrupt as the CLI
# must (exit 130): a Ctrl-C landing there failed that test and the run went on. The handler below
# notes the Ctrl-C, and the run stops after that test. Then the process ends at once: pytest's
# gc passes at unconfigure and the interpreter's teardown (the loaded models, thread pools) took
# ~11 s of the 21 s between a Ctrl-C and the prompt on a loaded 2-core machine; and pytest's
# removal of an older run's temp dirs (it keeps 3; a whole suite's indices and stores) is left to
# the next run: it held the prompt another 8 s after a run of tests/integration alone.
_CTRL_C: dict[str, bool] = {}


def _note_ctrl_c(signum: int, frame: Any) -> None:
    _CTRL_C["pressed"] = True
    signal.default_int_handler(signum, frame)


def pytest_configure(config: pytest.Config) -> None:
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not ignored (a background job)
        signal.signal(signal.SIGINT, _note_ctrl_c)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    result = yield
    if _CTRL_C.get("pressed"):
        raise KeyboardInterrupt  # the test caught it (and failed): the run stops here all the same
    return result


def pytest_keyboard_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    _CTRL_C["pressed"] = True


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    factory = getattr(session.config, "_tmp_path_factory", None)
    stack = getattr(factory, "_exit_stack", None)
    if _CTRL_C.get("pressed") and stack is not None:
        stack.pop_all()  # the older runs' temp dirs: removed by the next run
        lock = Path(getattr(factory, "_basetemp", None) or "/nonexistent") / ".lock"
        lock.unlink(missing_ok=True)  # this run's, so the next run may remove its dir in turn


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if _CTRL_C.get("pressed"):  # the summary is printed; nothing left worth waiting for
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(pytest.ExitCode.INTERRUPTED)
