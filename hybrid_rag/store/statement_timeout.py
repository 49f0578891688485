"""A request's deadline on a server database: PostgreSQL cancels the statement when the time left
runs out (``statement_timeout``), as SQLite's progress handler interrupts one (``store.py``)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

from hybrid_rag.deadline import remaining


def bound_to_deadline(session: Session) -> None:
    """Within a deadline on PostgreSQL: this transaction's statements stop when its time is up."""
    left = remaining()
    if left is None or session.get_bind().dialect.name != "postgresql":
        return
    session.execute(text(f"SET LOCAL statement_timeout = {max(1, int(left * 1000))}"))
