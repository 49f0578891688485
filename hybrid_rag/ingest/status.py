"""``hybrid-rag status``: what changed on disk since the served index version was built.

The ingested roots (by default the ingested root, ``hybrid_rag/paths.py``) are walked with the
rules ingest walks them by (``loaders.iter_files``: ignore lists, .gitignore, skipped kinds, the
data dir); a stored file whose size and mtime are those recorded is unchanged without being read,
one whose mtime alone moved is hashed (``freshness.Freshness``). ``new``: files ingest would add;
``deleted``: stored files gone from disk, or under a root but no longer ingestible there (ingest
would delete them); ``changed``: files whose bytes are not those indexed. Stored files outside the
roots are checked too (changed or deleted); zip members, imports and in-memory texts are not files.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_rag.ingest.converters.cache import Conversion
from hybrid_rag.ingest.freshness import CHANGED, FRESH, MISSING, Freshness, from_file
from hybrid_rag.ingest.git import GitReport
from hybrid_rag.ingest.loaders import iter_files
from hybrid_rag.ingest.metadata import metadata_hash
from hybrid_rag.settings import LoadingSettings
from hybrid_rag.store import DocumentRecord
from hybrid_rag.types import LoadedFile


@dataclass(frozen=True)
class DiskStatus:
    """Stored paths as stored (absolute); ``hashed``: files read because their stat moved."""

    roots: tuple[str, ...]
    changed: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    unchanged: int = 0
    hashed: int = 0
    seconds: float = 0.0
    git: GitReport | None = None
    not_dense: str = ""  # the live version's roles and folders found by BM25 only (indices/coverage.py)

    @property
    def clean(self) -> bool:
        return not (self.changed or self.new or self.deleted)

    def summary(self) -> str:
        counts = f"{len(self.changed)} changed, {len(self.new)} new, {len(self.deleted)} deleted"
        head = "up to date" if self.clean else counts
        tail = "" if self.clean else "; run hybrid-rag ingest to index them"
        return (
            f"{head} since the index was built ({self.unchanged} unchanged file(s), "
            f"{self.hashed} hashed, {self.seconds:.2f} s){tail}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "roots": list(self.roots),
            "changed": list(self.changed),
            "new": list(self.new),
            "deleted": list(self.deleted),
            "unchanged": self.unchanged,
            "hashed": self.hashed,
            "clean": self.clean,
            "seconds": round(self.seconds, 4),
            "summary": self.summary(),
            "git": self.git.to_dict() if self.git is not None else None,
            **({"not_dense": self.not_dense} if self.not_dense else {}),  # as in query answers
        }


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def disk_status(
    documents: Sequence[DocumentRecord],
    roots: Sequence[str],
    loading: LoadingSettings,
    *,
    data_dir: Path | None = None,
    uploads: Path | None = None,
    conversion: Conversion | None = None,
    freshness: Freshness | None = None,
) -> DiskStatus:
    """Compare ``documents`` (the served version's) with the files under ``roots`` (absolute)."""
    start = time.perf_counter()
    freshness = freshness if freshness is not None else Freshness()
    hashed_before = freshness.hashed
    files = {d.path: d for d in documents if from_file(d)}
    verdicts: dict[str, str] = {}

    def known(path: str, st: Any) -> LoadedFile | None:
        doc = files.get(path)
        if doc is None:
            return None  # read: whether ingest would take a new file depends on its bytes
        verdicts[path] = freshness.compare(doc, st)
        return LoadedFile(path, "", doc.sha256, st.st_size, st.st_mtime, doc.source_type, doc.language)

    walked = [r for r in roots if Path(r).exists()]
    exclude, allow = ([data_dir], [uploads] if uploads is not None else []) if data_dir else ([], [])
    new, seen = [], set()
    if walked:
        walk = iter_files(walked, loading, exclude=exclude, conversion=conversion, allow=allow, known=known)
        for item in walk:
            if not isinstance(item, LoadedFile):
                continue
            seen.add(item.path)
            doc = files.get(item.path)
            if doc is None:
                new.append(item.path)
            elif item.path not in verdicts:  # read in full (a converted document): its bytes' hash
                same = doc.sha256 in {item.sha256, metadata_hash(item.sha256, doc.meta)}
                verdicts[item.path] = FRESH if same else CHANGED
    changed, deleted, unchanged = [], [], 0
    for path, doc in files.items():
        if any(_under(path, r) for r in roots):
            verdict = verdicts.get(path, FRESH) if path in seen else MISSING
        else:
            verdict = freshness.check(doc)
        if verdict == CHANGED:
            changed.append(path)
        elif verdict == MISSING:
            deleted.append(path)
        else:
            unchanged += 1
    return DiskStatus(
        tuple(roots),
        tuple(sorted(changed)),
        tuple(sorted(new)),
        tuple(sorted(deleted)),
        unchanged,
        freshness.hashed - hashed_before,
        time.perf_counter() - start,
    )
