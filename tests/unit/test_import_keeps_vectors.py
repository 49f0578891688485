"""``hybrid-rag import``: both formats detected from content, vectors reused when their dimension
is the model's (nothing embedded), re-embedded otherwise, every other field kept as filterable
metadata, bad rows skipped with their line, a re-import rewrites only what changed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fake_settings import fake_settings

from hybrid_rag.cli import main
from hybrid_rag.engine import Engine
from hybrid_rag.errors import InputError
from hybrid_rag.models.embedders import FakeEmbedder

FAKE = FakeEmbedder(dimension=256)  # the `model: fake` embedder's vectors


class CountingFake(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__(dimension=256)
        self.passages = 0

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        self.passages += len(texts)
        return super().embed_passages(texts)

    def embed_passage_windows(self, texts):  # type: ignore[no-untyped-def]
        self.passages += len(texts)
        return super().embed_passage_windows(texts)


TEXTS = {
    "a.md": ["Clay soil holds water and drains slowly.", "Sandy soil drains fast."],
    "b.md": ["Compost feeds the soil life."],
}


def document_retriever_file(path, vectors=True, dim=256):
    chunks, i = [], 0
    for source, texts in TEXTS.items():
        for pos, text in enumerate(texts):
            vec = (FAKE.embed_passages([text])[0] * 2.0).tolist() if dim == 256 else [0.5] * dim
            chunks.append(
                {
                    "chunk_id": f"c{i}",
                    "text": text,
                    "source_file": source,
                    "position": pos,
                    "embedding": vec if vectors else None,
                }
            )
            i += 1
    path.write_text(
        json.dumps(
            {"chunks": chunks, "indexed_at": "2024-01-01T00:00:00", "source_files": list(TEXTS), "config": {}}
        )
    )
    return path


def engine_for(tmp_path, embedder=None) -> Engine:
    settings = fake_settings(tmp_path / "data")
    return Engine(settings, embedder=embedder or CountingFake())


def test_json_import_reuses_vectors_and_embeds_nothing(tmp_path) -> None:
    engine = engine_for(tmp_path)
    report = engine.import_file(document_retriever_file(tmp_path / "embeddings.json"))
    assert report.format == "embeddings.json" and report.rows == 3
    assert report.vectors_reused and report.reused_vectors == 3 and report.embedded == 0
    assert engine.embedder.passages == 0  # type: ignore[attr-defined]
    assert set(report.added) == {"a.md", "b.md"}
    hit = engine.query("clay soil water", top_k=1, mode="dense").chunks[0]
    assert hit.path == "a.md" and hit.text == TEXTS["a.md"][0]
    assert hit.chunk.meta["chunk_id"] == "c0" and hit.chunk.meta["imported_from"].endswith("embeddings.json")
    stored = engine.indices.get().dense.score(FAKE.embed_queries(["x"])[0], np.array([hit.id]))
    assert np.isfinite(stored).all()
    engine.close()


def test_a_dimension_mismatch_re_embeds_and_says_how_many(tmp_path) -> None:
    engine = engine_for(tmp_path)
    report = engine.import_file(document_retriever_file(tmp_path / "e.json", dim=8))
    assert not report.vectors_reused and report.dimension == 8 and report.model_dimension == 256
    assert report.embedded == 3 and engine.embedder.passages == 3  # type: ignore[attr-defined]
    engine.close()


def test_jsonl_rows_keep_every_field_as_filterable_metadata(tmp_path) -> None:
    rows = [
        {
            "doc_id": "d1",
            "text": "Pump maintenance schedule",
            "collection": "ops",
            "entity": "pump",
            "tags": ["maintenance"],
            "date": "2024-08-01",
        },
        {
            "doc_id": "d2",
            "text": "Pump installation guide",
            "collection": "docs",
            "entity": "pump",
            "tags": ["install"],
            "date": "2023-02-01",
        },
        {"doc_id": "d3", "text": "", "embedding": [1.0]},
        {"doc_id": "d4", "text": "broken vector", "embedding": ["x"]},
    ]
    for r in rows[:2]:
        r["embedding"] = FAKE.embed_passages([r["text"]])[0].tolist()
    path = tmp_path / "embeddings.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json\n")
    (tmp_path / "manifest.json").write_text("{}")
    engine = engine_for(tmp_path)
    report = engine.import_file(path, collection="imported")
    assert report.format == "embeddings.jsonl" and report.rows == 2
    assert report.skipped == (
        ("line 3", "no text"),
        ("line 4", "embedding is not a non-empty list of finite numbers"),
        ("line 5", "not JSON (Expecting value)"),
    )
    hits = engine.query("pump", filters="meta.tags = install and meta.date < 2024-01-01").chunks
    assert [h.path for h in hits] == ["d2"]
    assert hits[0].collection == "imported" and hits[0].chunk.meta["collection"] == "docs"
    engine.close()


def test_reimport_rewrites_only_changed_sources_and_deletes_gone_ones(tmp_path) -> None:
    path = document_retriever_file(tmp_path / "embeddings.json")
    engine = engine_for(tmp_path)
    engine.import_file(path)
    data = json.loads(path.read_text())
    data["chunks"] = [c for c in data["chunks"] if c["source_file"] == "a.md"]
    data["chunks"][1]["text"] = "Sandy soil drains very fast."
    data["chunks"][1]["embedding"] = FAKE.embed_passages([data["chunks"][1]["text"]])[0].tolist()
    path.write_text(json.dumps(data))
    report = engine.import_file(path)
    assert report.changed == ("a.md",) and report.deleted == ("b.md",) and not report.added
    assert {d.path for d in engine.store.documents()} == {"a.md"}
    again = engine.import_file(path)
    assert again.version is None and again.unchanged == ("a.md",)
    engine.close()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"something": 1}', "without a 'chunks' list"),
        ("plain words\n", "neither embeddings.json nor JSON lines"),
        ('{"chunks": []}', "nothing to import"),
    ],
)
def test_files_that_are_not_an_index_are_refused_clearly(tmp_path, content: str, message: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        engine_for(tmp_path).import_file(path)
    with pytest.raises(InputError, match="no such file"):
        engine_for(tmp_path).import_file(tmp_path / "missing.json")


def test_cli_import_says_vectors_were_reused(tmp_path, capsys) -> None:
    path = document_retriever_file(tmp_path / "embeddings.json")
    data = str(tmp_path / "data")
    env = ["--data-dir", data]
    import os

    os.environ["HYBRID_RAG_EMBEDDING__MODEL"] = "fake"
    try:
        assert main([*env, "import", str(path)]) == 0
    finally:
        del os.environ["HYBRID_RAG_EMBEDDING__MODEL"]
    out = capsys.readouterr().out
    assert "imported 3 rows" in out and "vectors reused: 3" in out and "nothing re-embedded" in out
