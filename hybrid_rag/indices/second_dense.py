"""A second vector set beside the first: the same chunks embedded by a second model.

An English folder gets MiniLM (``embedding.model: auto``), which cannot read a Russian question;
the multilingual model reads it but ranks English questions worse and costs 2.7x a chunk
(benchmarks/RESULTS.md#multilingual-model-not-default). So a data dir may hold both: the first
set answers every question its model reads, the second one the questions only its model reads
(``retrieval/second_set.py`` decides, per question).

* **Storage.** No schema change: the embedding cache is keyed by (model, text sha256), so the
  second model's window vectors sit in the same table under their own name. A version folder
  holds the second dense index in a folder of its own, ``dense-<model>/`` (``dense.faiss``,
  ``dense.json``, ``windows.json``: the files of the first one, checksummed the same way), and
  its manifest says so: ``second_dense: {model, dimension, chunks, folder, kind}``.
* **Builds** (``second_build.py``). ``hybrid-rag rebuild --second-model M`` adds it
  (``IndexBuilder.build(second_model=M)``, embedding what the cache lacks); every later build
  carries it over as the first index is carried (the previous version's, its gone chunks removed,
  the new ones embedded by both models).
  ``--second-model off`` drops it. Garbage collection and rollback see one version folder: pruning
  a version deletes its second set, a rollback loads it (a damaged one refuses the rollback, as a
  damaged ``dense.faiss`` does), and a version without it is one whose second set is not built.
* The second set holds exactly the chunks the first dense index holds (``ingest.embed_never``'s
  roles are out of both); on a partial version (BM25 first) only those with cached vectors.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_rag.errors import CorruptIndexError
from hybrid_rag.indices.ann import AnnVectorIndex
from hybrid_rag.indices.dense import FaissVectorIndex
from hybrid_rag.indices.multivector import WindowedVectorIndex
from hybrid_rag.settings import IndexSettings

SECOND_DENSE = "second_dense"  # the manifest key
OFF = "off"  # ``rebuild --second-model off``: the version is built without it
BATCH = 64  # texts embedded and cached at a time: a stopped background build loses at most these
Dense = FaissVectorIndex | AnnVectorIndex | WindowedVectorIndex


@dataclass(frozen=True)
class Named:
    """What ``live.new_dense`` and ``live.load_dense`` read of an embedder: its name and dimension."""

    model_name: str
    dimension: int


@dataclass(frozen=True)
class SecondSet:
    """A loaded version's second vector set."""

    model: str
    dense: Dense

    def __len__(self) -> int:
        return len(self.dense)


def folder_name(model: str) -> str:
    """``dense-<model>``, the model's name made a safe folder name.

    >>> folder_name("multilingual-e5-small"), folder_name("sentence-transformers/x#defs2")
    ('dense-multilingual-e5-small', 'dense-sentence-transformers_x_defs2')
    """
    return "dense-" + re.sub(r"[^A-Za-z0-9._-]+", "_", model)


def check_second_model(model: str | None, first_model: str, backend: str = "faiss") -> None:
    """InputError for a second model that is the first one (``rebuild --second-model``), or on a
    backend that holds no second set (Milvus)."""
    from hybrid_rag.errors import InputError

    if model is not None and model != OFF and backend == "milvus":
        raise InputError("a second vector set is built on the faiss and chroma backends, not on milvus")
    if model is not None and model.split("#", 1)[0] == first_model.split("#", 1)[0]:
        raise InputError(
            f"the second vector set's model {model!r} is the index's own model: name another one "
            "(multilingual-e5-small over an English-only model), or `off` to drop the second set"
        )


def second_entry(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The manifest's ``second_dense`` entry, or None for a version without a second set."""
    entry = manifest.get(SECOND_DENSE)
    return entry if isinstance(entry, dict) and entry.get("model") else None


def load_second(
    index: IndexSettings, directory: Path, manifest: dict[str, Any], load_dense: Callable[..., Dense]
) -> SecondSet | None:
    """The second set a version's manifest lists (None when it lists none), read by ``load_dense``
    (``live.load_dense``); CorruptIndexError when its files are missing, fail their checksum or
    hold another count than the manifest's."""
    entry = second_entry(manifest)
    if entry is None:
        return None
    named = Named(str(entry["model"]), int(entry["dimension"]))
    folder = directory / str(entry.get("folder") or folder_name(named.model_name))
    dense = load_dense(index, folder, named, str(entry.get("kind", "flat")))  # type: ignore[arg-type]
    if len(dense) != int(entry.get("chunks", -1)):
        raise CorruptIndexError(
            f"the second vector set at {folder} holds {len(dense)} chunks, its manifest {entry.get('chunks')}"
        )
    return SecondSet(named.model_name, dense)


@dataclass
class SecondBuild:
    """What one build did to the second set (for the report and the manifest)."""

    model: str
    dense: Dense
    embedded: int
    seconds: float
    kind: str

    def save(self, staging: Path) -> dict[str, Any]:
        """Write it into the staging folder; the manifest's ``second_dense`` entry."""
        folder = folder_name(self.model)
        self.dense.save(staging / folder)
        return {
            SECOND_DENSE: {
                "model": self.model,
                "dimension": int(self.dense.dimension),
                "chunks": len(self.dense),
                "folder": folder,
                "kind": self.kind,
                "embedded": self.embedded,
                "seconds": round(self.seconds, 3),
            }
        }


def check_second(second: SecondBuild, held: np.ndarray, *, partial: bool) -> list[str]:
    """A build's problems with its second set: chunks the first dense index lacks, or (complete
    versions) fewer chunks than it; a search with a held vector that does not find it."""
    problems = []
    ids = second.dense.ids()
    if len(np.setdiff1d(ids, held)):
        problems.append(f"the second vector set ({second.model}) holds chunks the first does not")
    if not partial and len(ids) != len(held):
        problems.append(
            f"the second vector set ({second.model}) holds {len(ids)} chunks, the first {len(held)}"
        )
    if len(ids):
        probe = int(ids[len(ids) // 2])
        dense = second.dense
        vector = (
            dense.windows(probe)[0]
            if isinstance(dense, WindowedVectorIndex)
            else dense.vectors(np.array([probe]))[0]
        )
        hits = dense.search(vector, 1)
        if not hits or hits[0].score < float(vector @ vector) - 1e-4:
            problems.append(
                f"the second vector set's search with chunk {probe}'s own vector does not find it"
            )
    return problems
