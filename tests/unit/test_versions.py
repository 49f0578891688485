import pytest

from hybrid_rag.errors import CorruptIndexError, NoIndexError
from hybrid_rag.indices.files import write_json_atomic
from hybrid_rag.indices.versions import IndexVersions


def _build(versions: IndexVersions) -> int:
    v = versions.next_version()
    staging = versions.staging(v)
    write_json_atomic(staging / "manifest.json", {"version": v})
    versions.publish(v, staging)
    return v


def test_publish_swaps_the_pointer_and_numbers_grow(tmp_path):
    versions = IndexVersions(tmp_path / "indices")
    assert versions.current() is None
    with pytest.raises(NoIndexError, match="hybrid-rag ingest"):
        versions.require_current()
    assert _build(versions) == 1
    assert _build(versions) == 2
    assert versions.current() == 2
    assert versions.manifest(2) == {"version": 2}
    assert versions.versions() == [1, 2]


def test_an_unpublished_staging_folder_is_never_live_and_is_pruned(tmp_path):
    versions = IndexVersions(tmp_path)
    _build(versions)
    staging = versions.staging(2)
    (staging / "half-written").write_text("x")
    staging.rename(tmp_path / ".staging-v000002-999999999")  # a build by a process that died
    assert versions.current() == 1
    assert versions.versions() == [1]
    versions.prune(keep=3)
    assert not (tmp_path / ".staging-v000002-999999999").exists()


def test_prune_keeps_newest_and_never_the_live_one(tmp_path):
    versions = IndexVersions(tmp_path)
    for _ in range(5):
        _build(versions)
    versions.set_current(1)  # rolled back to the oldest
    removed = versions.prune(keep=2)
    assert removed == [2, 3]
    assert versions.versions() == [1, 4, 5]


def test_corrupt_pointer_and_manifest_name_the_file(tmp_path):
    versions = IndexVersions(tmp_path)
    _build(versions)
    (versions.directory(1) / "manifest.json").write_text("{not json")
    with pytest.raises(CorruptIndexError, match="manifest.json"):
        versions.manifest(1)
    (tmp_path / "CURRENT").write_text("garbage")
    with pytest.raises(CorruptIndexError, match="CURRENT"):
        versions.current()


def test_set_current_refuses_a_missing_version(tmp_path):
    versions = IndexVersions(tmp_path)
    _build(versions)
    with pytest.raises(NoIndexError, match="version 7"):
        versions.set_current(7)
    assert versions.current() == 1
