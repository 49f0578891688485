"""Uploaded files, each request's in its own staging folder until its job runs.

Two uploads of one name used to share ``uploads/<collection>/<name>`` from the moment they arrived:
the second overwrote the first's file while the first job still waited for the writer, and the
first job's clean-up (it failed, or its file was refused) deleted the file the second job was
about to read. Now a request's files wait in ``data/jobs/incoming/<unique>/``; its job, on the one
writer thread, moves them into ``uploads/<collection>/`` (keeping any file they replace aside),
ingests them, and afterwards leaves in ``uploads/`` exactly the file of each name the store holds:
the new one, or (the job failed, or refused the file) the one it replaced, or none."""

from __future__ import annotations

import hashlib
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from fastapi import UploadFile

from hybrid_rag.private_files import private_dir, write_private
from hybrid_rag.server.errors import ApiError

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._ -]{0,199}$")  # an uploaded file's or a collection's name
INCOMING = "incoming"  # under data/jobs: the uploads of requests whose jobs have not run yet
_PREVIOUS = ".replaced"  # in a staging folder: the files the placed uploads replaced


@dataclass(frozen=True)
class StagedUploads:
    """One request's files: staged in ``staging``, to be placed in ``folder`` by its job."""

    staging: Path
    folder: Path
    names: tuple[str, ...]

    @property
    def targets(self) -> list[Path]:
        """Where the files are ingested from (and stored as)."""
        return [(self.folder / name).resolve() for name in self.names]

    def place(self) -> list[Path]:
        """Move the staged files into the uploads folder (the job's first step, on the writer
        thread); a file of the same name is kept aside until ``settle``."""
        private_dir(self.folder)  # the documents are the user's: private, as the store (0700, files 0600)
        previous = private_dir(self.staging / _PREVIOUS)
        for name in self.names:
            target = self.folder / name
            if target.exists():
                target.replace(previous / name)
            (self.staging / name).replace(target)
        return self.targets

    def settle(self, stored: dict[str, str]) -> None:
        """Keep each placed file the store holds (``stored``: path -> sha256); else put back the
        file it replaced when the store holds that one, else remove it. Then drop the staging."""
        previous = self.staging / _PREVIOUS
        for name, target in zip(self.names, self.targets, strict=True):
            sha = stored.get(str(target))
            if target.exists() and sha is not None and _sha256(target) == sha:
                continue
            kept = previous / name
            if kept.exists() and sha is not None and _sha256(kept) == sha:
                kept.replace(target)
            elif target.exists() and sha is None:
                target.unlink(missing_ok=True)
        shutil.rmtree(self.staging, ignore_errors=True)


def stage_uploads(files: list[UploadFile], folder: Path, incoming: Path, limit: int) -> StagedUploads:
    """Each upload written into a new staging folder under ``incoming`` by its bare name, to be
    placed in ``folder``; ApiError names a bad or oversized file."""
    names = [Path(f.filename or "").name for f in files]
    for i, (upload, name) in enumerate(zip(files, names, strict=True)):
        if not NAME.match(name) or name != (upload.filename or ""):
            raise ApiError(
                422, f"files[{i}]: {upload.filename!r} is not a plain file name", field=f"files[{i}]"
            )
    last = {name: upload for name, upload in zip(names, files, strict=True)}  # a name twice: the last wins
    total = sum(f.size or 0 for f in last.values())
    if total > limit:
        raise ApiError(
            413, f"files: {total} bytes together, over server.max_upload_bytes ({limit})", field="files"
        )
    staging = private_dir(incoming / uuid.uuid4().hex)
    for name, upload in last.items():
        upload.file.seek(0)
        write_private(staging / name, upload.file.read())
    return StagedUploads(staging, folder, tuple(last))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
