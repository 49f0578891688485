"""Source code parsed with tree-sitter: definitions (units) from each grammar's own tags query."""
