"""Read a document through its converter, with conversions cached by content hash.

The cache is one JSON file per converted content (``<data_dir>/converted/ab/<key>.json``, the key
a hash of the bytes, the converter set's version and the settings that change the text), written
atomically, so a rebuild or a re-ingest of an unchanged file never converts it again; a changed
file has a new key. A file that cannot be read from the cache (damaged, older layout) is
converted again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hybrid_rag.ingest.converters import Converted, Unconvertible, convert, format_of
from hybrid_rag.private_files import private_dir
from hybrid_rag.settings import ConvertSettings
from hybrid_rag.types import LoadedFile, Locator, SkippedFile, SourceType

CONVERTER_VERSION = 1  # bump when a converter's output changes: old cache entries are then unused


@dataclass(frozen=True)
class Conversion:
    """The convert settings and where conversions are cached (None: not cached)."""

    settings: ConvertSettings = field(default_factory=ConvertSettings)
    cache_dir: Path | None = None

    def key(self, name: str, digest: str) -> str:
        knobs = f"{CONVERTER_VERSION}|{Path(name).suffix.lower()}|{self.settings.notebook_outputs}"
        return hashlib.sha256(f"{digest}|{knobs}".encode()).hexdigest()

    def convert(self, name: str, raw: bytes, digest: str) -> Converted:
        """``raw`` as text (from the cache when it holds it); raises Unconvertible with the reason."""
        path = self._entry(name, digest)
        if path is not None:
            cached = _read(path)
            if cached is not None:
                return cached
        converted = convert(name, raw, self.settings)
        if path is not None:
            _write(path, converted)
        return converted

    def handles(self, name: str) -> bool:
        """Whether ``name`` is read by conversion (``convert.enabled`` and a known extension)."""
        return self.settings.enabled and format_of(name) is not None

    def load(self, shown: str, raw: bytes, mtime: float) -> LoadedFile | SkippedFile:
        """The document ``shown`` (its bytes ``raw``) as a LoadedFile of its converted text, or
        skipped with the reason; the hash is of the bytes, so an unchanged file stays unchanged."""
        if not raw:
            return SkippedFile(shown, "empty file")
        digest = hashlib.sha256(raw).hexdigest()
        try:
            converted = self.convert(shown, raw, digest)
        except Unconvertible as exc:
            return SkippedFile(shown, str(exc))
        return LoadedFile(
            path=shown,
            text=converted.text,
            sha256=digest,
            size=len(raw),
            mtime=mtime,
            source_type=SourceType.TEXT,
            language=converted.language,
            locators=converted.locators,
        )

    def _entry(self, name: str, digest: str) -> Path | None:
        if self.cache_dir is None or not self.settings.cache:
            return None
        key = self.key(name, digest)
        return self.cache_dir / key[:2] / f"{key}.json"


def _read(path: Path) -> Converted | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Converted(
            text=data["text"],
            format=data["format"],
            locators=tuple(Locator(*item) for item in data["locators"]),
            language=data["language"],
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Path, converted: Converted) -> None:
    """Best effort: a cache that cannot be written (read-only, full disk) only costs a conversion."""
    data = {
        "text": converted.text,
        "format": converted.format,
        "language": converted.language,
        "locators": [[loc.line, loc.kind, loc.number, loc.name, loc.step] for loc in converted.locators],
    }
    try:
        private_dir(path.parent)  # the data dir's files are private (mkstemp makes the file 0600)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return


__all__ = ["CONVERTER_VERSION", "Conversion", "Unconvertible"]
