"""The Array API standard's functions under their standard names and signatures
(API.md §7), one module per chapter of the standard."""

from __future__ import annotations

from .. import late
from .creation import *  # noqa: F403
from .creation import __all__ as __all__

late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
