"""The Array API standard's namespace (API.md §7), one module per chapter of the standard,
as array-api-strict lays it out: ``constants``, ``dtypes``, ``data_type``, ``info``
(inspection), ``elementwise``, ``creation``, ``manipulation``, ``statistics``, ``utility``,
``indexing``, ``linalg`` (the main namespace's linear algebra), ``searching``, ``sorting``,
``sets``. ``nnarray`` re-exports every public name, so ``import nnarray as xp`` is a
namespace of revision 2023.12. The ``linalg`` and ``fft`` extensions are ``nnarray.linalg``
and ``nnarray.fft``.

Every function runs through the registry like its ``F`` counterpart and accepts
``grad.Variable``s where ``F`` does. A chapter also offers the functions op specs declare
for it (``ops/surfaces.py``, read with ``_common.declared``: the statistics chapter's
reductions and scans, the searching chapter's ``argmax``/``argmin``).
"""

from __future__ import annotations

from typing import Any

from .. import late
from ..context import creation_context  # noqa: F401  (see __all__)
from ..views import c_strides  # noqa: F401  (see __all__)
from . import (
    constants,
    creation,
    data_type,
    dtypes,
    elementwise,
    indexing,
    info,
    linalg,
    manipulation,
    searching,
    sets,
    sorting,
    statistics,
    utility,
)
from .constants import *  # noqa: F403
from .creation import *  # noqa: F403
from .data_type import *  # noqa: F403
from .dtypes import *  # noqa: F403  (some shadow builtins: the standard's names)
from .elementwise import *  # noqa: F403
from .indexing import *  # noqa: F403
from .info import *  # noqa: F403
from .linalg import *  # noqa: F403
from .manipulation import *  # noqa: F403
from .searching import *  # noqa: F403
from .sets import *  # noqa: F403
from .sorting import *  # noqa: F403
from .statistics import *  # noqa: F403
from .utility import *  # noqa: F403

#: The chapters, in the order of the standard's table of contents.
CHAPTERS = (constants, creation, data_type, dtypes, elementwise, indexing, info, linalg,
            manipulation, searching, sets, sorting, statistics, utility)

#: with two helpers xp_functions.py exported because its ``__all__`` listed its imports:
#: public names since, so kept
__all__ = sorted({n for c in CHAPTERS for n in c.__all__} | {"c_strides", "creation_context"})
#: Public names left out of ``__all__`` (so ``import *`` does not import them): their
#: values import on first use (``bfloat16``: ``ml_dtypes``).
LAZY = dtypes.LAZY


def __getattr__(name: str) -> Any:
    """``bfloat16`` (``dtypes.LAZY``) on first use."""
    if name in LAZY:
        return getattr(dtypes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
