"""A fresh PostgreSQL database per test, on the throwaway server ``scripts/pg_server.sh`` starts
(its URL in ``TEST_POSTGRES_URL``). Without the URL a PostgreSQL test skips, saying why;
in CI (``.ci/run`` sets ``REQUIRE_TEST_POSTGRES``) it fails instead, so the PostgreSQL runs
cannot silently vanish from CI."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

PG_URL_VARIABLE = "TEST_POSTGRES_URL"
STORES = ("sqlite", "postgresql")  # the store backends the store, snapshot and end-to-end tests run on


def server_url() -> str:
    url = os.environ.get(PG_URL_VARIABLE)
    if not url:
        reason = f"no PostgreSQL server: {PG_URL_VARIABLE} is unset (scripts/test.sh starts one)"
        if os.environ.get("REQUIRE_TEST_POSTGRES"):
            pytest.fail(reason)
        pytest.skip(reason)
    return url


@contextmanager
def fresh_database() -> Iterator[str]:
    """The URL of a new, empty database on the test server, dropped afterwards."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    url = make_url(server_url())
    name = f"hr_{uuid.uuid4().hex[:16]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.dispose()
