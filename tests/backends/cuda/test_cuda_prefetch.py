"""``DataLoader(device="cuda")``'s uploads (``backends/cuda/prefetch.py``): a side
stream, an event per batch, pinned host buffers with ``pin_memory`` kept until their
copy is done. Device tests skip with the backend's reason where no GPU is usable (never
a fake device); the loader on every backend: tests/nn/test_data.py."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import needs

import nnarray as nna
from nnarray.data import DataLoader


@pytest.fixture
def dev():
    needs("cuda")
    return nna.backends.get_device("cuda", 0)


@pytest.mark.parametrize("pin", [False, True])
def test_uploads_run_on_a_side_stream_with_an_event_per_batch(dev, pin):
    from nnarray.backends.cuda.prefetch import Uploader
    cp = dev._cp
    up = Uploader(dev, pin_memory=pin)
    assert up.stream.ptr != cp.cuda.get_current_stream().ptr
    h = up.stage((256, 1024), np.dtype(np.float32))
    assert dev.is_pinned(h) is pin
    h[...] = np.arange(h.size, dtype=np.float32).reshape(h.shape)
    outs = up.start([h, np.arange(4)])
    assert len(up.inflight) == 1 and len(up.events) == 2  # one event for the batch
    up.finish(outs)
    assert up.events == {}
    up.close()
    assert up.inflight == []
    np.testing.assert_array_equal(cp.asnumpy(outs[0]), h)
    np.testing.assert_array_equal(cp.asnumpy(outs[1]), np.arange(4))


def test_pinned_prefetch_feeds_a_step_without_implicit_transfers(dev):
    x = np.random.default_rng(0).standard_normal((64, 512)).astype(np.float32)
    loader = DataLoader(x, 8, shuffle=True, seed=1, device="cuda", pin_memory=True)
    with nna.context_scope("cuda"), nna.strict_transfers(implicit_reads=True):
        sums = [(b * 2.0).sum() for b, in loader]
    order = np.concatenate([b.numpy() for b, in DataLoader(np.arange(64), 8, shuffle=True,
                                                            seed=1)])
    np.testing.assert_allclose([s.item() for s in sums],
                               (2 * x[order]).reshape(8, 8, 512).sum(axis=(1, 2)),
                               rtol=1e-5)
