"""The framework extras are optional: importing hybrid_rag, its integrations package or their shared
source imports none of LangChain, LlamaIndex or Haystack (or the CLI's watch dependency)."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
import hybrid_rag, hybrid_rag.cli, hybrid_rag.integrations, hybrid_rag.integrations.source, hybrid_rag.watch
optional = {"langchain_core", "llama_index", "haystack", "watchfiles"}
loaded = sorted(m for m in sys.modules if m.split(".")[0] in optional)
print(",".join(loaded))
"""


def test_no_framework_is_imported_until_its_module_is() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
