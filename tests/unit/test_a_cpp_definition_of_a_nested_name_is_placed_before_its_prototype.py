"""A C++ definition written with a nested qualifier (``BuildLog::LogEntry::HashCommand``, ninja's
``build_log.cc``) is a symbol, and a question that names a function places its definition, the
one with a body, first: not the header's prototype (RESULTS.md#query-time)."""

from __future__ import annotations

import pytest
from engine_fixtures import engine_over, write_tree

from hybrid_rag.code.grammars import load
from hybrid_rag.engine import Engine

HEADER = """\
// The log of the commands run.
struct BuildLog {
  /// One entry: a command's output, its hash and its times.
  struct LogEntry {
    std::string output;
    /// The hash of a command line, as the log stores it.
    static uint64_t HashCommand(StringPiece command);
    explicit LogEntry(std::string output);
  };
  /// Parses a manifest file.
  bool ParseFile(const std::string& path);
  ~BuildLog();
};
"""
SOURCE = """\
#include "build_log.h"

// static
uint64_t BuildLog::LogEntry::HashCommand(StringPiece command) {
  return rapidhash(command.str_, command.len_);
}

BuildLog::LogEntry::LogEntry(std::string output) : output(std::move(output)) {}

namespace outer { namespace inner {
int A::B::C::deep(int x) {
  return x + 1;
}
} }

bool BuildLog::ParseFile(const std::string& path) {
  return !path.empty();
}
"""
OTHER = "\n".join(f"// a note on the build log and its entries, {i}\nint note_{i}();" for i in range(8))

pytestmark = pytest.mark.skipif(load("cpp") is None, reason="the C++ grammar is not installed")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    root = write_tree(
        tmp_path_factory.mktemp("repo"),
        {"src/build_log.h": HEADER, "src/build_log.cc": SOURCE, "src/notes.h": OTHER},
    )
    with engine_over(root / "src") as eng:
        yield eng


def test_a_definition_with_a_nested_qualifier_is_a_symbol(engine: Engine) -> None:
    found = [(m.symbol.citation, m.symbol.qualified_name) for m in engine.symbols("HashCommand")]
    assert ("build_log.cc:3-6", "BuildLog::LogEntry::HashCommand") in found
    assert ("build_log.cc:8-8", "BuildLog::LogEntry::LogEntry") in [
        (m.symbol.citation, m.symbol.qualified_name) for m in engine.symbols("BuildLog::LogEntry::LogEntry")
    ]
    deep = engine.symbols("deep")[0].symbol
    assert deep.qualified_name.endswith("A::B::C::deep"), deep.qualified_name


def test_the_definition_with_its_body_is_placed_before_the_prototype(engine: Engine) -> None:
    for question in ("BuildLog::LogEntry::HashCommand", "what does BuildLog::ParseFile check?"):
        first = engine.query(question, top_k=5).chunks[0]
        assert first.path.endswith("build_log.cc"), (question, first.path)
        assert first.breakdown["definition_first"] == 1.0
