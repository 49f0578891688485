"""``hybrid-rag symbols|outline``: where a name is defined, a file's definitions."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from hybrid_rag.cli.common import _engine, _print_json
from hybrid_rag.settings import Settings


def cmd_symbols(args: argparse.Namespace, settings: Settings) -> int:
    """Definitions by name (exact, prefix, fuzzy), each cited ``path:start-end``; exit 1 when none."""
    from hybrid_rag.symbols.render import matches_json, matches_text

    with _engine(settings) as engine:
        found = engine.symbols(
            args.name,
            mode=args.mode,
            kinds=args.kind,
            path=args.path,
            limit=args.limit,
            absolute_paths=args.absolute_paths,
        )
    none = f"no definition matches {args.name!r} ({args.mode}: exact, prefix or fuzzy)"
    _answer(args.json, found, lambda: matches_json(args.name, found), lambda: matches_text(found), none)
    return 0 if found else 1


def cmd_outline(args: argparse.Namespace, settings: Settings) -> int:
    """A file's definitions in order, nested, each cited ``path:start-end``."""
    from hybrid_rag.symbols.render import outline_json, outline_text

    with _engine(settings) as engine:
        entries = engine.outline(args.file, absolute_paths=args.absolute_paths)
    none = f"no definitions in {args.file} (not code, or no parser found one)"
    _answer(args.json, entries, lambda: outline_json(args.file, entries), lambda: outline_text(entries), none)
    return 0


def _answer(
    as_json: bool, found: Sequence[Any], doc: Callable[[], Any], text: Callable[[], str], none: str
) -> None:
    """``doc()`` as JSON with ``--json``; else ``text()`` when something was found, ``none`` on
    stderr when nothing was."""
    if as_json:
        _print_json(doc())
    elif found:
        print(text())
    else:
        print(none, file=sys.stderr)
