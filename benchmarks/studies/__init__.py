"""Benchmark studies: each ``run(args) -> dict`` measures, ``render(result) -> str`` reports (harness.py)."""
