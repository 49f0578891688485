"""Progress on stderr for the long commands (``ingest``, ``eval``): tqdm bars on a terminal;
elsewhere (a pipe, a log file, a service's journal) plain lines with no escape sequences, at
most one per stage every ``every`` seconds and one at the end of each stage, and, while no
progress comes (a model loading, a batch of slow embeddings, the walk of a big tree), the last
line again every ``every`` seconds with the time so far, so a log never falls silent for long."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any


class Bars:
    """``progress(stage, done, total)`` for the engine; shown only when ``enabled``."""

    def __init__(self, enabled: bool, *, every: float = 5.0, prefix: str = "hybrid-rag") -> None:
        self.enabled = enabled
        self.terminal = sys.stderr.isatty()
        self.every = every
        self.prefix = prefix
        self._bars: dict[str, Any] = {}
        self._said: dict[str, tuple[float, int]] = {}  # stage -> (when, done) of the last line
        self._started = time.monotonic()
        self._last = (self._started, "working")  # when a line was last printed, and what it said
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._ticker: threading.Thread | None = None
        if enabled and not self.terminal and every > 0:
            self._ticker = threading.Thread(target=self._tick, name="progress-heartbeat", daemon=True)
            self._ticker.start()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if stage == "searchable":  # a BM25-first ingest published a version (ingest/fill.py)
            self._print(f"searchable now: BM25 over {total} chunks, dense {done} of them")
            return
        if not self.terminal:
            self._line(stage, done, total)
            return
        from tqdm import tqdm

        bar = self._bars.get(stage)
        if bar is None:
            unit = {"files": "file", "chunks": "chunk"}.get(stage, "item")
            raw = getattr(sys.stderr, "wrapped", sys.stderr)  # its own \r and cursor moves (terminal.py)
            bar = self._bars[stage] = tqdm(total=total, desc=stage, unit=unit, file=raw, leave=False)
        bar.total = total
        bar.update(done - bar.n)  # update, not n =: tqdm's rate and ETA follow the updates

    def _line(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        when, said = self._said.get(stage, (None, -1))
        finished = total > 0 and done >= total
        if done == said or (when is not None and now - when < self.every and not finished):
            return
        self._said[stage] = (now, done)
        share = f" ({done / total:.0%})" if total else ""
        self._print(f"{stage} {done}/{total}{share}")

    def _print(self, text: str) -> None:
        with self._lock:
            self._last = (time.monotonic(), text)
            print(f"{self.prefix}: {text}", file=sys.stderr, flush=True)

    def _tick(self) -> None:
        """The heartbeat: the last line again, with the time so far, after ``every`` silent seconds."""
        while not self._done.wait(self.every / 5):
            with self._lock:
                when, text = self._last
                now = time.monotonic()
                if now - when < self.every:
                    continue
                self._last = (now, text)
                line = f"{self.prefix}: {text}, still working ({now - self._started:.0f} s so far)"
            try:
                print(line, file=sys.stderr, flush=True)
            except (OSError, ValueError):  # stderr closed: nothing to keep alive
                return

    def close(self) -> None:
        self._done.set()
        if self._ticker is not None:
            self._ticker.join(timeout=1)
        for bar in self._bars.values():
            bar.close()
