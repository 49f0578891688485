"""End to end with the real default model (all-MiniLM-L6-v2, offline from its PyPI package)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings

pytestmark = [pytest.mark.slow, pytest.mark.integration]

FILLER = "\n\n".join(
    f'def helper_{i}(values):\n    """Return the {i}th running statistic."""\n'
    f"    total = 0\n    for v in values:\n        total += v * {i}\n    return total\n"
    for i in range(40)
)

TARGET = textwrap.dedent(
    '''\
    def levenshtein_distance(left: str, right: str) -> int:
        """Number of single-character edits that turn one string into the other."""
        previous = list(range(len(right) + 1))
        for i, a in enumerate(left, start=1):
            current = [i]
            for j, b in enumerate(right, start=1):
                current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
            previous = current
        return previous[-1]
    '''
)

TOPICS = ["granite", "basalt", "limestone", "sandstone", "slate", "marble", "quartzite", "shale"]
ROCKS = "\n\n".join(
    f"## {rock.title()}\n\n{rock.title()} is a rock found in quarries. Builders cut {rock} into blocks "
    f"for walls and floors, and geologists date {rock} layers by the minerals they hold. "
    f"Weathering turns exposed {rock} into soil over thousands of years."
    for rock in TOPICS * 2
)
BEES = (
    "## Bees\n\nHoney bees communicate the direction of a food source with a waggle dance performed\n"
    "on the vertical comb; the angle of the dance to the vertical encodes the angle to the sun.\n"
    "The duration of the waggle run tells the other foragers how far away the flowers are.\n"
    "Scouts that found rich nectar dance longer, so more of their nest mates fly to that patch.\n"
    "Bees that return with pollen also share its scent, which helps recruits recognise the blossoms.\n"
)
GUIDE = f"# Field guide\n\n{ROCKS}\n\n{BEES}\n{ROCKS}\n"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("mixed")
    (root / "src").mkdir()
    (root / "src" / "textutil.py").write_text(FILLER + "\n\n\n" + TARGET)
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text(GUIDE)
    settings = Settings().with_overrides({"paths.data_dir": str(root / "data")})
    eng = Engine(settings)
    eng.ingest([root / "src", root / "docs"])
    yield eng, root
    eng.close()


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if needle in line)


def test_real_model_is_the_packaged_default(engine):
    eng, _ = engine
    assert eng.embedder.dimension == 384
    assert "MiniLM" in eng.embedder.model_name


def test_finds_a_function_by_its_name_with_the_right_lines(engine):
    eng, root = engine
    path = root / "src" / "textutil.py"
    result = eng.query("levenshtein_distance", top_k=3)
    top = result.chunks[0]
    assert top.path == "src/textutil.py"  # relative to the ingested root (hybrid_rag/paths.py)
    def_line = _line_of(path, "def levenshtein_distance")
    assert top.start_line <= def_line and top.end_line >= def_line + 8
    lines = path.read_text().splitlines()
    assert top.text == "\n".join(lines[top.start_line - 1 : top.end_line])


def test_finds_a_paragraph_by_a_paraphrase(engine):
    eng, root = engine
    result = eng.query("how do insects tell each other where flowers are?", mode="dense", top_k=3)
    top = result.chunks[0]
    assert top.path.endswith("guide.md")
    guide_chunks = [c for c in eng.store.iter_chunks() if c.path.endswith("guide.md")]
    assert len(guide_chunks) >= 2  # the paragraph has to be told apart from the rest of its file
    dance = _line_of(root / "docs" / "guide.md", "waggle dance")
    assert top.start_line <= dance <= top.end_line
