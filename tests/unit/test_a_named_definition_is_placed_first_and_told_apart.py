"""``features.definition_first``: a question that names a definition places the chunk that
defines it first (a rank guarantee, where the symbol list's boost can be outvoted); a name
defined twice is told apart by the question's other words (path, owner, doc comment), and a tie
places none (``symbols/definitions.py``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from engine_fixtures import engine_over, make_settings, write_tree

from hybrid_rag.engine import Engine

JSON_PARSER = textwrap.dedent(
    '''\
    class DocumentParser:
        """Reads JSON documents into dictionaries."""

        def feed(self, text):
            return dict(text=text)
    '''
)
XML_PARSER = textwrap.dedent(
    '''\
    class DocumentParser:
        """Reads XML attributes and elements into a tree."""

        def feed(self, text):
            return [text]
    '''
)
USES = "\n".join(
    f"def use_{i}(text):\n    # DocumentParser reads xml attributes: DocumentParser, DocumentParser\n"
    f"    return DocumentParser().feed(text)\n"
    for i in range(6)
)
OTHER_RULES_OFF = {"path_roles": False, "path_match": False, "file_coherence": False}


TOPICS = ("retry", "timeout", "codec", "router")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    files = {f"{t}.py": f"def {t}_{i}(value):\n    return value  # {t}\n" for i, t in enumerate(TOPICS)}
    files |= {"json/parser.py": JSON_PARSER, "xml/parser.py": XML_PARSER, "uses.py": USES}
    src = write_tree(tmp_path_factory.mktemp("repo") / "src", files)
    # a symbol boost the other lists outvote
    with engine_over(src, retrieval__path_priors=[], retrieval__symbol_weight=0.05) as eng:
        yield eng


def _paths(engine: Engine, query: str, **features: bool) -> list[str]:
    return [c.path for c in engine.query(query, top_k=5, features={**OTHER_RULES_OFF, **features}).chunks]


def test_the_definition_the_question_names_is_placed_first_and_told_apart_by_its_words(
    engine: Engine,
) -> None:
    question = "how does DocumentParser read xml attributes?"
    on = engine.query(question, top_k=5, features=OTHER_RULES_OFF)
    assert on.chunks[0].path.endswith("xml/parser.py")
    assert on.chunks[0].breakdown["definition_first"] == 1.0
    assert "definition_first" in {t.stage for t in on.trace.timings}
    assert on.chunks[0].score >= max(c.score for c in on.chunks)  # scores stay in rank order
    json_question = "how does DocumentParser turn json into dictionaries?"
    assert _paths(engine, json_question)[0].endswith("json/parser.py")


def test_without_the_rule_the_boost_is_outvoted(engine: Engine) -> None:
    paths = _paths(engine, "how does DocumentParser read xml attributes?", definition_first=False)
    assert not paths[0].endswith("xml/parser.py"), paths


def test_a_name_the_other_words_cannot_tell_apart_is_placed_nowhere(engine: Engine) -> None:
    result = engine.query("DocumentParser", top_k=5, features=OTHER_RULES_OFF)
    assert all("definition_first" not in c.breakdown for c in result.chunks)
    assert "definition_first" not in {t.stage for t in result.trace.timings}


def test_a_qualified_name_picks_its_owner_s_method(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "help.py").write_text("class Help:\n    def formatHelp(self):\n        return 'help'\n")
    (root / "other.py").write_text("class Other:\n    def formatHelp(self):\n        return 'other'\n")
    (root / "uses.py").write_text(
        "\n".join(f"x{i} = Other().formatHelp()  # formatHelp formatHelp" for i in range(9))
    )
    eng = Engine(make_settings(tmp_path, retrieval__symbol_weight=0.05))
    try:
        eng.ingest([root])
        question = "how does Help.formatHelp lay out the columns?"
        first = eng.query(question, top_k=3, features=OTHER_RULES_OFF).chunks[0]
        assert first.path == "help.py" and first.breakdown["definition_first"] == 1.0
    finally:
        eng.close()
