"""Write jobs (ingest, upload): run one at a time beside the queries, with progress readable by id.

Each job is a small JSON file in ``<data dir>/jobs/`` (written atomically), so every server worker
answers ``GET /v1/jobs/{id}`` for a job any worker runs. One writer at a time across processes:
a job holds ``<data dir>/jobs/writer.lock`` (``fcntl.flock``) while it runs, and the quick
synchronous writes (delete, rollback) take it without waiting or answer 409. Queries never take it:
they read the live index version they start with (``indices/live.py``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hybrid_rag.errors import HybridRagError
from hybrid_rag.indices.versions import pid_alive
from hybrid_rag.private_files import append_private
from hybrid_rag.server.errors import ApiError, log, status_of

Work = Callable[[Callable[[str, int, int], None]], dict[str, Any]]  # (progress) -> result
KEEP_JOBS = 200  # job files kept; older finished ones are removed
PROGRESS_EVERY = 0.25  # seconds between progress writes


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class JobRunner:
    """A queue of write jobs and the one thread that runs them (a daemon: shutdown is ``stop``)."""

    def __init__(self, directory: Path, logs_dir: Path | None = None) -> None:
        self.directory = directory  # made at the first write job: a server that only reads makes nothing
        self.logs_dir = logs_dir if logs_dir is not None else directory.parent / "logs"
        self._queue: queue.Queue[tuple[str, Work] | None] = queue.Queue()
        self._local = threading.Lock()  # writers in this process
        self._thread: threading.Thread | None = None
        self.current: str | None = None
        self._mark_orphans()

    # -- records ---------------------------------------------------------------------------

    def _path(self, job_id: str) -> Path:
        return self.directory / f"{job_id}.json"

    def _made(self) -> Path:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.directory

    def _write(self, record: dict[str, Any]) -> None:
        self._made()
        path = self._path(record["id"])
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # private, as the index files
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(record))
        os.replace(tmp, path)

    def get(self, job_id: str) -> dict[str, Any]:
        if not job_id.isalnum() or len(job_id) > 64:
            raise ApiError(404, f"no job {job_id!r}", field="id", kind="not_found")
        try:
            return json.loads(self._path(job_id).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            raise ApiError(404, f"no job {job_id!r}", field="id", kind="not_found") from None

    def _mark_orphans(self) -> None:
        """Jobs left queued or running by a process that is gone are ``interrupted``."""
        for path in self.directory.glob("*.json"):
            with contextlib.suppress(OSError, json.JSONDecodeError, KeyError):
                record = json.loads(path.read_text(encoding="utf-8"))
                if record["status"] in ("queued", "running") and not pid_alive(int(record["pid"])):
                    self._write({**record, "status": "interrupted", "finished_at": _now()})

    def _prune(self) -> None:
        files = sorted(self.directory.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for path in files[: max(0, len(files) - KEEP_JOBS)]:
            with contextlib.suppress(OSError):
                path.unlink()

    # -- running ---------------------------------------------------------------------------

    def submit(self, kind: str, work: Work, *, request: dict[str, Any]) -> dict[str, Any]:
        """Queue ``work``; the record (status ``queued``) to answer 202 with."""
        record = {
            "id": uuid.uuid4().hex,
            "kind": kind,
            "status": "queued",
            "pid": os.getpid(),
            "request": request,
            "created_at": _now(),
            "started_at": None,
            "finished_at": None,
            "progress": {},
            "result": None,
            "error": None,
        }
        self._write(record)
        self._prune()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, name="hybrid-rag-writer", daemon=True)
            self._thread.start()
        self._queue.put((record["id"], work))
        return record

    def _loop(self) -> None:
        while (item := self._queue.get()) is not None:
            self._run(*item)

    def _run(self, job_id: str, work: Work) -> None:
        record = self.get(job_id)
        last = 0.0

        def progress(stage: str, done: int, total: int) -> None:
            nonlocal last
            record["progress"][stage] = {"done": done, "total": total}
            if time.monotonic() - last >= PROGRESS_EVERY or done >= total:
                last = time.monotonic()
                self._write(record)

        with self.exclusive(wait=True):
            self.current = job_id
            record.update(status="running", started_at=_now())
            self._write(record)
            try:
                record.update(status="done", result=work(progress))
            except HybridRagError as exc:
                error = {"status": status_of(exc), "type": type(exc).__name__, "message": str(exc)}
                record.update(status="failed", error=error)
            except Exception as exc:  # a bug: the job says so, the thread lives on for the next job
                self._log_crash(record, exc)
                record.update(
                    status="failed",
                    error={
                        "status": 500,
                        "type": type(exc).__name__,
                        "message": "unexpected error; details in the server log",
                    },
                )
            finally:
                self.current = None
                record["finished_at"] = _now()
                self._write(record)

    def _log_crash(self, record: dict[str, Any], exc: BaseException) -> None:
        """The traceback of a job that failed unexpectedly, in ``logs/errors.log``
        (the job's error says "details in the server log": this is that log)."""
        try:
            with append_private(self.logs_dir / "errors.log") as handle:
                handle.write(f"--- {_now()} hybrid-rag serve job {record['id']} ({record.get('kind')})\n")
                handle.write("".join(traceback.format_exception(exc)))
        except OSError:
            log.exception("unexpected error in job %s", record["id"])

    @contextlib.contextmanager
    def exclusive(self, *, wait: bool) -> Iterator[None]:
        """The writer lock of this data dir (threads and processes); without ``wait``, a 409 when held."""
        if not self._local.acquire(blocking=wait):
            raise ApiError(
                409, "another write is running (an ingest job); retry when it is done", kind="busy"
            )
        try:
            with (self._made() / "writer.lock").open("a") as handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
                except BlockingIOError:
                    raise ApiError(
                        409,
                        "another write is running (in another worker or process); retry when it is done",
                        kind="busy",
                    ) from None
                try:
                    yield
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)
        finally:
            self._local.release()

    def stop(self, timeout: float) -> None:
        """Let the running job finish (up to ``timeout`` seconds); queued ones are left ``queued``
        and marked ``interrupted`` by the next server that starts."""
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)
