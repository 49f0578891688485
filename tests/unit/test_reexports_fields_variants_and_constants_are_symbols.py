"""Re-exports, struct and class fields, enum variants and module constants are rows of the symbol
index, their kind said, so a question naming them finds the place (issue 37); a re-export ranks
below the definition it re-exports, and a use of a name never resolves to a field.

The snippets are small real shapes: itertools' ``lib.rs`` re-exports and ``MinMaxResult``,
rxjs's ``operators/index.ts`` barrel, ninja's ``State``/``Edge`` fields and ``#define``s, pflag's
``Flag`` struct and constants, click's ``__init__.py``, a Java and a C# enum.
"""

from __future__ import annotations

import pytest
from fake_settings import fake_settings

from hybrid_rag.code.grammars import load
from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.ingest.loaders import classify
from hybrid_rag.retrieval.symbol_ranking import symbol_hits
from hybrid_rag.symbols.extract import file_symbols
from hybrid_rag.types import LoadedFile, SourceType

pytestmark = pytest.mark.skipif(
    any(load(g) is None for g in ("rust", "typescript", "cpp", "go", "java", "csharp")),
    reason="grammars not installed",
)

LIB_RS = """\
pub use crate::adaptors::{interleave, Interleave, merge as merge_two};
pub use crate::minmax::MinMaxResult;
pub use self::kmerge_impl::*;

mod adaptors;
"""
MINMAX_RS = """\
/// `MinMaxResult` is an enum returned by `minmax`.
#[derive(Copy, Clone, PartialEq, Debug)]
pub enum MinMaxResult<T> {
    /// Empty iterator
    NoElements,
    /// Iterator with one element, so the minimum and maximum are the same
    OneElement(T),
    /// More than one element in the iterator, the first element is not larger than the second
    MinMax(T, T),
}

pub const DEFAULT_CAPACITY: usize = 16;

pub struct Peeked<I> {
    iter: I,
    pub buffered: Vec<u8>,
}
"""
INDEX_TS = """\
export { audit } from './audit';
export { map as project } from './map';
export * from './types';
"""
AUDIT_TS = """\
export const DEFAULT_THROTTLE = 10;

export interface AuditConfig {
  leading?: boolean;
  trailing?: boolean;
}

export enum Notification {
  Next = 'N',
  Error = 'E',
}

export function audit<T>(durationSelector: (value: T) => number) {
  return durationSelector;
}
"""
STATE_H = """\
#ifndef NINJA_STATE_H_
#define NINJA_STATE_H_
#define kDefaultPoolDepth 0

struct Edge {
  enum VisitMark { VisitNone, VisitInStack, VisitDone };
  const Rule* rule_;
  Pool* pool_;
  std::vector<Node*> inputs_;
  bool outputs_ready() const;
};
#endif
"""
GRAPH_H = """\
struct Node {
  /// The file's last change.
  TimeStamp mtime() const { return mtime_; }

 private:
  TimeStamp mtime_ = -1;
  bool dirty_ = false;
};
"""
FLAG_GO = """\
package pflag

const defaultUsage = "usage"

// A Flag represents the state of a flag.
type Flag struct {
	Name      string // name as it appears on command line
	Shorthand string // one-letter abbreviated flag
	Usage     string // help message
}
"""
INIT_PY = """\
from .core import Command as Command
from .decorators import pass_context
from .types import *

__version__ = "8.1.7"
"""
CORE_PY = """\
import enum

DEFAULT_TERM_WIDTH = 80


class ParameterSource(enum.Enum):
    COMMANDLINE = enum.auto()
    ENVIRONMENT = enum.auto()


class Command:
    allow_extra_args = False
    name: str

    def invoke(self, ctx):
        return ctx
"""
KIND_JAVA = """\
package org.jpype;

public enum JPypeKind {
    CLASS, INTERFACE;
    public static final int MAX_DEPTH = 8;
    private String label;
}
"""
STATE_CS = """\
namespace Python.Runtime
{
    internal enum ShutdownMode { Default, Normal, Reload }
    public class Runtime { public const string PythonDLL = "python3"; internal static int refs; }
}
"""
FILES = {
    "src/lib.rs": LIB_RS,
    "src/minmax.rs": MINMAX_RS,
    "operators/index.ts": INDEX_TS,
    "operators/audit.ts": AUDIT_TS,
    "src/state.h": STATE_H,
    "src/graph.h": GRAPH_H,
    "flag.go": FLAG_GO,
    "click/__init__.py": INIT_PY,
    "click/core.py": CORE_PY,
    "java/JPypeKind.java": KIND_JAVA,
    "runtime/Runtime.cs": STATE_CS,
}


def _loaded(path: str, text: str) -> LoadedFile:
    source_type, language = classify(path)
    assert source_type is SourceType.CODE
    return LoadedFile(path, text, "0" * 64, len(text), 0.0, source_type, language)


def _symbols(path: str) -> list[tuple[str, str, str]]:
    """(name, kind, qualified name) of a file's symbol rows, in their order."""
    return [(s.name, s.kind, s.qualified_name) for s in file_symbols(_loaded(path, FILES[path]))]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("repo")
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    eng = Engine(fake_settings(root / "data"))
    eng.ingest([root])
    yield eng
    eng.close()


def _rows(engine: Engine, name: str) -> list[tuple[str, str, str]]:
    return sorted((m.symbol.kind, m.symbol.qualified_name, m.symbol.citation) for m in engine.symbols(name))


def test_rust_reexports_variants_fields_and_constants(engine: Engine) -> None:
    assert _rows(engine, "merge_two") == [("reexport", "merge_two", "src/lib.rs:1-1")]
    assert ("reexport", "kmerge_impl", "src/lib.rs:3-3") in _rows(engine, "kmerge_impl")
    assert _rows(engine, "OneElement") == [("variant", "MinMaxResult::OneElement", "src/minmax.rs:7-7")]
    assert _rows(engine, "DEFAULT_CAPACITY") == [("constant", "DEFAULT_CAPACITY", "src/minmax.rs:12-12")]
    assert _rows(engine, "buffered") == [("field", "Peeked::buffered", "src/minmax.rs:16-16")]
    assert [m.symbol.kind for m in engine.symbols("MinMaxResult", kinds=["reexport"])] == ["reexport"]


def test_typescript_barrel_reexports_interface_fields_and_enum_members(engine: Engine) -> None:
    assert _rows(engine, "project") == [("reexport", "project", "operators/index.ts:2-2")]
    assert ("reexport", "types", "operators/index.ts:3-3") in _rows(engine, "types")
    assert _rows(engine, "DEFAULT_THROTTLE") == [("constant", "DEFAULT_THROTTLE", "operators/audit.ts:1-1")]
    assert _rows(engine, "trailing") == [("field", "AuditConfig.trailing", "operators/audit.ts:5-5")]
    assert _rows(engine, "Error") == [("variant", "Notification.Error", "operators/audit.ts:10-10")]


def test_cpp_fields_enumerators_and_defines(engine: Engine) -> None:
    assert _rows(engine, "pool_") == [("field", "Edge::pool_", "src/state.h:8-8")]
    assert _rows(engine, "VisitInStack") == [("variant", "Edge::VisitMark::VisitInStack", "src/state.h:6-6")]
    assert _rows(engine, "kDefaultPoolDepth") == [("constant", "kDefaultPoolDepth", "src/state.h:3-3")]
    assert not [r for r in _rows(engine, "outputs_ready") if r[0] == "field"]  # a method, no field


def test_a_cpp_header_is_read_with_the_grammar_the_extractor_picks(engine: Engine) -> None:
    # a ``.h`` file is C by its extension; ``private:`` marks it C++, whose grammar reads the fields
    assert _rows(engine, "mtime_") == [("field", "Node::mtime_", "src/graph.h:6-6")]


def test_go_struct_fields_and_constants(engine: Engine) -> None:
    assert _rows(engine, "Shorthand") == [("field", "pflag.Flag.Shorthand", "flag.go:8-8")]
    assert _rows(engine, "defaultUsage") == [("constant", "defaultUsage", "flag.go:3-3")]


def test_python_init_reexports_class_fields_enum_members_and_constants(engine: Engine) -> None:
    assert ("reexport", "pass_context", "click/__init__.py:2-2") in _rows(engine, "pass_context")
    assert ("reexport", "types", "click/__init__.py:3-3") in _rows(engine, "types")
    assert _rows(engine, "allow_extra_args") == [("field", "Command.allow_extra_args", "click/core.py:12-12")]
    assert _rows(engine, "ENVIRONMENT") == [("variant", "ParameterSource.ENVIRONMENT", "click/core.py:8-8")]
    assert _rows(engine, "DEFAULT_TERM_WIDTH") == [("constant", "DEFAULT_TERM_WIDTH", "click/core.py:3-3")]


def test_java_and_csharp_enum_constants_and_fields(engine: Engine) -> None:
    assert _rows(engine, "INTERFACE") == [
        ("variant", "org.jpype.JPypeKind.INTERFACE", "java/JPypeKind.java:4-4")
    ]
    assert _rows(engine, "MAX_DEPTH") == [
        ("constant", "org.jpype.JPypeKind.MAX_DEPTH", "java/JPypeKind.java:5-5")
    ]
    assert _rows(engine, "Reload")[0][:2] == ("variant", "Python.Runtime.ShutdownMode.Reload")
    assert _rows(engine, "PythonDLL")[0][:2] == ("constant", "Python.Runtime.Runtime.PythonDLL")
    assert _rows(engine, "refs")[0][:2] == ("field", "Python.Runtime.Runtime.refs")


def test_a_reexport_ranks_below_the_definition_it_reexports(engine: Engine) -> None:
    definition = engine.symbols("MinMaxResult", kinds=["enum"])[0].symbol
    hits = symbol_hits(engine.store, "what are the variants of MinMaxResult?", state=None)
    assert [h.id for h in hits] == [definition.chunk_id]  # the `pub use` line shares nothing
    command = engine.symbols("Command", kinds=["class"])[0].symbol
    assert [h.id for h in symbol_hits(engine.store, "where is `Command` defined?", state=None)] == [
        command.chunk_id
    ]


def test_a_question_naming_a_field_finds_its_struct(engine: Engine) -> None:
    edge = engine.symbols("Edge", kinds=["struct"])[0].symbol
    hits = symbol_hits(engine.store, "what is `inputs_` of an edge?", state=None)
    assert hits and hits[0].id == edge.chunk_id
    answer = engine.query("what does inputs_ hold?", top_k=3)
    assert answer.chunks and answer.chunks[0].path.endswith("state.h")


def test_the_new_kinds_are_listed_and_checked(engine: Engine) -> None:
    assert {m.symbol.kind for m in engine.symbols("Error", kinds=["variant", "field"])} == {"variant"}
    with pytest.raises(InputError, match="reexport"):
        engine.symbols("Error", kinds=["variable"])


def test_members_come_after_the_units_so_reference_scopes_keep_their_place() -> None:
    rows = _symbols("src/minmax.rs")
    kinds = [kind for _, kind, _ in rows]
    units = [k for k in kinds if k not in ("variant", "field", "constant", "reexport")]
    assert units and kinds[: len(units)] == units
    assert ("MinMaxResult", "enum", "MinMaxResult") in rows


def test_a_use_of_a_name_never_resolves_to_a_field(engine: Engine) -> None:
    answer = engine.references("refs", "Command")
    uses = [u for f in answer["files"] for u in f["uses"]]
    assert uses and all(u["definition"]["kind"] == "class" for u in uses)  # the import: core.py's class
    edge = engine.references("refs", "Edge")
    assert all(u.get("definition", {}).get("kind") != "field" for f in edge["files"] for u in f["uses"])


def test_a_file_that_does_not_parse_gives_no_error() -> None:
    rows = file_symbols(_loaded("bad.rs", "pub struct S { x: u32 \n fn ( {{"))
    assert isinstance(rows, list)


def test_a_failure_reading_members_keeps_the_files_units(monkeypatch: pytest.MonkeyPatch) -> None:
    import hybrid_rag.symbols.members as members

    def broken(path: str, text: str) -> list[object]:
        raise RuntimeError("a grammar bug")

    monkeypatch.setattr(members, "members_for_path", broken)
    rows = _symbols("src/minmax.rs")
    assert ("MinMaxResult", "enum", "MinMaxResult") in rows
    assert not [r for r in rows if r[1] in ("variant", "field", "constant")]
