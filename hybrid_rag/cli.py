"""The ``hybrid-rag`` command line. User errors print one line on stderr and exit non-zero."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hybrid_rag.errors import HybridRagError, InputError, describe, disk_full, is_disk_full
from hybrid_rag.progress import Bars as _Bars
from hybrid_rag.settings import Settings, load_settings

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


@contextmanager
def _ctrl_c_stops() -> Iterator[threading.Event]:
    """While open, Ctrl-C (SIGINT) sets the event instead of raising, so an ingest can stop after its
    current batch; a second Ctrl-C raises KeyboardInterrupt at once (exit 130 all the same)."""
    event = threading.Event()

    def first(_signum: int, _frame: Any) -> None:
        event.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    try:
        previous = signal.signal(signal.SIGINT, first)
    except ValueError:  # not the main thread: Ctrl-C keeps its usual meaning
        yield event
        return
    try:
        yield event
    finally:
        signal.signal(signal.SIGINT, previous)


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    if args.follow_symlinks is not None:
        settings = settings.with_overrides({"loading.follow_symlinks": args.follow_symlinks})
    engine = _engine(settings)
    bars = _Bars(args.progress or not args.quiet)  # off a terminal: a plain line every few seconds
    try:
        with _ctrl_c_stops() as interrupted:
            report = engine.ingest(
                args.paths,
                collection=args.collection,
                dry_run=args.dry_run,
                progress=bars,
                stop=interrupted.is_set,
                bm25_first=args.bm25_first,
            )
    finally:
        bars.close()
        engine.close()
    choice = getattr(engine.embedder, "choice", None)  # embedding.model: auto says what it chose and why
    if choice and not args.quiet and not getattr(engine.embedder, "kept_from_index", False):
        print(f"# note: {choice}", file=sys.stderr)
    drift = _model_drift(engine) if not report.dry_run else ""
    if drift and not args.quiet:
        print(f"# note: {drift}", file=sys.stderr)
    plan = report.plan
    if report.interrupted and report.build is not None:  # stopped while the vectors filled in
        print(
            f"hybrid-rag: interrupted: index version {report.build.version} is live with BM25 over all "
            f"{report.build.chunks} chunks, the dense part building; run the same ingest again to finish",
            file=sys.stderr,
        )
        return 130
    if report.interrupted:
        todo = len(plan.added) + len(plan.changed)
        print(
            f"hybrid-rag: interrupted: {report.files_written} of {todo} files written "
            f"({report.chunks_written} chunks); the index is as it was; run the same ingest again to finish",
            file=sys.stderr,
        )
        return 130
    if args.json:
        _print_json({**report.to_dict(), **({"notes": [drift]} if drift else {})})
        return 0
    verb = "would ingest" if report.dry_run else "ingested"
    print(
        f"{verb}: {len(plan.added)} new, {len(plan.changed)} changed, {len(plan.deleted)} deleted, "
        f"{len(plan.unchanged)} unchanged, {len(plan.skipped)} skipped"
    )
    if args.dry_run:
        for label, paths in (("new", plan.added), ("changed", plan.changed), ("deleted", plan.deleted)):
            for p in paths:
                print(f"  {label:8} {display_path(p)}")
    for s in plan.skipped:
        print(f"  skipped  {display_path(s.path)}: {s.reason}", file=sys.stderr)
    if report.duplicates:
        print(f"near-duplicate chunks stored once: {len(report.duplicates)} dropped")
        for d in report.duplicates[:10]:
            print(f"  duplicate {display_path(d.path)}:{d.start_line}-{d.end_line}")
    if report.build:
        b = report.build
        print(
            f"chunks written: {report.chunks_written}, embedded: {report.embedded} "
            f"(others from cache); index version {b.version} live with {b.chunks} chunks"
        )
        _warn_repaired(b.repaired)
    elif not report.dry_run:
        print("nothing changed; index left as it is")
    return 0


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
    if result.trace.unread:  # the index cannot read this question: before the results, not after
        print(f"# warning: {result.trace.unread}")
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
)


def _query_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """top_k, mode, filters and per-call feature overrides from the shared query flags."""
    features = {name: getattr(args, name) for name in STAGE_FLAGS if getattr(args, name, None) is not None}
    return {
        "top_k": args.top_k,
        "mode": args.mode,
        "filters": args.filter or None,
        "features": features or None,
        "absolute_paths": args.absolute_paths,
        **({"lang": args.lang} if getattr(args, "lang", None) else {}),
    }


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Import an embeddings.json / embeddings.jsonl file: its vectors reused when they fit the model."""
    engine = _engine(settings)
    try:
        report = engine.import_file(args.file, collection=args.collection)
    finally:
        engine.close()
    if args.json:
        _print_json(report.to_dict())
        return 0
    print(
        f"imported {report.rows} rows from {display_path(report.file)} ({report.format}): "
        f"{len(report.added)} new, {len(report.changed)} changed, {len(report.deleted)} deleted, "
        f"{len(report.unchanged)} unchanged document(s)"
    )
    if report.vectors_reused:
        print(
            f"vectors reused: {report.reused_vectors} (dimension {report.dimension} is the model's); "
            f"nothing re-embedded"
            + (f" but {report.embedded} text(s) without a vector" if report.embedded else "")
        )
    elif report.dimension is not None and report.dimension != report.model_dimension:
        print(
            f"vectors not reused: the file's dimension is {report.dimension}, the model's "
            f"{report.model_dimension}; re-embedded {report.embedded} text(s)"
        )
    elif report.embedded:
        print(f"embedded {report.embedded} text(s) (the file has no vectors for them)")
    for where, reason in report.skipped:
        print(f"  skipped  {where}: {reason}", file=sys.stderr)
    if report.version is not None:
        print(f"index version {report.version} live")
    else:
        print("nothing changed; index left as it is")
    return 0


def cmd_query(args: argparse.Namespace, settings: Settings) -> int:
    """Ranked chunks; with ``--self-check`` (never by default here) the self-check's kept attempt."""
    engine = _engine(settings)
    try:
        result, checked = engine.retrieve(
            args.text, self_check=args.self_check, log=True, **_query_kwargs(args)
        )
    finally:
        engine.close()
    if args.json:
        _print_json({**result.to_dict(), **({"self_check": checked.to_dict()} if checked else {})})
    else:
        _print_results(result)
        if checked is not None:
            print(
                f"# self-check: confidence {checked.confidence:.3f}{' (weak)' if checked.weak else ''}, "
                f"attempts: " + " -> ".join(f"{a.strategy} {a.confidence:.3f}" for a in checked.attempts)
            )
    return 0 if result.chunks else 1


def _context(args: argparse.Namespace, settings: Settings, *, log: bool = True) -> tuple[Any, Any, Any]:
    engine = _engine(settings)
    try:
        context, checked = engine.context(
            args.text, max_tokens=args.max_tokens, log=log, **_query_kwargs(args)
        )
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
    try:
        print(build_prompt(args.text, context, settings.context)[1], flush=True)
        _print_retrieval_notes(context)
        answer = engine.answer(args.text, context, checked, answer_tokens=args.answer_tokens, log=True)
    finally:
        engine.close()
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


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    """What changed on disk since the index was built: changed, new, deleted files; exit 0."""
    engine = _engine(settings)
    try:
        found = engine.disk_status(args.paths, absolute_paths=args.absolute_paths)
    finally:
        engine.close()
    if args.json:
        _print_json(found.to_dict())
        return 0
    for label, paths in (("changed", found.changed), ("new", found.new), ("deleted", found.deleted)):
        for path in paths:
            print(f"{label:8} {path}")
    print(found.summary())
    return 0


def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    engine = _engine(settings)
    try:
        stats = engine.stats()  # a read: it writes nothing (a write stopped half way is reported,
        # and the next write finishes it; embedding everything here took minutes, unannounced)
    finally:
        engine.close()
    from hybrid_rag.querylog import QueryLog

    queries = QueryLog.in_dir(settings.logs_dir).summarize()
    if args.json:
        _print_json({**stats.to_dict(), "queries": queries})
        return 0
    print(f"data dir:   {Path(stats.data_dir).resolve()}")
    provisional = " (provisional: embedding.model auto chooses at the first ingest, by its files' languages)"
    print(f"model:      {stats.model}{provisional if stats.model_provisional else ''}")
    print(f"documents:  {stats.documents}")
    print(f"chunks:     {stats.chunks} ({stats.cached_embeddings} cached embeddings)")
    if stats.languages:
        print("languages:  " + ", ".join(f"{lang} {n}" for lang, n in stats.languages.items()))
    live = f"v{stats.live_version}" if stats.live_version else "none (run `hybrid-rag ingest PATH`)"
    print(f"live index: {live}")
    if stats.index_behind_store:
        print(f"behind the store: {stats.behind}")
    for v in stats.versions:
        where = "on disk" if v["on_disk"] else "pruned"
        mark = "*" if v["version"] == stats.live_version else " "
        print(f"  {mark} v{v['version']}  {v['status']} at {v['built_at']}  ({where})")
    for name, size in stats.bytes_on_disk.items():
        print(f"  {name:10} {size / 1e6:9.2f} MB")
    if stats.old_revisions.get("chunks"):
        old = stats.old_revisions
        print(
            f"old revisions kept for older versions: {old['documents']} documents, {old['chunks']} "
            f"chunks, {(old['text_bytes'] + old['embedding_bytes']) / 1e6:.2f} MB of text and vectors"
        )
    if queries.get("queries"):
        checked = queries["self_checked"]
        print(f"queries:    {queries['queries']} logged, {checked} of them self-checked")
        if checked:
            print(
                f"  self-check: retried {queries['retried']} of {checked} self-checked queries "
                f"({queries['retried_share']:.0%}), left weak {queries['weak']} of {checked} "
                f"({queries['weak_share']:.0%})"
            )
        for stage, p in queries.get("latency_ms", {}).items():
            print(f"  {stage:14} p50 {p['p50']:8.1f} ms   p95 {p['p95']:8.1f} ms")
    return 0


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    from hybrid_rag.evaluation.experiment import run_experiment
    from hybrid_rag.evaluation.metrics import load_beir

    dataset = load_beir(args.dataset)
    modes = args.mode or ["hybrid"]
    bars = _Bars(not args.quiet, prefix="hybrid-rag eval")  # minutes of work: always say how far
    try:
        results = run_experiment(
            dataset,
            settings,
            modes=modes,
            work_dir=Path(args.work_dir) if args.work_dir else None,
            progress=bars,
        )
    finally:
        bars.close()
    if args.json:
        _print_json([r.to_dict(per_query=args.per_query) for r in results])
        return 0
    print(
        f"# {dataset.name}: {len(dataset.corpus)} docs, {results[0].chunks} chunks, "
        f"{results[0].queries} judged queries; ingest {results[0].ingest_seconds:.1f} s"
    )
    choice = f" ({results[0].model_choice})" if results[0].model_choice else ""
    print(f"# model: {results[0].model}{choice}")
    print("| mode | nDCG@10 | MRR@10 | P@3 | Recall@50 | Recall@100 | mean ms | p95 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        m = r.report.means
        lat = r.latency_ms["total"]
        print(
            f"| {r.mode} | {m['ndcg@10']:.3f} | {m['mrr@10']:.3f} | {m['precision@3']:.3f} | "
            f"{m['recall@50']:.3f} | {m['recall@100']:.3f} | {lat['mean']:.1f} | {lat['p95']:.1f} |"
        )
    return 0


def _warn_repaired(count: int) -> None:
    """Cached vectors that failed their checksum were embedded again by the build: say how many."""
    if count:
        print(
            f"hybrid-rag: warning: {count} cached vector(s) failed their checksum and were embedded again",
            file=sys.stderr,
        )


def cmd_documents(args: argparse.Namespace, settings: Settings) -> int:
    """Every stored document (of ``--collection``), with its collection and chunk count; paths
    relative to the ingested root (``hybrid_rag/paths.py``) unless ``--absolute-paths``."""
    from hybrid_rag.paths import display_path

    engine = _engine(settings)
    try:
        records = engine.documents(args.collection)
        counts = engine.store.chunk_counts() if records else {}
        root = None if args.absolute_paths else engine.ingested_root()
    finally:
        engine.close()
    rows = [
        {
            "path": display_path(r.path, root),
            "collection": r.collection,
            "chunks": counts.get(r.id, 0),
            "source_type": r.source_type.value,
            "language": r.language,
            "languages": dict(r.languages),
            "size": r.size,
            "ingested_at": r.ingested_at.isoformat(),
        }
        for r in records
    ]
    if args.json:
        _print_json({"root": root, "documents": rows})
        return 0
    if not rows:  # an empty list, not an error: exit 0, as `versions` and `documents --json`
        where = f" in collection {args.collection!r}" if args.collection else ""
        print(f"no documents{where} in {settings.data_dir.resolve()}: run `hybrid-rag ingest PATH`")
        return 0
    width = max(len(r["collection"]) for r in rows)
    for r in rows:
        langs = ",".join(r["languages"]) or "-"
        print(f"{r['collection']:{width}}  {r['chunks']:6} chunks  {langs:8}  {r['path']}")
    collections = len({r["collection"] for r in rows})
    total = sum(r["chunks"] for r in rows)
    print(f"# {len(rows)} document(s), {total} chunks, {collections} collection(s); root {root or '-'}")
    return 0


def _stored_paths(wanted: Sequence[str], stored: Sequence[str], root: str | None) -> list[str]:
    """The stored paths ``delete`` arguments name: a stored path, a path as ``documents`` shows it
    (relative to the ingested root), or a file or folder relative to the working directory; a
    folder names every document below it. An argument naming nothing is kept as given (the
    engine refuses it by name)."""
    have = set(stored)
    out: list[str] = []
    for arg in wanted:
        candidates = [arg, os.path.abspath(arg)] + ([f"{root}/{arg}"] if root else [])
        exact = [c for c in candidates if c in have]
        if exact:
            out.append(exact[0])
            continue
        below = [p for c in candidates for p in stored if p.startswith(c.rstrip("/") + "/")]
        out.extend(dict.fromkeys(below) if below else [arg])
    return list(dict.fromkeys(out))


def cmd_delete(args: argparse.Namespace, settings: Settings) -> int:
    """Remove documents (files, or every document below a folder) and make a version without them live."""
    from hybrid_rag.paths import display_path

    engine = _engine(settings)
    try:
        root = engine.ingested_root()
        stored = engine.deletable_paths()  # after a rollback, also the files only newer versions hold
        if not stored:
            raise HybridRagError(f"no documents in {settings.data_dir.resolve()}: nothing to delete")
        paths = _stored_paths(args.paths, stored, root)
        known = set(stored)
        missing = [p for p in paths if p not in known]
        if missing:
            raise HybridRagError(f"no document {missing[0]!r} in {settings.data_dir.resolve()}")
        report = None if args.dry_run else engine.delete(paths)
    finally:
        engine.close()
    verb = "would delete" if report is None else "deleted"
    for p in paths:
        print(f"  {verb} {display_path(p, root)}")
    if report is not None:
        print(f"{verb} {len(paths)} document(s); index version {report.version} live, {report.chunks} chunks")
    return 0


def cmd_rebuild(args: argparse.Namespace, settings: Settings) -> int:
    engine = _engine(settings)
    try:
        report = engine.rebuild()
    finally:
        engine.close()
    timings = ", ".join(f"{k} {v:.2f} s" for k, v in report.seconds.items())
    print(
        f"index version {report.version} live: {report.chunks} chunks, {report.embedded} embedded ({timings})"
    )
    _warn_repaired(report.repaired)
    drift = _model_drift(engine)
    if drift:
        print(f"# note: {drift}", file=sys.stderr)
    return 0


def _model_drift(engine: Any) -> str:
    """``embedding.model: auto`` kept on a model the data dir's languages no longer choose."""
    from hybrid_rag.models.auto import drift_note

    try:
        return drift_note(engine.embedder, engine.store.language_counts() if engine.store.exists else {})
    finally:
        engine.close()


def cmd_versions(args: argparse.Namespace, settings: Settings) -> int:
    engine = _engine(settings)
    try:
        rows = engine.versions()
    finally:
        engine.close()
    if args.json:
        _print_json(rows)
    elif not rows:
        print(f"no index versions yet in {settings.data_dir.resolve()}: run `hybrid-rag ingest PATH`")
    for r in [] if args.json else rows:
        mark = "*" if r["live"] else " "
        print(f"{mark} v{r['version']}  {r['built_at']}  {r['chunks']} chunks  {r['reason']}  {r['model']}")
    return 0


def cmd_rollback(args: argparse.Namespace, settings: Settings) -> int:
    engine = _engine(settings)
    try:
        unserved = engine.rollback(args.version)
        root = engine.ingested_root()
    finally:
        engine.close()
    print(f"index version {args.version} is live; the next ingest brings it up to date with the store")
    if unserved:
        from hybrid_rag.paths import display_path

        shown = ", ".join(display_path(p, root) for p in unserved[:5]) + (
            ", ..." if len(unserved) > 5 else ""
        )
        print(
            f"note: {len(unserved)} stored document(s) this version does not hold return at the next write "
            f"({shown}): `hybrid-rag delete PATH` removes one for good",
            file=sys.stderr,
        )
    return 0


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


def cmd_symbols(args: argparse.Namespace, settings: Settings) -> int:
    """Definitions by name (exact, prefix, fuzzy), each cited ``path:start-end``; exit 1 when none."""
    from hybrid_rag.symbols.render import matches_json, matches_text

    engine = _engine(settings)
    try:
        found = engine.symbols(
            args.name,
            mode=args.mode,
            kinds=args.kind,
            path=args.path,
            limit=args.limit,
            absolute_paths=args.absolute_paths,
        )
    finally:
        engine.close()
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

    engine = _engine(settings)
    try:
        entries = engine.outline(args.file, absolute_paths=args.absolute_paths)
    finally:
        engine.close()
    if args.json:
        _print_json(outline_json(args.file, entries))
    elif entries:
        print(outline_text(entries))
    else:
        print(f"no definitions in {args.file} (not code, or no parser found one)", file=sys.stderr)
    return 0


def cmd_bench(args: argparse.Namespace, settings: Settings) -> int:
    from hybrid_rag.evaluation.bench import format_quick_bench, run_quick_bench

    result = run_quick_bench(settings, docs=args.docs, queries=args.queries)
    if args.json:
        _print_json(result)
    else:
        print(format_quick_bench(result))
    return 0 if result.get("ok") else 1


def cmd_watch(args: argparse.Namespace, settings: Settings) -> int:
    """Ingest PATHs, then again on every change (``hybrid_rag/watch.py``), until Ctrl-C / SIGTERM."""
    from hybrid_rag.watch import output_files, watch

    engine = _engine(settings)
    try:
        with _ctrl_c_stops() as stop:
            previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
            try:
                summary = watch(
                    engine,
                    args.paths,
                    collection=args.collection,
                    stop=stop,
                    debounce_ms=args.debounce_ms,
                    own_files=output_files(),  # `watch DIR 2> DIR/watch.log`: not a change to ingest
                    say=lambda line: print(f"hybrid-rag: watch: {line}", file=sys.stderr, flush=True),
                )
            finally:
                signal.signal(signal.SIGTERM, previous)
    finally:
        engine.close()
    print(f"hybrid-rag: watch: stopped after {summary.ingests} ingest(s)", file=sys.stderr, flush=True)
    return 130 if summary.interrupted else 0


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
    """The MCP server (``hybrid_rag/mcp_server.py``) on stdio, or streamable HTTP."""
    try:
        from hybrid_rag.mcp_server import run_mcp
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


def _server_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=None, help="address to bind (default server.host, 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default server.port, 8000)")
    p.add_argument("--no-auth", action="store_true", help="no API key (allowed only on a loopback host)")


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
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("context", help="token-budgeted context with cited quotes, for an LLM prompt")
    _query_flags(p)
    p.add_argument(
        "--max-tokens", type=int, default=None, help="budget (default: context.max_context_tokens)"
    )
    p.set_defaults(func=cmd_context)

    p = sub.add_parser("ask", help="the prompt-ready context, and the answer when a generator is configured")
    _query_flags(p)
    p.add_argument("--max-tokens", type=int, default=None, help="context budget")
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

    from hybrid_rag.cli_references import add_parsers as add_reference_parsers

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


if __name__ == "__main__":
    raise SystemExit(main())
