"""The small repository of the grouped-results tests: one long file whose twelve definitions all
match QUESTION (it fills a chunk list alone), two small files and a README."""

from __future__ import annotations

from pathlib import Path

QUESTION = "connection pool handling"


def _function(i: int, topic: str) -> str:
    body = "\n".join(
        f"    value_{j} = {topic}_step({j}) + {i}  # {topic} handling line {j}" for j in range(25)
    )
    doc = f'    """{topic} connection pool handling, part {i}."""'
    return f"def {topic}_part_{i}(x):\n{doc}\n{body}\n    return x\n"


def write_repository(root: Path) -> Path:
    """A long file whose twelve definitions all match QUESTION, two small ones and a README."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "pool.py").write_text("\n\n".join(_function(i, "pool") for i in range(12)))
    (root / "src" / "retry.py").write_text(_function(0, "retry"))
    (root / "src" / "cache.py").write_text(_function(0, "cache") + "\n\n" + _function(1, "pool"))
    (root / "README.md").write_text("# Pools\n\nThe connection pool hands out connections.\n")
    return root
