"""``nn.clip_grad_norm``: torch's global-norm clipping, on the gradients' device."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
from nnarray import grad, nn


def params_with_grads(rng, shapes=((3, 4), (4,), (2, 2, 2))):
    ps = []
    for s in shapes:
        p = grad.Variable.from_numpy_array(rng.standard_normal(s).astype(np.float32),
                                           need_grad=True)
        p.data.get_data("rw")
        p.grad.data = rng.standard_normal(s).astype(np.float32)
        p.grad.get_data("rw")  # gradient on the current device
        ps.append(p)
    return ps


@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_scales_to_max_norm_and_returns_the_total(backend, max_norm):
    ps = params_with_grads(np.random.default_rng(0))
    before = [p.g.copy() for p in ps]
    for p in ps:
        p.grad.get_data("rw")  # the .g read above made the host copy the head
    total = float(np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in before)))
    with nna.strict_transfers():  # only the returned scalar comes back (explicitly)
        got = nn.clip_grad_norm({str(i): p for i, p in enumerate(ps)}, max_norm)
    assert ps[0].grad.head == f"{backend}:0"
    assert got == pytest.approx(total, rel=1e-5)
    coef = min(1.0, max_norm / (total + 1e-6))
    for p, g in zip(ps, before):
        np.testing.assert_allclose(p.g, g * coef, rtol=1e-5)
    after = float(np.sqrt(sum((p.g.astype(np.float64) ** 2).sum() for p in ps)))
    assert after == pytest.approx(min(total, max_norm), rel=1e-4)


def test_clip_grad_norm_validates():
    ps = params_with_grads(np.random.default_rng(1))
    with pytest.raises(ValueError, match="max_norm must be > 0"):
        nn.clip_grad_norm(ps, 0)
    with pytest.raises(TypeError, match="parameter 1 is a ndarray"):
        nn.clip_grad_norm([ps[0], np.ones(2)], 1.0)
    assert nn.clip_grad_norm([], 1.0) == 0.0
