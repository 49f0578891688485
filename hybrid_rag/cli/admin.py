"""``hybrid-rag status|stats|documents|delete|rebuild|versions|rollback``: the store, the
index lifecycle."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hybrid_rag.cli.common import _engine, _print_json, _warn_repaired, printed_json
from hybrid_rag.errors import HybridRagError
from hybrid_rag.settings import Settings


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    """What changed on disk since the index was built: changed, new, deleted files; exit 0."""
    with _engine(settings) as engine:
        found = engine.disk_status(args.paths, absolute_paths=args.absolute_paths)
    if printed_json(args, found.to_dict()):
        return 0
    for label, paths in (("changed", found.changed), ("new", found.new), ("deleted", found.deleted)):
        for path in paths:
            print(f"{label:8} {path}")
    if found.git is not None:
        print(found.git.summary())
    print(found.summary())
    if found.not_dense:  # the roles and folders found by BM25 only, as query answers say
        print(found.not_dense)
    return 0


def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    with _engine(settings) as engine:
        stats = engine.stats()  # a read: it writes nothing (a write stopped half way is reported,
        # and the next write finishes it; embedding everything here took minutes, unannounced)
    from hybrid_rag.querylog import QueryLog

    queries = QueryLog.in_dir(settings.logs_dir).summarize()
    if printed_json(args, {**stats.to_dict(), "queries": queries}):
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
    if stats.not_dense:
        print(f"dense:      {stats.not_dense}")
    if stats.second_vectors:  # the vectors a question the first model cannot read is answered from
        second = stats.second_vectors
        print(f"second set: {second['model']} ({second['chunks']} chunks)")
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


def cmd_documents(args: argparse.Namespace, settings: Settings) -> int:
    """Every stored document (of ``--collection``), with its collection and chunk count; paths
    relative to the ingested root (``hybrid_rag/paths.py``) unless ``--absolute-paths``."""
    from hybrid_rag.paths import display_path

    with _engine(settings) as engine:
        records = engine.documents(args.collection)
        counts = engine.store.chunk_counts() if records else {}
        root = None if args.absolute_paths else engine.ingested_root()
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
    if printed_json(args, {"root": root, "documents": rows}):
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

    with _engine(settings) as engine:
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
    verb = "would delete" if report is None else "deleted"
    for p in paths:
        print(f"  {verb} {display_path(p, root)}")
    if report is not None:
        print(f"{verb} {len(paths)} document(s); index version {report.version} live, {report.chunks} chunks")
    return 0


def cmd_rebuild(args: argparse.Namespace, settings: Settings) -> int:
    with _engine(settings) as engine:
        report = engine.rebuild(second_model=getattr(args, "second_model", None))
        second = engine.versions()[-1].get("second_dense") if report.version else None
    timings = ", ".join(f"{k} {v:.2f} s" for k, v in report.seconds.items())
    print(
        f"index version {report.version} live: {report.chunks} chunks, {report.embedded} embedded ({timings})"
    )
    if second:
        model, chunks, embedded = second["model"], second["chunks"], second["embedded"]
        print(f"second vector set: {model}, {chunks} chunks, {embedded} embedded")
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
    with _engine(settings) as engine:
        rows = engine.versions()
    if args.json:
        _print_json(rows)
    elif not rows:
        print(f"no index versions yet in {settings.data_dir.resolve()}: run `hybrid-rag ingest PATH`")
    for r in [] if args.json else rows:
        mark = "*" if r["live"] else " "
        print(f"{mark} v{r['version']}  {r['built_at']}  {r['chunks']} chunks  {r['reason']}  {r['model']}")
    return 0


def cmd_rollback(args: argparse.Namespace, settings: Settings) -> int:
    with _engine(settings) as engine:
        unserved = engine.rollback(args.version)
        root = engine.ingested_root()
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
