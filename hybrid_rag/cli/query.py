"""``hybrid-rag query|context|ask``: ranked chunks, the budgeted context, the answer;
printed as text or ``--json``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hybrid_rag.cli.common import EXIT_USER_ERROR, _engine, _print_json, _query
from hybrid_rag.cli.files import group_kwargs, print_files
from hybrid_rag.errors import InputError
from hybrid_rag.settings import Settings

PARENT_LINES = 40  # of a result's parent context in plain output (--json has all of it)


def _print_lines(text: str, limit: int, indent: str = "    ") -> None:
    lines = text.splitlines()
    for line in lines[:limit]:
        print(f"{indent}{line[:140]}")
    if len(lines) > limit:
        print(f"{indent}... ({len(lines) - limit} more lines)")


def _print_results(result: Any) -> None:
    building = f" (dense {result.trace.dense}: BM25 only for the rest)" if result.trace.dense else ""
    print(f"# {len(result.chunks)} result(s), mode {result.mode}, index v{result.index_version}{building}")
    if result.trace.vectors:  # a question the index's model cannot read, answered by the second set
        print(f"# vectors: the second vector set ({result.trace.vectors}) answered")
    if result.trace.unread:  # the index cannot read this question: before the results, not after
        print(f"# warning: {result.trace.unread}")
    if result.trace.not_dense:  # the roles and folders found by BM25 only (ingest/embed_order.py)
        print(f"# {result.trace.not_dense}")
    for rank, sc in enumerate(result.chunks, start=1):
        print(
            f"\n[{rank}] {sc.located_citation}  "
            f"score={sc.score:.4f}  {sc.source_type.value}/{sc.chunk.language}"
        )
        if sc.stale:
            print(f"    {sc.stale_note}")
        _print_lines(sc.text, 6)
        parent = result.parents.get(sc.id)
        if parent is not None:
            where = f"{parent.path}:{parent.start_line}-{parent.end_line}"
            print(f"    parent context ({parent.kind}) {where}:")
            _print_lines(parent.text, PARENT_LINES, indent="      ")
    timings = ", ".join(f"{t.stage} {t.seconds * 1000:.1f} ms" for t in result.trace.timings)
    print(f"\n# trace: {timings}")
    for note in result.trace.notes:
        print(f"# note: {note}")


def cmd_query(args: argparse.Namespace, settings: Settings) -> int:
    """Ranked chunks; with ``--self-check`` (never by default here) the self-check's kept attempt."""
    with _engine(settings) as engine:
        result, checked = engine.retrieve(
            _query(args), self_check=args.self_check, log=True, **group_kwargs(args)
        )
    if args.json:
        _print_json({**result.to_dict(), **({"self_check": checked.to_dict()} if checked else {})})
    else:
        print_files(result) if result.files is not None else _print_results(result)
        if checked is not None:
            print(
                f"# self-check: confidence {checked.confidence:.3f}{' (weak)' if checked.weak else ''}, "
                f"attempts: " + " -> ".join(f"{a.strategy} {a.confidence:.3f}" for a in checked.attempts)
            )
    return 0 if result.chunks else 1


def _context(args: argparse.Namespace, settings: Settings, *, log: bool = True) -> tuple[Any, Any, Any]:
    engine = _engine(settings)
    try:
        context, checked = engine.context(_query(args), max_tokens=args.max_tokens, log=log, edges=args.edges)
    except BaseException:
        engine.close()
        raise
    if context.needed_tokens is not None:  # results, but the budget holds no quote of them
        engine.close()
        raise InputError(
            f"a budget of {context.max_tokens} tokens is too small for any evidence: the smallest that "
            f"quotes one is {context.needed_tokens} tokens (--max-tokens {context.needed_tokens} or more)"
        )
    return engine, context, checked


def cmd_context(args: argparse.Namespace, settings: Settings) -> int:
    engine, context, checked = _context(args, settings)
    engine.close()
    if args.json:
        data = context.to_dict()
        if checked is not None:
            data["self_check"] = checked.to_dict()
        data["trace"] = context.result.trace.to_dict()
        _print_json(data)
    else:
        print(context.render())
        _print_retrieval_notes(context)
        if checked is not None and checked.retried:
            print(
                f"\n# self-check: {len(checked.attempts)} attempts, confidence {checked.confidence:.2f}",
                file=sys.stderr,
            )
    return 0 if context.sources else 1


def _print_retrieval_notes(context: Any) -> None:
    """The retrieval's notes (a skipped expansion, rerank or filter) on stderr: the rendered
    context, for the LLM, carries only the notes about the context itself."""
    for note in context.result.trace.notes:
        if note not in context.notes:
            print(f"# note: {note}", file=sys.stderr)
    quoted = {q.chunk_id for q in context.quotes}
    for line in dict.fromkeys(sc.stale_note for sc in context.result.chunks if sc.stale and sc.id in quoted):
        print(f"# {line}", file=sys.stderr)


def cmd_ask(args: argparse.Namespace, settings: Settings) -> int:
    """Print the prompt-ready context; with a generator, send it and print the answer and the
    sources it cites.

    The context is printed first, so a generator that fails at the answer step (one error line
    on stderr, exit 2) still leaves the user the context to send elsewhere. The query is logged
    once, after the answer, with its ``generate`` time (and the failure among its notes)."""
    from hybrid_rag.context import build_prompt

    engine, context, checked = _context(args, settings, log=False)
    with engine:
        print(build_prompt(args.text, context, settings.context)[1], flush=True)
        _print_retrieval_notes(context)
        answer = engine.answer(args.text, context, checked, answer_tokens=args.answer_tokens, log=True)
    if engine.generator is None:
        print(
            "\n# no generator configured (generator.base_url): above is the prompt-ready context; "
            "send it to your LLM, or set generator.base_url to an OpenAI-compatible server",
            file=sys.stderr,
        )
        return 0 if context.sources else 1
    if answer.error is not None:
        print(
            f"error: no answer: {answer.error}; the context above is complete, send it to your LLM",
            file=sys.stderr,
        )
        return EXIT_USER_ERROR
    print("\n# Answer\n")
    print((answer.text or "").strip())
    _print_cited_sources(answer)
    if context.weak_evidence:
        print("# note: the evidence was weak (low confidence); check the sources", file=sys.stderr)
    return 0


def _print_cited_sources(answer: Any) -> None:
    """``[n] path:start-end`` for each id the answer cites; say so when it cites none, or an id
    the context does not have."""
    ids = answer.cited
    sources = {s.citation: s for s in answer.context.sources}
    print("\nSources:")
    for n in ids:
        if n in sources:
            print(f"  [{n}] {sources[n].ref}")
    if not ids:
        print("  none: the answer cites no [n] of the context")
    unknown = [n for n in ids if n not in sources]
    if unknown:
        marks = "".join(f"[{n}]" for n in unknown)
        print(f"# note: the answer cites {marks}, not in the context's sources", file=sys.stderr)
