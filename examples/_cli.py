"""Command-line pieces the examples share: ``--backend`` and its availability check."""

from __future__ import annotations

import argparse
import sys

import nnarray as nna


def parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with ``--backend`` (any registered backend, default numpy)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--backend", default="numpy", choices=nna.backends.registered())
    return ap


def unavailable(backend: str) -> bool:
    """Print why ``backend`` cannot run here and return True; False when it can."""
    reason = nna.backends.why_unavailable(backend)
    if reason is not None:
        print(f"backend {backend} unavailable: {reason}", file=sys.stderr)
    return reason is not None
