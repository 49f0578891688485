"""``python -m hybrid_rag.cli``: the ``hybrid-rag`` command."""

from hybrid_rag.cli import main

raise SystemExit(main())
