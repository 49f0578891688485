"""A use that more than one definition could answer is never resolved by a guess: it is
``ambiguous`` with every candidate; a qualifier (``self``, a class name, an imported module) or the
file's own definition settles it when it can; a name imported from outside the index is
``unresolved``, not matched to a namesake of the repository."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hybrid_rag.engine import Engine

SOURCES = {
    "a.py": """\
        class Reader:
            def close(self):
                return 1

            def finish(self):
                return self.close()
        """,
    "b.py": """\
        class Writer:
            def close(self):
                return 2

            @staticmethod
            def make():
                return Writer()
        """,
    "c.py": """\
        from os.path import join

        from b import Writer


        def shut(handle):
            handle.close()
            return Writer.make()


        def path(x):
            return join(x, "y")
        """,
    "d.py": """\
        def join(a, b):
            return a + b
        """,
    "e.py": """\
        class Box:
            def result(self):
                return 1


        def compute():
            result = 2
            return result
        """,
}


def _ingest(tmp_path: Path, engine: Engine) -> None:
    for name, text in SOURCES.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    engine.ingest([tmp_path])


def _uses(answer: dict) -> list[dict]:
    return [u for group in answer["files"] for u in group["uses"]]


def test_a_member_call_two_classes_could_answer_is_ambiguous_with_both(
    tmp_path: Path, engine: Engine
) -> None:
    _ingest(tmp_path, engine)
    uses = {u["path"]: u for u in _uses(engine.references("refs", "close"))}
    shut = uses["c.py"]
    assert shut["status"] == "ambiguous" and "definition" not in shut
    assert sorted(c["qualified_name"] for c in shut["candidates"]) == ["Reader.close", "Writer.close"]
    assert uses["a.py"]["status"] == "resolved" and uses["a.py"]["via"] == "self"
    callers = engine.references("callers", "Writer.close")["callers"]
    assert [(c["qualified_name"], c["ambiguous"]) for c in callers] == [("shut", True)]


def test_a_class_qualifier_settles_the_method(tmp_path: Path, engine: Engine) -> None:
    _ingest(tmp_path, engine)
    (use,) = _uses(engine.references("refs", "make"))
    assert (use["status"], use["via"], use["definition"]["citation"]) == (
        "resolved",
        "import",
        "b.py:5-7",
    )  # Writer, imported from b


def test_a_name_imported_from_outside_the_index_is_not_matched_to_a_namesake(
    tmp_path: Path, engine: Engine
) -> None:
    _ingest(tmp_path, engine)
    answer = engine.references("refs", "join")
    assert [d["citation"] for d in answer["definitions"]] == ["d.py:1-2"]
    assert answer["files"] == []  # c.py's join is os.path.join, not d.py's
    callees = engine.references("callees", "path")["callees"]
    assert [(c["name"], c["status"]) for c in callees] == [("join", "unresolved")]


def test_a_bare_python_name_is_not_a_method_of_the_same_name(tmp_path: Path, engine: Engine) -> None:
    _ingest(tmp_path, engine)
    answer = engine.references("refs", "Box.result")
    assert [d["citation"] for d in answer["definitions"]] == ["e.py:2-3"]
    assert answer["files"] == []  # compute's local ``result`` is not Box.result
