"""Walking folders, ignore rules, decoding and classification."""

from __future__ import annotations

import codecs
import hashlib
import os
from pathlib import Path

import pytest

from hybrid_rag.errors import InputError
from hybrid_rag.ingest.loaders import IgnoreRules, classify, decode_text, iter_files, load_file, load_text
from hybrid_rag.settings import LoadingSettings
from hybrid_rag.types import LoadedFile, SkippedFile, SourceType

MAX = 1_000_000


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8", newline="")
    else:
        path.write_bytes(data)
    return path


def rel(items: list[LoadedFile | SkippedFile], root: Path) -> list[str]:
    return [Path(item.path).relative_to(root.resolve()).as_posix() for item in items]


# --- classify -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("pkg/mod.py", (SourceType.CODE, "python")),
        ("app.TSX", (SourceType.CODE, "typescript")),
        ("main.go", (SourceType.CODE, "go")),
        ("lib.rs", (SourceType.CODE, "rust")),
        ("x.hpp", (SourceType.CODE, "cpp")),
        ("run.sh", (SourceType.CODE, "shell")),
        ("conf.yml", (SourceType.CODE, "yaml")),
        ("Makefile", (SourceType.CODE, "make")),
        ("Dockerfile", (SourceType.CODE, "dockerfile")),
        ("Dockerfile.dev", (SourceType.CODE, "dockerfile")),
        ("CMakeLists.txt", (SourceType.CODE, "cmake")),
        ("README.md", (SourceType.TEXT, "markdown")),
        ("index.rst", (SourceType.TEXT, "rst")),
        ("notes.txt", (SourceType.TEXT, "text")),
        ("LICENSE", (SourceType.TEXT, "text")),
        ("data.weird-ext", (SourceType.TEXT, "text")),
    ],
)
def test_classify(name: str, expected: tuple[SourceType, str]) -> None:
    assert classify(name) == expected


# --- load_file ------------------------------------------------------------------------------


def test_load_file_reads_text_with_absolute_path_and_raw_sha(tmp_path: Path) -> None:
    raw = b"def f():\n    return 1\n"
    path = write(tmp_path / "a.py", raw)
    loaded = load_file(tmp_path / "." / "a.py", MAX)
    assert isinstance(loaded, LoadedFile)
    assert loaded.path == path.resolve().as_posix()
    assert Path(loaded.path).is_absolute()
    assert loaded.text == "def f():\n    return 1\n"
    assert loaded.sha256 == hashlib.sha256(raw).hexdigest()
    assert loaded.size == len(raw)
    assert loaded.mtime == pytest.approx(os.stat(path).st_mtime)
    assert (loaded.source_type, loaded.language) == (SourceType.CODE, "python")


def test_crlf_and_lone_cr_become_lf_but_sha_is_of_raw_bytes(tmp_path: Path) -> None:
    raw = b"one\r\ntwo\rthree\r\n\r\nfive"
    loaded = load_file(write(tmp_path / "n.txt", raw), MAX)
    assert isinstance(loaded, LoadedFile)
    assert loaded.text == "one\ntwo\nthree\n\nfive"
    assert loaded.text.split("\n")[4] == "five"  # line 5, as an editor shows it
    assert loaded.sha256 == hashlib.sha256(raw).hexdigest()


def test_utf8_bom_is_stripped_and_utf16_with_bom_is_decoded(tmp_path: Path) -> None:
    bom8 = load_file(write(tmp_path / "b.md", codecs.BOM_UTF8 + "# Título\n".encode()), MAX)
    assert isinstance(bom8, LoadedFile)
    assert bom8.text == "# Título\n"
    bom16 = load_file(write(tmp_path / "w.txt", "héllo\r\nwörld".encode("utf-16")), MAX)
    assert isinstance(bom16, LoadedFile)
    assert bom16.text == "héllo\nwörld"


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("img.png", b"looks like text", "binary file type (.png)"),
        ("lib.SO", b"text", "binary file type (.so)"),
        ("blob.dat", b"abc\x00def", "binary file (NUL byte at offset 3)"),
        ("latin1.txt", "caf\xe9 au lait".encode("latin-1"), "not valid UTF-8 (byte 0xe9 at offset 3)"),
        ("empty.py", b"", "empty file"),
        ("blank.md", b"  \n\t\r\n", "empty file (whitespace only)"),
    ],
)
def test_skipped_files_say_why(tmp_path: Path, name: str, data: bytes, reason: str) -> None:
    skipped = load_file(write(tmp_path / name, data), MAX)
    assert isinstance(skipped, SkippedFile)
    assert skipped.reason == reason
    assert skipped.path == (tmp_path / name).resolve().as_posix()


def test_invalid_utf8_offset_counts_the_bom() -> None:
    text, reason = decode_text(codecs.BOM_UTF8 + b"ok\xff")
    assert text is None
    assert reason == "not valid UTF-8 (byte 0xff at offset 5)"


def test_file_over_max_bytes_is_skipped(tmp_path: Path) -> None:
    path = write(tmp_path / "big.txt", "x" * 101)
    skipped = load_file(path, 100)
    assert isinstance(skipped, SkippedFile)
    assert skipped.reason.startswith("too large (101 bytes")
    assert isinstance(load_file(path, 101), LoadedFile)


def test_load_text_builds_a_file_from_a_string() -> None:
    doc = load_text("doc-17", "Título\r\nbody", SourceType.TEXT, "text")
    assert doc.path == "doc-17"
    assert doc.text == "Título\nbody"
    assert doc.sha256 == hashlib.sha256("Título\r\nbody".encode()).hexdigest()
    assert doc.size == len("Título\r\nbody".encode())
    assert doc.mtime == 0.0
    assert (doc.source_type, doc.language) == (SourceType.TEXT, "text")


# --- iter_files -----------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root / ".git" / "config", "[core]\n")
    write(root / "node_modules" / "x" / "index.js", "module.exports = 1\n")
    write(root / "pkg.egg-info" / "PKG-INFO", "Name: pkg\n")
    write(root / "data" / "indices" / "manifest.json", "{}\n")
    write(root / "data" / "keep.csv", "a,b\n1,2\n")
    write(root / "src" / "b.py", "B = 2\n")
    write(root / "src" / "a.py", "A = 1\n")
    write(root / "README.md", "# Repo\n")
    write(root / "debug.log", "log line\n")
    write(root / ".gitignore", "*.log\n/generated/\n")
    write(root / "generated" / "out.txt", "generated\n")
    write(root / "sub" / ".gitignore", "/local.txt\n*.tmp\n!keep.tmp\n")
    write(root / "sub" / "local.txt", "ignored by sub/.gitignore\n")
    write(root / "sub" / "deeper" / "local.txt", "not anchored here\n")
    write(root / "sub" / "scratch.tmp", "tmp\n")
    write(root / "sub" / "keep.tmp", "kept by negation\n")
    write(root / "sub" / "trace.log", "root .gitignore reaches here\n")
    write(root / "local.txt", "root local is fine\n")
    return root


def test_walk_is_sorted_and_honours_ignore_list_and_nested_gitignores(tree: Path) -> None:
    items = list(iter_files([tree], LoadingSettings()))
    assert all(isinstance(item, LoadedFile) for item in items)
    assert rel(items, tree) == [
        ".gitignore",
        "README.md",
        "data/keep.csv",
        "local.txt",
        "src/a.py",
        "src/b.py",
        "sub/.gitignore",
        "sub/deeper/local.txt",
        "sub/keep.tmp",
    ]


def test_gitignore_can_be_turned_off(tree: Path) -> None:
    items = list(iter_files([tree], LoadingSettings(use_gitignore=False)))
    names = rel(items, tree)
    for path in ("debug.log", "generated/out.txt", "sub/local.txt", "sub/scratch.tmp", "sub/trace.log"):
        assert path in names
    assert not any(n.startswith((".git/", "node_modules/", "pkg.egg-info/", "data/indices/")) for n in names)
    assert names == sorted(names, key=lambda n: n.split("/"))


def test_ignore_pattern_with_slash_matches_when_walking_its_parent(tree: Path) -> None:
    items = list(iter_files([tree / "data"], LoadingSettings()))
    assert rel(items, tree / "data") == ["keep.csv"]


def test_ignore_rules_match_components_globs_and_anchors() -> None:
    rules = IgnoreRules(["node_modules", "*.egg-info", "data/indices", "/build", "cache/"])
    assert rules.matches(("r", "a", "node_modules"), 2, is_dir=True)
    assert rules.matches(("r", "x.egg-info"), 1, is_dir=True)
    assert rules.matches(("r", "data", "indices"), 1, is_dir=True)  # the window may start above the root
    assert not rules.matches(("r", "data", "indexes"), 2, is_dir=True)
    assert rules.matches(("r", "build"), 1, is_dir=True)
    assert not rules.matches(("r", "src", "build"), 2, is_dir=True)  # anchored at the root
    assert not rules.matches(("r", "cache"), 1, is_dir=False)  # folders only
    assert rules.matches(("r", "cache"), 1, is_dir=True)


def test_symlinks_are_skipped_not_followed(tmp_path: Path) -> None:
    outside = write(tmp_path / "outside" / "secret.txt", "outside the root\n")
    root = tmp_path / "root"
    write(root / "real.txt", "real\n")
    (root / "link.txt").symlink_to(outside)
    (root / "linkdir").symlink_to(outside.parent, target_is_directory=True)
    items = list(iter_files([root], LoadingSettings()))
    assert [(Path(i.path).name, type(i).__name__) for i in items] == [
        ("link.txt", "SkippedFile"),
        ("linkdir", "SkippedFile"),
        ("real.txt", "LoadedFile"),
    ]
    assert all(
        i.reason.startswith("symbolic link (not followed") for i in items if isinstance(i, SkippedFile)
    )


def test_single_files_are_accepted_and_yielded_once(tmp_path: Path) -> None:
    a = write(tmp_path / "d" / "a.md", "# A\n")
    write(tmp_path / "d" / "b.md", "# B\n")
    items = list(iter_files([a, tmp_path / "d", str(a)], LoadingSettings()))
    assert [Path(i.path).name for i in items] == ["a.md", "b.md"]


def test_binary_files_in_a_walk_are_reported(tmp_path: Path) -> None:
    write(tmp_path / "a.txt", "text\n")
    write(tmp_path / "b.bin", b"\x00\x01")
    write(tmp_path / "c.txt", b"\xff\xfe\xfa")  # a UTF-16 BOM, then an unpaired byte
    items = list(iter_files([tmp_path], LoadingSettings()))
    assert [type(i).__name__ for i in items] == ["LoadedFile", "SkippedFile", "SkippedFile"]
    assert items[1].reason == "binary file type (.bin)"  # type: ignore[union-attr]
    assert items[2].reason.startswith("not valid UTF-16")  # type: ignore[union-attr]


def test_missing_path_raises_before_anything_is_yielded(tmp_path: Path) -> None:
    write(tmp_path / "ok.txt", "fine\n")
    files = iter_files([tmp_path, tmp_path / "nope"], LoadingSettings())
    with pytest.raises(InputError, match=r"^path does not exist: .*nope$"):
        next(files)
