"""Benchmarks and quality evaluation for tiny-graphrag: `python -m bench` (see bench/RESULTS.md)."""
