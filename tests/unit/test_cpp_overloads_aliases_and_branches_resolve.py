"""Several definitions of one called name told apart without types (``symbols/overloads.py``) and
receivers typed through aliases (``symbols/aliases.py``), RESULTS.md#cpp-unread-project:

* overloads by argument COUNT (defaults and ``...`` counted), never a guess when counts tie;
* a function written in both branches of an ``#ifdef``/``#else`` is one definition (the call's own
  branch in its file, else the first), not an ambiguity;
* C++ argument-dependent lookup: ``format_as(p)`` with ``p`` a ``geo::Point`` is ``geo::format_as``;
* a receiver typed by an alias (``using X = std::unique_ptr<Y>``, ``typedef``, TypeScript ``type X
  = Y``) is the aliased class's member.

Each call site is marked ``// <-KEY`` in the source; the test reads what that call resolved to
(``resolved`` of the receivers' test)."""

from __future__ import annotations

import pytest

from hybrid_rag.engine import Engine
from hybrid_rag.settings import Settings
from tests.unit.test_calls_resolve_through_the_receivers_declared_type import resolved

CPP = {
    "io/writer.hpp": """#pragma once
#include <memory>

namespace io {

class Writer {
public:
    void put(int a);
    void put(int a, int b, int c = 0);
    void put(const char* s, int n, int flags = 0, int more = 0);
    void log(const char* fmt, ...);
    void log();
    void flush();
    void close();
    void reset();
    void join(const char* v, const char* delim = ",");
    void join(const char* v, int width, const char* delim = ",");
};

class Reader {
public:
    void flush();
    void close();
    void reset();
};

using WriterPtr = std::unique_ptr<Writer>;
typedef Writer PlainWriter;

}  // namespace io
""",
    "io/speed.hpp": """#pragma once
namespace io {
#ifdef IO_FAST
inline int speed(int x) { return x * 2; }
inline int warm(int x) { return speed(x); } // <-own-branch-first
#else
inline int speed(int x) { return x; }
inline int warm(int x) { return speed(x); } // <-own-branch-second
#endif
}  // namespace io
""",
    "geo/point.hpp": """#pragma once
#include <string>
namespace geo {
struct Point { int x; int y; };
inline std::string format_as(Point p) { return "point"; }
}  // namespace geo
""",
    "geo/other.hpp": """#pragma once
#include <string>
namespace other {
inline std::string format_as(int p) { return "int"; }
}  // namespace other
""",
    "app/main.cpp": """#include "io/writer.hpp"
#include "io/speed.hpp"
#include "geo/point.hpp"

namespace app {

void run(io::Writer& w, io::WriterPtr owned, io::PlainWriter plain, geo::Point where) {
    w.put(1); // <-one-argument
    w.put(1, 2); // <-two-arguments-tie
    w.put("x", 1, 2, 3); // <-four-arguments
    w.log("%d %d", 1, 2); // <-variadic
    owned->flush(); // <-alias-unique-ptr
    plain.close(); // <-typedef
    owned.reset(); // <-smart-pointer-own
    io::speed(3); // <-ifdef-else
    format_as(where); // <-adl
    w.join("a", 1); // <-literal-default-tie
}

}  // namespace app
""",
}

TS = {
    "pool.ts": """export class Pool {
  take(): number { return 1; }
}
export class Queue {
  take(): number { return 2; }
}
export type PoolRef = Pool;
""",
    "run.ts": """import { PoolRef } from './pool';

export function run(p: PoolRef): number {
  return p.take(); // <-type-alias
}
""",
}

FILES = {"cpp": CPP, "ts": TS}
# (language, marked site) -> (status, the qualified name resolved to or the candidates' names)
EXPECTED = {
    ("cpp", "one-argument"): ("resolved", "io::Writer::put", 8),  # put(int a): the only one taking 1
    ("cpp", "two-arguments-tie"): ("ambiguous", {"io::Writer::put"}, None),  # put(a, b, c = 0) or ...
    ("cpp", "four-arguments"): ("resolved", "io::Writer::put", 10),
    ("cpp", "variadic"): ("resolved", "io::Writer::log", 11),  # log(fmt, ...), not log()
    ("cpp", "alias-unique-ptr"): ("resolved", "io::Writer::flush", None),  # not Reader::flush
    ("cpp", "typedef"): ("resolved", "io::Writer::close", None),
    ("cpp", "smart-pointer-own"): ("ambiguous", {"io::Writer::reset", "io::Reader::reset"}, None),
    ("cpp", "ifdef-else"): ("resolved", "io::speed", 4),  # one definition, cited at its first branch
    ("cpp", "own-branch-first"): ("resolved", "io::speed", 4),
    ("cpp", "own-branch-second"): ("resolved", "io::speed", 7),  # the #else branch's own copy
    ("cpp", "adl"): ("resolved", "geo::format_as", None),  # not other::format_as(int)
    # join(v, delim = ",") or join(v, width, delim = ","): the default's "," is no second parameter
    ("cpp", "literal-default-tie"): ("ambiguous", {"io::Writer::join"}, None),
    ("ts", "type-alias"): ("resolved", "Pool.take", None),  # not Queue.take
}


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory):
    out = {}
    for language, files in FILES.items():
        root = tmp_path_factory.mktemp(language)
        engine = Engine(
            Settings().with_overrides({"paths.data_dir": str(root / "data"), "embedding.model": "fake"})
        )
        try:
            out[language] = resolved(engine, root / "src", files)
            if language == "cpp":
                out["refs"] = engine.references("refs", "io::speed")
        finally:
            engine.close()
    return out


def test_the_branches_records_are_no_uses_of_the_definition(sites: dict) -> None:
    """``refs io::speed``: its three calls, not the ``alternative`` records of its two copies."""
    answer = sites["refs"]
    uses = [u for group in answer["files"] for u in group["uses"]] if "files" in answer else answer["uses"]
    assert sorted(u["line"] for u in uses) == [5, 8, 15]
    assert {u["kind"] for u in uses} == {"call"}


@pytest.mark.parametrize(("language", "site"), sorted(EXPECTED))
def test_a_marked_call_resolves_by_count_branch_namespace_or_alias(
    sites: dict, language: str, site: str
) -> None:
    use = sites[language][site]
    status, expected, line = EXPECTED[(language, site)]
    assert use.status == status, (use.status, use.via, [t.qualified_name for t in use.targets])
    if status == "resolved":
        assert use.targets[0].qualified_name == expected
        if line is not None:
            assert use.targets[0].start_line == line
    else:
        assert {t.qualified_name for t in use.targets} == expected
        assert len(use.targets) >= 2
