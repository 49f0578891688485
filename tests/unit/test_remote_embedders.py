"""Remote embedders: OpenAI-compatible /v1/embeddings and Ollama /api/embed, batched, retried,
checked; a query with the server down answers from BM25 and says so; an ingest stops clearly."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from fake_http import closed_port, serve
from fake_settings import fake_settings

from hybrid_rag.engine import Engine
from hybrid_rag.errors import IndexMismatchError, RemoteServiceError
from hybrid_rag.models.embedders import FakeEmbedder
from hybrid_rag.models.factory import make_embedder
from hybrid_rag.models.remote import RemoteEmbedder, embeddings_url, parse_embeddings
from hybrid_rag.settings import EmbeddingSettings, Settings

FAKE = FakeEmbedder(dimension=32)


@contextmanager
def embedding_server(provider: str, *, fail_first: int = 0, answer_only: int | None = None) -> Iterator[dict]:
    """A server that embeds with the fake embedder (after ``fail_first`` 503s; with ``answer_only``,
    503 after that many answers); records each answered request's inputs."""
    state: dict = {"inputs": [], "failures": fail_first}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            gone = answer_only is not None and len(state["inputs"]) >= answer_only
            if state["failures"] > 0 or gone:
                state["failures"] -= 1
                self.send_response(503)
                self.end_headers()
                return
            texts = body["input"]
            state["inputs"].append(texts)
            vectors = (FAKE.embed_passages(texts) * 3.0).tolist()  # not unit length: the client normalises
            if provider == "openai":
                reply = {
                    "data": [{"index": i, "embedding": v} for i, v in reversed(list(enumerate(vectors)))]
                }
            else:
                reply = {"embeddings": vectors}
            raw = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}" + ("/v1" if provider == "openai" else "")
    state["base_url"] = base
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def remote(provider: str, base_url: str, **extra: object) -> RemoteEmbedder:
    settings = EmbeddingSettings(provider=provider, model="nomic-embed-text", base_url=base_url, **extra)
    embedder = make_embedder(settings)
    assert isinstance(embedder, RemoteEmbedder)
    embedder.backoff = 0.0
    return embedder


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_remote_vectors_are_the_servers_in_input_order_normalised(provider: str) -> None:
    texts = [f"text number {i} about soil" for i in range(7)]
    with embedding_server(provider) as server:
        embedder = remote(provider, server["base_url"], batch_size=3)
        vectors = embedder.embed_passages(texts)
        assert embedder.dimension == 32 and embedder.model_name == f"{provider}:nomic-embed-text"
    np.testing.assert_allclose(vectors, FAKE.embed_passages(texts), atol=1e-6)
    assert [len(batch) for batch in server["inputs"]] == [3, 3, 1]


def test_remote_requests_are_retried_after_a_503() -> None:
    with embedding_server("openai", fail_first=2) as server:
        vectors = remote("openai", server["base_url"], retries=2).embed_queries(["clay"])
    assert vectors.shape == (1, 32)


def test_unreachable_server_is_one_error_naming_the_url() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(RemoteServiceError, match=f"embedder at {url}/api/embed unreachable"):
        remote("ollama", url, retries=0).embed_queries(["clay"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "not JSON"),
        (b'{"data": [{"index": 0, "embedding": [1.0]}]}', "1 vectors for 2 texts"),
        (b'{"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": []}]}', "empty"),
        (b'{"embeddings": [[1, 2]]}', "without a 'data' list"),
    ],
)
def test_malformed_answers_are_refused(body: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_embeddings("openai", body, 2)


def test_a_server_changing_dimension_is_refused() -> None:
    with serve("/v1") as server:
        server.replies = [
            (200, b'{"data": [{"index": 0, "embedding": [1, 0, 0]}]}'),
            (200, b'{"data": [{"index": 0, "embedding": [1, 0]}]}'),
        ]
        embedder = remote("openai", server.url, retries=0)
        embedder.embed_queries(["a"])
        with pytest.raises(RemoteServiceError, match="dimension 2, earlier 3"):
            embedder.embed_queries(["b"])


def test_endpoints_and_missing_base_url() -> None:
    assert embeddings_url("openai", "http://h/v1/") == "http://h/v1/embeddings"
    with pytest.raises(Exception, match="needs embedding.base_url"):
        make_embedder(EmbeddingSettings(provider="ollama", model="m"))


def _engine(tmp_path, base_url: str, **overrides: object) -> Engine:
    settings = Settings().with_overrides(
        {
            "paths.data_dir": str(tmp_path / "data"),
            "embedding.provider": "openai",
            "embedding.model": "served-model",
            "embedding.base_url": base_url,
            "embedding.retries": 0,
            **overrides,
        }
    )
    engine = Engine(settings)
    engine.embedder.backoff = 0.0  # type: ignore[attr-defined]
    return engine


def test_query_with_the_embedder_down_answers_from_bm25_with_a_note(tmp_path, corpus) -> None:
    with embedding_server("openai") as server:
        engine = _engine(tmp_path, server["base_url"])
        engine.ingest([corpus])
        engine.close()
    down = _engine(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    result = down.query("compost drainage clay soil")
    assert result.chunks, "BM25 still answers"
    assert "dense" not in result.chunks[0].breakdown
    assert any(n.startswith("dense skipped: embedder at") and "BM25 only" in n for n in result.trace.notes)
    with pytest.raises(RemoteServiceError):
        down.query("compost", features={"bm25": False})  # nothing left to answer: an error, not []
    down.close()


def test_an_ingest_cut_off_by_the_server_keeps_what_was_embedded(tmp_path, corpus) -> None:
    def engine_with(base_url: str) -> Engine:  # one window a request; 4 chunks an ingest batch
        return _engine(tmp_path, base_url, **{"embedding.batch_size": 1, "ingest.batch_chunks": 4})

    for i in range(12):
        (corpus / "docs" / f"extra{i}.md").write_text(f"# extra {i}\n\nsome words about topic {i}\n")
    with embedding_server("openai", answer_only=10) as server:
        engine = engine_with(server["base_url"])
        with pytest.raises(RemoteServiceError):
            engine.ingest([corpus])
        kept = engine.store.counts()["cached_embeddings"]
        engine.close()
    assert kept >= 4, "the batches embedded before the server went were committed"
    with embedding_server("openai") as server:
        engine = engine_with(server["base_url"])
        engine.ingest([corpus])
        total = engine.store.counts()["cached_embeddings"]
        engine.close()
    embedded_again = sum(len(batch) for batch in server["inputs"])
    assert embedded_again <= total - kept + 1  # the dimension probe aside, nothing embedded twice


def test_ingest_with_the_embedder_down_stops_with_a_clear_error(tmp_path, corpus) -> None:
    engine = _engine(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    with pytest.raises(RemoteServiceError, match="unreachable"):
        engine.ingest([corpus])
    engine.close()


def test_an_index_built_by_another_model_is_refused_with_the_rebuild_command(tmp_path, corpus) -> None:
    with embedding_server("openai") as server:
        engine = _engine(tmp_path, server["base_url"])
        engine.ingest([corpus])
        engine.close()
    local = Engine(fake_settings(tmp_path / "data"))
    with pytest.raises(IndexMismatchError, match="rebuild"):
        local.query("soil")
    local.close()
