"""Autograd on top of ``F``: Variables, static and define-by-run graphs, backward rules
declared beside each op (``nnarray.ops``), custom Python functions, gradcheck, DOT.

The engine, by concept, each importing only what is listed before it: ``node``
(function applications), ``variable`` (graph values, with define-by-run's per-op hot
path for two-operand ops; reaches the engine modules through ``nnarray.late`` slots),
``planner``, ``schedule`` (the one step list every graph run executes: its interpreter
and code generator), ``recompute_pass`` (what a fused forward leaves to backward to
compute again, recorded as a ``RecomputeRecord``), ``fusion_adapter`` (the pure grouping
pass, ``fusion_pass``, wired into schedules as ``FusedNode`` steps running the
``fused_elementwise`` op), ``executor`` (plans;
static forward and program replay as schedules), ``recording`` (graph building),
``program`` (tracing a backward pass), ``backward``, ``gradient`` (``grad.grad``:
rules run on Variables record the backward computation); above them graphs as objects:
``rebuild`` (nodes recorded again on new inputs), ``graph`` (the ``Graph`` view), ``bind``
(``Executor``), ``graph_json``; and ``functional`` (``vjp`` ... ``hessian``)
(``docs/architecture.md``; ``lint-imports`` checks the order).
"""

from __future__ import annotations

from ..errors import GraphError
from . import backward, bind, executor, graph_json, node, program, recording, schedule, variable  # noqa: F401
from .bind import Executor
from .cuda_replay import cuda_graphs
from .dot import to_dot
from .executor import print_schedule, saved_arrays, schedule_of
from .functional import hessian, hvp, jacobian, jvp, vhp, vjp
from .gradcheck import gradcheck, gradgradcheck
from .gradient import grad
from .graph import Graph, register_function
from .modes import auto_forward, fusion_enabled, is_auto_forward, no_grad
from .naming import name_scope, reset_names
from .python_function import PythonFunction
from .variable import Variable

__all__ = ["Executor", "Graph", "GraphError", "PythonFunction", "Variable", "auto_forward",
           "cuda_graphs", "fusion_enabled", "grad", "gradcheck", "gradgradcheck",
           "is_auto_forward",
           "hessian", "hvp", "jacobian", "jvp", "name_scope", "no_grad", "vhp", "vjp",
           "print_schedule", "register_function", "reset_names", "saved_arrays", "schedule_of",
           "to_dot"]
