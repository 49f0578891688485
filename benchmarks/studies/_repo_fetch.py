"""Pinned projects from the registries reachable here, each through its ordinary client, cached.

* ``pip``: ``pip download --no-binary :all: --no-deps NAME==VERSION`` (an sdist; ``_repo_corpus.fetch``);
* ``npm``: ``npm pack NAME@VERSION`` (the package as published, under ``package/``);
* ``apt``: ``apt-get download NAME=VERSION`` unpacked with ``dpkg-deb -x`` (Debian ships Rust crates
  under ``/usr/share/cargo/registry`` and Go modules under ``/usr/share/gocode``, sources included).

:func:`fetch_project` returns the unpacked folder the project's ``subdir`` names and the archive it
came from (whose digest keys the judged corpus's cache).
"""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

from studies._repo_corpus import Project, fetch


def _one(found: list[Path], what: str, cache: Path) -> Path:
    if len(found) != 1:
        raise SystemExit(f"repo_search: expected one archive of {what} in {cache}, found {found}")
    return found[0]


def _npm(project: Project, cache: Path) -> tuple[Path, Path]:
    stem = f"{project.name.lstrip('@').replace('/', '-')}-{project.version}"
    archive = cache / f"{stem}.tgz"
    if not archive.is_file():
        spec = f"{project.name}@{project.version}"
        subprocess.run(["npm", "pack", spec, "--pack-destination", str(cache), "--silent"], check=True)
    src = cache / "src" / stem
    if not src.is_dir():
        with tarfile.open(archive) as tar:
            tar.extractall(src, filter="data")
    return src / "package", archive


def _apt(project: Project, cache: Path) -> tuple[Path, Path]:
    found = list(cache.glob(f"{project.name}_*.deb"))
    if not found:
        spec = f"{project.name}={project.version}"
        subprocess.run(["apt-get", "download", "-q", spec], cwd=cache, check=True, capture_output=True)
        found = list(cache.glob(f"{project.name}_*.deb"))
    archive = _one(found, project.spec, cache)
    src = cache / "src" / f"{project.name}-{project.version}"
    if not src.is_dir():
        src.parent.mkdir(parents=True, exist_ok=True)  # dpkg-deb makes the last folder only
        subprocess.run(["dpkg-deb", "-x", str(archive), str(src)], check=True)
    return src, archive


def fetch_project(project: Project, cache: Path) -> tuple[Path, Path]:
    """(the folder to ingest, the archive it was unpacked from), downloading once into ``cache``."""
    cache.mkdir(parents=True, exist_ok=True)
    if project.source == "npm":
        top, archive = _npm(project, cache)
    elif project.source == "apt":
        top, archive = _apt(project, cache)
    elif project.source == "pip":
        top = fetch(project, cache)
        stem = top.name.lower()
        archive = _one(
            [p for p in cache.glob("*.tar.gz") if p.name.lower().replace("_", "-").startswith(stem)],
            project.spec,
            cache,
        )
    else:
        raise SystemExit(f"repo_search: unknown source {project.source!r} (pip, npm, apt)")
    root = top / project.subdir if project.subdir else top
    if not root.is_dir():
        raise SystemExit(f"repo_search: {project.spec} has no folder {project.subdir!r} ({top})")
    return root, archive
