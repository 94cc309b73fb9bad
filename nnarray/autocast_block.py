"""``nna.autocast``, the block of automatic mixed precision (``ops/autocast.py``: its op
table and casts). Its default dtype is bfloat16, so this module imports ``ml_dtypes``:
``nnarray`` imports it on first use of ``nna.autocast`` (outside ``ops``, whose modules
``ops/surfaces.py`` all imports)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .dtypes import LOW, bfloat16, normalize
from .errors import DTypeError
from .ops.autocast import ACTIVE, DTYPE, POLICY, count
from .ops.autocast import LOW as _LOW_RULE


class autocast:  # noqa: N801  (torch's and the API's name)
    """``with nna.autocast(dtype=nna.bfloat16, enabled=True):`` products in ``dtype``,
    precision-sensitive ops in float32 (``POLICY``); ``enabled=False`` turns it off inside
    an enclosing block. Also a decorator."""

    def __init__(self, dtype: Any = bfloat16, enabled: bool = True) -> None:
        d = normalize(dtype, "autocast")
        if d not in LOW:
            raise DTypeError(f"autocast: argument 'dtype' must be bfloat16 or float16, got {d}")
        self.dtype = d
        self.enabled = bool(enabled)
        self._tokens: list = []

    def __enter__(self) -> autocast:
        self._tokens.append(DTYPE.set(self.dtype if self.enabled else None))
        count(1 if self.enabled else 0)
        return self

    def __exit__(self, *exc: Any) -> None:
        DTYPE.reset(self._tokens.pop())
        count(-1 if self.enabled else 0)

    def __call__(self, fn: Callable) -> Callable:
        import functools

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.dtype, self.enabled):
                return fn(*args, **kwargs)
        return run

    @staticmethod
    def policy() -> str:
        """The op table as text (``print(nna.autocast.policy())``)."""
        rows = [f"{'op':<24} runs in", f"{'-' * 24} -------"]
        rows += [f"{op:<24} {'the autocast dtype' if r == _LOW_RULE else 'float32'}"
                 for op, r in POLICY.items()]
        rows.append(f"{'(any other op)':<24} its inputs' promoted dtype")
        return "\n".join(rows)

    @staticmethod
    def current() -> np.dtype | None:
        """The autocast dtype in force in this thread, or ``None``."""
        return DTYPE.get() if ACTIVE[0] else None
