"""Measuring the engine: BEIR loading and metrics, experiment runs, the quick smoke bench."""
