"""The multi-language repository benchmark's judgements (``benchmarks/studies/_repo_docs.py``,
``_repo_questions.py``): each brace language's doc comment is found above its function, removed
with the definitions' lines re-taken from the rewritten file, its first sentence cleaned (JSDoc
tags, Go's leading name); identifier questions name a definition defined once; judged questions
are read with every answer, and a file judged against another version is refused."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from studies._repo_corpus import Project, build_corpus, overlaps  # noqa: E402
from studies._repo_docs import doc_sentence, scan, strip_doc_comments  # noqa: E402
from studies._repo_questions import identifier_targets, judged_targets  # noqa: E402

RUST = """/// A bag of marbles.
pub struct Pouch { count: u32 }

impl Pouch {
    /// Count the marbles that are left in the bag.
    pub fn left(&self) -> u32 {
        let s = "}";  // a brace in a string
        self.count
    }
}
"""
GO = """package bag

// Left returns the number of marbles still in the bag.
func (b *Bag) Left() int {
\treturn b.count
}
"""
JAVA = """class Bag {
  /**
   * Counts the marbles that are left in the bag.
   * @return the count
   */
  @Override
  public int left() {
    return count;
  }
}
"""
JS = """class Bag {
  /**
   * Count the marbles that are left in the bag.
   *
   * @param {number} x
   */

  left(x) {
    return `}${x}`;
  }
}
"""
CPP = """/** Counts the marbles that are left in the bag. */
template <typename T>
auto left(const T& bag) -> int {
  return bag.count;
}
int declared_only(int x);
"""


@pytest.mark.parametrize(
    ("source", "suffix", "name", "lines"),
    [
        (RUST, ".rs", "Pouch.left", (6, 9)),
        (GO, ".go", "Bag.Left", (4, 6)),
        (JAVA, ".java", "Bag.left", (7, 9)),
        (JS, ".js", "Bag.left", (8, 10)),
        (CPP, ".h", "left", (3, 5)),
    ],
)
def test_a_functions_doc_comment_and_body_are_found(
    source: str, suffix: str, name: str, lines: tuple
) -> None:
    found = scan(source, suffix)
    assert [d.name for d in found] == [name]  # a declaration without a body is no definition
    assert (found[0].start, found[0].end) == lines
    assert "marbles" in found[0].doc_text


def test_the_first_sentence_drops_tags_and_gos_leading_name() -> None:
    (java,) = scan(JAVA, ".java")
    assert doc_sentence(java.doc_text, java.name, "java") == "Counts the marbles that are left in the bag."
    (go,) = scan(GO, ".go")
    assert doc_sentence(go.doc_text, go.name, "go") == "Returns the number of marbles still in the bag."


def test_removing_a_doc_comment_keeps_the_definitions_and_moves_their_lines() -> None:
    rewritten, ranges = strip_doc_comments(".java")(JAVA, {0})
    assert "marbles" not in rewritten and "@Override" in rewritten
    first, last = ranges[0]
    assert rewritten.splitlines()[first - 1].strip() == "public int left() {"
    assert rewritten.splitlines()[last - 1].strip() == "}"


def test_a_go_corpus_is_judged_without_its_sentences(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "bag.go").write_text(GO)
    (src / "bag_test.go").write_text(GO.replace("Left returns the", "LeftInTest tests the"))  # no candidate
    targets, counts = build_corpus(src, tmp_path / "dest", cap=5, seed=0, language="go")
    assert counts["candidates"] == 1 and [t.name for t in targets] == ["Bag.Left"]
    assert "marbles" not in (tmp_path / "dest" / "bag.go").read_text()
    assert overlaps(targets[0], "bag.go", 3, 3) and not overlaps(targets[0], "bag.go", 1, 2)


def test_an_identifier_question_names_a_definition_defined_once(tmp_path: Path) -> None:
    (tmp_path / "bag.rs").write_text(RUST)
    targets = identifier_targets(tmp_path, Project("bag", "1", "rust", "apt"), n=5, seed=0)
    asked = sorted((t.name, t.start_line, t.kind) for t in targets)
    assert asked == [("Pouch", 2, "identifier"), ("Pouch.left", 6, "identifier")]
    assert any("Pouch::left" in t.query for t in targets)  # Rust's separator


def test_judged_questions_keep_every_answer_and_refuse_another_version(tmp_path: Path) -> None:
    line = {"id": "bag:1", "project": "bag", "version": "1", "question": "How many are left?"}
    line["answers"] = ["bag.go:4-6", "other.go:10"]
    (tmp_path / "bag.jsonl").write_text(json.dumps(line) + "\n")
    (target,) = judged_targets(Project("bag", "1", "go", "apt"), tmp_path)
    assert overlaps(target, "bag.go", 5, 5) and overlaps(target, "other.go", 10, 12)
    assert not overlaps(target, "bag.go", 7, 9)
    with pytest.raises(SystemExit, match="judged against 1"):
        judged_targets(Project("bag", "2", "go", "apt"), tmp_path)


def test_the_committed_judged_sets_name_lines_of_their_version() -> None:
    sets = sorted((BENCHMARKS / "judged").glob("*.jsonl"))
    questions = [json.loads(line) for path in sets for line in path.read_text().splitlines()]
    assert len(questions) >= 60 and len({q["project"] for q in questions}) >= 2
    for q in questions:
        assert q["version"] and q["question"].endswith("?") and q["answers"]
        for answer in q["answers"]:
            path, lines = answer.rsplit(":", 1)
            first, last = (int(x) for x in lines.split("-"))
            assert path and 0 < first <= last
