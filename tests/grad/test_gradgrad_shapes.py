"""Double backward of the shape ops, padding, indexing and scatter: ``gradgradcheck`` in
float64 on every backend and torch's second derivatives (``tests/double_backward.py``)."""

from __future__ import annotations

import numpy as np
from double_backward import family_tests

import nnarray as nna
import nnarray.functions as F
from nnarray.ops.indexing import scatter_add

_IDX = np.array([2, 0, 1, 2])
_ALONG = np.array([[2, 0], [1, 1]])
_MASK = np.array([[True, False, True], [False, True, True]])


def _a(v):
    return nna.asarray(v)


#: name -> (function of Variables, [(shape, domain)]), small float64 inputs.
CASES: dict = {
    "reshape": (lambda x: F.reshape(x, (3, 2)) ** 2, [((2, 3), "any")]),
    "transpose": (lambda x: F.transpose(x, (1, 0)) * F.transpose(x, (1, 0)), [((2, 3), "any")]),
    "permute_dims": (lambda x: nna.permute_dims(x * x, (2, 0, 1)), [((2, 3, 2), "any")]),
    "moveaxis": (lambda x: nna.moveaxis(x * x, 0, 2), [((2, 3, 2), "any")]),
    "squeeze_expand_dims": (lambda x: nna.expand_dims(nna.squeeze(x * x, axis=0), axis=2),
                            [((1, 2, 3), "any")]),
    "broadcast_to": (lambda x: F.broadcast_to(x, (2, 3)) ** 3, [((1, 3), "any")]),
    "concatenate": (lambda a, b: F.concatenate([a * b, a], axis=1), [((2, 3), "any"),
                                                                   ((2, 3), "any")]),
    "stack": (lambda a, b: F.stack([a * a, b], axis=0), [((2, 3), "any"), ((2, 3), "any")]),
    "split": (lambda x: F.split(x * x, 3, axis=1)[1] * x[:, :1], [((2, 3), "any")]),
    "unstack": (lambda x: nna.unstack(x * x, axis=1)[1] * x[:, 0], [((2, 3), "any")]),
    "slice": (lambda x: F.slice(x, (0, 1), (2, 3)) ** 2, [((2, 3), "any")]),
    "getitem": (lambda x: x[::-1, 1:] ** 3, [((3, 3), "any")]),
    "getitem_int": (lambda x: x[1] * x[0, 2], [((2, 3), "any")]),
    "flip": (lambda x: nna.flip(x * x, axis=1), [((2, 3), "any")]),
    "roll": (lambda x: nna.roll(x * x, 1, axis=1), [((2, 3), "any")]),
    "tile": (lambda x: nna.tile(x * x, (2, 1)), [((2, 3), "any")]),
    "repeat": (lambda x: nna.repeat(x * x, 2, axis=0), [((2, 3), "any")]),
    "tril_triu": (lambda x: nna.tril(x * x) + nna.triu(x, k=1) * x, [((3, 3), "any")]),
    "pad_constant": (lambda x: nna.pad(x * x, ((1, 0), (0, 2)), constant_values=0.5),
                     [((2, 3), "any")]),
    "pad_edge": (lambda x: nna.pad(x * x, 1, mode="edge"), [((2, 3), "any")]),
    "pad_reflect": (lambda x: nna.pad(x * x, ((0, 1), (2, 1)), mode="reflect"),
                    [((2, 3), "any")]),
    # indexing and scatter
    "take": (lambda x: F.take(x, _a(_IDX), axis=0) ** 2, [((3, 2), "any")]),
    "fancy_index": (lambda x: F.sin(x[_a(_IDX)]), [((3, 2), "any")]),
    "mask_index": (lambda x: F.sin(x[_a(_MASK)]), [((2, 3), "any")]),
    "take_along_axis": (lambda x: nna.take_along_axis(x * x, _a(_ALONG), axis=1),
                        [((2, 3), "any")]),
    "scatter_add": (lambda v: scatter_add(v * v, _a(_IDX), size=3), [((4,), "any")]),
}

#: name -> ``(torch, *tensors) -> tensor``: torch's counterpart of each case.
TORCH: dict = {
    "reshape": lambda t, x: x.reshape(3, 2) ** 2,
    "transpose": lambda t, x: x.T * x.T,
    "permute_dims": lambda t, x: (x * x).permute(2, 0, 1),
    "moveaxis": lambda t, x: t.movedim(x * x, 0, 2),
    "squeeze_expand_dims": lambda t, x: (x * x).squeeze(0).unsqueeze(2),
    "broadcast_to": lambda t, x: x.expand(2, 3) ** 3,
    "concatenate": lambda t, a, b: t.cat([a * b, a], 1),
    "stack": lambda t, a, b: t.stack([a * a, b], 0),
    "split": lambda t, x: t.split(x * x, 1, 1)[1] * x[:, :1],
    "unstack": lambda t, x: t.unbind(x * x, 1)[1] * x[:, 0],
    "slice": lambda t, x: x[0:2, 1:3] ** 2,
    "getitem": lambda t, x: t.flip(x, (0,))[:, 1:] ** 3,
    "getitem_int": lambda t, x: x[1] * x[0, 2],
    "flip": lambda t, x: t.flip(x * x, (1,)),
    "roll": lambda t, x: t.roll(x * x, 1, 1),
    "tile": lambda t, x: t.tile(x * x, (2, 1)),
    "repeat": lambda t, x: t.repeat_interleave(x * x, 2, dim=0),
    "tril_triu": lambda t, x: t.tril(x * x) + t.triu(x, 1) * x,
    "pad_constant": lambda t, x: t.nn.functional.pad(x * x, (0, 2, 1, 0), value=0.5),
    "pad_edge": lambda t, x: t.nn.functional.pad((x * x)[None], (1, 1, 1, 1),
                                                 mode="replicate")[0],
    "pad_reflect": lambda t, x: t.nn.functional.pad((x * x)[None], (2, 1, 0, 1),
                                                    mode="reflect")[0],
    "take": lambda t, x: x[t.tensor(_IDX)] ** 2,
    "fancy_index": lambda t, x: t.sin(x[t.tensor(_IDX)]),
    "mask_index": lambda t, x: t.sin(x[t.tensor(_MASK)]),
    "take_along_axis": lambda t, x: t.take_along_dim(x * x, t.tensor(_ALONG), 1),
    "scatter_add": lambda t, v: t.zeros(3, dtype=v.dtype).index_add(0, t.tensor(_IDX), v * v),
}


test_gradgradcheck, test_second_derivatives_match_torch = family_tests(CASES, TORCH)
