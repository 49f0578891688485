"""``hybrid-rag query --group file``: the flags and the plain-text listing of a result grouped by
file (``retrieval/grouping.py`` groups; this module only adds the options and prints)."""

from __future__ import annotations

import argparse
from typing import Any

GROUPS = ("chunk", "file")  # retrieval/grouping.py's, not imported: the CLI starts cold


def add_group_flags(p: argparse.ArgumentParser, positive_int: Any) -> None:
    """``--group chunk|file`` and ``--units-per-file N`` on the ``query`` parser."""
    p.add_argument(
        "--group",
        choices=GROUPS,
        default=None,
        help="file: files ranked by their evidence, each with its best units (--top-k counts files)",
    )
    p.add_argument(
        "--units-per-file", type=positive_int, default=None, help="with --group file: units per file (3)"
    )


def group_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The engine's ``group``/``units_per_file`` from the flags (none when not given)."""
    found = {"group": getattr(args, "group", None), "units_per_file": getattr(args, "units_per_file", None)}
    return {k: v for k, v in found.items() if v is not None}


def print_files(result: Any) -> None:
    """The files of a grouped result: rank, path, score, then each unit's lines, score and the lines
    that match the query best."""
    print(f"# {len(result.files)} file(s), mode {result.mode}, index v{result.index_version}")
    if result.trace.vectors:  # a question the index's model cannot read, answered by the second set
        print(f"# vectors: the second vector set ({result.trace.vectors}) answered")
    if result.trace.unread:
        print(f"# warning: {result.trace.unread}")
    for rank, group in enumerate(result.files, start=1):
        best = group.units[0]
        kind = f"{best.source_type.value}/{best.chunk.language}"
        print(f"\n[{rank}] {group.path}  score={group.score:.4f}  {kind}")
        for unit in group.units:
            match = result.matches.get(unit.id)
            matched = f"  match {match[0]}-{match[1]}" if match else ""
            stale = f"  ({unit.stale_note})" if unit.stale else ""
            lines = f"{unit.start_line}-{unit.end_line}"
            print(f"    {lines}  score={unit.score:.4f}  id={unit.id}{matched}{stale}")
    timings = ", ".join(f"{t.stage} {t.seconds * 1000:.1f} ms" for t in result.trace.timings)
    print(f"\n# trace: {timings}")
    for note in result.trace.notes:
        print(f"# note: {note}")
