"""What the commands share: opening the engine, JSON output, Ctrl-C, the query and
server flags, exit codes."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from hybrid_rag.request import Query
from hybrid_rag.settings import Settings

EXIT_USER_ERROR = 2  # the project's own errors: bad input, no index, a server down ...


EXIT_BUG = 70  # anything else: a bug (sysexits EX_SOFTWARE; 1 means "no results")


EXIT_BROKEN_PIPE = 141  # the reader of stdout went away (`| head`): 128 + SIGPIPE, as a shell reports it


def display_path(path: str) -> str:
    """A stored absolute path shown relative to the working directory when it lies below it."""
    try:
        return os.path.relpath(path) if path.startswith(os.getcwd() + os.sep) else path
    except ValueError:
        return path


def _engine(settings: Settings) -> Any:
    from hybrid_rag.engine import Engine

    return Engine(settings)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


def printed_json(args: argparse.Namespace, data: Any) -> bool:
    """``data`` printed as JSON when the command was asked for ``--json`` (True: the caller's
    answer is given, it returns 0); else nothing printed, False."""
    if getattr(args, "json", False):
        _print_json(data)
        return True
    return False


STAGE_FLAGS = (
    "expansion",
    "multi_query",
    "rerank",
    "thresholds",
    "priors",
    "mmr",
    "routing",
    "parent_context",
    "self_check",
    "symbols",
    "path_roles",  # the code rules: retrieval/code_rank.py
    "path_match",
    "file_coherence",
    "definition_first",
    "member_symbols",  # symbols/members.py
    "implementation",  # retrieval/implementations.py
    "paired_sources",
    "hubness",  # indices/hubness.py
    "question_hubness",  # indices/question_bank.py
)


FUSION_RULES = "rrf, weighted, zscore, relative_score, dbsf"  # retrieval/fusion.py FusionMode (tested)


def _query_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """top_k, mode, filters, per-call feature overrides, the language and the fusion rule from the
    shared query flags (a rule that is none is the engine's ConfigError, naming the valid ones)."""
    features = {name: getattr(args, name) for name in STAGE_FLAGS if getattr(args, name, None) is not None}
    return {
        "top_k": args.top_k,
        "mode": args.mode,
        "filters": args.filter or None,
        "features": features or None,
        "absolute_paths": args.absolute_paths,
        **({"lang": args.lang} if getattr(args, "lang", None) else {}),
        **({"fusion": args.fusion} if getattr(args, "fusion", None) else {}),
    }


def _query(args: argparse.Namespace) -> Query:
    """The typed request (``hybrid_rag/request.py``) the shared query flags describe."""
    return Query.of(args.text, **_query_kwargs(args))


def _warn_repaired(count: int) -> None:
    """Cached vectors that failed their checksum were embedded again by the build: say how many."""
    if count:
        print(
            f"hybrid-rag: warning: {count} cached vector(s) failed their checksum and were embedded again",
            file=sys.stderr,
        )


def _positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (``--top-k -3`` is a usage error, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return value


def _query_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("text")
    p.add_argument("--top-k", type=_positive_int, default=None)
    p.add_argument("--mode", choices=["dense", "bm25", "hybrid"], default=None)
    p.add_argument(
        "--filter",
        action="append",
        metavar="EXPR",
        help="metadata filter, repeatable (ANDed): 'source_type=code', 'path~src/**', 'collection in (a,b)'",
    )
    p.add_argument(
        "--lang",
        metavar="CODE",
        help="the question's language (ISO 639-1: ru, pt, zh...; und), instead of the detected one",
    )
    p.add_argument(
        "--fusion",
        metavar="RULE",
        help=f"fuse by another rule than retrieval.fusion for this call: {FUSION_RULES}",
    )
    for name in STAGE_FLAGS:
        flag = name.replace("_", "-")
        p.add_argument(
            f"--{flag}",
            dest=name,
            action=argparse.BooleanOptionalAction,
            default=None,
            help=f"turn the {name} stage on or off for this call (default: features.{name}"
            + ("; `query` runs it only when given" if name == "self_check" else "")
            + ")",
        )
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--absolute-paths",
        action="store_true",
        help="show stored absolute paths (default: relative to the ingested root, see docs/querying.md)",
    )


def _server_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=None, help="address to bind (default server.host, 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default server.port, 8000)")
    p.add_argument("--no-auth", action="store_true", help="no API key (allowed only on a loopback host)")
