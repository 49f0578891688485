"""``hybrid-rag mcp``: the engine as a Model Context Protocol server (the official ``mcp`` SDK), for
coding agents and desktop assistants. stdio by default; ``--transport http`` serves streamable HTTP
at ``/mcp`` behind the same bearer keys as ``serve``.

Tools: ``search``, ``get_context``, ``list_documents``, ``stats``, ``status``, ``find_symbol``,
``outline``, ``find_references``, ``callers``, ``callees``, ``impact``,
and ``ingest_path`` only with ``server.mcp_ingest_enabled`` (and then only below
``server.ingest_roots``). Each is a thin call into ``Engine``; the engine's errors come back as
tool errors with their one-line message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from pydantic import BaseModel, ValidationError

from hybrid_rag.deadline import run_within
from hybrid_rag.engine import Engine
from hybrid_rag.errors import HybridRagError
from hybrid_rag.server.errors import ApiError
from hybrid_rag.server.limits import (
    ContextArgs,
    DocumentsArgs,
    IngestPathArgs,
    NoArgs,
    SearchArgs,
    grouping_of,
    query_of,
)
from hybrid_rag.server.references import GraphArgs, ImpactArgs, RefsArgs
from hybrid_rag.server.roots import confine, resolved_roots
from hybrid_rag.server.shapes import document_dict
from hybrid_rag.server.symbols import FindSymbolArgs, OutlineArgs
from hybrid_rag.settings import Settings
from hybrid_rag.symbols.render import matches_json, outline_json
from hybrid_rag.types import FileGroup

T = TypeVar("T")
INSTRUCTIONS = (
    "Search an indexed collection of documents and source code (hybrid dense + keyword retrieval). "
    "Use get_context when you need evidence to answer a question: it returns quotes cited as "
    "[n] path:start-end within a token budget. Use search to locate files or code by topic and see "
    "ranked hits. Use find_symbol to find where a name is defined and outline to see what a file "
    "defines; find_references, callers and callees follow the uses of a definition, impact says what "
    "depends on a file or a definition. Cite path:start-end when you use what you found."
)


def _tool_errors(fn: Callable[[], T], timeout: float | None = None) -> T:
    """The engine's and the limits' errors as one-line tool errors (the agent can read and correct);
    with ``timeout`` (a read: ``server.request_timeout_seconds``) the work stops at the deadline."""
    try:
        return fn() if timeout is None else run_within(timeout, fn)
    except (HybridRagError, ApiError) as exc:
        raise ToolError(str(exc)) from None
    except ValidationError as exc:
        raise ToolError(refusal(exc)) from None


def refusal(exc: ValidationError) -> str:
    """A validation error in one line naming the argument (pydantic's own message is several lines
    with a documentation URL): ``argument top_k: Input should be a valid integer (got 'abc')``."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "arguments"
    got = "" if first["type"] in ("extra_forbidden", "missing") else f" (got {first.get('input')!r:.60})"
    more = f"; {len(errors) - 1} more" if len(errors) > 1 else ""
    return f"argument {where}: {first['msg']}{got}{more}".replace("\n", " ")


class _Tool(Tool):
    """A tool whose refused arguments answer :func:`refusal`'s one line."""

    async def run(self, arguments: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().run(arguments, *args, **kwargs)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):  # the SDK's check of the arguments
                raise ToolError(f"Error executing tool {self.name}: {refusal(exc.__cause__)}") from None
            raise


def _tool(fn: Callable[..., Any], arguments: type[BaseModel]) -> Tool:
    """``fn`` as a tool whose arguments the HTTP API's own request model validates (``limits.py``:
    strict JSON types, bounds, unknown fields refused), not a lax model of its signature."""
    tool = _Tool.from_function(fn)
    model = type(arguments.__name__, (arguments, ArgModelBase), {"__module__": arguments.__module__})
    tool.fn_metadata.arg_model = model
    tool.parameters = model.model_json_schema(by_alias=True)
    return tool


def searched_file(group: FileGroup) -> dict[str, Any]:
    """A file of the ``search`` tool's ``group="file"`` answer: its path, score, units and best text."""
    best = group.units[0]
    return {
        "path": group.path,
        "score": round(group.score, 4),
        "source_type": best.source_type.value,
        "language": best.chunk.language,
        "units": [{"citation": u.located_citation, "score": round(u.score, 4)} for u in group.units],
        "text": best.text,
        **({"stale": True} if any(u.stale for u in group.units) else {}),
    }


def build_server(settings: Settings, engine: Engine | None = None) -> MCPServer:
    """The MCP server for ``settings``; ``engine`` built from them unless given (tests, embedding)."""
    engine = engine or Engine(settings)
    engine.second_set.background = True  # a question it cannot read starts the second set (second_job.py)
    limits = settings.server
    timeout = limits.request_timeout_seconds

    def search(
        query: str,
        top_k: int | None = 8,
        mode: Literal["hybrid", "dense", "bm25"] | None = None,
        filters: str | list[str] | dict[str, Any] | None = None,
        features: dict[str, bool] | None = None,
        lang: str | None = None,
        group: Literal["chunk", "file"] | None = None,
        units_per_file: int | None = None,
        fusion: str | None = None,
    ) -> dict[str, Any]:
        """Find the chunks of the indexed documents and code most relevant to a query, best first.

        Use it to locate where something is defined, documented or discussed. Each result has a
        citation `path:start-end`, a score, and the chunk's text (with `stale: true` when its file
        changed on disk since it was indexed: the lines may differ now). `query`: natural language or
        identifiers (both work: retrieval is dense + keyword). `top_k`: how many results (1-100).
        `filters`: optional expression, e.g. "source_type=code", "path~src/**/*.py",
        "language=python and not path~tests/**", "meta.team=search". `mode`: hybrid (default),
        dense (meaning), or bm25 (exact words). `lang`: the query's language (ISO 639-1: ru, pt...)
        when its detection would be unsure (a word or two). `group`: "file" answers `files` instead,
        ranked by their evidence, each with its best `units_per_file` (3) units' citations and scores
        and its best unit's text (`top_k` then counts files): for "where is X handled". `fusion`:
        another rule than the configured one to fuse the dense and keyword lists, for this call."""

        def run() -> dict[str, Any]:
            body = SearchArgs(
                query=query,
                top_k=top_k,
                filters=filters,
                mode=mode,
                features=features,
                lang=lang,
                group=group,
                units_per_file=units_per_file,
                fusion=fusion,
            )
            request = query_of(body, limits, settings.features, settings.retrieval)
            result = engine.query(request, log=True, **grouping_of(body))
            found = {
                "index_version": result.index_version,
                **({"dense": result.trace.dense} if result.trace.dense else {}),  # "building, 41%"
                **({"unread": result.trace.unread} if result.trace.unread else {}),  # and the fix
                **({"vectors": result.trace.vectors} if result.trace.vectors else {}),  # the second set
                **({"not_dense": result.trace.not_dense} if result.trace.not_dense else {}),  # BM25 only
            }
            if result.files is not None:
                return {**found, "files": [searched_file(f) for f in result.files]}
            return {
                **found,
                "results": [
                    {
                        "citation": hit.located_citation,
                        "score": round(hit.score, 4),
                        "source_type": hit.source_type.value,
                        "language": hit.chunk.language,
                        "text": hit.text,
                        **({"stale": True, "stale_reason": hit.stale} if hit.stale else {}),
                    }
                    for hit in result.chunks
                ],
            }

        return _tool_errors(run, timeout)

    def get_context(
        query: str,
        max_tokens: int | None = 3000,
        top_k: int | None = None,
        mode: Literal["hybrid", "dense", "bm25"] | None = None,
        filters: str | list[str] | dict[str, Any] | None = None,
        features: dict[str, bool] | None = None,
        lang: str | None = None,
        edges: Literal["off", "signatures"] | None = None,
        fusion: str | None = None,
    ) -> str:
        """Evidence to answer a question: the most relevant passages as exact quotes, grouped by
        topic, each cited as [n] path:start-end, within `max_tokens` tokens, plus a confidence
        verdict (weak evidence is flagged: then say the collection may not contain the answer).
        Prefer this over `search` when you will answer from what it returns; quote and cite the
        [n] ids you use. `filters` as for `search`. `edges: "signatures"`: for a question about one
        definition, its callers' and callees' signatures too. `fusion` as for `search`."""

        def run() -> str:
            body = ContextArgs(
                query=query,
                max_tokens=max_tokens,
                top_k=top_k,
                mode=mode,
                filters=filters,
                features=features,
                lang=lang,
                edges=edges,
                fusion=fusion,
            )
            request = query_of(body, limits, settings.features, settings.retrieval)
            context, _ = engine.context(request, max_tokens=body.max_tokens, log=True, edges=body.edges)
            verdict = "weak evidence" if context.weak_evidence else "evidence found"
            return f"{context.render()}\n\n(confidence {context.confidence:.2f}: {verdict})"

        return _tool_errors(run, timeout)

    def list_documents(collection: str | None = None, offset: int = 0, limit: int = 200) -> dict[str, Any]:
        """The documents in the index (path, collection, type, language, size), by path: to see
        what the collection covers before searching, or to pick a `path~...` filter. `limit`:
        at most 1000 a call; `offset` pages on."""
        records, root = _tool_errors(lambda: (engine.documents(collection), engine.ingested_root()), timeout)
        page = records[offset : offset + limit]  # paths relative to the ingested root, as search shows them
        rows = [document_dict(r, root) for r in page]
        return {"total": len(records), "offset": offset, "root": root, "documents": rows}

    def stats() -> dict[str, Any]:
        """Size and state of the index: documents, chunks, live index version, embedding model."""
        found = _tool_errors(engine.stats, timeout)
        return {k: v for k, v in found.to_dict().items() if k != "bytes_on_disk"}

    def status() -> dict[str, Any]:
        """Files changed, new or deleted on disk since the index was built (under the ingested
        root): results citing a changed file carry `stale: true`; `hybrid-rag ingest` updates."""
        return _tool_errors(engine.disk_status, timeout).to_dict()

    def find_symbol(
        name: str,
        mode: Literal["auto", "exact", "prefix", "fuzzy"] = "auto",
        kind: list[str] | None = None,
        path: str | None = None,
        limit: int = 20,
    ) -> dict[str, Any]:
        """Where a function, class, method, struct, trait... is defined: its definitions by name,
        best first (exact, then names that start with it; close spellings when there are neither),
        each with its citation `path:start-end`, kind, qualified name, signature and the first
        sentence of its doc comment. `name`: a name or a qualified one (`ConnectionPool`,
        `Pool.get`, `Foo::bar`). `kind`: only these kinds; `path`: only under a path glob
        (`src/**`). Read the lines it cites, or call `outline` on its file to see what surrounds it."""

        def run() -> dict[str, Any]:
            args = FindSymbolArgs(name=name, mode=mode, kind=kind, path=path, limit=limit)
            kwargs = {"mode": args.mode, "kinds": args.kind, "path": args.path, "limit": args.limit}
            found = engine.symbols(args.name, **kwargs)
            return matches_json(args.name, found)

        return _tool_errors(run, timeout)

    def outline(path: str) -> dict[str, Any]:
        """What a source file defines, in order and nested (classes with their methods), each
        definition cited `path:start-end` with its signature and doc comment's first sentence:
        a map of the file before reading it. `path` as search results and list_documents show it."""

        def run() -> dict[str, Any]:
            args = OutlineArgs(path=path)
            return outline_json(args.path, engine.outline(args.path))

        return _tool_errors(run, timeout)

    def find_references(name: str) -> dict[str, Any]:
        """Every use of a definition's name (calls, types, base classes, imports), grouped by file,
        each cited `path:line-line` with the enclosing definition and what the use resolves to: one
        definition (`resolved`, `via` the rule: self, qualifier, same file, import, unique name),
        several candidates (`ambiguous`: check them), or none in the index (`unresolved`)."""

        def run() -> dict[str, Any]:
            args = RefsArgs(name=name)
            return engine.references("refs", args.name)

        return _tool_errors(run, timeout)

    def callers(name: str, depth: int = 1) -> dict[str, Any]:
        """Who calls a function, method or class: the calling definitions, each cited
        `path:start-end` with the lines of the calls; `depth` > 1 adds their callers (up to 5).
        Callers whose call could be another definition of the same name are marked `ambiguous`."""

        def run() -> dict[str, Any]:
            args = GraphArgs(name=name, depth=depth)
            return engine.references("callers", args.name, depth=args.depth)

        return _tool_errors(run, timeout)

    def callees(name: str, depth: int = 1) -> dict[str, Any]:
        """What a function or method calls: each called definition cited `path:start-end` (with
        the call lines), ambiguous calls with their candidates, calls to names outside the index
        (library functions) as `unresolved`; `depth` > 1 follows the resolved ones."""

        def run() -> dict[str, Any]:
            args = GraphArgs(name=name, depth=depth)
            return engine.references("callees", args.name, depth=args.depth)

        return _tool_errors(run, timeout)

    def impact(target: str, depth: int = 2) -> dict[str, Any]:
        """What may break if a file or a definition changes: the definitions that use it (and,
        with `depth`, those that use them), ranked by score, and their files, each cited
        `path:start-end`. `target`: a file's path as results show it, or a definition's name."""

        def run() -> dict[str, Any]:
            args = ImpactArgs(target=target, depth=depth)
            return engine.references("impact", args.target, depth=args.depth)

        return _tool_errors(run, timeout)

    tools = [
        _tool(search, SearchArgs),
        _tool(get_context, ContextArgs),
        _tool(list_documents, DocumentsArgs),
        _tool(stats, NoArgs),
        _tool(status, NoArgs),
        _tool(find_symbol, FindSymbolArgs),
        _tool(outline, OutlineArgs),
        _tool(find_references, RefsArgs),
        _tool(callers, GraphArgs),
        _tool(callees, GraphArgs),
        _tool(impact, ImpactArgs),
    ]
    if limits.mcp_ingest_enabled:
        roots = resolved_roots(limits.ingest_roots)

        def ingest_path(path: str, collection: str = "default") -> dict[str, Any]:
            """Add or update a folder, file or zip on the server's disk in the index (only below the
            configured ingest roots). Re-ingesting is incremental: only changed files are
            re-embedded, and files removed from an ingested folder are dropped. Takes seconds to
            minutes; use it after files changed, not before every search."""

            def run() -> dict[str, Any]:
                target = confine(path, roots, field="path")
                return engine.ingest([target], collection=collection).to_dict()

            return _tool_errors(run)

        tools.append(_tool(ingest_path, IngestPathArgs))
    return MCPServer("hybrid-rag", instructions=INSTRUCTIONS, version="1", tools=tools)


def run_mcp(
    settings: Settings,
    *,
    transport: Literal["stdio", "http"],
    host: str,
    port: int,
    no_auth: bool,
    say: Callable[[str], None],
) -> None:
    """Serve on stdio (an agent launches this as its subprocess), or streamable HTTP at ``/mcp``."""
    server = build_server(settings)
    if transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    from hybrid_rag.server.auth import decide_auth, require_bearer

    decision = decide_auth(settings, host=host, no_auth=no_auth)
    say(f"hybrid-rag: MCP over HTTP at http://{host}:{port}/mcp; auth: {decision.source}")
    if decision.generated is not None:
        say(f"hybrid-rag: API key (shown once; kept in the data dir, mode 0600): {decision.generated}")
    app = server.streamable_http_app(host=host)
    uvicorn.run(require_bearer(app, decision.keys), host=host, port=port, log_level="info")
