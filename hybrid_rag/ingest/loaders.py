"""Find, read and classify the files to ingest.

``iter_files`` walks folders in sorted order (so two runs see files in the same order), prunes
the ignore list and ``.gitignore`` patterns, never follows symbolic links, and yields a
``LoadedFile`` for every readable UTF-8 text file and a ``SkippedFile`` (with the reason the
ingest summary shows) for everything else it did not ignore on purpose.
"""

from __future__ import annotations

import codecs
import dataclasses
import fnmatch
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pathspec

from hybrid_rag.errors import InputError
from hybrid_rag.ingest.converters.cache import Conversion
from hybrid_rag.ingest.metadata import with_front_matter
from hybrid_rag.ingest.protected import Protected, looks_like_data_dir
from hybrid_rag.ingest.symlinks import FollowSymlinks, follow_link
from hybrid_rag.settings import LoadingSettings
from hybrid_rag.types import LoadedFile, SkippedFile, SourceType

# (path, its stat) -> what to yield for it without reading it, or None to read it (``load_file``)
Known = Callable[[str, os.stat_result], "LoadedFile | SkippedFile | None"]

BINARY_SNIFF_BYTES = 8192  # a NUL byte in the first 8 KiB means binary (git's own rule)
_BOMS = (  # UTF-32 first: its little-endian BOM starts with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

# language, then the extensions (or, for CODE_FILENAMES, the lower-case file names) it owns
_CODE_TABLE = """
python .py .pyi .pyw .pyx
javascript .js .mjs .cjs .jsx
typescript .ts .tsx .mts .cts
java .java
go .go
rust .rs
c .c .h
cpp .cc .cpp .cxx .c++ .hpp .hh .hxx .ipp .inl
cuda .cu .cuh
csharp .cs
ruby .rb .rake .gemspec
php .php
shell .sh .bash .zsh .ksh .fish
powershell .ps1
batch .bat .cmd
sql .sql
kotlin .kt .kts
swift .swift
scala .scala .sc
html .html .htm .xhtml
css .css
scss .scss
sass .sass
less .less
yaml .yaml .yml
toml .toml
json .json .jsonc .json5 .jsonl .ndjson .ipynb
xml .xml .xsd .xsl .xslt .svg .plist .csproj
ini .ini .cfg .conf .properties
lua .lua
perl .pl .pm
r .r
julia .jl
objective-c .m .mm
dart .dart
elixir .ex .exs
erlang .erl .hrl
haskell .hs
ocaml .ml .mli
fsharp .fs .fsx
clojure .clj .cljs
elisp .el
lisp .lisp
scheme .scm
vue .vue
svelte .svelte
protobuf .proto
graphql .graphql .gql
hcl .tf .hcl
groovy .groovy .gradle
cmake .cmake
make .mk
dockerfile .dockerfile
starlark .bzl
vim .vim
zig .zig
nim .nim
fortran .f90 .f
assembly .asm .s
"""
_TEXT_TABLE = """
markdown .md .markdown .mdx .mkd
rst .rst .rest
text .txt .text
asciidoc .adoc .asciidoc
org .org
latex .tex
"""
_CODE_NAMES_TABLE = """
make makefile gnumakefile
dockerfile dockerfile containerfile
cmake cmakelists.txt
groovy jenkinsfile
ruby rakefile gemfile vagrantfile podfile
starlark build build.bazel workspace
shell .bashrc .bash_profile .zshrc .profile
ini .editorconfig .gitconfig
"""
_BINARY = """
.png .jpg .jpeg .gif .bmp .ico .icns .tif .tiff .webp .heic .psd .ai .eps .svgz
.zip .gz .tgz .bz2 .xz .zst .lz4 .7z .rar .tar .jar .war .whl .egg .deb .rpm .dmg .iso .apk
.pdf .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .epub
.so .dylib .dll .exe .o .a .lib .obj .bin .elf .class .pyc .pyo .pyd .wasm .node
.ttf .otf .woff .woff2 .eot
.mp3 .wav .flac .ogg .m4a .aac .mp4 .mkv .mov .avi .webm .wmv
.sqlite .sqlite3 .db .mdb .npy .npz .pkl .pickle .pt .pth .ckpt .onnx .safetensors .h5 .hdf5
.parquet .arrow .feather .faiss .index .tflite .pb .joblib
"""


def _table(spec: str) -> dict[str, str]:
    return {key: lang for line in spec.strip().splitlines() for lang, *keys in [line.split()] for key in keys}


CODE_EXTENSIONS: dict[str, str] = _table(_CODE_TABLE)
TEXT_EXTENSIONS: dict[str, str] = _table(_TEXT_TABLE)
CODE_FILENAMES: dict[str, str] = _table(_CODE_NAMES_TABLE)
BINARY_EXTENSIONS: frozenset[str] = frozenset(_BINARY.split())


def classify(path: Path | str) -> tuple[SourceType, str]:
    """(source type, language) from a file's name: ``classify("a/b.py") == (CODE, "python")``.

    Unknown extensions are ``(TEXT, "text")``: whether they are text at all is decided on read.
    """
    name = Path(path).name
    lower = name.lower()
    if lower in CODE_FILENAMES:
        return SourceType.CODE, CODE_FILENAMES[lower]
    if lower.startswith(("dockerfile.", "containerfile.")):
        return SourceType.CODE, "dockerfile"
    suffix = Path(lower).suffix
    if suffix in CODE_EXTENSIONS:
        return SourceType.CODE, CODE_EXTENSIONS[suffix]
    return SourceType.TEXT, TEXT_EXTENSIONS.get(suffix, "text")


def normalize_newlines(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` become ``\\n``, so line numbers match what an editor shows."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def decode_text(raw: bytes) -> tuple[str | None, str]:
    """Decode file bytes as text: ``(text, "")`` or ``(None, reason)``.

    A UTF-8 BOM is stripped; UTF-16 and UTF-32 with a BOM are decoded; anything else must be
    valid UTF-8 without a NUL byte in its first 8 KiB.
    """
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(codec), ""
            except UnicodeDecodeError as exc:
                return None, f"not valid {codec.upper()} ({exc.reason} at offset {exc.start})"
    offset = 0
    if raw.startswith(codecs.BOM_UTF8):
        offset = len(codecs.BOM_UTF8)
    nul = raw.find(b"\x00", 0, BINARY_SNIFF_BYTES)
    if nul >= 0:
        return None, f"binary file (NUL byte at offset {nul})"
    try:
        return raw[offset:].decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        at = exc.start + offset
        return None, f"not valid UTF-8 (byte 0x{raw[at]:02x} at offset {at})"


def load_file(
    path: Path,
    max_bytes: int,
    *,
    settings: LoadingSettings | None = None,
    conversion: Conversion | None = None,
    known: Known | None = None,
    resolved: bool = False,
) -> LoadedFile | SkippedFile:
    """Read and decode one file, or say why it was skipped (binary, too large, not UTF-8, empty;
    with ``settings``, machine-generated: ``generated_reason``). A document (PDF, DOCX, PPTX,
    HTML, notebook, EPUB, CSV/TSV/XLSX) is read as its converted text (``ingest/converters``).
    ``known(path, stat)`` may answer a text file that passes the checks by its stat without
    reading it (a stored file whose size and mtime are those recorded: ``ingest/freshness.py``).
    ``resolved``: ``path`` is known to be real (the walk's, below no link), not resolved again."""
    path = Path(path) if resolved else Path(path).resolve()
    shown = path.as_posix()
    try:
        st = path.stat()
    except OSError as exc:
        return SkippedFile(shown, f"cannot read: {exc.strerror or exc}")
    if not stat.S_ISREG(st.st_mode):
        return SkippedFile(shown, "not a regular file")
    suffix = path.suffix.lower()
    conversion = conversion if conversion is not None else Conversion()
    if conversion.handles(path.name):
        return _load_document(path, shown, st, conversion)
    if suffix in BINARY_EXTENSIONS:
        return SkippedFile(shown, f"binary file type ({suffix})")
    if st.st_size > max_bytes:
        return SkippedFile(shown, f"too large ({st.st_size} bytes > max_file_bytes {max_bytes})")
    generated = generated_reason(path, st.st_size, settings) if settings is not None else None
    if generated:
        return SkippedFile(shown, generated)
    answered = known(shown, st) if known is not None else None
    if answered is not None:
        return answered
    raw = _read_within(path, shown, max_bytes, "max_file_bytes")
    if isinstance(raw, SkippedFile):
        return raw
    if not raw:
        return SkippedFile(shown, "empty file")
    text, reason = decode_text(raw)
    if text is None:
        return SkippedFile(shown, reason)
    if not text.strip():
        return SkippedFile(shown, "empty file (whitespace only)")
    if settings is not None and minified_text(path, text, settings):
        return SkippedFile(
            shown, f"minified (lines average over {MINIFIED_LINE_CHARS} characters; generated)"
        )
    if settings is not None and settings.skip_generated and generated_header(text):
        return SkippedFile(shown, "marked as generated code in its first lines (DO NOT EDIT / @generated)")
    source_type, language = classify(path)
    loaded = LoadedFile(
        path=shown,
        text=normalize_newlines(text),
        sha256=hashlib.sha256(raw).hexdigest(),
        size=len(raw),
        mtime=st.st_mtime,
        source_type=source_type,
        language=language,
    )
    return with_front_matter(loaded)


def _load_document(
    path: Path, shown: str, st: os.stat_result, conversion: Conversion
) -> LoadedFile | SkippedFile:
    limit = conversion.settings.max_file_bytes
    if st.st_size > limit:
        return SkippedFile(shown, f"too large ({st.st_size} bytes > convert.max_file_bytes {limit})")
    raw = _read_within(path, shown, limit, "convert.max_file_bytes")
    if isinstance(raw, SkippedFile):
        return raw
    return conversion.load(shown, raw, st.st_mtime)


def _read_within(path: Path, shown: str, limit: int, setting: str) -> bytes | SkippedFile:
    """The file's bytes; a SkippedFile when it cannot be read or has grown past ``limit`` (the
    ``setting`` named) since its size was checked."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return SkippedFile(shown, f"cannot read: {exc.strerror or exc}")
    if len(raw) > limit:  # grew since stat
        return SkippedFile(shown, f"too large ({len(raw)} bytes > {setting} {limit})")
    return raw


def load_text(
    path: str, text: str, source_type: SourceType = SourceType.TEXT, language: str = "text"
) -> LoadedFile:
    """A LoadedFile from an in-memory string (a BEIR document: ``path`` is its id); mtime is 0."""
    raw = text.encode("utf-8")
    return LoadedFile(
        path=path,
        text=normalize_newlines(text),
        sha256=hashlib.sha256(raw).hexdigest(),
        size=len(raw),
        mtime=0.0,
        source_type=source_type,
        language=language,
    )


class IgnoreRules:
    """The ``loading.ignore`` list: names or globs matched against each path component below
    the walked root (``node_modules``, ``*.egg-info``); a pattern with a ``/`` matches that many
    consecutive components (``data/indices``), and a leading ``/`` anchors it at the root.
    A trailing ``/`` restricts a pattern to folders."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self._rules: list[tuple[tuple[str, ...], bool, bool]] = []  # (parts, anchored, dirs only)
        # one-part unanchored patterns, the usual kind (``node_modules``, ``*.egg-info``), are tested
        # at once: names in a set, globs in one regex (folders only, or any entry)
        names: dict[bool, set[str]] = {False: set(), True: set()}
        globs: dict[bool, list[str]] = {False: [], True: []}
        for pattern in patterns:
            p = pattern.strip()
            if not p:
                continue
            anchored, dir_only = p.startswith("/"), p.endswith("/")
            parts = tuple(part for part in p.strip("/").split("/") if part)
            if len(parts) == 1 and not anchored:
                if any(c in parts[0] for c in "*?["):
                    globs[dir_only].append(fnmatch.translate(parts[0]))
                else:
                    names[dir_only].add(parts[0])
            elif parts:
                self._rules.append((parts, anchored, dir_only))
        self._names = names
        self._globs = {k: re.compile("|".join(v)) if v else None for k, v in globs.items()}

    def _matches_name(self, name: str, is_dir: bool) -> bool:
        for dir_only in (False, True) if is_dir else (False,):
            glob = self._globs[dir_only]
            if name in self._names[dir_only] or (glob is not None and glob.match(name)):
                return True
        return False

    def matches(self, abs_parts: Sequence[str], rel_len: int, is_dir: bool) -> bool:
        """Whether the entry ``abs_parts`` (its last ``rel_len`` parts below the root) is ignored.

        Only windows ending at the entry are tested: the walk checks each folder on the way down.
        """
        if abs_parts and self._matches_name(abs_parts[-1], is_dir):
            return True
        for parts, anchored, dir_only in self._rules:
            if dir_only and not is_dir:
                continue
            k = len(parts)
            if anchored and k != rel_len:
                continue
            if k > len(abs_parts):
                continue
            window = abs_parts[len(abs_parts) - k :]
            if all(fnmatch.fnmatchcase(name, pat) for name, pat in zip(window, parts, strict=True)):
                return True
        return False


def _read_gitignore(folder: Path, name: str = ".gitignore") -> pathspec.GitIgnoreSpec | None:
    try:
        text = (folder / name).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(text.splitlines())


IGNORE_FILE = ".hybridragignore"  # gitignore syntax, read in every folder like .gitignore
LOCK_FILES = frozenset(
    {
        "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
        "poetry.lock", "pipfile.lock", "uv.lock", "pdm.lock", "cargo.lock", "gemfile.lock",
        "composer.lock", "go.sum", "flake.lock", "mix.lock", "pubspec.lock", "packages.lock.json",
    }
)  # fmt: skip
DATA_EXTENSIONS = frozenset({".json", ".jsonl", ".ndjson", ".csv", ".tsv"})
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", ".pb.go", ".pb.cc", ".pb.h", ".pb.ts")
# a comment line opening the file: Go's "Code generated ... DO NOT EDIT.", protoc's "Generated by
# ... DO NOT EDIT!", or the @generated tag (Meta's tools, Buck, some Rust generators)
_GENERATED_HEADER = re.compile(
    r"^\W*(?:(?:Code )?[Gg]enerated\b.*\bDO NOT EDIT\b|@generated\b)", re.MULTILINE
)
GENERATED_HEADER_LINES = 5
MINIFIED_LINE_CHARS = 1_000  # a .js / .css file whose lines average longer than this is minified


def generated_reason(path: Path, size: int, settings: LoadingSettings) -> str | None:
    """Why a file looks machine-generated (skipped by default), or None.

    >>> generated_reason(Path("web/app.min.js"), 10, LoadingSettings())
    'minified asset (generated)'
    """
    if not settings.skip_generated:
        return None
    name = path.name.lower()
    if name in LOCK_FILES or name.endswith(".lock"):
        return "lock file (generated)"
    if any(name.endswith(s) for s in (".min.js", ".min.css", ".min.mjs", ".js.map", ".css.map")):
        return "minified asset (generated)"
    if name.endswith(GENERATED_SUFFIXES):
        return "generated code (protobuf / gRPC stubs)"
    if path.suffix.lower() == ".svg":
        return "SVG image (drawing data, not text)"
    if path.suffix.lower() in DATA_EXTENSIONS and size > settings.max_data_file_bytes:
        return f"data file of {size} bytes > loading.max_data_file_bytes {settings.max_data_file_bytes}"
    return None


def generated_header(text: str) -> bool:
    """Whether a file says in its first lines that a tool wrote it.

    >>> generated_header("// Code generated by protoc-gen-go. DO NOT EDIT.\\npackage pb\\n")
    True
    >>> generated_header("# Generated by the protocol buffer compiler.  DO NOT EDIT!\\n")
    True
    >>> generated_header("# this loader looks for the @generated tag: DO NOT EDIT by hand\\n")
    False
    """
    head = "\n".join(text.split("\n", GENERATED_HEADER_LINES)[:GENERATED_HEADER_LINES])
    return _GENERATED_HEADER.search(head) is not None


def minified_text(path: Path, text: str, settings: LoadingSettings) -> bool:
    """A .js / .css file whose lines are, on average, longer than ``MINIFIED_LINE_CHARS``."""
    if not settings.skip_generated or path.suffix.lower() not in (".js", ".mjs", ".css"):
        return False
    return len(text) / (text.count("\n") + 1) > MINIFIED_LINE_CHARS


def _git_ignored(
    specs: Sequence[tuple[int, pathspec.GitIgnoreSpec]], rel: Sequence[str], is_dir: bool
) -> bool:
    """Git's rule: the deepest .gitignore with a matching pattern decides (``!`` re-includes)."""
    ignored = False
    for depth, spec in specs:
        relative = "/".join(rel[depth:]) + ("/" if is_dir else "")
        include = spec.check_file(relative).include
        if include is not None:
            ignored = include
    return ignored


def iter_files(
    paths: Sequence[Path | str],
    settings: LoadingSettings,
    *,
    exclude: Sequence[Path] = (),
    conversion: Conversion | None = None,
    allow: Sequence[Path] = (),
    protected: Protected | None = None,
    known: Known | None = None,
) -> Iterator[LoadedFile | SkippedFile]:
    """Every file under ``paths`` (folders or single files), in sorted, deterministic order.

    Roots are taken in the given order and resolved (a root may itself be a symlink); inside
    them symbolic links are followed as ``settings.follow_symlinks`` says (``ingest/symlinks.py``;
    by default not at all, each skipped with a reason). Ignored files are not
    yielded at all; a file reached twice is yielded once. Folders in ``exclude`` (the data dir)
    are skipped with a reason, as is what ``protected`` names (``ingest/protected.py``: hybrid-rag's
    files configured elsewhere, another data dir, keys files and hard links to them).

    Raises InputError if a path does not exist or is protected, before yielding anything. ``known``:
    as for ``load_file``, asked with the path the file is yielded under.
    """
    roots: list[Path] = []
    homes = [p.resolve() for p in exclude]
    for raw in paths:
        p = Path(raw).expanduser()
        if not p.exists():
            raise InputError(f"path does not exist: {raw}")
        root = p.resolve()
        allowed = any(root.is_relative_to(a.resolve()) for a in allow)  # uploads, in the data dir
        if not allowed and any(root == home or root.is_relative_to(home) for home in homes):
            raise InputError(f"{raw} is in the data dir (the store, indices and keys): it is never ingested")
        reason = _protected_root(root, protected) if not allowed and protected is not None else None
        if reason:
            raise InputError(f"{raw} is {reason}")
        roots.append(root)
    rules = IgnoreRules(settings.ignore)
    seen: set[str] = set()
    for root in roots:
        if root.is_dir():
            excluded = frozenset(p.resolve() for p in exclude)
            items = _walk(root, root.parts, rules, settings, excluded, conversion, protected, known)
        else:
            limit = settings.max_file_bytes
            items = iter([load_file(root, limit, settings=settings, conversion=conversion, known=known)])
        for item in items:
            if item.path not in seen:
                seen.add(item.path)
                yield item


_Folder = tuple[Path, tuple[str, ...], list[tuple[int, "pathspec.GitIgnoreSpec"]], Iterator[os.DirEntry[str]]]


def _walk(
    root: Path,
    root_parts: tuple[str, ...],
    rules: IgnoreRules,
    settings: LoadingSettings,
    exclude: frozenset[Path] = frozenset(),
    conversion: Conversion | None = None,
    protected: Protected | None = None,
    known: Known | None = None,
) -> Iterator[LoadedFile | SkippedFile]:
    """Depth first, each folder's entries in name order, with an explicit stack (a tree thousands
    of levels deep is walked like any other; a folder the OS cannot open is skipped with why)."""
    opened = _open_folder(root, (), [], settings)
    if isinstance(opened, SkippedFile):
        yield opened
        return
    stack = [opened]
    real = [root]  # the real path of each folder on the stack (symbolic link loops)
    policy = FollowSymlinks.from_str(settings.follow_symlinks)
    while stack:
        folder, rel, specs, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            real.pop()
            continue
        child_rel = (*rel, entry.name)
        is_link = entry.is_symlink()
        is_dir = not is_link and entry.is_dir(follow_symlinks=False)
        if rules.matches((*root_parts, *child_rel), len(child_rel), is_dir):
            continue
        if specs and _git_ignored(specs, child_rel, is_dir):
            continue
        path = folder / entry.name
        target = None
        if is_link:
            followed = follow_link(path, root, real, policy)
            if isinstance(followed, str):
                yield SkippedFile(path.as_posix(), followed)
                continue
            path, target = followed
            is_dir = target.is_dir()
        into_home = target is not None and any(target.is_relative_to(e) for e in exclude)
        guarded = None
        if protected is not None and not ((target or path) in exclude or into_home):
            if is_dir:
                guarded = protected.folder_reason(target or path)
            else:
                guarded = protected.file_reason(target or path, None if target else entry.inode())
        if (target or path) in exclude or into_home:
            yield SkippedFile(path.as_posix(), "the data dir (hybrid-rag's own store and indices)")
        elif guarded:
            yield SkippedFile(path.as_posix(), guarded)
        elif is_dir:
            child = _open_folder(path, child_rel, specs, settings)
            if isinstance(child, SkippedFile):
                yield child
            else:
                stack.append(child)
                real.append(target or real[-1] / entry.name)
        elif (target is not None and target.is_file()) or entry.is_file(follow_symlinks=False):
            # under the path walked: a file below a link leading out of the root keeps the link's path
            walked = path.as_posix()
            ask = None if known is None else (lambda _shown, st, walked=walked: known(walked, st))
            unlinked = target is None and folder == real[-1]  # below no link: resolve is a no-op
            loaded = load_file(
                path,
                settings.max_file_bytes,
                settings=settings,
                conversion=conversion,
                known=ask,
                resolved=unlinked,
            )
            yield loaded if loaded.path == walked else dataclasses.replace(loaded, path=walked)
        else:
            yield SkippedFile(path.as_posix(), "not a regular file")


def _protected_root(root: Path, protected: Protected) -> str | None:
    """Why a named root (real path) is never ingested: protected itself, or inside a protected
    folder or another data dir."""
    reason = protected.folder_reason(root) if root.is_dir() else protected.file_reason(root)
    if reason:
        return reason
    for folder in root.parents:
        if folder in protected.folders or looks_like_data_dir(folder):
            return f"inside {folder.as_posix()}, {protected.folder_reason(folder)}"
    return None


def _open_folder(
    folder: Path,
    rel: tuple[str, ...],
    specs: list[tuple[int, pathspec.GitIgnoreSpec]],
    settings: LoadingSettings,
) -> _Folder | SkippedFile:
    """A folder's sorted entries and the .gitignore rules in force in it, or why it cannot be read."""
    names = (".gitignore", IGNORE_FILE) if settings.use_gitignore else (IGNORE_FILE,)
    for name in names:
        spec = _read_gitignore(folder, name)
        if spec is not None:
            specs = [*specs, (len(rel), spec)]
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        return SkippedFile(folder.as_posix(), f"cannot read folder: {exc.strerror or exc}")
    return folder, rel, specs, iter(entries)
