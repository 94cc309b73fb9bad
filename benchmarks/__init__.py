"""pytest-benchmark suite (run: see README.md in this folder)."""
