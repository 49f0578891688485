"""``hybrid-rag serve``: decide auth (or refuse to start), then run uvicorn with one engine per worker.

One worker runs the app built here from the caller's settings. Several workers each build their
own from the same sources (``HYBRID_RAG_CONFIG``, ``HYBRID_RAG_HOME``, the ``HYBRID_RAG_*``
overrides, the key file), through ``app_from_environment``, uvicorn's factory.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI

from hybrid_rag.errors import ConfigError
from hybrid_rag.server.app import create_app
from hybrid_rag.server.auth import API_KEY_ENV, ApiKeys, decide_auth, keys_file, load_keys
from hybrid_rag.server.metrics import MULTIPROC_ENV
from hybrid_rag.settings import ENV_PREFIX, Settings, load_settings

NO_AUTH_ENV = "_HYBRID_RAG_SERVE_NO_AUTH"  # serve -> its workers; not a HYBRID_RAG_* setting


def app_from_environment() -> FastAPI:
    """The app of one worker process (uvicorn ``factory=True``)."""
    settings = load_settings()
    if os.environ.get(NO_AUTH_ENV) == "1":
        return create_app(settings, keys=None)
    keys = load_keys(settings)
    if not keys:  # serve decided auth before starting workers; a key file removed since is an error
        raise ConfigError(f"no API key in {API_KEY_ENV} or {keys_file(settings)}")
    return create_app(settings, keys=ApiKeys.of(keys))


def serve(
    settings: Settings,
    *,
    config: str | None,
    host: str,
    port: int,
    workers: int,
    no_auth: bool,
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> None:
    """Run until SIGINT / SIGTERM; in-flight requests get ``server.shutdown_grace_seconds``."""
    import uvicorn

    decision = decide_auth(settings, host=host, no_auth=no_auth)
    shown = f"[{host}]" if ":" in host else host
    say(f"hybrid-rag: serving {settings.data_dir} on http://{shown}:{port} ({workers} worker(s))")
    if decision.generated is not None:
        say(
            f"hybrid-rag: API key (shown once; kept in {keys_file(settings)}, mode 0600):\n\n    "
            f"{decision.generated}\n\nsend it as 'Authorization: Bearer <key>'"
        )
    else:
        say(f"hybrid-rag: auth: {decision.source}")
    common = {
        "host": host,
        "port": port,
        "timeout_graceful_shutdown": int(settings.server.shutdown_grace_seconds),
        "timeout_keep_alive": int(settings.server.keep_alive_seconds),
        "log_level": "info",
        "server_header": False,
    }
    if workers == 1:
        uvicorn.run(create_app(settings, keys=decision.keys), **common)
        return
    os.environ[ENV_PREFIX + "HOME"] = str(Path(settings.data_dir).resolve())
    if config:
        os.environ[ENV_PREFIX + "CONFIG"] = str(Path(config).resolve())
    os.environ[NO_AUTH_ENV] = "1" if decision.keys is None else "0"
    os.environ.setdefault(MULTIPROC_ENV, tempfile.mkdtemp(prefix="hybrid-rag-metrics-"))
    uvicorn.run("hybrid_rag.server.run:app_from_environment", factory=True, workers=workers, **common)
