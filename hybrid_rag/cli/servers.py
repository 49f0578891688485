"""``hybrid-rag serve|mcp``: the HTTP API and the MCP server."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from hybrid_rag.errors import HybridRagError
from hybrid_rag.settings import Settings


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """The HTTP API (``hybrid_rag/server``); runs until Ctrl-C / SIGTERM."""
    serve = _from_server_extra("serve", "hybrid_rag.server.run", "serve")
    serve(
        settings,
        config=args.config,
        **_address(args, settings),
        workers=args.workers or settings.server.workers,
        no_auth=args.no_auth,
    )
    return 0


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """The MCP server (``hybrid_rag/server/mcp.py``) on stdio, or streamable HTTP."""
    run_mcp = _from_server_extra("mcp", "hybrid_rag.server.mcp", "run_mcp")
    run_mcp(
        settings,
        transport=args.transport,
        **_address(args, settings),
        no_auth=args.no_auth,
        say=lambda line: print(line, file=sys.stderr, flush=True),
    )
    return 0


def _from_server_extra(command: str, module: str, name: str) -> Any:
    """``module.name``, imported now; the one line that says how to install the [server] extra
    when it is not installed."""
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise HybridRagError(f"{command} needs: pip install 'hybrid-rag[server]' ({exc})") from None


def _address(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """``--host`` and ``--port``, each ``server.*``'s when not given."""
    return {
        "host": args.host or settings.server.host,
        "port": settings.server.port if args.port is None else args.port,
    }
