"""OpenAICompatibleGenerator against a tiny local HTTP server: success, auth, retries, failures."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fake_http import FakeServer, closed_port, serve

from hybrid_rag.errors import ConfigError, RemoteServiceError
from hybrid_rag.models.generation import (
    OpenAICompatibleGenerator,
    backoff_seconds,
    chat_payload,
    completion_text,
    completions_url,
    make_generator,
)
from hybrid_rag.protocols import Generator
from hybrid_rag.settings import GeneratorSettings, load_settings


def completion(text: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}).encode()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve("/v1") as state:
        yield state


def make(url: str, **overrides: Any) -> OpenAICompatibleGenerator:
    params: dict[str, Any] = {"base_url": url, "model": "test-model", "timeout_seconds": 2.0, "retries": 1}
    params.update(overrides)
    return OpenAICompatibleGenerator(GeneratorSettings(**params), backoff=0.01)


# -- pure helpers ----------------------------------------------------------------------------


def test_completions_url_joins_with_one_slash() -> None:
    assert completions_url("http://h:1/v1") == "http://h:1/v1/chat/completions"
    assert completions_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"


def test_chat_payload_has_the_openai_schema() -> None:
    assert chat_payload("m", "hi", None, 7) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 7,
        "temperature": 0,
    }
    with_system = chat_payload("m", "hi", "be brief", 7)["messages"]
    assert with_system[0] == {"role": "system", "content": "be brief"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "malformed JSON"),
        (b"[1, 2]", "not an object"),
        (b'{"choices": []}', "no choices"),
        (b'{"error": {"message": "model not loaded"}}', "model not loaded"),
        (b'{"choices": [{"message": {"content": null}}]}', "without text"),
    ],
)
def test_completion_text_rejects_bad_answers(body: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        completion_text(body)


def test_completion_text_accepts_chat_and_legacy_text_choices() -> None:
    assert completion_text(completion("hello")) == "hello"
    assert completion_text(b'{"choices": [{"text": "legacy"}]}') == "legacy"


def test_backoff_doubles_and_is_capped() -> None:
    assert [backoff_seconds(a, 0.25) for a in (1, 2, 3)] == [0.25, 0.5, 1.0]
    assert backoff_seconds(20, 0.25) == 2.0


# -- construction ----------------------------------------------------------------------------


def test_make_generator_is_none_without_base_url() -> None:
    assert make_generator(GeneratorSettings()) is None
    generator = make_generator(GeneratorSettings(base_url="http://127.0.0.1:9/v1"))
    assert isinstance(generator, OpenAICompatibleGenerator)
    assert isinstance(generator, Generator)


@pytest.mark.parametrize("key", ["generator.base_url", "rerank.api_url"])
@pytest.mark.parametrize(
    "url", ["localhost:8080/v1", "ftp://host/v1", "http://", "http://[::1/v1", "http://h:x/v1"]
)
def test_a_url_that_is_not_http_stops_at_load_naming_the_key(key: str, url: str) -> None:
    section, name = key.split(".")
    with pytest.raises(ConfigError, match=rf"{section}\.{name}: .*{re.escape(url)}"):
        load_settings(environ={f"HYBRID_RAG_{section.upper()}__{name.upper()}": url})


def test_an_empty_url_means_unset() -> None:
    settings = load_settings(environ={"HYBRID_RAG_GENERATOR__BASE_URL": ""})
    assert settings.generator.base_url is None and make_generator(settings.generator) is None


# -- against the local server ----------------------------------------------------------------


def test_success_sends_the_openai_request(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_GEN_KEY", raising=False)
    server.replies = [(200, completion("a passage"))]
    text = make(server.url, api_key_env="TEST_GEN_KEY").generate("the prompt", system="sys", max_tokens=33)
    assert text == "a passage"
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert "Authorization" not in request["headers"]
    assert request["headers"]["Content-Type"] == "application/json"
    assert json.loads(request["body"]) == {
        "model": "test-model",
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "the prompt"}],
        "max_tokens": 33,
        "temperature": 0,
    }


def test_auth_header_comes_from_the_named_env_var(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_GEN_KEY", "sk-secret")
    server.replies = [(200, completion("ok"))]
    assert make(server.url, api_key_env="TEST_GEN_KEY").generate("p") == "ok"
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-secret"


def test_500_then_success_is_retried(server: FakeServer) -> None:
    server.replies = [(500, b'{"error": "busy"}'), (200, completion("second time"))]
    assert make(server.url, retries=1).generate("p") == "second time"
    assert len(server.requests) == 2


def test_429_is_retried_too(server: FakeServer) -> None:
    server.replies = [(429, b"slow down"), (429, b"slow down"), (200, completion("third"))]
    assert make(server.url, retries=2).generate("p") == "third"
    assert len(server.requests) == 3


def test_500_always_is_one_clear_error(server: FakeServer) -> None:
    server.replies = [(500, b'{"error": "boom"}')]
    with pytest.raises(RemoteServiceError) as info:
        make(server.url, retries=2).generate("p")
    message = str(info.value)
    assert message.startswith(f"generator at {server.url}/chat/completions answered HTTP 500")
    assert "boom" in message and "(3 attempts)" in message and "\n" not in message
    assert len(server.requests) == 3


def test_a_client_error_is_not_retried(server: FakeServer) -> None:
    server.replies = [(404, b'{"error": "model test-model not found"}')]
    with pytest.raises(RemoteServiceError, match="answered HTTP 404.*not found"):
        make(server.url, retries=3).generate("p")
    assert len(server.requests) == 1


def test_malformed_json_is_an_error_without_retry(server: FakeServer) -> None:
    server.replies = [(200, b"<html>not json</html>")]
    with pytest.raises(RemoteServiceError, match="returned malformed JSON"):
        make(server.url, retries=2).generate("p")
    assert len(server.requests) == 1


def test_no_choices_is_an_error(server: FakeServer) -> None:
    server.replies = [(200, b'{"choices": []}')]
    with pytest.raises(RemoteServiceError, match="returned no choices"):
        make(server.url).generate("p")


def test_timeout_is_an_error_and_fast(server: FakeServer) -> None:
    server.delay = 5.0
    server.replies = [(200, completion("too late"))]
    start = time.perf_counter()
    with pytest.raises(RemoteServiceError, match=r"timed out after 0\.2s"):
        make(server.url, timeout_seconds=0.2, retries=0).generate("p")
    assert time.perf_counter() - start < 2.0


def test_connection_refused_is_an_error_after_retries() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(RemoteServiceError) as info:
        make(url, retries=1).generate("p")
    assert str(info.value) == (
        f"generator at {url}/chat/completions unreachable: connection refused (2 attempts)"
    )


def test_a_call_can_be_retried_by_the_caller(server: FakeServer) -> None:
    """The client keeps no state between calls: a failed call does not poison the next."""
    generator = make(server.url, retries=0)
    server.replies = [(503, b""), (200, completion("fine"))]
    with pytest.raises(RemoteServiceError, match="HTTP 503$"):
        generator.generate("p")
    assert generator.generate("p") == "fine"
