"""The ``hybrid-rag`` command line. User errors print one line on stderr and exit non-zero.

One module per group of commands (``ingest``, ``query``, ``admin``, ``symbols``, ``references``,
``evaluate``, ``servers``); ``parser`` registers them; this module is the error boundary."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from hybrid_rag.cli.common import EXIT_BROKEN_PIPE, EXIT_BUG, EXIT_USER_ERROR, display_path
from hybrid_rag.cli.parser import build_parser
from hybrid_rag.errors import HybridRagError, describe, disk_full, is_disk_full
from hybrid_rag.progress import Bars as _Bars
from hybrid_rag.settings import Settings, load_settings

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_BUG",
    "EXIT_USER_ERROR",
    "_Bars",
    "build_parser",
    "display_path",
    "main",
    "safe_terminal",
]


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI boundary: the project's errors are one line and exit 2; anything else (a bug) is
    one line too, exit 70, with its traceback in ``logs/errors.log`` and on stderr with ``--debug``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in RAW_OUTPUT:  # the server's logs, MCP's JSON-RPC on stdout
        return _main(args)
    with safe_terminal(stdout=not getattr(args, "json", False)):  # --json stays exact
        return _main(args)


RAW_OUTPUT = ("serve", "mcp")  # commands whose output is a protocol or a log, never neutralised


@contextmanager
def safe_terminal(*, stdout: bool) -> Iterator[None]:
    """Plain-text output with control characters from documents and file names neutralised
    (``terminal.py``): stderr always, stdout unless it is JSON."""
    from hybrid_rag.terminal import SafeStream

    saved = sys.stdout, sys.stderr
    if stdout:
        sys.stdout = SafeStream(sys.stdout)  # type: ignore[assignment]
    sys.stderr = SafeStream(sys.stderr)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _main(args: argparse.Namespace) -> int:
    func: Callable[[argparse.Namespace, Settings], int] = args.func
    settings: Settings | None = None
    try:
        from hybrid_rag.store.store import check_data_dir

        settings = load_settings(args.config, data_dir=args.data_dir)
        check_data_dir(settings.data_dir, write=getattr(args, "writes", False))
        return func(args, settings)
    except HybridRagError as exc:
        print(f"hybrid-rag: error: {_naming_data_dir(exc, settings)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("hybrid-rag: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `stats | head`: the reader is gone; end quietly, as Unix tools do
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # a bug: never a bare traceback for the user, always the details kept
        if is_disk_full(exc):  # not a bug: the disk (store writes and index builds say it themselves)
            where = settings.data_dir if settings is not None else Path.cwd()
            print(f"hybrid-rag: error: {disk_full(where, 'nothing committed was lost')}", file=sys.stderr)
            return EXIT_USER_ERROR
        if args.debug:
            traceback.print_exc()
        logged = _log_crash(settings, exc)
        where = f"details in {logged}; " if logged else ""
        print(
            f"hybrid-rag: error: unexpected {describe(exc)} ({where}run with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_BUG


def _naming_data_dir(exc: HybridRagError, settings: Settings | None) -> str:
    """The error's line, naming the data dir it looked in when it is about what the data dir holds
    (no index, a store or index that cannot be read) and does not name it already."""
    from hybrid_rag.errors import CorruptIndexError, IndexMismatchError, NoIndexError, StoreError

    text = str(exc)
    if settings is None or not isinstance(
        exc, (NoIndexError, StoreError, CorruptIndexError, IndexMismatchError)
    ):
        return text
    where = str(settings.data_dir.resolve())
    if where in text:
        return text
    if text.startswith("no index yet:"):
        return f"no index yet in {where}:{text[len('no index yet:') :]}"
    return f"{text} (data dir {where})"


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush at exit cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test's capture): nothing to flush
        pass


def _log_crash(settings: Settings | None, exc: BaseException) -> Path | None:
    """Append the traceback to ``logs/errors.log`` of the data dir, when there is one to write."""
    if settings is None or not settings.data_dir.is_dir():
        return None
    path = settings.logs_dir / "errors.log"
    try:
        from hybrid_rag.private_files import append_private

        with append_private(path) as log:  # it holds query and filter text: 0600, as the store
            stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
            log.write(f"--- {stamp} hybrid-rag {' '.join(sys.argv[1:])}\n")
            log.write("".join(traceback.format_exception(exc)))
    except OSError:
        return None
    return path
