"""Bearer keys: none, wrong, right, two keys, a key file, a generated key (0600, printed once), and
the refusal to run open or keyless on a non-loopback host."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from live_server import KEY, OTHER_KEY, LiveServer, server_settings

from hybrid_rag.errors import ConfigError
from hybrid_rag.server.auth import ApiKeys, decide_auth, is_loopback, keys_file, load_keys


def test_no_key_and_wrong_key_are_401_right_keys_pass(live: LiveServer) -> None:
    body = {"query": "circle area"}
    with live.client(None) as anonymous:
        missing = anonymous.post("/v1/query", json=body)
        assert missing.status_code == 401
        assert missing.json()["error"]["field"] == "Authorization"
        assert missing.headers["www-authenticate"] == "Bearer"
        assert anonymous.get("/metrics").status_code == 401
        assert anonymous.get("/healthz").status_code == 200  # no key needed
        assert anonymous.get("/openapi.json").status_code == 200
    with live.client("wrong-key-0123456789abcdef") as wrong:
        assert wrong.post("/v1/query", json=body).status_code == 401
    for key in (KEY, OTHER_KEY):  # either of two keys
        with live.client(key) as right:
            assert right.post("/v1/query", json=body).status_code == 200


def test_keys_come_from_the_environment_and_the_key_file(tmp_path: Path) -> None:
    settings = server_settings(tmp_path, **{"server.api_keys_file": str(tmp_path / "keys")})
    (tmp_path / "keys").write_text("# ops keys\nfile-key-0123456789abcdef\n\nfile-key-two-0123456789\n")
    keys = load_keys(settings, {"HYBRID_RAG_API_KEY": "env-key-0123456789abcdef"})
    assert keys == ("env-key-0123456789abcdef", "file-key-0123456789abcdef", "file-key-two-0123456789")
    accepted = ApiKeys.of(keys)
    assert accepted.check("file-key-two-0123456789") and not accepted.check("file-key-two")
    assert not accepted.check(None) and not accepted.check("")


def test_a_short_key_is_refused(tmp_path: Path) -> None:
    settings = server_settings(tmp_path)
    with pytest.raises(ConfigError, match="HYBRID_RAG_API_KEY is shorter than 16"):
        load_keys(settings, {"HYBRID_RAG_API_KEY": "abc"})


def test_no_key_on_loopback_generates_one_0600_printed_once(tmp_path: Path) -> None:
    settings = server_settings(tmp_path)
    first = decide_auth(settings, host="127.0.0.1", no_auth=False, environ={})
    assert first.generated and first.keys is not None and first.keys.check(first.generated)
    path = keys_file(settings)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = decide_auth(settings, host="127.0.0.1", no_auth=False, environ={})
    assert again.generated is None  # shown once: the next start reads the file
    assert again.keys is not None and again.keys.check(first.generated)


def test_non_loopback_needs_a_key_and_never_runs_open(tmp_path: Path) -> None:
    settings = server_settings(tmp_path)
    with pytest.raises(ConfigError, match="refusing to bind '0.0.0.0' without an API key"):
        decide_auth(settings, host="0.0.0.0", no_auth=False, environ={})
    assert not keys_file(settings).exists()  # nothing generated for a public bind
    with pytest.raises(ConfigError, match="--no-auth is allowed only on a loopback host"):
        decide_auth(settings, host="192.168.1.5", no_auth=True, environ={})
    assert decide_auth(settings, host="localhost", no_auth=True, environ={}).keys is None
    keyed = decide_auth(settings, host="0.0.0.0", no_auth=False, environ={"HYBRID_RAG_API_KEY": KEY})
    assert keyed.keys is not None and keyed.keys.check(KEY)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
        ("example.org", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_no_auth_server_answers_without_a_key(tmp_path: Path, corpus: Path) -> None:
    settings = server_settings(tmp_path)
    server = LiveServer(settings, None)
    try:
        with server.client(None) as client:
            assert client.get("/v1/stats").status_code == 200
    finally:
        server.stop()
