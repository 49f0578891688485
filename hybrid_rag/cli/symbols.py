"""``hybrid-rag symbols|outline``: where a name is defined, a file's definitions."""

from __future__ import annotations

import argparse
import sys

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
    if args.json:
        _print_json(matches_json(args.name, found))
    elif found:
        print(matches_text(found))
    else:
        print(f"no definition matches {args.name!r} ({args.mode}: exact, prefix or fuzzy)", file=sys.stderr)
    return 0 if found else 1


def cmd_outline(args: argparse.Namespace, settings: Settings) -> int:
    """A file's definitions in order, nested, each cited ``path:start-end``."""
    from hybrid_rag.symbols.render import outline_json, outline_text

    with _engine(settings) as engine:
        entries = engine.outline(args.file, absolute_paths=args.absolute_paths)
    if args.json:
        _print_json(outline_json(args.file, entries))
    elif entries:
        print(outline_text(entries))
    else:
        print(f"no definitions in {args.file} (not code, or no parser found one)", file=sys.stderr)
    return 0
