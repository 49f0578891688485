"""Text generation behind an OpenAI-compatible chat-completions API (the ``Generator`` protocol).

One client serves llama.cpp's server, Ollama (``/v1``), vLLM and OpenAI: they share the schema
``POST {base_url}/chat/completions`` with ``{model, messages, max_tokens, temperature}`` and
answer ``{"choices": [{"message": {"content": "..."}}]}``. Only the standard library is used.

Conventions:

* ``temperature`` is 0, so the same prompt gives the same text where the server allows it;
* ``Authorization: Bearer <key>`` is sent when the environment variable named by
  ``generator.api_key_env`` is set (read at each call, never stored in settings);
* connection errors, timeouts, HTTP 429 and 5xx are retried ``generator.retries`` times with a
  short exponential backoff; any other HTTP status, malformed JSON or an answer without text
  fails at once;
* every failure is a ``RemoteServiceError`` with one line naming the endpoint, e.g.
  ``generator at http://127.0.0.1:8080/v1/chat/completions unreachable: connection refused``.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from hybrid_rag.errors import ConfigError, RemoteServiceError
from hybrid_rag.protocols import Generator
from hybrid_rag.settings import GeneratorSettings

T = TypeVar("T")

BACKOFF_SECONDS = 0.25  # first wait before a retry; doubled each further attempt
BACKOFF_MAX_SECONDS = 2.0
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_BODY_PREVIEW = 200  # characters of an error body quoted in the message


class _Retryable(Exception):
    """One failed attempt that may succeed if tried again; carries the user-facing reason."""


def completions_url(base_url: str) -> str:
    """``{base_url}/chat/completions`` with exactly one slash between them.

    >>> completions_url("http://127.0.0.1:8080/v1/")
    'http://127.0.0.1:8080/v1/chat/completions'
    """
    return base_url.rstrip("/") + "/chat/completions"


def chat_payload(model: str, prompt: str, system: str | None, max_tokens: int) -> dict[str, Any]:
    """The request body: an optional system message, then the user's prompt."""
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": prompt})
    return {"model": model, "messages": messages, "max_tokens": int(max_tokens), "temperature": 0}


def completion_text(body: bytes) -> str:
    """The text of the first choice of a chat-completions answer; ValueError says what is wrong."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError(f"returned malformed JSON: {_preview(body)}") from None
    if not isinstance(data, dict):
        raise ValueError(f"returned JSON that is not an object: {_preview(body)}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        error = data.get("error")
        detail = f" (error: {_preview(json.dumps(error))})" if error else ""
        raise ValueError(f"returned no choices{detail}")
    first = choices[0] if isinstance(choices[0], dict) else {}
    message = first.get("message")
    content = message.get("content") if isinstance(message, dict) else first.get("text")
    if not isinstance(content, str):
        raise ValueError("returned a choice without text content")
    return content


def backoff_seconds(attempt: int, base: float = BACKOFF_SECONDS) -> float:
    """Wait before retry number ``attempt`` (1-based): base, 2·base, 4·base, ... capped."""
    return min(base * 2 ** (attempt - 1), BACKOFF_MAX_SECONDS)


class OpenAICompatibleGenerator:
    """A chat-completions client; the constructor touches no network."""

    def __init__(self, settings: GeneratorSettings, *, backoff: float = BACKOFF_SECONDS) -> None:
        if not settings.base_url:  # its form was checked when the settings loaded
            raise ConfigError("generator.base_url is not set: point it at an OpenAI-compatible server")
        self.settings = settings
        self.url = completions_url(settings.base_url)
        self.backoff = float(backoff)

    def generate(self, prompt: str, *, system: str | None = None, max_tokens: int = 512) -> str:
        """The model's answer to ``prompt``; RemoteServiceError when the server fails us."""
        s = self.settings
        return post_json(
            self.url,
            chat_payload(s.model, prompt, system, max_tokens),
            parse=completion_text,
            what="generator",
            api_key_env=s.api_key_env,
            timeout=s.timeout_seconds,
            retries=s.retries,
            backoff=self.backoff,
        )


def post_json(
    url: str,
    payload: Mapping[str, Any],
    *,
    parse: Callable[[bytes], T],
    what: str,
    api_key_env: str,
    timeout: float,
    retries: int,
    backoff: float = BACKOFF_SECONDS,
) -> T:
    """POST ``payload`` as JSON and ``parse`` the answer, retrying connection errors, timeouts, 429
    and 5xx ``retries`` times; anything else, or a body ``parse`` rejects (ValueError), fails at once.

    ``Authorization: Bearer`` is sent when the variable ``api_key_env`` names is set. Every
    failure is one RemoteServiceError line naming ``what`` and the URL.
    """
    body = json.dumps(payload).encode("utf-8")
    attempts = 1 + retries
    reason = ""
    for attempt in range(1, attempts + 1):
        if attempt > 1:
            time.sleep(backoff_seconds(attempt - 1, backoff))
        try:
            raw = _post_once(url, body, api_key_env, timeout, what)
        except _Retryable as exc:
            reason = str(exc)
            continue
        try:
            return parse(raw)
        except ValueError as exc:
            raise RemoteServiceError(f"{what} at {url} {exc}") from None
    tried = f" ({attempts} attempts)" if attempts > 1 else ""
    raise RemoteServiceError(f"{what} at {url} {reason}{tried}")


def _post_once(url: str, body: bytes, api_key_env: str, timeout: float, what: str) -> bytes:
    """One attempt: the response body, _Retryable for a transient failure, else RemoteServiceError."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    key = os.environ.get(api_key_env, "").strip()
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        message = f"answered HTTP {exc.code}{_error_detail(exc)}"
        if exc.code in RETRY_STATUSES:
            raise _Retryable(message) from None
        raise RemoteServiceError(f"{what} at {url} {message}") from None
    except urllib.error.URLError as exc:
        raise _Retryable(_network_reason(exc.reason, timeout)) from None
    except (OSError, http.client.HTTPException) as exc:
        raise _Retryable(_network_reason(exc, timeout)) from None


def make_generator(settings: GeneratorSettings) -> Generator | None:
    """The configured generator, or None when ``generator.base_url`` is unset."""
    if not settings.base_url:
        return None
    return OpenAICompatibleGenerator(settings)


def _network_reason(reason: object, timeout: float) -> str:
    """One line for a failed connection or read: refused, timed out, reset, unknown host, ..."""
    if isinstance(reason, TimeoutError) or "timed out" in str(reason):
        return f"timed out after {timeout:g}s"
    if isinstance(reason, ConnectionRefusedError):
        return "unreachable: connection refused"
    if isinstance(reason, socket.gaierror):
        return f"unreachable: unknown host ({reason.strerror or reason})"
    if isinstance(reason, (ConnectionResetError, http.client.RemoteDisconnected)):
        return "closed the connection without an answer"
    if isinstance(reason, OSError) and reason.strerror:
        return f"unreachable: {reason.strerror.lower()}"
    return f"unreachable: {reason}"


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read()
    except Exception:  # the body of an error answer is a courtesy; never fail on it
        return ""
    return f": {_preview(body)}" if body.strip() else ""


def _preview(body: bytes | str) -> str:
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    text = " ".join(text.split())
    return text if len(text) <= _BODY_PREVIEW else text[:_BODY_PREVIEW] + "..."
