"""The synced-storage state machine: copies, head, staleness and exact transfer counts,
checked step by step against a shadow model on every pair of available devices."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import nnarray as nna
from nnarray import backends

SHAPE = (3, 4)


def _device_keys() -> list[str]:
    keys = []
    for name, descs in nna.backends.available():
        keys += [f"{name}:{i}" for i in range(len(descs))]
    return keys


def _dev(key):
    name, i = key.split(":")
    return backends.get_device(name, int(i))


def _peek(key, native) -> np.ndarray:
    """A copy's contents without going through the synced storage (not counted)."""
    return np.array(_dev(key).to_host(native))


def _write(key, native, value: np.ndarray):
    """Write ``value`` into a native array in place, the backend's own way."""
    if isinstance(native, np.ndarray):
        native[...] = value
    else:
        native.set(np.ascontiguousarray(value, dtype=native.dtype))


PAIRS = list(itertools.combinations(_device_keys(), 2)) or [("numpy:0", "numpy:0")]


@pytest.mark.parametrize("pair", PAIRS, ids=["-".join(p) for p in PAIRS])
def test_state_machine(pair):
    class SyncedMachine(RuleBasedStateMachine):
        """Shadow model: value, current devices, head, transfers the rules require."""

        def __init__(self):
            super().__init__()
            self.a = nna.NdArray(SHAPE, np.int64)
            self.value = np.zeros(SHAPE, np.int64)  # never written: reads as zeros
            self.valid: set[str] = set()
            self.head: str | None = None
            self.lazy = True
            self.transfers = 0
            self.version = 0
            nna.reset_transfer_stats()

        def _expect_read(self, key):
            if key in self.valid:
                return
            if self.lazy:
                self.valid.add(key)
                return
            dst = _dev(key)
            if dst.is_host or any(_dev(k).is_host or dst.can_copy_from(_dev(k))
                                  for k in self.valid):
                self.transfers += 1
            else:  # no direct route: through the host, counted twice, host stays current
                self.transfers += 2
                self.valid.add("numpy:0")
            self.valid.add(key)

        def _expect_write(self, key):
            self.valid = {key}
            self.head = key
            self.lazy = False
            self.version += 1

        @rule(key=st.sampled_from(pair))
        def read(self, key):
            self._expect_read(key)
            x = self.a.get_data("r", key)
            np.testing.assert_array_equal(_peek(key, x), self.value)

        @rule(key=st.sampled_from(pair), v=st.integers(-2**62, 2**62))
        def write_only(self, key, v):
            x = self.a.get_data("w", key)
            self._expect_write(key)
            self.value = np.full(SHAPE, v, np.int64)
            self.value[0, 0] = v // 3
            _write(key, x, self.value)

        @rule(key=st.sampled_from(pair))
        def read_modify_write(self, key):
            self._expect_read(key)
            x = self.a.get_data("rw", key)
            self._expect_write(key)
            self.value = _peek(key, x) + 1
            _write(key, x, self.value)

        @rule(v=st.integers(-2**62, 2**62))
        def fill(self, v):
            self.a.fill(v)
            self.value = np.full(SHAPE, v, np.int64)
            self.valid, self.lazy = set(), True  # a fill keeps the device
            self.version += 1

        @rule(key=st.sampled_from(pair))
        def op_on_context(self, key):
            """An F op under a context reads its input there (implicitly)."""
            self._expect_read(key)
            with nna.context_scope(key):
                y = self.a + 0
            assert y.head == key
            np.testing.assert_array_equal(y.get_data("r", "numpy"), self.value)
            self.transfers += 0 if _dev(key).is_host else 1  # reading y back

        @precondition(lambda self: not self.lazy and len(self.valid) == 1)
        @rule(key=st.sampled_from(pair))
        def strict_read(self, key):
            if key in self.valid:
                with nna.strict_transfers():
                    with nna.context_scope(key):
                        self.a + 0
                return
            with nna.strict_transfers():
                with nna.context_scope(key):
                    with pytest.raises(nna.TransferError):
                        self.a + 0

        @invariant()
        def matches_shadow(self):
            assert set(self.a.devices) == self.valid
            assert self.a.head == self.head
            assert self.a.version == self.version
            assert nna.transfer_stats()["count"] == self.transfers
            for dev in self.a.current_devices:
                native = self.a.native(dev)
                np.testing.assert_array_equal(_peek(dev.key, native), self.value)

    SyncedMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=25,
                                              deadline=None)
    SyncedMachine.TestCase().runTest()


@pytest.mark.parametrize("key", _device_keys())
def test_natives_are_native_of_each(key):
    """``natives`` (a fused update's bulk access) reads, and for ``'rw'`` writes, each
    array as ``native`` does: versions bumped, lazy fills materialized, the other
    copies invalidated."""
    dev = _dev(key)
    a, b = nna.NdArray.from_numpy_array(np.ones(3, np.float32)), nna.zeros((2,))
    xs = nna.NdArray.natives([a, b], dev)
    assert xs[0] is a.native(dev)
    np.testing.assert_array_equal(_peek(key, xs[1]), np.zeros(2))
    va = a.version
    ws = nna.NdArray.natives([a], dev, "rw")
    assert ws[0] is a.native(dev) and a.version == va + 1 and a.head == key
    b.fill(2.0)
    np.testing.assert_array_equal(_peek(key, nna.NdArray.natives([b], dev, "rw")[0]),
                                  np.full(2, 2.0))
    assert b.lazy_fill is None and b.devices == [key]


@pytest.mark.parametrize("key", _device_keys())
def test_write_only_never_transfers(key):
    a = nna.array(np.arange(1000, dtype=np.float32))
    nna.reset_transfer_stats()
    a.get_data("w", key)
    a.get_data("w", "numpy")
    assert nna.transfer_stats()["count"] == 0


@pytest.mark.parametrize("key", [k for k in _device_keys() if k != "numpy:0"] or [
    pytest.param(None, marks=pytest.mark.skip(reason="needs a device besides the host "
                                                     "numpy:0 (routes host <-> device)"))])
def test_transfer_stats_by_route(key):
    a = nna.array(np.zeros((256, 256), np.float32))
    nna.reset_transfer_stats()
    a.get_data("r", key)
    a.get_data("rw", key)
    a.get_data("r", "numpy")
    s = nna.transfer_stats()
    nbytes = 256 * 256 * 4
    assert s["count"] == 2 and s["bytes"] == 2 * nbytes
    assert s["by_route"] == {("numpy:0", key): (1, nbytes), (key, "numpy:0"): (1, nbytes)}


def test_lazy_fill_materializes_on_each_reader_without_transfer():
    keys = _device_keys()
    a = nna.zeros((64,), np.int64)
    a.fill(2**60 + 3)
    nna.reset_transfer_stats()
    for k in keys:
        assert int(_peek(k, a.get_data("r", k))[5]) == 2**60 + 3
    assert nna.transfer_stats()["count"] == 0
    assert set(a.devices) == set(keys) and a.head == "numpy:0"  # created there; reads never move it
