"""scikit-learn's array-API test generators, with nnarray among their namespaces (loaded
by ``tests/clients/plugin.py``).

scikit-learn parametrizes its array-API tests with the generators in
``sklearn.utils._array_api``. This module wraps them so that, after sklearn's namespaces
(array_api_strict is the reference in the same run), they also yield ``"nnarray"`` on each
device of ``NNARRAY_CLIENT_DEVICE`` (a comma list, default ``numpy``; those unavailable here
are dropped), the context name being the device that sklearn passes to
``nnarray.asarray(..., device=)``. Test ids name the namespace and context
(``[nnarray-opencl-float32]``). tests/clients/README.md gives the commands.
"""

from __future__ import annotations

import importlib.util
import os

# SciPy reads this once at import: sklearn's array-API paths need it set before.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import sklearn.utils._array_api as _aa  # noqa: E402

from tests.clients.devices import client_devices  # noqa: E402

_DTYPES = ("float64", "float32")


def _cupy_usable() -> bool:
    """Whether CuPy is installed and sees a GPU."""
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no driver, or one too old for its runtime
        return False


_DROP = () if _cupy_usable() else ("cupy",)
_orig_namespaces = _aa.yield_namespaces
_orig_combinations = _aa.yield_namespace_device_dtype_combinations
_orig_mixed = _aa.yield_mixed_namespace_input_permutations


def yield_namespaces(include_numpy_namespaces=True):
    """sklearn's namespaces, then nnarray (its default context: numpy unless chosen)."""
    for name in _orig_namespaces(include_numpy_namespaces=include_numpy_namespaces):
        if name not in _DROP:
            yield name
    yield "nnarray"


def yield_namespace_device_dtype_combinations(include_numpy_namespaces=True):
    """sklearn's (namespace, device, dtype) triples, then nnarray on each context."""
    for combination in _orig_combinations(include_numpy_namespaces=include_numpy_namespaces):
        if combination[0] not in ("nnarray", *_DROP):  # it reads the patched yield_namespaces
            yield combination
    for context in client_devices():
        for dtype in _DTYPES:
            yield "nnarray", context, dtype


def yield_mixed_namespace_input_permutations():
    """sklearn's mixed pairs, then host <-> nnarray's first non-host context."""
    for a, b, name in _orig_mixed():
        if a.xp not in _DROP and b.xp not in _DROP:
            yield a, b, name
    devices = [c for c in client_devices() if c != "numpy"]
    if not devices:
        return
    nd = _aa.NamespaceAndDevice
    dev = devices[0]
    yield nd("nnarray", dev), nd("numpy", None), f"nnarray {dev} to numpy"
    yield nd("numpy", None), nd("nnarray", dev), f"numpy to nnarray {dev}"
    yield (nd("array_api_strict", "device1"), nd("nnarray", dev),
           f"array_api_strict to nnarray {dev}")


_aa.yield_namespaces = yield_namespaces
_aa.yield_namespace_device_dtype_combinations = yield_namespace_device_dtype_combinations
_aa.yield_mixed_namespace_input_permutations = yield_mixed_namespace_input_permutations
