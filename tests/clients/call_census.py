"""Which nnarray names a client run reaches, and how often (``NNARRAY_CLIENT_CALLS=out.json``
with ``tests/clients/plugin.py``): the measure a client subset is chosen by.

Every callable of the namespace (``nna.x``, ``nna.linalg.x``, ``nna.fft.x``), of ``F``
(``nnarray.functions``) and every method and property of ``NdArray`` is wrapped to count
its calls, under the label the plugin sets per test (the test's device); numpy's protocol
counts the numpy function or ufunc it serves (``np.mean``). A subset that reaches the same
names on each device exercises the same nnarray functions as the run it replaces.
"""

from __future__ import annotations

import functools
import json
import types
from collections import Counter
from pathlib import Path

import nnarray as nna
import nnarray.functions as F

#: label (a device) -> name -> calls
counts: dict[str, Counter] = {}
_label = ["-"]

#: methods left alone: object's machinery, not nnarray's functions
_SKIP = {"__init__", "__new__", "__del__", "__getattribute__", "__getattr__", "__setattr__",
         "__delattr__", "__init_subclass__", "__class_getitem__", "__subclasshook__"}


def set_label(label: str) -> None:
    """Count the calls from now on under ``label``."""
    _label[0] = label


def _count(name: str) -> None:
    counts.setdefault(_label[0], Counter())[name] += 1


def _wrap(name: str, f):
    @functools.wraps(f)
    def counted(*args, **kwargs):
        _count(name)
        return f(*args, **kwargs)
    return counted


def _wrap_protocol(name: str, f):
    """``__array_function__``/``__array_ufunc__``: count the numpy function served too."""
    @functools.wraps(f)
    def counted(self, func, *args, **kwargs):
        _count(name)
        _count(f"np.{getattr(func, '__name__', func)}")
        return f(self, func, *args, **kwargs)
    return counted


def _wrap_module(prefix: str, module: types.ModuleType) -> None:
    for name in dir(module):
        v = getattr(module, name)
        if name.startswith("_") or isinstance(v, (type, types.ModuleType)) or not callable(v):
            continue
        setattr(module, name, _wrap(f"{prefix}.{name}", v))


def _wrap_ndarray() -> None:
    cls = nna.NdArray
    seen: set[str] = set()
    for base in cls.__mro__[:-1]:
        for name, v in vars(base).items():
            if name in seen or name in _SKIP:
                continue
            seen.add(name)
            label = f"NdArray.{name}"
            if name in ("__array_function__", "__array_ufunc__"):
                setattr(cls, name, _wrap_protocol(label, v))
            elif isinstance(v, types.FunctionType):
                setattr(cls, name, _wrap(label, v))
            elif isinstance(v, property) and v.fget is not None:
                setattr(cls, name, property(_wrap(label, v.fget), v.fset, v.fdel, v.__doc__))


def install() -> None:
    """Wrap the namespace, ``F`` and ``NdArray`` (once, before the client's tests run)."""
    for sub in ("linalg", "fft"):
        module = getattr(nna, sub, None)
        if isinstance(module, types.ModuleType):
            _wrap_module(f"nna.{sub}", module)
    _wrap_module("nna", nna)
    _wrap_module("F", F)
    _wrap_ndarray()


def write(path: str) -> None:
    """``{label: {name: calls}}`` as JSON."""
    Path(path).write_text(json.dumps({k: dict(sorted(v.items())) for k, v in counts.items()},
                                     indent=1))
