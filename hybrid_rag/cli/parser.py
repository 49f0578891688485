"""The ``hybrid-rag`` argument parser: every command, its flags, and the function that runs it."""

from __future__ import annotations

import argparse

from hybrid_rag.cli.admin import (
    cmd_delete,
    cmd_documents,
    cmd_rebuild,
    cmd_rollback,
    cmd_stats,
    cmd_status,
    cmd_versions,
)
from hybrid_rag.cli.common import _engine, _positive_int, _print_json, _query_flags, _server_flags
from hybrid_rag.cli.evaluate import cmd_bench, cmd_eval
from hybrid_rag.cli.files import add_group_flags
from hybrid_rag.cli.ingest import cmd_import, cmd_ingest, cmd_watch
from hybrid_rag.cli.query import cmd_ask, cmd_context, cmd_query
from hybrid_rag.cli.servers import cmd_mcp, cmd_serve
from hybrid_rag.cli.symbols import cmd_outline, cmd_symbols

EDGES_HELP = "a question about one definition: its callers' and callees' signatures too"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hybrid-rag", description="Local-first hybrid retrieval for RAG.")
    parser.add_argument(
        "--config", help="YAML settings file (default: built-in defaults, see configs/default.yaml)"
    )
    parser.add_argument(
        "--data-dir", help="where the store and indices live (default ./data, or $HYBRID_RAG_HOME)"
    )
    parser.add_argument("--debug", action="store_true", help="print the traceback of an unexpected error")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="ingest folders, files (or a zip) into the store and indices")
    p.add_argument("paths", nargs="+")
    p.add_argument("--collection", default="default")
    p.add_argument("--dry-run", action="store_true", help="show what would change, change nothing")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument(
        "--follow-symlinks",
        nargs="?",
        const="inside",
        choices=["no", "inside", "outside"],
        help="follow symbolic links inside the folders: to targets inside the ingested root "
        "(--follow-symlinks), or anywhere (--follow-symlinks=outside); loops are refused "
        "(default: loading.follow_symlinks, no)",
    )
    p.add_argument(
        "--progress",
        action="store_true",
        help="progress on stderr even with --quiet (the default without it: bars on a terminal, "
        "else plain lines every few seconds)",
    )
    p.add_argument(
        "--bm25-first",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="store the files first and answer by BM25 while the vectors fill in "
        "(default: ingest.publish_bm25_first, on; docs/first-run.md)",
    )
    p.set_defaults(func=cmd_ingest, writes=True)

    p = sub.add_parser(
        "import", help="import an embeddings.json / embeddings.jsonl index, reusing its vectors and metadata"
    )
    p.add_argument("file", help="the file to import (the format is detected from its content)")
    p.add_argument(
        "--collection", default=None, help="collection of the imported documents (default: file name)"
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_import, writes=True)

    p = sub.add_parser("query", help="ranked chunks for a question")
    _query_flags(p)
    add_group_flags(p, _positive_int)
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("context", help="token-budgeted context with cited quotes, for an LLM prompt")
    _query_flags(p)
    p.add_argument(
        "--max-tokens", type=int, default=None, help="budget (default: context.max_context_tokens)"
    )
    p.add_argument("--edges", choices=["off", "signatures"], default=None, help=EDGES_HELP)
    p.set_defaults(func=cmd_context)

    p = sub.add_parser("ask", help="the prompt-ready context, and the answer when a generator is configured")
    _query_flags(p)
    p.add_argument("--max-tokens", type=int, default=None, help="context budget")
    p.add_argument("--edges", choices=["off", "signatures"], default=None, help=EDGES_HELP)
    p.add_argument("--answer-tokens", type=int, default=512)
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("status", help="files changed, new or deleted on disk since the index was built")
    p.add_argument("paths", nargs="*", help="folders to check (default: the ingested root)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--absolute-paths", action="store_true", help="show stored (absolute) paths")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("stats", help="documents, chunks, index versions, sizes, model")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("eval", help="evaluate on a BEIR-layout folder (throwaway store)")
    p.add_argument("--dataset", required=True)
    p.add_argument("--mode", action="append", choices=["dense", "bm25", "hybrid"], help="repeatable")
    p.add_argument("--work-dir", help="keep the eval store here and re-use it (and its embeddings) next time")
    p.add_argument("--per-query", action="store_true", help="with --json: per-query metric values")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_eval)
    p = sub.add_parser("bench", help="a quick benchmark (seconds): small synthetic judged set, every mode")
    p.add_argument("--docs", type=int, default=30)
    p.add_argument("--queries", type=int, default=15)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("documents", help="list the stored documents, with their collection and chunk count")
    p.add_argument("--collection", default=None, help="only this collection")
    p.add_argument("--absolute-paths", action="store_true", help="stored absolute paths")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_documents)

    p = sub.add_parser("delete", help="remove documents (a file, or every document below a folder)")
    p.add_argument("paths", nargs="+", metavar="PATH", help="as `documents` shows it, or a file or folder")
    p.add_argument("--dry-run", action="store_true", help="show what would be deleted, delete nothing")
    p.set_defaults(func=cmd_delete, writes=True)

    p = sub.add_parser("rebuild", help="rebuild both indices from the store into a new version, atomically")
    p.add_argument(
        "--second-model",
        metavar="MODEL",
        help="also build a second vector set with MODEL (multilingual-e5-small: questions in languages "
        "the index's model cannot read; docs/languages.md), or `off` to drop it; default: keep the live "
        "version's",
    )
    p.set_defaults(func=cmd_rebuild, writes=True)

    p = sub.add_parser("versions", help="list index versions on disk (* = live)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_versions)

    p = sub.add_parser("rollback", help="make an older index version live")
    p.add_argument("version", type=int)
    p.set_defaults(func=cmd_rollback, writes=True)

    p = sub.add_parser("symbols", help="where a name is defined: exact, prefix (or fuzzy) matches, cited")
    p.add_argument("name", help="a name or qualified name: ConnectionPool, Pool.get, Foo::bar")
    p.add_argument(
        "--mode",
        choices=["auto", "exact", "prefix", "fuzzy"],
        default="auto",
        help="auto (default): exact then prefix matches, fuzzy ones when there are neither",
    )
    p.add_argument("--kind", action="append", metavar="KIND", help="only these kinds (repeatable)")
    p.add_argument("--path", metavar="GLOB", help="only under this path glob: src/**, pool.py")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true")
    p.add_argument("--absolute-paths", action="store_true", help="stored absolute paths")
    p.set_defaults(func=cmd_symbols)

    p = sub.add_parser("outline", help="a file's definitions in order, nested, cited")
    p.add_argument("file", help="a path as `documents` shows it (or stored, or from the working directory)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--absolute-paths", action="store_true", help="stored absolute paths")
    p.set_defaults(func=cmd_outline)

    from hybrid_rag.cli.references import add_parsers as add_reference_parsers

    add_reference_parsers(sub, _engine, _print_json)  # refs, callers, callees, impact

    p = sub.add_parser("watch", help="ingest PATHs, then again whenever a file below them changes")
    p.add_argument("paths", nargs="+")
    p.add_argument("--collection", default="default")
    p.add_argument(
        "--debounce-ms",
        type=int,
        default=None,
        help="quiet time before an ingest (default watch.debounce_ms)",
    )
    p.set_defaults(func=cmd_watch, writes=True)

    p = sub.add_parser("serve", help="the HTTP API (FastAPI on uvicorn), bearer keys by default")
    _server_flags(p)
    p.add_argument("--workers", type=int, default=None, help="processes (default server.workers, 1)")
    p.set_defaults(func=cmd_serve, writes=True)

    p = sub.add_parser("mcp", help="a Model Context Protocol server for agents (stdio, or --transport http)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    _server_flags(p)
    p.set_defaults(func=cmd_mcp, writes=True)
    return parser
