"""The parse records what the overload rules read (``code/call_args.py``, ``code/preproc.py``,
RESULTS.md#cpp-unread-project): each C, C++ and Java call's argument count and plain-name
arguments, and for a C/C++ definition written in a conditional with a second branch, the branch
(a header guard or a lone ``#ifdef`` records nothing)."""

from __future__ import annotations

from hybrid_rag.code.extract import parse_path

CPP = """#ifndef W_H
#define W_H
namespace ns {
void f(int a, int b);
template <typename T> T h(int x);
#ifdef FAST
int speed(int x) { return x; }
#elif SLOW
int speed(int x) { return x - 1; }
#else
int speed(int x) { return x + 1; }
#endif
#ifdef ONLY
int lone() { return 0; }
#endif
void run(int a, int b) {
    f(a, b);
    h<int>(1);
    speed();
}
}
#endif
"""

JAVA = """class A {
    void m(int a, int b) {}
    void go(int x) { this.m(x, 2); m(x, x); }
}
"""


def _calls(path: str, text: str) -> dict[tuple[str, int, str], str]:
    parsed = parse_path(path, text)
    assert parsed is not None
    return {(r.name, r.line, r.qualifier): r.module for r in parsed[1] if r.kind == "call"}


def test_a_cpp_call_keeps_its_argument_count_and_plain_names(tmp_path) -> None:
    calls = _calls(str(tmp_path / "w.hpp"), CPP)
    assert calls[("f", 17, "")] == "(2) a,b"
    assert calls[("h", 18, "")] == "(1)"  # a template call: one argument, no plain name
    assert calls[("speed", 19, "")] == "(0)"


def test_a_java_call_keeps_its_argument_count(tmp_path) -> None:
    calls = _calls(str(tmp_path / "A.java"), JAVA)
    assert calls[("m", 3, "this")] == "(2) x"
    assert calls[("m", 3, "")] == "(2) x,x"


def test_each_branch_of_a_conditional_is_recorded_and_a_guard_is_not(tmp_path) -> None:
    parsed = parse_path(str(tmp_path / "w.hpp"), CPP)
    assert parsed is not None
    branches = {(r.name, r.line): r.module for r in parsed[1] if r.kind == "alternative"}
    assert set(branches) == {("speed", 7), ("speed", 9), ("speed", 11)}  # not lone(), nor the guard's
    groups = {m.split(":")[0] for m in branches.values()}
    assert groups == {"6"}  # one conditional, three branches
    assert len(set(branches.values())) == 3
