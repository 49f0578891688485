"""``features.implementation``: a result that is a facade (a C++ header's declaration, a Rust
trait method that only calls another file's constructor) pulls its implementation just below
it; what the question does not point at, or what is not among the candidates, does not move."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fake_settings import fake_settings

from hybrid_rag.code.grammars import load
from hybrid_rag.engine import Engine
from hybrid_rag.retrieval.implementations import IMPLEMENTATION, pull_implementations
from hybrid_rag.types import ScoredChunk

pytestmark = pytest.mark.skipif(
    any(load(g) is None for g in ("rust", "cpp")), reason="grammars not installed"
)

CLEAN_H = """\
#ifndef NINJA_CLEAN_H_
#define NINJA_CLEAN_H_

class Cleaner {
 public:
  /// Clean all built files, except for files created by generator rules.
  int CleanAll(bool generator = false);

  /// Clean the given target and all the files built for it.
  int CleanTarget(const char* target);

  /// Clean the files produced by the given rule.
  int CleanRule(const char* rule);
};

#endif  // NINJA_CLEAN_H_
"""
CLEAN_CC = """\
#include "clean.h"

int Cleaner::CleanAll(bool generator) {
  Reset();
  PrintHeader();
  for (auto e : state_->edges_) {
    if (e->is_phony()) continue;
    if (!generator && e->GetBindingBool("generator")) continue;
    for (auto out : e->outputs_) RemoveFile(out->path());
  }
  PrintFooter();
  return status_;
}
"""
LIB_RS = """\
pub trait Itertools: Iterator {
    /// Split into an iterator pair that both yield all elements from
    /// the original iterator.
    fn tee(self) -> (Tee<Self>, Tee<Self>)
        where Self: Sized, Self::Item: Clone
    {
        tee::new(self)
    }
}
"""
TEE_RS = """\
/// One half of an iterator pair where both return the same elements.
pub struct Tee<I> where I: Iterator {
    rcbuffer: Rc<RefCell<TeeBuffer<I::Item, I>>>,
    id: bool,
}

pub fn new<I>(iter: I) -> (Tee<I>, Tee<I>) where I: Iterator {
    let buffer = TeeBuffer { backlog: VecDeque::new(), iter, owner: false };
    let t1 = Tee { rcbuffer: Rc::new(RefCell::new(buffer)), id: true };
    let t2 = Tee { rcbuffer: t1.rcbuffer.clone(), id: false };
    (t1, t2)
}
"""
OTHER = {f"other{i}.py": f"def helper_{i}(x):\n    return x + {i}\n" for i in range(6)}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("repo")
    for name, text in {
        "clean.h": CLEAN_H,
        "clean.cc": CLEAN_CC,
        "lib.rs": LIB_RS,
        "tee.rs": TEE_RS,
        **OTHER,
    }.items():
        (root / name).write_text(text)
    eng = Engine(fake_settings(root / "data"))
    eng.ingest([root])
    yield eng
    eng.close()


def _all_chunks(engine: Engine) -> dict[str, ScoredChunk]:
    """Every stored chunk as a scored result (stored paths, as the retriever holds them), by its
    file's name (each file is one chunk here)."""
    return {c.path.rsplit("/", 1)[-1]: ScoredChunk(c, 0.0) for c in engine.store.iter_chunks()}


def _ranked(chunks: dict[str, ScoredChunk], names: list[str]) -> list[ScoredChunk]:
    return [replace(chunks[n], score=float(len(names) - i), breakdown={}) for i, n in enumerate(names)]


def _names(scored: list[ScoredChunk]) -> list[str]:
    return [c.path.rsplit("/", 1)[-1] for c in scored]


def test_a_header_declaration_pulls_its_definition_below_it(engine: Engine) -> None:
    chunks = _all_chunks(engine)
    ranked = _ranked(chunks, ["clean.h", "other0.py", "other1.py", "other2.py", "other3.py", "clean.cc"])
    out = pull_implementations(ranked, engine.store, None, "which built files does cleaning all remove?")
    assert _names(out)[:2] == ["clean.h", "clean.cc"]
    assert out[1].breakdown[IMPLEMENTATION] == 1.0  # pulled under the first result
    assert [c.score for c in out] == sorted((c.score for c in out), reverse=True)


def test_a_delegating_trait_method_pulls_the_type_it_returns(engine: Engine) -> None:
    chunks = _all_chunks(engine)
    ranked = _ranked(chunks, ["other0.py", "lib.rs", "other1.py", "other2.py", "tee.rs"])
    out = pull_implementations(ranked, engine.store, None, "how is one iterator split into two?")
    assert _names(out)[:3] == ["other0.py", "lib.rs", "tee.rs"]


def test_nothing_moves_when_the_question_points_at_no_facade(engine: Engine) -> None:
    chunks = _all_chunks(engine)
    ranked = _ranked(chunks, ["clean.h", "other0.py", "other1.py", "clean.cc"])
    out = pull_implementations(ranked, engine.store, None, "what does the parser do with a syntax error?")
    assert _names(out) == _names(ranked)  # three declarations in the chunk, none named by the question


def test_an_implementation_above_its_facade_or_absent_stays_where_it_is(engine: Engine) -> None:
    chunks = _all_chunks(engine)
    above = _ranked(chunks, ["clean.cc", "clean.h", "other0.py"])
    question = "which built files does cleaning all remove?"
    assert _names(pull_implementations(above, engine.store, None, question)) == _names(above)
    absent = _ranked(chunks, ["clean.h", "other0.py", "other1.py"])
    assert _names(pull_implementations(absent, engine.store, None, question)) == _names(absent)


def test_the_rule_is_off_by_default_and_runs_when_asked(engine: Engine) -> None:
    question = "Clean all built files"
    off = engine.query(question, top_k=10)
    assert IMPLEMENTATION not in {t.stage for t in off.trace.timings}
    on = engine.query(question, top_k=10, features={"implementation": True})
    assert IMPLEMENTATION in {t.stage for t in on.trace.timings}  # timed as its own stage
