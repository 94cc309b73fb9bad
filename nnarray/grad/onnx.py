"""ONNX export and import of static graphs (needs the ``onnx`` package: ``pip install
nnarray[onnx]``).

``export(outputs, path, params=None, arg_names=None, opset=17)`` writes the graph behind
static ``Variable`` outputs as an ONNX model: leaves named in ``params`` (e.g.
``model.parameters()``, or ``model.named_arrays()`` to name running statistics too)
become initializers holding their current data, other leaf Variables become graph inputs,
NdArray and scalar constants become initializers. ``import_model(path)`` builds the same
kind of static graph from an ONNX model with ``F`` functions and returns ``(outputs,
params)``. Each node is translated from its op: ``conv2d`` (one op, one node) becomes
one ``Conv``, ``max_pooling``/``average_pooling`` a ``MaxPool``/``AveragePool``,
``batch_normalization`` in evaluation a ``BatchNormalization``; the importer maps those
back to the same ops.
"""

from __future__ import annotations

import os
from typing import Any

from ..atomic_file import write_bytes
from ..errors import GraphError
from . import onnx_export, onnx_import
from .variable import Variable

#: nnarray ops ``export`` translates (the rest raise ``GraphError`` naming the op).
EXPORTED_OPS: frozenset[str] = onnx_export.EXPORTED_OPS
#: ONNX ops ``import_model`` translates.
IMPORTED_OPS: frozenset[str] = onnx_import.IMPORTED_OPS


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("nnarray.grad.onnx needs the 'onnx' package "
                          "(pip install 'nnarray[onnx]')") from e
    return onnx


def to_model(outputs: Any, params: dict | None = None, arg_names: dict | None = None,
             opset: int = 17) -> Any:
    """The ``onnx.ModelProto`` that ``export`` writes (checked)."""
    onnx = _onnx()
    if isinstance(outputs, Variable):
        outputs = [outputs]
    outputs = list(outputs)
    for k, v in enumerate(outputs):
        if not isinstance(v, Variable):
            raise TypeError(f"onnx export: outputs[{k}] must be a grad.Variable, got "
                            f"{type(v).__name__}")
    if opset < 17:
        raise ValueError(f"onnx export: opset must be >= 17, got {opset}")
    model = onnx_export.build(outputs, dict(params or {}), dict(arg_names or {}), int(opset))
    onnx.checker.check_model(model)
    return model


def export(outputs: Any, path: str | os.PathLike, params: dict | None = None,
           arg_names: dict | None = None, opset: int = 17) -> None:
    """Write the graph behind ``outputs`` (static Variables) to ``path`` as ONNX.

    ``params``: ``{name: Variable or NdArray}`` leaves written as initializers with their
    current data (``model.parameters()``; ``model.named_arrays()`` names the batch-norm
    running statistics too). Other leaf Variables are graph inputs named
    ``arg_names[id(v)]``, else ``v.name``, else ``arg<k>``. Outputs are named ``v.name``
    or ``out<k>``. Raises ``GraphError`` naming an op without an ONNX translation.
    """
    model = to_model(outputs, params, arg_names, opset)
    write_bytes(path, model.SerializeToString())


#: The largest value, in bytes, that import computes ahead from constants (constant
#: folding); a node that would make a bigger one raises ``GraphError``. Settable here or
#: per call: ``import_model(path, fold_limit=...)``.
FOLD_LIMIT = 64 << 20


def from_model(model: Any, shapes: dict | None = None,
               fold_limit: int | None = None) -> tuple[list, dict]:
    """``import_model`` on an ``onnx.ModelProto``."""
    if not model.HasField("graph") or not model.graph.output:
        raise GraphError("onnx import: the model has no graph outputs (an empty or "
                         "truncated file?)")
    for op in model.opset_import:
        if op.domain in ("", "ai.onnx") and op.version < 13:
            raise GraphError(f"onnx import: opset {op.version} is not supported (need >= 13)")
    return onnx_import.build(model, shapes, FOLD_LIMIT if fold_limit is None else
                             int(fold_limit))


def load_model(path: str | os.PathLike) -> Any:
    """The ``onnx.ModelProto`` in the file at ``path``; ``GraphError`` if it is not one."""
    onnx = _onnx()
    path = os.fspath(path)
    try:
        return onnx.load(path)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as e:  # protobuf's DecodeError, external data that is not there, ...
        raise GraphError(f"onnx import: {path!r} is not a readable ONNX model: "
                         f"{type(e).__name__}: {e}") from e


def import_model(path: str | os.PathLike, shapes: dict | None = None,
                 fold_limit: int | None = None) -> tuple[list, dict]:
    """A static nnarray graph from the ONNX model at ``path``: ``(outputs, values)`` with
    the graph's outputs (Variables, in order) and ``{name: Variable}`` holding first the
    graph inputs (Variables of their shapes and dtypes: set ``.d`` and call ``forward()``)
    then every initializer used as a tensor (a leaf holding its data; float ones
    ``need_grad``). Constants read as attributes (shapes, axes) stay numpy. ``shapes``
    gives inputs with symbolic dimensions (a dynamic batch size) their static shape. An
    ONNX op without a translation raises ``GraphError`` naming it and its node, and so
    does a file that is not a model, an initializer whose data does not fill its dims, and
    a node computed from constants at import (folding) whose value would be over
    ``fold_limit`` bytes (default ``FOLD_LIMIT``, 64 MiB)."""
    return from_model(load_model(path), shapes, fold_limit)
