"""One writer at a time on a data dir, across processes: a second writer waits (bounded) or gets
"another write is running (pid N, since T)"; concurrent ingests and deletes leave the live index
exactly the store's newest state; a build is never published from an older store state; two
first ingests create the store once (SQLite and PostgreSQL)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fake_settings import child_env, fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.errors import StoreError, WriterBusyError
from hybrid_rag.indices import build as build_module
from hybrid_rag.store import MetadataStore
from hybrid_rag.store.writer_lock import WriterLock

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
ENV = child_env(HYBRID_RAG_EMBEDDING__MODEL="fake")

HOLDER = textwrap.dedent(
    """\
    import sys, time
    from pathlib import Path
    from hybrid_rag.store.writer_lock import WriterLock

    with WriterLock(Path(sys.argv[1]), wait_seconds=0).hold("ingest"):
        print("holding", flush=True)
        sys.stdin.readline()
    """
)

WRITER = textwrap.dedent(
    """\
    import sys
    from fake_settings import fake_settings
    from hybrid_rag.engine import Engine

    data, what, arg = sys.argv[1:4]
    settings = fake_settings(
        data,
        {"store.writer_wait_seconds": 120, "store.url": sys.argv[4] or None, "features.expansion": False},
    )
    engine = Engine(settings)
    if what == "ingest":
        engine.ingest([arg])
    else:
        engine.delete([arg])
    engine.close()
    """
)


def _folder(root: Path, name: str, files: int) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    for i in range(files):
        body = "\n".join(f"{name} line {j} of file {i} rotor wing flow {i * j}" for j in range(40))
        (folder / f"{name}{i:02d}.md").write_text(f"# {name} {i}\n\n{body}\n")
    return folder


def _cli(data: Path, *args: str, wait: float = 0) -> subprocess.CompletedProcess:
    env = {**ENV, "HYBRID_RAG_STORE__WRITER_WAIT_SECONDS": str(wait)}
    command = [sys.executable, "-m", "hybrid_rag.cli", "--data-dir", str(data), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def test_a_second_writer_is_refused_naming_the_holder_and_waits_when_asked(tmp_path: Path) -> None:
    data, folder = tmp_path / "data", _folder(tmp_path, "docs", 2)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        refused = _cli(data, "ingest", str(folder))
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert f"another write is running on {data} (ingest by pid {holder.pid}, since " in refused.stderr
        for command in (["rebuild"], ["rollback", "1"]):
            assert "another write is running" in _cli(data, *command).stderr
        with pytest.raises(WriterBusyError, match=f"pid {holder.pid}"), WriterLock(data, 0.2).hold("delete"):
            pass
        waiting = subprocess.Popen(
            [sys.executable, "-m", "hybrid_rag.cli", "--data-dir", str(data), "ingest", str(folder)],
            env={**ENV, "HYBRID_RAG_STORE__WRITER_WAIT_SECONDS": "120"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)  # the waiting ingest is queued behind the holder, not failed
        assert waiting.poll() is None
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert waiting.wait(timeout=300) == 0, waiting.stderr.read()
    finally:
        holder.kill()
        holder.wait()
    assert "index version 1 live" in waiting.stdout.read()


def test_a_killed_holder_frees_the_lock(tmp_path: Path) -> None:
    data = tmp_path / "data"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    holder.kill()
    holder.wait()
    with WriterLock(data, wait_seconds=0).hold("ingest"):
        pass


def test_concurrent_ingests_and_a_delete_leave_the_index_at_the_newest_state(
    tmp_path: Path, store_url: str | None
) -> None:
    data = tmp_path / "data"
    first, second = _folder(tmp_path, "alpha", 12), _folder(tmp_path, "beta", 12)
    settings = fake_settings(data, {"store.url": store_url})
    engine = Engine(settings)
    engine.ingest([first])
    gone = str((first / "alpha03.md").resolve())
    engine.close()
    jobs = [("ingest", str(second)), ("delete", gone), ("ingest", str(first))]
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(data), what, arg, store_url or ""], env=ENV)
        for what, arg in jobs
    ]
    assert [p.wait(timeout=600) for p in procs] == [0, 0, 0]
    engine = Engine(settings)
    try:
        live, stored = engine.indices.get(), engine.store.chunk_hashes()
        assert live.manifest["chunks"] == len(stored) and not engine.ingestor.builder.is_stale()
        assert set(live.dense.ids().tolist()) == set(live.bm25.ids().tolist()) == set(stored)
        assert live.manifest["store_state"] == engine.store.generation()
    finally:
        engine.close()


def test_a_build_is_never_published_from_an_older_store_state(
    engine: Engine, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.ingest([corpus])
    real = build_module.validate_build

    def validate_then_another_writer(*args, **kwargs):
        real(*args, **kwargs)  # a writer outside the lock commits while this build validates
        MetadataStore(engine.settings.store_path).write_files([], collection="c", delete_paths=["/x"])

    monkeypatch.setattr(build_module, "validate_build", validate_then_another_writer)
    with pytest.raises(StoreError, match="the store changed while the index was built"):
        engine.rebuild()
    assert engine.ingestor.builder.versions.current() == 1
    assert engine.ingestor.builder.versions.versions() == [1]  # nothing published, staging removed


CREATOR = textwrap.dedent(
    """\
    import sys, time
    from pathlib import Path
    from hybrid_rag.store import MetadataStore

    go = Path(sys.argv[3])
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    print(MetadataStore(Path(sys.argv[1]), url=sys.argv[2] or None).chunk_count(), flush=True)
    """
)


@pytest.mark.parametrize("round_", range(3))
def test_first_openers_racing_create_the_store_once(
    tmp_path: Path, store_url: str | None, round_: int
) -> None:
    go = tmp_path / "go"
    path = tmp_path / "data" / "store.sqlite3"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CREATOR, str(path), store_url or "", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        for _ in range(4)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.touch()
    results = [(proc.wait(timeout=120), proc.stdout.read().strip(), proc.stderr.read()) for proc in procs]
    assert [(code, out) for code, out, _ in results] == [(0, "0")] * 4, [err[-500:] for *_, err in results]
