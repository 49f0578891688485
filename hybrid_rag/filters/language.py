"""Metadata filters: one small language for the CLI and Python (the parser; ``store/filter_sql.py``
compiles it to SQL).

CLI: ``--filter 'source_type=code' --filter 'collection in (docs, src)' --filter 'path~src/**'``;
several filters are ANDed. Grammar (keywords and field names are case-insensitive)::

    expr    := or
    or      := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | "(" expr ")" | compare
    compare := FIELD OP VALUE | FIELD ["not"] "in" "(" [VALUE ("," VALUE)*] ")"
    OP      := "=" | "==" | "!=" | ">" | ">=" | "<" | "<=" | "~"

A VALUE is quoted ('..' or "..", no escapes, so one value cannot hold both quote characters) or a
bare run of characters other than white space, parentheses, commas and quotes. Precedence:
``not`` > ``and`` > ``or``. Values compare exactly (``language=Python`` does not match ``python``),
except ``source_type``, which is validated and folded to lower case.

Fields and their operators:

* ``path``, ``collection``, ``language`` (text): ``=``, ``!=``, ``in``, ``not in``, ``~`` (glob);
* ``lang`` (a chunk's natural language, detected at ingest: ISO 639-1 ``en``, ``ru``, ``pt``, ``zh``,
  or ``und``; folded to lower case): ``=``, ``!=``, ``in``, ``not in``, ``~``;
* ``source_type`` (``code`` or ``text``, validated): ``=``, ``!=``, ``in``, ``not in``;
* ``size``, ``start_line``, ``end_line``, ``token_count`` (numbers): comparisons, ``in``, ``not in``;
* ``meta.<key>`` (custom metadata: an import's fields, Markdown front matter, ``ingest(...,
  metadata=...)``; ``meta.a.b`` reaches a nested key): ``=``, ``!=``, comparisons, ``in``, ``not
  in``, ``~``. A value that is a number compares with numbers, an ISO date with dates (as the date
  fields do), anything else with text; ``=`` and ``in`` also match an element of a list
  (``meta.tags = draft``). A document or chunk without the key matches nothing, not even ``!=``;
  an unknown key is not an error. A chunk's own key (an imported row's) wins over its document's.
* ``page``, ``slide``, ``cell``, ``sheet``, ``row``, ``chapter``: a converted document's place
  (PDF page, slide, notebook cell, spreadsheet sheet and row, EPUB chapter): numbers (``sheet`` a
  name); a filter matches every chunk that covers the place (``page >= 3`` finds a chunk over
  pages 2-4; ``places.py``). ``meta.page`` is the stored first page, ``page_end`` the last.
* ``ingested_at``, ``mtime`` (dates): comparisons. A value is an ISO date (``2026-01-01``) or
  datetime (``2026-01-01T12:00``, ``...+02:00``, ``...Z``), naive ones in UTC; ``mtime`` also takes
  unix seconds. A date alone means that whole UTC day: ``= 2026-01-01`` is any time that day,
  ``> 2026-01-01`` from 2026-01-02 00:00, ``<= 2026-01-01`` up to the end of that day.

Globs (``field ~ pattern``), matched against the stored absolute POSIX path, case-sensitively:
``*`` is any run of characters except ``/``, ``?`` one character except ``/``, ``**`` any run
including ``/`` (``a/**/b`` also matches ``a/b``); every other character is literal. As in
gitignore, a pattern without a ``/`` matches the file name (last segment) anywhere: ``*.py``.
A pattern with a ``/`` matches a tail of the path that starts at a segment boundary: ``src/**``
matches every file under any directory named ``src`` (``/home/me/proj/src/a/b.py``, not
``/home/me/mysrc/a.py``), ``src/*.py`` only files directly in it. A leading ``/`` anchors at the
root (``/home/me/**``); a trailing ``/`` means ``/**``; a run of two or more ``*`` is ``**``. A glob
is matched without backtracking (``globs.py``: time linear in the path, whatever the pattern); in
SQLite as the function ``hybrid_rag_glob``, in PostgreSQL as a regular expression
(``glob_to_regex``); ``store/filter_sql.py`` is the compiler.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta, timezone
from difflib import get_close_matches

from hybrid_rag.errors import InputError
from hybrid_rag.filters.ast import (  # re-exported: the tree is this module's public output
    DATE,
    META,
    META_PREFIX,
    NUMBER,
    SOURCE,
    TEXT,
    And,
    Compare,
    FilterExpr,
    InList,
    Not,
    Or,
)
from hybrid_rag.filters.globs import normalize_glob
from hybrid_rag.types import SourceType

FIELDS: Mapping[str, str] = {
    "path": TEXT,
    "collection": TEXT,
    "language": TEXT,
    "lang": TEXT,
    "source_type": SOURCE,
    "ingested_at": DATE,
    "mtime": DATE,
    "size": NUMBER,
    "start_line": NUMBER,
    "end_line": NUMBER,
    "token_count": NUMBER,
}
_ORDER = (">", ">=", "<", "<=")
_OPERATORS = {
    TEXT: ("=", "!=", "~", "in"),
    SOURCE: ("=", "!=", "in"),
    NUMBER: ("=", "!=", *_ORDER, "in"),
    DATE: ("=", "!=", *_ORDER),
    META: ("=", "!=", *_ORDER, "~", "in"),
}
MAX_DEPTH = 64  # "not" and parentheses nested: deeper is refused, not a RecursionError
INT64 = (-(2**63), 2**63 - 1)  # SQLite's INTEGER: the number fields' range
_OP_TOKENS = ("==", "!=", ">=", "<=", "=", ">", "<", "~")  # longest first
_IDENT = re.compile(r"[A-Za-z_]\w*")
_FIELD = re.compile(r"[A-Za-z_]\w*(?:\.[\w-]+)*")  # a field name, or meta.<key>[.<key>...]
_BARE = re.compile(r"[^\s(),'\"]+")


# -- validation of a comparison ------------------------------------------------------------


# a converted document's places (hybrid_rag/locators.py), kept in each chunk's metadata; a filter
# on one is rewritten by ``places.covers`` to match every chunk that covers the place
PLACES: Mapping[str, str] = {
    "page": NUMBER,
    "slide": NUMBER,
    "cell": NUMBER,
    "row": NUMBER,
    "chapter": NUMBER,
    "sheet": TEXT,
}
LOCATOR_FIELDS = frozenset({*PLACES, "page_end"})  # page_end: meta.page_end, a chunk's last page


def valid_fields() -> list[str]:
    """Every field name a filter takes, as the unknown-field message lists them."""
    return [*sorted(FIELDS), *sorted(LOCATOR_FIELDS), f"{META_PREFIX}<key>"]


def field_name(raw: str) -> str:
    """A field as written, folded: names are case-insensitive, meta keys keep their case; a
    locator field is its ``meta.`` key.

    >>> field_name("Source_Type"), field_name("META.Author"), field_name("Page")
    ('source_type', 'meta.Author', 'meta.page')
    """
    raw = raw.strip()
    if raw.lower() in LOCATOR_FIELDS:
        return META_PREFIX + raw.lower()
    return META_PREFIX + raw[len(META_PREFIX) :] if raw.lower().startswith(META_PREFIX) else raw.lower()


def _field_kind(name: str) -> str:
    if name.startswith(META_PREFIX) and len(name) > len(META_PREFIX):
        return META
    kind = FIELDS.get(name) or PLACES.get(name)
    if kind is None:
        near = get_close_matches(name, [*FIELDS, *LOCATOR_FIELDS], n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise InputError(f"unknown filter field {name!r}{hint}; valid fields: {', '.join(valid_fields())}")
    return kind


def check(name: str, op: str, values: Sequence[str]) -> str:
    """Raise InputError unless ``op`` applies to the field and every value parses; return its kind."""
    kind = _field_kind(name)
    if op not in _OPERATORS[kind]:
        valid = ", ".join(o if o != "in" else "in, not in" for o in _OPERATORS[kind])
        raise InputError(f"operator {op!r} does not apply to {name} (a {kind} field); use {valid}")
    for value in values:
        convert(name, kind, op, value)
    return kind


def _number(name: str, value: str) -> float | int:
    try:
        number = float(value)
    except ValueError:
        raise InputError(f"{name} needs a number, got {value!r}") from None
    if not math.isfinite(number):
        raise InputError(f"{name} needs a finite number, got {value!r}")
    if not number.is_integer():
        return number
    whole = int(value) if re.fullmatch(r"\s*[-+]?\d+\s*", value) else int(number)
    if not INT64[0] <= whole <= INT64[1]:
        if name.startswith(META_PREFIX) or name == "meta":
            return number  # metadata numbers compare as JSON numbers (REAL): no range to keep
        raise InputError(
            f"{name} = {value.strip()} is out of range: {name} is an integer from {INT64[0]} to {INT64[1]}"
        )
    return whole


def parse_when(value: str) -> tuple[datetime, datetime | None]:
    """(start, end) in naive UTC; ``end`` is the next midnight for a date alone, else None.

    >>> parse_when("2026-01-01")
    (datetime.datetime(2026, 1, 1, 0, 0), datetime.datetime(2026, 1, 2, 0, 0))
    """
    text = value.strip()
    try:
        day = date.fromisoformat(text)
    except ValueError:
        pass
    else:
        start = datetime(day.year, day.month, day.day)
        # the last day a date names (9999-12-31) ends at the last instant a datetime holds
        return start, start + timedelta(days=1) if day < date.max else datetime.max
    try:
        when = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise InputError(
            f"not a date: {value!r}; use an ISO date or datetime, e.g. 2026-01-01 or 2026-01-01T12:00"
        ) from None
    if when.tzinfo is not None:
        try:
            when = when.astimezone(timezone.utc).replace(tzinfo=None)
        except OverflowError:
            raise InputError(f"date {value!r} is out of range in UTC (years 1 to 9999)") from None
    return when, None


def convert(name: str, kind: str, op: str, value: str) -> object:
    """A value as the column compares it (a date field gives parse_when's pair, in column units)."""
    if kind == SOURCE:
        valid = ", ".join(t.value for t in SourceType)
        if value.strip().lower() not in {t.value for t in SourceType}:
            raise InputError(f"source_type must be one of {valid}, got {value!r}")
        return value.strip().lower()
    if kind == NUMBER:
        return _number(name, value)
    if kind == DATE:
        if name == "mtime" and re.fullmatch(r"\s*[-+]?\d+(\.\d*)?\s*", value):
            return float(value), None
        start, end = parse_when(value)
        if name == "mtime":
            return _unix(start), None if end is None else _unix(end)
        return start, end
    if kind == META:
        return meta_value(value, op)
    if op == "~":
        return normalize_glob(value)
    if name == "lang":
        return _language_code(value)
    return value


def _language_code(value: str) -> str:
    """A ``lang`` value folded as chunks store it: ``RU`` -> ``ru``; InputError for a non-code."""
    from hybrid_rag.lang.query import normalize_code

    return normalize_code(value)


def meta_value(value: str, op: str) -> tuple[str, object]:
    """How a ``meta.*`` value compares: ``("glob", normalised glob)`` for ``~``, ``("number", n)``,
    ``("date", (start, end))`` for an ISO date or datetime (as ``parse_when``), else ``("text", s)``."""
    if op == "~":
        return "glob", normalize_glob(value)
    try:
        return "number", _number("meta", value)
    except InputError:
        pass
    if re.match(r"\s*\d{4}-\d{2}-\d{2}", value):
        try:
            return "date", parse_when(value)
        except InputError:
            pass
    return "text", value


def _unix(when: datetime) -> float:
    return when.replace(tzinfo=timezone.utc).timestamp()


# -- parsing ---------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0  # "not" and "(" nested around the current position

    def fail(self, message: str, pos: int | None = None) -> InputError:
        at = self.pos if pos is None else pos
        where = "at the end" if at >= len(self.text) else f"at position {at + 1}"
        shown = self.text if len(self.text) <= 80 else self.text[:77] + "..."
        return InputError(f"invalid filter {shown!r} {where}: {message}")

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels of 'not' and parentheses")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def keyword(self, word: str) -> bool:
        self.skip()
        m = _IDENT.match(self.text, self.pos)
        if m and m.group().lower() == word:
            self.pos = m.end()
            return True
        return False

    def char(self, c: str) -> bool:
        self.skip()
        if self.text.startswith(c, self.pos):
            self.pos += 1
            return True
        return False

    def parse(self) -> FilterExpr:
        expr = self.or_()
        self.skip()
        if self.pos < len(self.text):
            raise self.fail(f"unexpected {self.text[self.pos :][:20]!r}")
        return expr

    def or_(self) -> FilterExpr:
        items = [self.and_()]
        while self.keyword("or"):
            items.append(self.and_())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def and_(self) -> FilterExpr:
        items = [self.not_()]
        while self.keyword("and"):
            items.append(self.not_())
        return items[0] if len(items) == 1 else And(tuple(items))

    def not_(self) -> FilterExpr:
        if self.keyword("not"):
            self.nest()
            expr: FilterExpr = Not(self.not_())
            self.depth -= 1
            return expr
        if self.char("("):
            self.nest()
            expr = self.or_()
            if not self.char(")"):
                raise self.fail("expected ')'")
            self.depth -= 1
            return expr
        return self.compare()

    def compare(self) -> FilterExpr:
        self.skip()
        m = _FIELD.match(self.text, self.pos)
        if not m:
            raise self.fail("expected a field name")
        place = m.group().lower() if m.group().lower() in PLACES else ""
        name = place or field_name(m.group())
        self.check(name, None, [], self.pos)
        self.pos = m.end()
        self.skip()
        op_at = self.pos
        negated = self.keyword("not")
        if negated or self.keyword("in"):
            if negated and not self.keyword("in"):
                raise self.fail("expected 'in' after 'not'")
            self.check(name, "in", [], op_at)
            values = self.value_list(name)
            return _covers(place, "in", values, negated) if place else InList(name, values, negated)
        op = next((o for o in _OP_TOKENS if self.text.startswith(o, self.pos)), None)
        if op is None:
            raise self.fail(f"expected an operator ({', '.join(_OP_TOKENS)}, in, not in) after {name!r}")
        self.pos += len(op)
        op = "=" if op == "==" else op
        self.check(name, op, [], op_at)
        value = self.value(name, op)
        return _covers(place, op, [value]) if place else Compare(name, op, value)

    def check(self, name: str, op: str | None, values: Sequence[str], at: int) -> None:
        """_check (or, with no op, only the field name), failing at position ``at``."""
        try:
            _field_kind(name) if op is None else check(name, op, values)
        except InputError as exc:
            raise self.fail(str(exc), at) from None

    def value(self, name: str, op: str) -> str:
        self.skip()
        start = self.pos
        if self.pos < len(self.text) and self.text[self.pos] in "'\"":
            end = self.text.find(self.text[self.pos], self.pos + 1)
            if end < 0:
                raise self.fail("unterminated quote", start)
            self.pos = end + 1
            value = self.text[start + 1 : end]
        else:
            m = _BARE.match(self.text, self.pos)
            if not m:
                raise self.fail("expected a value")
            self.pos = m.end()
            value = m.group()
        self.check(name, op, [value], start)
        return value

    def value_list(self, name: str) -> tuple[str, ...]:
        if not self.char("("):
            raise self.fail("expected '(' after 'in'")
        if self.char(")"):
            return ()
        values = [self.value(name, "in")]
        while self.char(","):
            values.append(self.value(name, "in"))
        if not self.char(")"):
            raise self.fail("expected ',' or ')' in the list")
        return tuple(values)


def _covers(place: str, op: str, values: Sequence[str], negated: bool = False) -> FilterExpr:
    from hybrid_rag.filters.places import covers  # places builds on this module's AST

    return covers(place, PLACES[place], op, values, negated=negated)


def parse_filter(text: str) -> FilterExpr:
    """Parse one filter string; a syntax error names the position, an unknown field lists the valid ones.

    >>> str(parse_filter("source_type=code and (path ~ 'src/**' or size>1000)"))
    'source_type = code and (path ~ src/** or size > 1000)'
    """
    if not text or not text.strip():
        raise InputError("empty filter: write e.g. 'source_type=code'")
    return _Parser(text).parse()


def parse_filters(texts: Sequence[str] | str) -> FilterExpr | None:
    """Several filter strings ANDed (the CLI's repeated ``--filter``); none gives None."""
    if isinstance(texts, str):
        texts = [texts]
    exprs = [parse_filter(t) for t in texts]
    if not exprs:
        return None
    return exprs[0] if len(exprs) == 1 else And(tuple(exprs))


def filters_from_mapping(mapping: Mapping[str, object]) -> FilterExpr | None:
    """``{"source_type": "code", "collection": ["a", "b"]}``: a scalar means ``=``, a list ``in``.

    Entries are ANDed; an empty mapping gives None; an empty list matches nothing.
    """
    exprs: list[FilterExpr] = []
    for name, raw in mapping.items():
        place = str(name).strip().lower() if str(name).strip().lower() in PLACES else ""
        key = place or field_name(str(name))
        if isinstance(raw, (list, tuple, set, frozenset)):
            items = sorted(raw, key=str) if isinstance(raw, (set, frozenset)) else list(raw)
            values = tuple(_scalar(key, v) for v in items)
            check(key, "in", values)
            exprs.append(_covers(place, "in", values) if place else InList(key, values))
        else:
            value = _scalar(key, raw)
            check(key, "=", [value])
            exprs.append(_covers(place, "=", [value]) if place else Compare(key, "=", value))
    if not exprs:
        return None
    return exprs[0] if len(exprs) == 1 else And(tuple(exprs))


def _scalar(name: str, value: object) -> str:
    if isinstance(value, SourceType):
        return value.value
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise InputError(f"filter {name}: unsupported value {value!r} (use a string, number, date or a list)")


def as_filter(spec: object) -> FilterExpr | None:
    """Any accepted form: None, a FilterExpr, a string, a list of strings (ANDed) or a mapping."""
    if spec is None or isinstance(spec, (Compare, InList, And, Or, Not)):
        return spec  # type: ignore[return-value]
    if isinstance(spec, str):
        return parse_filter(spec)
    if isinstance(spec, Mapping):
        return filters_from_mapping(spec)
    if isinstance(spec, Sequence) and all(isinstance(s, str) for s in spec):
        return parse_filters(spec)
    raise InputError(f"unsupported filter {spec!r}: use a string, a list of strings or a mapping")
