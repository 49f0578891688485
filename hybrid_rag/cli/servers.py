"""``hybrid-rag serve|mcp``: the HTTP API and the MCP server."""

from __future__ import annotations

import argparse
import sys

from hybrid_rag.errors import HybridRagError
from hybrid_rag.settings import Settings


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """The HTTP API (``hybrid_rag/server``); runs until Ctrl-C / SIGTERM."""
    try:
        from hybrid_rag.server.run import serve
    except ImportError as exc:  # the [server] extra is not installed
        raise HybridRagError(f"serve needs: pip install 'hybrid-rag[server]' ({exc})") from None
    s = settings.server
    serve(
        settings,
        config=args.config,
        host=args.host or s.host,
        port=s.port if args.port is None else args.port,
        workers=args.workers or s.workers,
        no_auth=args.no_auth,
    )
    return 0


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """The MCP server (``hybrid_rag/server/mcp.py``) on stdio, or streamable HTTP."""
    try:
        from hybrid_rag.server.mcp import run_mcp
    except ImportError as exc:
        raise HybridRagError(f"mcp needs: pip install 'hybrid-rag[server]' ({exc})") from None
    s = settings.server
    run_mcp(
        settings,
        transport=args.transport,
        host=args.host or s.host,
        port=s.port if args.port is None else args.port,
        no_auth=args.no_auth,
        say=lambda line: print(line, file=sys.stderr, flush=True),
    )
    return 0
