"""A build stopped after the ``CURRENT`` swap but before the store recorded the version still shows
that version in ``stats`` (listed from its manifest), so the history has no hole."""

from __future__ import annotations

import pytest
from fake_settings import fake_settings

from hybrid_rag.engine import Engine


def test_a_published_unrecorded_version_is_in_the_history(tmp_path, monkeypatch) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Soil\n\nClay soil holds water.\n")
    engine = Engine(fake_settings(tmp_path / "data"))
    try:
        engine.ingest([docs])
        (docs / "b.md").write_text("# Sand\n\nSand drains fast.\n")

        def killed(*args: object, **kwargs: object) -> None:
            raise KeyboardInterrupt  # the process stops between publishing and recording

        monkeypatch.setattr(engine.store, "record_index_version", killed)
        with pytest.raises(KeyboardInterrupt):
            engine.ingest([docs])
        monkeypatch.undo()
        stats = engine.stats()
        assert stats.live_version == 2
        assert [v["version"] for v in stats.versions] == [1, 2]
        assert "not in the history" in stats.versions[1]["status"] and stats.versions[1]["on_disk"]
    finally:
        engine.close()
