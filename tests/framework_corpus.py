"""The small corpus of the framework retriever tests (tests/frameworks): six files, one chunk
each, three of them code, and the fake-embedder settings of a data dir."""

from __future__ import annotations

from pathlib import Path

from fake_settings import fake_settings

__all__ = ["FILES", "QUESTION", "fake_settings", "write_corpus"]  # fake_settings: the shared one

FILES = {
    "src/tomato.py": "def tomato_yield(plants: int) -> int:\n    return plants * 4  # tomatoes a plant\n",
    "src/soil.py": "def soil_ph(sample: str) -> float:\n    return 6.5  # soil for tomatoes\n",
    "src/water.py": "def water(litres: float) -> float:\n    return litres / 2  # tomato watering\n",
    "docs/tomatoes.md": "# Tomatoes\n\nTomatoes need full sun and regular watering.\n",
    "docs/soil.md": "# Soil\n\nCompost improves clay soil for tomatoes.\n",
    "docs/pests.md": "# Pests\n\nAphids eat tomato leaves; ladybirds eat aphids.\n",
}
QUESTION = "how much water do tomatoes need?"


def write_corpus(root: Path) -> Path:
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root
