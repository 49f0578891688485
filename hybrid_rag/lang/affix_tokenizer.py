"""spaCy's rule-based tokenizer, in Python, over the rules of ``spacy.blank("en")`` saved once.

BM25 splits text into raw tokens the way spaCy's English tokenizer does. Importing spaCy and
building its blank pipeline takes about 0.5 s, which a CLI query would pay to split one short
question. This module runs the same algorithm (``spacy/tokenizer.pyx``: whitespace spans, special
cases, prefixes, suffixes, infixes, the URL match, then the phrase-matched special cases) over the
same rules: the prefix/suffix/infix/URL patterns and the special cases, which
:func:`save_rules` writes from the real tokenizer (the first time spaCy is loaded anywhere, e.g.
at index build) into the model cache, keyed by the installed spaCy version. A query then reads
that file instead of importing spaCy; without it (or for another spaCy version) the caller uses
spaCy itself. ``tests/unit/test_affix_tokenizer_equals_spacy.py`` pins the equivalence.

spaCy is MIT-licensed (c) ExplosionAI GmbH; the algorithm below follows its ``Tokenizer``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RULES_FORMAT = 1  # bump when the saved file's layout changes


def spacy_version() -> str | None:
    """The installed spaCy's version, read from its ``about.py`` without importing it; None when
    spaCy is not installed."""
    spec = importlib.util.find_spec("spacy")
    if spec is None or spec.origin is None:
        return None
    try:
        text = (Path(spec.origin).parent / "about.py").read_text(encoding="utf-8")
    except OSError:
        return None
    found = re.search(r"""__version__\s*=\s*["']([^"']+)["']""", text)
    return found.group(1) if found else None


def rules_path(version: str) -> Path:
    from hybrid_rag.paths import model_cache_dir

    return model_cache_dir() / f"spacy-{version}-en-tokenizer-v{RULES_FORMAT}.json"


def save_rules(tokenizer: Any, version: str) -> None:
    """Write the rules of spaCy's English ``tokenizer`` for :func:`load`; atomic, and a cache
    that cannot be written (read-only home) only means queries import spaCy."""

    from spacy.attrs import ORTH  # spaCy is loaded: the caller has its tokenizer

    def pattern(fn: Callable[..., Any] | None) -> list[Any] | None:
        return None if fn is None else [fn.__self__.pattern, fn.__self__.flags]

    def orth(piece: dict[Any, str]) -> str:
        return piece[ORTH] if ORTH in piece else piece["ORTH"]

    rules = {
        "format": RULES_FORMAT,
        "spacy": version,
        "prefix": pattern(tokenizer.prefix_search),
        "suffix": pattern(tokenizer.suffix_search),
        "infix": pattern(tokenizer.infix_finditer),
        "token_match": pattern(tokenizer.token_match),
        "url_match": pattern(tokenizer.url_match),
        "faster_heuristics": bool(tokenizer.faster_heuristics),
        "specials": {text: [orth(piece) for piece in pieces] for text, pieces in tokenizer.rules.items()},
    }
    target = rules_path(version)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".tokenizer-", suffix=".json.tmp", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(rules, out)
        os.replace(temp, target)
    except OSError:
        return


def load(version: str | None = None) -> AffixTokenizer | None:
    """The saved rules of the installed spaCy as a tokenizer; None when there are none (yet)."""
    version = version or spacy_version()
    if version is None:
        return None
    try:
        rules = json.loads(rules_path(version).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(rules, dict) or rules.get("format") != RULES_FORMAT or rules.get("spacy") != version:
        return None
    return AffixTokenizer.from_rules(rules)


def _compiled(saved: list[Any] | None) -> re.Pattern[str] | None:
    return None if saved is None else re.compile(saved[0], saved[1])


@dataclass(frozen=True)
class Token:
    text: str
    space: bool  # followed by one space, which is not a token of its own


@dataclass
class AffixTokenizer:
    """spaCy's ``Tokenizer.__call__`` over saved rules: :meth:`tokens` equals ``[t.text for t in
    tokenizer(text)]``."""

    prefix: re.Pattern[str] | None
    suffix: re.Pattern[str] | None
    infix: re.Pattern[str] | None
    token_match: re.Pattern[str] | None
    url_match: re.Pattern[str] | None
    specials: dict[str, list[str]]
    faster_heuristics: bool = True
    _matcher: dict[str, list[tuple[str, ...]]] | None = field(default=None, repr=False)
    _cache: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_rules(cls, rules: dict[str, Any]) -> AffixTokenizer:
        return cls(
            prefix=_compiled(rules["prefix"]),
            suffix=_compiled(rules["suffix"]),
            infix=_compiled(rules["infix"]),
            token_match=_compiled(rules["token_match"]),
            url_match=_compiled(rules["url_match"]),
            specials={str(k): [str(p) for p in v] for k, v in rules["specials"].items()},
            faster_heuristics=bool(rules.get("faster_heuristics", True)),
        )

    def tokens(self, text: str) -> list[str]:
        """The token texts of ``text``, as spaCy's tokenizer cuts it."""
        return [token.text for token in self._call(text)]

    # -- spaCy's Tokenizer.__call__: _tokenize_affixes, then _apply_special_cases --------------

    def _call(self, text: str) -> list[Token]:
        tokens = self._tokenize_affixes(text, with_specials=True)
        return self._apply_special_cases(tokens)

    def _tokenize_affixes(self, text: str, *, with_specials: bool) -> list[Token]:
        out: list[Token] = []
        if not text:
            return out
        start = 0
        in_ws = text[0].isspace()
        for i, char in enumerate(text):
            if char.isspace() != in_ws:
                if start < i:
                    out.extend(Token(t, False) for t in self._span(text[start:i], with_specials))
                if char == " ":
                    if out:
                        out[-1] = Token(out[-1].text, True)
                    start = i + 1
                else:
                    start = i
                in_ws = not in_ws
        if start < len(text):
            out.extend(Token(t, False) for t in self._span(text[start:], with_specials))
            if out:
                out[-1] = Token(out[-1].text, text[-1] == " " and not in_ws)
        return out

    def _span(self, span: str, with_specials: bool) -> list[str]:
        if with_specials and span in self.specials:
            return self.specials[span]
        cache = self._cache if with_specials else {}
        cached = cache.get(span)
        if cached is None:
            cached = self._tokenize(span, with_specials)
            if len(cache) < 100_000:
                cache[span] = cached
        return cached

    def _find_prefix(self, text: str) -> int:
        found = self.prefix.search(text) if self.prefix is not None else None
        return found.end() - found.start() if found is not None else 0

    def _find_suffix(self, text: str) -> int:
        found = self.suffix.search(text) if self.suffix is not None else None
        return found.end() - found.start() if found is not None else 0

    def _find_infix(self, text: str) -> list[re.Match[str]]:
        return list(self.infix.finditer(text)) if self.infix is not None else []

    def _tokenize(self, text: str, with_specials: bool) -> list[str]:
        """``_split_affixes`` then ``_attach_tokens``."""
        special = self.specials if with_specials else {}
        prefixes: list[str] = []
        suffixes: list[str] = []
        last_size = -1
        while text and len(text) != last_size:
            if self.token_match is not None and self.token_match.match(text):
                break
            if text in special:
                break
            last_size = len(text)
            pre_len = self._find_prefix(text)
            if pre_len:
                prefix, minus_pre = text[:pre_len], text[pre_len:]
                if minus_pre and minus_pre in special:
                    text = minus_pre
                    prefixes.append(prefix)
                    break
            suf_len = self._find_suffix(text[pre_len:])
            if suf_len:
                suffix, minus_suf = text[-suf_len:], text[:-suf_len]
                if minus_suf and minus_suf in special:
                    text = minus_suf
                    suffixes.append(suffix)
                    break
            if pre_len and suf_len and pre_len + suf_len <= len(text):
                text = text[pre_len:-suf_len]
                prefixes.append(prefix)
                suffixes.append(suffix)
            elif pre_len:
                text = minus_pre
                prefixes.append(prefix)
            elif suf_len:
                text = minus_suf
                suffixes.append(suffix)
        out = list(prefixes)
        if text:
            if text in special:
                out.extend(special[text])
            elif (self.token_match is not None and self.token_match.match(text)) or (
                self.url_match is not None and self.url_match.match(text)
            ):
                out.append(text)
            else:
                out.extend(self._infixes(text))
        out.extend(reversed(suffixes))
        return out

    def _infixes(self, text: str) -> list[str]:
        matches = self._find_infix(text)
        if not matches:
            return [text]
        out: list[str] = []
        start = 0
        for match in matches:
            infix_start, infix_end = match.start(), match.end()
            if infix_start == 0:
                continue
            if infix_start != start:
                out.append(text[start:infix_start])
            if infix_start != infix_end:
                out.append(text[infix_start:infix_end])
            start = infix_end
        if text[start:]:
            out.append(text[start:])
        return out

    # -- special cases that span affix splits (spaCy's PhraseMatcher step) ----------------------

    def _special_patterns(self) -> dict[str, list[tuple[str, ...]]]:
        """Each special case whose text an affix rule would split, as the token sequence it is
        split into, keyed by that sequence's first token."""
        if self._matcher is None:
            matcher: dict[str, list[tuple[str, ...]]] = {}
            for text in sorted(self.specials):
                split = (
                    not self.faster_heuristics
                    or self._find_prefix(text)
                    or self._find_infix(text)
                    or self._find_suffix(text)
                    or " " in text
                )
                if split:
                    pieces = tuple(t.text for t in self._tokenize_affixes(text, with_specials=False))
                    if pieces:
                        matcher.setdefault(pieces[0], []).append(pieces)
            self._matcher = matcher
        return self._matcher

    def _apply_special_cases(self, tokens: list[Token]) -> list[Token]:
        patterns = self._special_patterns()
        texts = [t.text for t in tokens]
        matches: list[tuple[int, int]] = []
        for i, first in enumerate(texts):
            for pieces in patterns.get(first, ()):
                if tuple(texts[i : i + len(pieces)]) == pieces:
                    matches.append((i, i + len(pieces)))
        if not matches:
            return tokens
        # spaCy's _filter_special_spans: longest (then earliest) first; a span whose first or last
        # token lies in any span looked at before it is dropped
        kept: list[tuple[int, int]] = []
        seen: set[int] = set()
        for start, end in sorted(set(matches), key=lambda m: (m[0] - m[1], m[0])):
            if start not in seen and end - 1 not in seen:
                kept.append((start, end))
            seen.update(range(start, end))
        by_start = dict(sorted(kept))
        out: list[Token] = []
        i = 0
        while i < len(tokens):
            end = by_start.get(i)
            if end is None:
                out.append(tokens[i])
                i += 1
                continue
            span_text = (
                "".join(t.text + (" " if t.space else "") for t in tokens[i : end - 1]) + tokens[end - 1].text
            )
            pieces = self.specials.get(span_text)
            if pieces is None:
                out.extend(tokens[i:end])
            else:
                out.extend(Token(p, False) for p in pieces[:-1])
                out.append(Token(pieces[-1], tokens[end - 1].space))
            i = end
        return out
