"""A BM25-first ingest tokenises its chunks in worker processes while it stores them
(``ingest.tokenize_ahead``, ``ingest/term_prefetch.py``): the terms it caches are exactly those the
index build would compute (each chunk read in its language, code in the base analysis), and a
pool that cannot start loses nothing: the build tokenises instead."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.ingest import term_prefetch
from hybrid_rag.ingest.term_prefetch import TermPrefetch, prefetch_workers
from hybrid_rag.lang.tokenize import Tokenizer, analysis_language

TEXTS = {
    "garden.md": "Compost feeds the soil; earthworms turn the clay into loam over the seasons.\n",
    "passwords.md": "Чтобы сбросить пароль, откройте настройки учётной записи и нажмите кнопку.\n",
    "notes.txt": "The swallows migrate south over the sea before the first frost of autumn.\n",
    "pool.py": "class ConnectionPool:\n    def getConnection(self, wait):\n        return self.idle.pop()\n",
}


def _corpus(root: Path) -> Path:
    root.mkdir()
    for i in range(3):  # more chunks than one batch of 4
        for name, text in TEXTS.items():
            stem, ext = name.rsplit(".", 1)
            (root / f"{stem}{i}.{ext}").write_text(text * (i + 1), encoding="utf-8")
    return root


def _engine(data: Path, **more: object) -> Engine:
    overrides = {"ingest.bm25_first_min_bytes": 0, "ingest.publish_every_seconds": 0, **more}
    return Engine(fake_settings(data, overrides))


def _cached_and_built_terms(engine: Engine) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    tokenizer = Tokenizer.for_settings(engine.settings.bm25)
    chunks = list(engine.store.iter_chunks())
    assert chunks
    cached, fresh = {}, {}
    for chunk in chunks:
        lang = analysis_language(chunk)
        found = engine.store.cached_tokens(f"{tokenizer.cache_key()}:{lang}", [chunk.sha256])
        cached[chunk.sha256] = found.get(chunk.sha256, [])
        fresh[chunk.sha256] = Tokenizer.for_settings(engine.settings.bm25).tokenize(chunk.text, lang)
    return cached, fresh


def _top(engine: Engine, text: str) -> str:
    return Path(engine.query(text, mode="bm25").chunks[0].chunk.path).name


def test_the_terms_cached_ahead_are_the_builds_and_the_index_finds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(term_prefetch, "BATCH", 4)
    monkeypatch.setattr(term_prefetch, "prefetch_workers", lambda: 1)  # also on a one-core runner
    ran: list[int] = []
    finish = TermPrefetch.finish

    def counted(self: TermPrefetch) -> None:
        finish(self)
        ran.append(self.cached)

    monkeypatch.setattr(TermPrefetch, "finish", counted)
    monkeypatch.setattr("hybrid_rag.ingest.pipeline.prefetch_workers", lambda: 1)
    engine = _engine(tmp_path / "data")
    try:
        engine.ingest([_corpus(tmp_path / "corpus")])
        assert ran and ran[0] >= 8, ran  # the worker tokenised the stored chunks before the build
        cached, fresh = _cached_and_built_terms(engine)
        assert cached == fresh
        assert any("пароль" in t or "парол" in t for terms in cached.values() for t in terms)
        assert _top(engine, "getConnection").startswith("pool")
        assert _top(engine, "сбросить пароль").startswith("passwords")
    finally:
        engine.close()


def test_a_pool_that_cannot_start_leaves_the_tokenising_to_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class NoProcesses:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise OSError("no processes in this sandbox")

    monkeypatch.setattr(term_prefetch, "BATCH", 4)
    monkeypatch.setattr(term_prefetch, "ProcessPoolExecutor", NoProcesses)
    monkeypatch.setattr("hybrid_rag.ingest.pipeline.prefetch_workers", lambda: 1)
    engine = _engine(tmp_path / "data")
    try:
        with caplog.at_level(logging.WARNING):
            engine.ingest([_corpus(tmp_path / "corpus")])
        assert "not prefetched" in caplog.text and "no processes in this sandbox" in caplog.text
        cached, fresh = _cached_and_built_terms(engine)  # the build cached every chunk's terms itself
        assert cached == fresh
        assert _top(engine, "compost loam").startswith("garden")
    finally:
        engine.close()


def test_off_by_setting_and_on_one_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert prefetch_workers(1) == 0 and prefetch_workers(2) == 1 and prefetch_workers(16) == 2
    started: list[object] = []
    monkeypatch.setattr(TermPrefetch, "__init__", lambda self, *a, **k: started.append(a))
    engine = _engine(tmp_path / "data", **{"ingest.tokenize_ahead": False})
    try:
        engine.ingest([_corpus(tmp_path / "corpus")])
        assert started == [] and _top(engine, "compost")
    finally:
        engine.close()


_KILLED_PARENT = """
import multiprocessing, os, time
from concurrent.futures import ProcessPoolExecutor
from hybrid_rag.ingest.term_prefetch import _exit_with
if __name__ == "__main__":
    spawn = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(1, mp_context=spawn, initializer=_exit_with, initargs=(os.getpid(),))
    print(pool.submit(os.getpid).result(), flush=True)
    time.sleep(120)
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in state  # exited, waiting to be reaped by whoever adopted it


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_worker_exits_when_its_ingest_is_killed() -> None:
    """kill -9 of the ingest leaves no worker behind (it holds its own queue's other end, so it
    would wait for work forever)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    parent = subprocess.Popen([sys.executable, "-c", _KILLED_PARENT], stdout=subprocess.PIPE, text=True)
    try:
        worker = int(parent.stdout.readline())  # type: ignore[union-attr]
        assert not _gone(worker)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10 * term_prefetch.PARENT_POLL_SECONDS
        while not _gone(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(worker)
    finally:
        parent.kill()
