"""Clustering is seeded: the seed really reaches KMeans, and the clusters and the context are the
same in every process (hash randomisation included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from hybrid_rag.context import evidence as ev

ROOT = Path(__file__).resolve().parents[2]


def test_the_seed_is_really_passed_to_kmeans():
    vectors = np.random.default_rng(5).standard_normal((40, 16))
    labelings = {tuple(ev.cluster_labels(vectors, 4, seed=s).tolist()) for s in range(8)}
    assert len(labelings) > 1, "eight seeds, one labelling of noise: the seed is ignored"


_SUBPROCESS = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from hybrid_rag.context import ContextBuilder, evidence as ev
    from hybrid_rag.models.embedders import FakeEmbedder
    from hybrid_rag.settings import Settings
    from hybrid_rag.types import Chunk, QueryResult, ScoredChunk, SourceType, Trace
    words = "reactor coolant pressure valve violin sonata melody tempo soil compost clay worms".split()
    rng = np.random.default_rng(1)
    chunks = []
    for i in range(24):
        text = " ".join(rng.choice(words, 6))
        chunks.append(ScoredChunk(Chunk(i + 1, i + 1, f"f{i}.txt", 0, 1, 1, text, 6, f"{i:064x}",
                                        SourceType.TEXT, "text", "c"), 1.0 - i / 100, {}))
    result = QueryResult("reactor coolant and violin tempo", "hybrid", tuple(chunks), Trace())
    cfg = Settings().with_overrides({"context.seed": 13})
    ctx = ContextBuilder(cfg.context, FakeEmbedder(dimension=24).embed_passages).build(result.query, result)
    labels = ev.cluster_labels(np.random.default_rng(2).standard_normal((30, 8)), 4, seed=13)
    print(json.dumps({"context": ctx.to_dict(), "labels": labels.tolist()}, sort_keys=True))
    """
)


def test_clustering_and_the_context_are_the_same_in_every_process():
    outputs = []
    for hash_seed in ("1", "2", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", _SUBPROCESS],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout))
    assert len(outputs[0]["context"]["clusters"]) > 1
    assert outputs[0] == outputs[1] == outputs[2]
