"""Command-line pieces the examples share: ``--backend`` and its availability check."""

from __future__ import annotations

import argparse
import sys

import nnarray as nna


def _context(spec: str) -> str:
    """``--backend`` values: any context string, ``backend[:device_id]``."""
    try:
        ctx = nna.Context.parse(spec)
    except nna.BackendError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if ctx.backend not in nna.backends.registered():
        raise argparse.ArgumentTypeError(
            f"unknown backend {ctx.backend!r} (registered: "
            f"{', '.join(nna.backends.registered())})")
    return str(ctx)


def summary(doc: str) -> str:
    """The first paragraph of a module docstring, on one line (``--help``'s description:
    a first line alone can stop mid-sentence)."""
    return " ".join(doc.strip().split("\n\n")[0].split())


def parser(doc: str) -> argparse.ArgumentParser:
    """An argument parser with ``--backend`` (any context string, default numpy),
    described by ``doc``'s first paragraph (pass the example's ``__doc__``)."""
    ap = argparse.ArgumentParser(
        description=summary(doc), formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--backend", default="numpy", type=_context, metavar="BACKEND[:N]",
                    help="where to run: a context string such as numpy, opencl, opencl:1, "
                         f"cuda:0 (registered backends: {', '.join(nna.backends.registered())})")
    return ap


def unavailable(spec: str) -> bool:
    """Print why the context ``spec`` cannot run here and return True; False when it can."""
    ctx = nna.Context.parse(spec)
    reason = nna.backends.why_unavailable(ctx.backend)
    if reason is not None:
        print(f"backend {ctx.backend} unavailable: {reason}", file=sys.stderr)
        return True
    try:
        nna.backends.get_device(ctx.backend, ctx.device_id)
    except nna.BackendError as e:
        print(f"{ctx} unavailable: {e}", file=sys.stderr)
        return True
    return False
