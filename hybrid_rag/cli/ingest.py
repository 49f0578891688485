"""``hybrid-rag ingest|import|watch``: what writes documents into the store and indices."""

from __future__ import annotations

import argparse
import signal
import sys

from hybrid_rag.cli.admin import _model_drift
from hybrid_rag.cli.common import _engine, _warn_repaired, display_path, printed_json
from hybrid_rag.interrupts import ctrl_c_stops as _ctrl_c_stops
from hybrid_rag.progress import Bars as _Bars
from hybrid_rag.settings import Settings


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
    if printed_json(args, {**report.to_dict(), **({"notes": [drift]} if drift else {})}):
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


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Import an embeddings.json / embeddings.jsonl file: its vectors reused when they fit the model."""
    with _engine(settings) as engine:
        report = engine.import_file(args.file, collection=args.collection)
    if printed_json(args, report.to_dict()):
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


def cmd_watch(args: argparse.Namespace, settings: Settings) -> int:
    """Ingest PATHs, then again on every change (``hybrid_rag/watch.py``), until Ctrl-C / SIGTERM."""
    from hybrid_rag.watch import output_files, watch

    with _engine(settings) as engine, _ctrl_c_stops() as stop:
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
    print(f"hybrid-rag: watch: stopped after {summary.ingests} ingest(s)", file=sys.stderr, flush=True)
    return 130 if summary.interrupted else 0
