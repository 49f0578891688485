"""``hybrid-rag watch PATH``: ingest once, then again whenever files below PATH change.

Changes are gathered by watchfiles until none has come for ``watch.debounce_ms`` (at most
``MAX_GATHER`` times that), then the watched paths are ingested again through ``Engine.ingest``: the
incremental ingest re-reads only what changed, and the engine's writer lock keeps it the one
writer. A running ``hybrid-rag serve`` on the same data dir serves each new version (it follows
CURRENT). Changes inside the data dir are ignored (the ingest's own writes would wake it forever).
An ingest that fails (a file mid-write, another writer) is reported in one line and the watch goes
on: the next change, or ``RETRY_MS`` without one, tries again.

Skipped files are reported as ``ingest`` reports them (the count, then one ``skipped PATH: reason``
line a file); a skip already reported with the same reason is not repeated at each later ingest.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hybrid_rag.errors import HybridRagError, InputError

if TYPE_CHECKING:
    from hybrid_rag.engine import Engine
    from hybrid_rag.ingest.pipeline import IngestReport

MAX_GATHER = 20  # a burst of changes (a checkout) is ingested at the latest after 20 quiet periods
RETRY_MS = 5_000  # after a failed ingest, tried again this long after the last change


@dataclass(frozen=True)
class WatchSummary:
    """What a watch did before it stopped: ingests run, failed, and whether Ctrl-C cut one short."""

    ingests: int
    failures: int
    interrupted: bool


def describe(report: IngestReport) -> str:
    """One line for an ingest the watch ran."""
    plan = report.plan
    counts = (
        f"{len(plan.added)} new, {len(plan.changed)} changed, {len(plan.deleted)} deleted, "
        f"{len(plan.skipped)} skipped"
    )
    if report.interrupted:
        return f"{counts}: interrupted after {report.files_written} file(s); the index is as it was"
    if report.build is None:
        return f"{counts}: nothing changed; index left as it is"
    return f"{counts}: index version {report.build.version} live with {report.build.chunks} chunks"


def new_skips(report: IngestReport, reported: dict[str, str]) -> list[str]:
    """``skipped PATH: reason`` for each skip of ``report`` not in ``reported`` with that reason
    (path -> reason, updated: a skip no longer there is forgotten, so it is reported if it comes back)."""
    lines = []
    current = {s.path: s.reason for s in report.plan.skipped}
    for path, reason in current.items():
        if reported.get(path) != reason:
            lines.append(f"skipped {path}: {reason}")
    reported.clear()
    reported.update(current)
    return lines


def watch(
    engine: Engine,
    paths: Sequence[str | Path],
    *,
    collection: str = "default",
    stop: threading.Event,
    say: Callable[[str], None],
    debounce_ms: int | None = None,
    own_files: Sequence[Path] = (),
) -> WatchSummary:
    """Ingest ``paths``, then re-ingest them on every gathered change until ``stop`` is set.
    ``own_files``: where its own output goes (``watch > watch.log 2>&1``); their changes never wake
    it (each ingest wrote a line there, a change, another ingest: forever).

    The first ingest's errors (a missing path, an empty folder) are raised: there is nothing to watch.
    """
    try:
        import watchfiles
    except ImportError as exc:
        raise InputError(f"watch needs: pip install 'hybrid-rag[watch]' ({exc})") from None
    debounce = debounce_ms if debounce_ms is not None else engine.settings.watch.debounce_ms
    if debounce <= 0:
        raise InputError(f"the debounce must be a positive number of milliseconds, not {debounce}")
    report = engine.ingest(paths, collection=collection, stop=stop.is_set)
    say(describe(report))
    reported: dict[str, str] = {}
    for line in new_skips(report, reported):
        say(line)
    if report.interrupted:
        return WatchSummary(1, 0, True)
    roots = [str(Path(p).resolve()) for p in paths]
    data_dir = str(Path(engine.settings.data_dir).resolve())
    own = _inside(own_files, roots)
    ignore = _ignoring(watchfiles.DefaultFilter(ignore_paths=[data_dir]), own)
    for path in own:
        say(f"its own output {path} is in a watched folder: its changes are ignored (.hybridragignore it)")
    say(f"watching {', '.join(roots)} (debounce {debounce} ms); Ctrl-C stops")
    # pending: an ingest is owed. True at first: a file written between the first ingest's scan and
    # the watcher's start is caught by the ingest on the first gathering or quiet RETRY_MS
    ingests, failures, pending = 1, 0, True
    for changes in watchfiles.watch(
        *roots,
        watch_filter=ignore,
        step=debounce,
        debounce=debounce * MAX_GATHER,
        stop_event=stop,
        rust_timeout=RETRY_MS,
        yield_on_timeout=True,
        raise_interrupt=False,
    ):
        if not changes and not pending:  # a quiet RETRY_MS with nothing owed
            continue
        ingests += 1
        try:
            report = engine.ingest(paths, collection=collection, stop=stop.is_set)
        except HybridRagError as exc:
            failures, pending = failures + 1, True
            say(f"error: {exc} (still watching; tried again on the next change or in {RETRY_MS // 1000} s)")
            continue
        pending = False
        skips = new_skips(report, reported)
        if changes or report.build is not None or report.interrupted or skips:  # a quiet catch-up: nothing
            say(describe(report))
        for line in skips:
            say(line)
        if report.interrupted:
            return WatchSummary(ingests, failures, True)
    return WatchSummary(ingests, failures, False)


def output_files() -> list[Path]:
    """The regular files this process's stdout and stderr write to (``2> watch.log``), if any."""
    found: list[Path] = []
    for fd in (1, 2):
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                found.append(Path(os.readlink(f"/proc/self/fd/{fd}")))  # Linux; elsewhere: not found
        except OSError:
            continue
    return list(dict.fromkeys(found))


def _inside(files: Sequence[Path], roots: Sequence[str]) -> list[Path]:
    resolved = [Path(f).resolve() for f in files]
    return [f for f in resolved if any(f.is_relative_to(r) for r in roots)]


def _ignoring(base: Callable[[Any, str], bool], own: Sequence[Path]) -> Callable[[Any, str], bool]:
    """``base`` (watchfiles' filter: True keeps a change) that also drops the changes of ``own``,
    by path and by device and inode (the same file under another name)."""
    names = {str(p) for p in own}
    inodes = set()
    for p in own:
        try:
            st = p.stat()
            inodes.add((st.st_dev, st.st_ino))
        except OSError:
            continue

    def keep(change: Any, path: str) -> bool:
        if path in names:
            return False
        try:
            st = os.stat(path)
            if (st.st_dev, st.st_ino) in inodes:
                return False
        except OSError:
            pass
        return base(change, path)

    return keep
