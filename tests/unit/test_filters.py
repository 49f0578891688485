"""Filters: grammar, every operator against a real MetadataStore, dates, globs, precedence, errors."""

from __future__ import annotations

from datetime import date, datetime, timezone

import numpy as np
import pytest
from filter_store import write_documents

from hybrid_rag.errors import InputError
from hybrid_rag.filters import (
    FIELDS,
    And,
    Compare,
    InList,
    Not,
    Or,
    as_filter,
    filters_from_mapping,
    glob_match,
    glob_to_regex,
    parse_filter,
    parse_filters,
    parse_when,
)
from hybrid_rag.store import MetadataStore
from hybrid_rag.store.filter_sql import to_sql
from hybrid_rag.types import SourceType


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


# path, collection, source_type, language, size, mtime, ingested_at (UTC), [(start, end, tokens)]
DOCS = [
    ("/proj/src/app/main.py", "src", "code", "python", 100, "2025-06-01T00:00", "2025-12-31T23:00",
     [(1, 10, 50), (11, 30, 120)]),
    ("/proj/src/util.py", "src", "code", "python", 2000, "2025-12-31T12:00", "2026-01-01T12:00",
     [(1, 5, 20)]),
    ("/proj/docs/guide.md", "docs", "text", "markdown", 300, "2026-01-01T00:00", "2026-01-02T00:00",
     [(1, 40, 300)]),
    ("/proj/mysrc/x.js", "other", "code", "javascript", 50, "2026-02-01T08:30", "2026-01-02T00:00",
     [(3, 7, 35)]),
    ("/proj/README.md", "docs", "text", "markdown", 1000, "2024-01-01T00:00", "2026-01-02T00:00",
     [(1, 2, 10), (3, 9, 60)]),
]  # fmt: skip
ALL = {d[0] for d in DOCS}
MAIN, UTIL, GUIDE, JS, README = (d[0] for d in DOCS)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> MetadataStore:
    s = MetadataStore(tmp_path_factory.mktemp("filters") / "store.sqlite3")
    write_documents(s, DOCS)
    yield s
    s.close()


def paths(store: MetadataStore, text: str) -> set[str]:
    ids = store.chunk_ids_matching(parse_filter(text))
    assert ids.dtype == np.int64 and list(ids) == sorted(ids)
    return {c.path for c in store.chunks(ids).values()}


def spans(store: MetadataStore, text: str) -> set[tuple[str, int]]:
    ids = store.chunk_ids_matching(parse_filter(text))
    return {(c.path, c.start_line) for c in store.chunks(ids).values()}


# -- text fields -----------------------------------------------------------------------------


def test_equality_and_inequality(store):
    assert paths(store, "collection=docs") == {GUIDE, README}
    assert paths(store, "collection == 'docs'") == {GUIDE, README}
    assert paths(store, "collection != docs") == ALL - {GUIDE, README}
    assert paths(store, "path = /proj/src/util.py") == {UTIL}
    assert paths(store, "language=javascript") == {JS}
    assert paths(store, "LANGUAGE = Python") == set()  # field names fold case, values do not


def test_in_and_not_in(store):
    assert paths(store, "collection in (docs, other)") == ALL - {MAIN, UTIL}
    assert paths(store, "collection not in (docs,other)") == {MAIN, UTIL}
    assert paths(store, "language in ('python')") == {MAIN, UTIL}
    assert paths(store, "collection in ()") == set()
    assert paths(store, "collection not in ()") == ALL


def test_source_type_is_validated_and_case_folded(store):
    assert paths(store, "source_type=code") == {MAIN, UTIL, JS}
    assert paths(store, "source_type = TEXT") == {GUIDE, README}
    assert paths(store, "source_type in (code, text)") == ALL
    with pytest.raises(InputError, match=r"source_type must be one of code, text, got 'binary'"):
        parse_filter("source_type=binary")
    with pytest.raises(InputError, match="operator '~' does not apply to source_type"):
        parse_filter("source_type ~ c*")


# -- numbers ---------------------------------------------------------------------------------


def test_number_comparisons_on_document_and_chunk_columns(store):
    assert paths(store, "size > 1000") == {UTIL}
    assert paths(store, "size >= 1000") == {UTIL, README}
    assert paths(store, "size < 100") == {JS}
    assert paths(store, "size <= 100") == {JS, MAIN}
    assert paths(store, "size = 300") == {GUIDE}
    assert paths(store, "size in (50, 2000)") == {JS, UTIL}
    assert spans(store, "start_line > 1") == {
        (MAIN, 11),
        (JS, 3),
        (README, 3),
    }
    assert spans(store, "end_line <= 5 and token_count != 20") == {(README, 1)}
    assert spans(store, "token_count >= 1.2e2") == {(MAIN, 11), (GUIDE, 1)}
    with pytest.raises(InputError, match="size needs a number, got 'big'"):
        parse_filter("size > big")
    with pytest.raises(InputError, match="finite"):
        parse_filter("size > nan")


# -- dates -----------------------------------------------------------------------------------


def test_a_date_alone_means_the_whole_utc_day(store):
    on_day = {UTIL}  # ingested 2026-01-01 12:00
    before = {MAIN}  # 2025-12-31 23:00
    after = ALL - on_day - before  # 2026-01-02 00:00
    assert paths(store, "ingested_at = 2026-01-01") == on_day
    assert paths(store, "ingested_at != 2026-01-01") == before | after
    assert paths(store, "ingested_at > 2026-01-01") == after
    assert paths(store, "ingested_at >= 2026-01-01") == on_day | after
    assert paths(store, "ingested_at < 2026-01-01") == before
    assert paths(store, "ingested_at <= 2026-01-01") == before | on_day


def test_datetimes_are_instants_and_offsets_are_converted_to_utc(store):
    assert paths(store, "ingested_at > 2026-01-01T12:00") == ALL - {UTIL, MAIN}
    assert paths(store, "ingested_at >= '2026-01-01 12:00:00'") == ALL - {MAIN}
    # 13:00+01:00 is 12:00 UTC
    assert paths(store, "ingested_at = 2026-01-01T13:00:00+01:00") == {UTIL}
    assert paths(store, "ingested_at < 2026-01-01T00:00Z") == {MAIN}


def test_mtime_takes_dates_or_unix_seconds(store):
    assert paths(store, "mtime >= 2026-01-01") == {GUIDE, JS}
    assert paths(store, "mtime = 2026-02-01") == {JS}
    assert paths(store, "mtime < 2025-01-01") == {README}
    assert paths(store, f"mtime > {_ts('2026-01-15T00:00'):.0f}") == {JS}
    assert paths(store, "mtime <= 2025-12-31") == {README, MAIN, UTIL}


def test_date_errors_and_parse_when():
    with pytest.raises(InputError, match="not a date: 'yesterday'"):
        parse_filter("ingested_at > yesterday")
    with pytest.raises(InputError, match="operator 'in' does not apply to ingested_at"):
        parse_filter("ingested_at in (2026-01-01)")
    assert parse_when("2026-03-04") == (datetime(2026, 3, 4), datetime(2026, 3, 5))
    assert parse_when("2026-03-04T05:06:07-02:00") == (datetime(2026, 3, 4, 7, 6, 7), None)


# -- globs -----------------------------------------------------------------------------------


GLOB_CASES = [
    # pattern, path, matches
    ("*.py", MAIN, True),  # no '/': the file name, anywhere
    ("*.py", "/proj/a.py/notes.txt", False),
    ("main.py", MAIN, True),
    ("main.py", "/proj/src/app/xmain.py", False),
    ("m?in.*", "/proj/main.py", True),
    ("src/**", MAIN, True),  # '/': a tail starting at a segment boundary
    ("src/**", "/home/me/src/x", True),
    ("src/**", JS, False),
    ("src/**", "/proj/src", False),  # the files inside, not a file named src
    ("src/", UTIL, True),  # trailing '/' means '/**'
    ("src/*.py", UTIL, True),
    ("src/*.py", MAIN, False),  # '*' does not cross '/'
    ("src/**/*.py", UTIL, True),  # '/**/' is zero or more directories
    ("src/**/*.py", "/proj/src/app/deep/main.py", True),
    ("app/main.py", MAIN, True),
    ("rc/app/main.py", MAIN, False),
    ("/proj/*.md", README, True),  # leading '/': anchored at the root
    ("/proj/*.md", GUIDE, False),
    ("/proj/**.md", GUIDE, True),
    ("/src/**", UTIL, False),
    ("**/guide.md", GUIDE, True),
    ("**", "/anything/at/all", True),
    ("*", "/anything/at/all", True),
    ("[ab].py", "/x/[ab].py", True),  # brackets are literal
    ("[ab].py", "/x/a.py", False),
    ("a+b.py", "/x/a+b.py", True),  # regex characters are literal
    ("*.PY", "/x/a.py", False),  # case-sensitive
    ("doc-*", "doc-17", True),  # relative ids (BEIR documents) work too
]


@pytest.mark.parametrize(("pattern", "path", "expected"), GLOB_CASES)
def test_glob_semantics(pattern, path, expected):
    assert glob_match(pattern, path) is expected


def test_sql_globs_agree_with_glob_match(store):
    for pattern in {p for p, _, _ in GLOB_CASES if p != "[ab].py"}:
        want = {p for p in ALL if glob_match(pattern, p)}
        assert paths(store, f"path ~ '{pattern}'") == want, pattern
    assert paths(store, "path~src/**") == {MAIN, UTIL}
    assert paths(store, "not path ~ *.md") == {MAIN, UTIL, JS}
    assert paths(store, "collection ~ d*") == {GUIDE, README}


def test_glob_to_regex_shape():
    assert glob_to_regex("src/**") == r"(?:^|/)src/.*\Z"
    assert glob_to_regex("/a/*.py") == r"^/a/[^/]*\.py\Z"
    with pytest.raises(InputError, match="empty glob"):
        glob_to_regex("")
    with pytest.raises(InputError, match="empty glob"):
        parse_filter("path ~ ''")


# -- boolean structure -----------------------------------------------------------------------


def test_and_binds_tighter_than_or_and_not_tighter_than_and(store):
    a_or_bc = paths(store, "collection=other or source_type=code and size>1000")
    assert a_or_bc == {JS, UTIL}
    assert paths(store, "(collection=other or source_type=code) and size>1000") == {UTIL}
    assert paths(store, "not collection=docs and size<200") == {MAIN, JS}
    assert paths(store, "not (collection=docs and size<2000)") == ALL - {GUIDE, README}
    assert paths(store, "not not collection=docs") == {GUIDE, README}
    assert paths(store, "collection=docs AND NOT path~README*") == {GUIDE}


def test_the_ast_shape():
    expr = parse_filter("size>1 or size<0 and not language=c")
    assert expr == Or(
        (Compare("size", ">", "1"), And((Compare("size", "<", "0"), Not(Compare("language", "=", "c")))))
    )
    assert parse_filter("collection not in (x, 'y z')") == InList("collection", ("x", "y z"), True)
    assert parse_filter('path ~ "it\'s/**"') == Compare("path", "~", "it's/**")
    with pytest.raises(AttributeError):
        expr.items = ()  # type: ignore[misc]  # frozen


@pytest.mark.parametrize(
    "text",
    [
        "source_type = code",
        "size > 1 or size < 0 and not language = c",
        "(collection = a or collection = b) and not (path ~ 'x y/**' or size >= 3)",
        "collection not in (a, 'b c', \"it's\")",
        "path = 'and'",
        "collection in ()",
    ],
)
def test_str_round_trips(text):
    expr = parse_filter(text)
    assert parse_filter(str(expr)) == expr


def test_parse_filters_ands_several_strings(store):
    expr = parse_filters(["source_type=code", "collection in (src)", "path~*.py"])
    assert isinstance(expr, And) and len(expr.items) == 3
    assert {c.path for c in store.chunks(store.chunk_ids_matching(expr)).values()} == {
        MAIN,
        UTIL,
    }
    assert parse_filters([]) is None
    assert parse_filters("size>1") == Compare("size", ">", "1")


def test_a_filter_that_matches_nothing_gives_an_empty_id_array(store):
    ids = store.chunk_ids_matching(parse_filter("collection=nope"))
    assert ids.dtype == np.int64 and ids.size == 0


# -- mappings and other forms ----------------------------------------------------------------


def test_filters_from_mapping(store):
    expr = filters_from_mapping({"source_type": SourceType.CODE, "collection": ["src", "other"], "size": 50})
    assert expr == And(
        (
            Compare("source_type", "=", "code"),
            InList("collection", ("src", "other")),
            Compare("size", "=", "50"),
        )
    )
    assert {c.path for c in store.chunks(store.chunk_ids_matching(expr)).values()} == {JS}
    assert filters_from_mapping({}) is None
    assert filters_from_mapping({"collection": {"b", "a"}}) == InList("collection", ("a", "b"))
    assert filters_from_mapping({"ingested_at": date(2026, 1, 1)}) == Compare(
        "ingested_at", "=", "2026-01-01"
    )
    assert paths(store, str(filters_from_mapping({"collection": []}))) == set()
    with pytest.raises(InputError, match="unknown filter field 'kind'"):
        filters_from_mapping({"kind": "code"})
    with pytest.raises(InputError, match="unsupported value"):
        filters_from_mapping({"size": None})
    with pytest.raises(InputError, match="source_type must be one of"):
        filters_from_mapping({"source_type": "binary"})


def test_as_filter_accepts_every_form():
    expr = Compare("size", ">", "1")
    assert as_filter(None) is None
    assert as_filter(expr) is expr
    assert as_filter("size>1") == expr
    assert as_filter(["size>1"]) == expr
    assert as_filter({"size": 1}) == Compare("size", "=", "1")
    with pytest.raises(InputError, match="unsupported filter"):
        as_filter(42)


# -- errors ----------------------------------------------------------------------------------


def test_an_unknown_field_lists_the_valid_ones():
    with pytest.raises(InputError) as err:
        parse_filter("size>1 and colection=docs")
    message = str(err.value)
    assert "at position 12" in message and "did you mean 'collection'" in message
    assert all(name in message for name in FIELDS)
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("size >", "at the end", "expected a value"),
        ("size > 1 and", "at the end", "expected a field name"),
        ("(size > 1", "at the end", "expected ')'"),
        ("size > 1)", "at position 9", "unexpected ')'"),
        ("size 1", "at position 6", "expected an operator"),
        ("path ~ 'src/**", "at position 8", "unterminated quote"),
        ("collection in docs", "at position 15", "expected '(' after 'in'"),
        ("collection in (a b)", "at position 18", "expected ',' or ')'"),
        ("collection not docs", "at position 16", "expected 'in' after 'not'"),
        ("collection > a", "at position 12", "operator '>' does not apply to collection"),
        ("= code", "at position 1", "expected a field name"),
        ("size > 1 size < 3", "at position 10", "unexpected 'size < 3'"),
    ],
)
def test_syntax_errors_name_the_position(text, where, what):
    with pytest.raises(InputError) as err:
        parse_filter(text)
    assert f"invalid filter {text!r} {where}: {what}" in str(err.value)


def test_empty_filters_and_hand_built_bad_nodes():
    for text in ("", "   "):
        with pytest.raises(InputError, match="empty filter"):
            parse_filter(text)
    with pytest.raises(InputError, match="unknown filter field"):
        to_sql(Compare("nope", "=", "x"))
    with pytest.raises(InputError, match="operator '<' does not apply"):
        to_sql(Compare("path", "<", "x"))
    with pytest.raises(TypeError):
        to_sql("size>1")  # type: ignore[arg-type]
