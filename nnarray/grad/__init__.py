"""Autograd on top of ``F``: Variables, static and define-by-run graphs, backward rules
declared beside each op (``nnarray.ops``), custom Python functions, gradcheck, DOT."""

from __future__ import annotations

from ..errors import GraphError
from . import engine  # noqa: F401  (installs the ops' graph hook)
from .dot import to_dot
from .gradcheck import gradcheck
from .modes import auto_forward, is_auto_forward, no_grad
from .python_function import PythonFunction
from .variable import Variable

__all__ = ["GraphError", "PythonFunction", "Variable", "auto_forward", "gradcheck",
           "is_auto_forward", "no_grad", "to_dot"]
