"""``hybrid-rag refs|callers|callees|impact``: the reference questions (``Engine.references``) on
the command line, printed as text or ``--json``; ``cli/parser.py`` registers them."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any

from hybrid_rag.settings import Settings

_HELP = {
    "refs": ("every use of a name (calls, types, imports), grouped by file, cited", "NAME"),
    "callers": ("the definitions that call NAME (--depth N: their callers too), cited", "NAME"),
    "callees": ("what NAME calls (--depth N: what those call), cited", "NAME"),
    "impact": ("the definitions and files that depend on a file or a definition, ranked", "PATH|NAME"),
}


def add_parsers(sub: Any, open_engine: Callable[[Settings], Any], print_json: Callable[[Any], None]) -> None:
    """Register the four commands on the CLI's subparsers; ``open_engine`` and ``print_json`` are
    the CLI's own (passed in: kept as parameters, as before the CLI became a package)."""
    for question, (text, metavar) in _HELP.items():
        p = sub.add_parser(question, help=text)
        p.add_argument(
            "name",
            metavar=metavar,
            help="a name or qualified name (Pool.get, Foo::bar)"
            if metavar == "NAME"
            else "a file as `documents` shows it, or a definition's name",
        )
        if question != "refs":
            default = 2 if question == "impact" else 1
            p.add_argument(
                "--depth", type=int, default=default, help=f"levels to follow, 1-5 (default {default})"
            )
        p.add_argument("--json", action="store_true")
        p.add_argument("--absolute-paths", action="store_true", help="stored absolute paths")
        answer = functools.partial(run, open_engine=open_engine, print_json=print_json)
        p.set_defaults(func=answer, question=question)


def run(
    args: argparse.Namespace,
    settings: Settings,
    *,
    open_engine: Callable[[Settings], Any],
    print_json: Callable[[Any], None],
) -> int:
    """Answer one question; exit 1 when it found nothing (no use, caller, callee or dependent)."""
    from hybrid_rag.symbols import render

    with open_engine(settings) as engine:
        answer = engine.references(
            args.question, args.name, depth=getattr(args, "depth", 1), absolute_paths=args.absolute_paths
        )
    if args.json:
        print_json(answer)
    else:
        text = getattr(render, f"{args.question}_text")(answer)
        print(text)
    return 0 if answer["count"] else 1
