"""The ids an answer cites: `[n]` and `[n, m]` in prose, not indexing inside code."""

from __future__ import annotations

import pytest

from hybrid_rag.context import cited_ids


@pytest.mark.parametrize(
    ("answer", "ids"),
    [
        ("Compost helps [1].", [1]),
        ("Both [2][3], and again [1, 3].", [1, 2, 3]),
        ("No citations here.", []),
        ("Index it as `ranks[0]` or x[1]; see [4].", [4]),
        ("```python\nvalues[2]\n```\nSee [ 5 ].", [5]),
    ],
)
def test_cited_ids(answer, ids):
    assert cited_ids(answer) == ids
