"""``hybrid-rag serve`` and ``hybrid-rag mcp`` without the [server] extra: one line naming the
pip command, not a traceback (``cli/servers.py``)."""

from __future__ import annotations

import argparse
import sys

import pytest

from hybrid_rag.cli.servers import cmd_mcp, cmd_serve
from hybrid_rag.errors import HybridRagError
from hybrid_rag.settings import Settings


@pytest.mark.parametrize(
    ("command", "module", "run"),
    [("serve", "hybrid_rag.server.run", cmd_serve), ("mcp", "hybrid_rag.server.mcp", cmd_mcp)],
)
def test_a_missing_server_extra_names_the_install(monkeypatch, command, module, run) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ImportError
    args = argparse.Namespace(host=None, port=None, config=None, workers=None, no_auth=False)
    install = rf"^{command} needs: pip install 'hybrid-rag\[server\]' \("
    with pytest.raises(HybridRagError, match=install) as err:
        run(args, Settings())
    assert module in str(err.value)  # the import that failed, for the curious
