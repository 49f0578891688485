"""Zip ingestion: members load like files, and unsafe or oversized archives are refused whole."""

from __future__ import annotations

import hashlib
import io
import stat
import struct
import warnings
import zipfile
from pathlib import Path

import pytest

from hybrid_rag.errors import InputError
from hybrid_rag.ingest.archive import (
    RATIO_FLOOR_BYTES,
    is_zip,
    load_zip,
    member_parts,
    unsafe_name_reason,
)
from hybrid_rag.settings import ArchiveSettings, LoadingSettings
from hybrid_rag.types import LoadedFile, SourceType

LOADING = LoadingSettings()
LIMITS = ArchiveSettings()


def _zip(path: Path, members: dict[str, bytes | str], method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _patch_central_directory(path: Path, offset: int, fmt: str, value: int) -> None:
    """Overwrite one field of the last member's central-directory entry (what zipfile trusts)."""
    raw = bytearray(path.read_bytes())
    struct.pack_into(fmt, raw, raw.rindex(b"PK\x01\x02") + offset, value)
    path.write_bytes(bytes(raw))


def _paths(files: list) -> list[str]:
    return [f.path for f in files]


def test_members_load_like_files_in_sorted_order(tmp_path: Path) -> None:
    src = "def hello():\r\n    return 1\r\n"
    archive = _zip(
        tmp_path / "docs.zip",
        {
            "guide/intro.md": "# Intro\n\nHello there.\n",
            "src/app.py": src,
            "guide/": "",  # a folder entry
            "a.txt": "first\n",
            "img/logo.png": b"\x89PNG\r\n\x1a\n",
            "bin/blob.dat": b"abc\x00def",
            "latin1.txt": "caf\xe9".encode("latin-1"),
            "empty.txt": b"",
            "blank.md": "  \n\n",
        },
    )
    loaded, skipped = load_zip(archive, LOADING, LIMITS)
    root = archive.resolve().as_posix()
    assert _paths(loaded) == [f"{root}/a.txt", f"{root}/guide/intro.md", f"{root}/src/app.py"]
    app = loaded[2]
    assert isinstance(app, LoadedFile)
    assert app.text == "def hello():\n    return 1\n"  # newlines normalised as for files
    assert (app.source_type, app.language) == (SourceType.CODE, "python")
    assert app.sha256 == hashlib.sha256(src.encode()).hexdigest() and app.size == len(src.encode())
    assert app.mtime > 0
    assert loaded[1].language == "markdown"
    reasons = {s.path.removeprefix(root + "/"): s.reason for s in skipped}
    assert reasons == {
        "bin/blob.dat": "binary file (NUL byte at offset 3)",
        "blank.md": "empty file (whitespace only)",
        "empty.txt": "empty file",
        "img/logo.png": "binary file type (.png)",
        "latin1.txt": "not valid UTF-8 (byte 0xe9 at offset 3)",
    }
    assert load_zip(archive, LOADING, LIMITS) == (loaded, skipped)  # deterministic


def test_too_large_member_is_skipped_not_read(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "a.zip", {"big.txt": "x" * 2000, "small.txt": "ok"})
    loaded, skipped = load_zip(archive, LoadingSettings(max_file_bytes=1000), LIMITS)
    assert [f.text for f in loaded] == ["ok"]
    assert [s.reason for s in skipped] == ["too large (2000 bytes > max_file_bytes 1000)"]


def test_ignore_list_and_gitignore_inside_the_archive(tmp_path: Path) -> None:
    archive = _zip(
        tmp_path / "repo.zip",
        {
            "proj/.gitignore": "*.log\nsecret/\n!keep.log\n",
            "proj/app.log": "noise",
            "proj/keep.log": "kept by negation",
            "proj/secret/key.txt": "hidden",
            "proj/node_modules/lib/index.js": "ignored by loading.ignore",
            "proj/__pycache__/m.txt": "ignored",
            "proj/sub/.gitignore": "local.txt\n",
            "proj/sub/local.txt": "ignored below sub",
            "proj/sub/other.txt": "kept",
            "proj/local.txt": "not under sub: kept",
            "proj/main.py": "print(1)",
        },
    )
    loaded, skipped = load_zip(archive, LOADING, LIMITS)
    root = archive.resolve().as_posix() + "/"
    assert [p.removeprefix(root) for p in _paths(loaded)] == [
        "proj/.gitignore",
        "proj/keep.log",
        "proj/local.txt",
        "proj/main.py",
        "proj/sub/.gitignore",
        "proj/sub/other.txt",
    ]
    assert skipped == []
    loaded, _ = load_zip(archive, LoadingSettings(use_gitignore=False, ignore=()), LIMITS)
    assert len(loaded) == 11


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("../evil.txt", "escapes the archive"),
        ("docs/../../evil.txt", "escapes the archive"),
        ("..\\evil.txt", "escapes the archive"),
        ("/etc/evil.txt", "has an absolute path"),
        ("\\evil.txt", "has an absolute path"),
        ("C:/Windows/evil.txt", "has a drive letter"),
        ("c:evil.txt", "has a drive letter"),
    ],
)
def test_unsafe_member_names_refuse_the_whole_archive(tmp_path: Path, name: str, reason: str) -> None:
    archive = tmp_path / "in" / "bad.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("fine.txt", "hello")
        info = zipfile.ZipInfo("placeholder")
        info.filename = name  # ZipInfo() would sanitise some of these; the archive on disk keeps them
        zf.writestr(info, "gotcha")
    assert any(i.filename == name for i in zipfile.ZipFile(archive).infolist())
    with pytest.raises(InputError, match=rf"refusing zip archive .*bad\.zip: member .* {reason}"):
        load_zip(archive, LOADING, LIMITS)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["bad.zip", "in"]  # nothing written anywhere


def test_name_helpers() -> None:
    assert unsafe_name_reason("a/b..c/d.txt") is None and unsafe_name_reason("..a") is None
    assert unsafe_name_reason("a/./../b") is not None
    assert member_parts("./a//b\\c.txt") == ("a", "b", "c.txt")


def test_symlink_member_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ok.txt", "hello")
        info = zipfile.ZipInfo("docs/passwd")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(InputError, match=r"member 'docs/passwd' is a symbolic link"):
        load_zip(archive, LOADING, LIMITS)


def test_encrypted_member_is_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "enc.zip", {"secret.txt": "ciphertext"})
    _patch_central_directory(archive, 8, "<H", 0x1)  # the "encrypted" bit of the flags
    assert zipfile.ZipFile(archive).getinfo("secret.txt").flag_bits & 0x1
    with pytest.raises(InputError, match=r"member 'secret\.txt' is encrypted"):
        load_zip(archive, LOADING, LIMITS)


def test_duplicate_member_names_are_refused(tmp_path: Path) -> None:
    archive = tmp_path / "dup.zip"
    with warnings.catch_warnings(), zipfile.ZipFile(archive, "w") as zf:
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate, and writes it
        zf.writestr("a/b.txt", "one")
        zf.writestr("./a//b.txt", "two")
    with pytest.raises(InputError, match=r"member 'a/b\.txt' appears more than once"):
        load_zip(archive, LOADING, LIMITS)


def test_too_many_members_are_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "many.zip", {f"f{i}.txt": "x" for i in range(11)})
    with pytest.raises(InputError, match=r"11 members, more than archive\.max_members 10"):
        load_zip(archive, LOADING, ArchiveSettings(max_members=10))
    assert len(load_zip(archive, LOADING, ArchiveSettings(max_members=11))[0]) == 11


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """50 MB of zeros deflated to about 50 KB (a ratio near 1000), beside a normal file."""
    archive = tmp_path_factory.mktemp("bomb") / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("readme.txt", "nothing to see")
        zf.writestr("zeros.txt", bytes(50_000_000))
    return archive


def test_a_highly_compressed_member_is_refused(bomb: Path) -> None:
    with pytest.raises(InputError, match=r"member 'zeros\.txt' inflates \d+ times .*max_ratio 100"):
        load_zip(bomb, LOADING, LIMITS)


def test_declared_total_size_is_refused_before_reading(bomb: Path) -> None:
    limits = ArchiveSettings(max_total_bytes=10_000_000, max_ratio=10_000)
    with pytest.raises(InputError, match=r"50000014 uncompressed bytes, more than archive\.max_total_bytes"):
        load_zip(bomb, LOADING, limits)
    loaded, skipped = load_zip(bomb, LOADING, ArchiveSettings(max_ratio=10_000))  # within every limit
    assert len(loaded) == 1 and skipped[0].reason.startswith("too large (50000000 bytes")


def test_overall_ratio_is_refused_when_no_single_member_is_over_the_floor(tmp_path: Path) -> None:
    piece = bytes(RATIO_FLOOR_BYTES // 2)
    archive = _zip(tmp_path / "spread.zip", {f"z{i}.txt": piece for i in range(8)})
    with pytest.raises(InputError, match=r"inflates \d+ times overall"):
        load_zip(archive, LOADING, LIMITS)


def test_a_small_highly_compressible_member_is_accepted(tmp_path: Path) -> None:
    text = "the same line again\n" * 20_000  # 400 KB, ratio far above 100, under the 1 MiB floor
    archive = _zip(tmp_path / "small.zip", {"log.txt": text})
    info = zipfile.ZipFile(archive).getinfo("log.txt")
    assert info.file_size / info.compress_size > 100
    loaded, _ = load_zip(archive, LOADING, LIMITS)
    assert loaded[0].text == text


def test_a_header_that_understates_its_member_is_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "liar.zip", {"data.txt": "a" * 100_000})
    _patch_central_directory(archive, 24, "<I", 10)  # the declared uncompressed size
    assert zipfile.ZipFile(archive).getinfo("data.txt").file_size == 10
    with pytest.raises(InputError, match=r"liar\.zip"):
        load_zip(archive, LOADING, LIMITS)


def test_unsupported_compression_method_is_skipped_with_a_reason(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "d64.zip", {"a.txt": "plain", "b.txt": "other"}, method=zipfile.ZIP_STORED)
    _patch_central_directory(archive, 10, "<H", 9)  # b.txt: Deflate64, which zipfile cannot read
    loaded, skipped = load_zip(archive, LOADING, LIMITS)
    assert [f.text for f in loaded] == ["plain"]
    assert [s.reason for s in skipped] == ["unsupported zip compression method 9"]


def test_truncated_and_non_zip_files_are_reported(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "cut.zip", {f"f{i}.txt": f"file {i}" * 100 for i in range(20)})
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(InputError, match=r"^not a valid zip archive: .*cut\.zip \(File is not a zip file\)$"):
        load_zip(archive, LOADING, LIMITS)
    fake = tmp_path / "fake.zip"
    fake.write_text("just text")
    with pytest.raises(InputError, match=r"not a valid zip archive: .*fake\.zip"):
        load_zip(fake, LOADING, LIMITS)
    with pytest.raises(InputError, match=r"path does not exist: .*missing\.zip"):
        load_zip(tmp_path / "missing.zip", LOADING, LIMITS)


def test_corrupt_member_data_is_reported(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "crc.zip", {"a.txt": "hello world " * 50}, method=zipfile.ZIP_STORED)
    raw = bytearray(archive.read_bytes())
    at = raw.index(b"hello world")
    raw[at] ^= 0x20  # the data no longer matches its CRC
    archive.write_bytes(bytes(raw))
    with pytest.raises(
        InputError, match=r"not a valid zip archive: .*crc\.zip \(member 'a\.txt': Bad CRC-32"
    ):
        load_zip(archive, LOADING, LIMITS)


def test_is_zip(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "A.ZIP", {"a.txt": "x"})
    (tmp_path / "doc.docx").write_bytes(archive.read_bytes())
    (tmp_path / "folder.zip").mkdir()
    assert is_zip(archive)
    assert not is_zip(tmp_path / "doc.docx")
    assert not is_zip(tmp_path / "folder.zip")
    assert not is_zip(tmp_path / "missing.zip")


def test_bytes_are_counted_as_read_whatever_the_library_returns(tmp_path: Path, monkeypatch) -> None:
    """If zipfile ever inflated past a member's declared size, the read itself must stop it."""
    archive = _zip(tmp_path / "a.zip", {"a.txt": "0123456789"})
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, info: io.BytesIO(b"x" * 10_000))
    with pytest.raises(InputError, match=r"member 'a\.txt' holds more bytes than it declares"):
        load_zip(archive, LOADING, LIMITS)
    with pytest.raises(InputError, match=r"more than archive\.max_total_bytes 10 uncompressed bytes"):
        load_zip(archive, LOADING, ArchiveSettings(max_total_bytes=10))  # declares exactly 10


def test_an_empty_archive_loads_nothing(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "empty.zip", {"folder/": ""})
    assert load_zip(archive, LOADING, LIMITS) == ([], [])
