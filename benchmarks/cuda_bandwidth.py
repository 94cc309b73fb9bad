"""Large elementwise work on CUDA as a fraction of the device's memory bandwidth.

Run by hand on a GPU machine (``.ci/gpu`` does): ``python -m benchmarks.cuda_bandwidth``.
Times, with CUDA events, ``y = 2x`` on 2^26 float32 (256 MiB in, 256 MiB out) through
nnarray, CuPy, torch and a plain vectorized RawKernel, and a device-to-device copy as the
attainable rate; prints GB/s counting bytes read and written.
"""

from __future__ import annotations

import sys

import numpy as np

N = 1 << 26
REPS = 20

_VEC = r"""
extern "C" __global__ void scale4(const float4* __restrict__ x, float4* __restrict__ y,
                                  float a, long long n4) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
         i += (long long)gridDim.x * blockDim.x) {
        float4 v = x[i];
        y[i] = make_float4(a * v.x, a * v.y, a * v.z, a * v.w);
    }
}
"""


def _time(cupy, fn) -> float:
    fn()
    cupy.cuda.Device().synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(REPS):
        fn()
    end.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / 1e3 / REPS


def main() -> int:
    import cupy

    import nnarray as nna
    import nnarray.functions as F
    x = cupy.random.random(N, dtype=cupy.float32)
    out = cupy.empty_like(x)
    two = np.float32(2)
    rows = {"device-to-device copy": lambda: cupy.copyto(out, x),
            "cupy x * 2": lambda: x * two}
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    k = cupy.RawKernel(_VEC, "scale4")
    rows["RawKernel float4 grid-stride"] = lambda: k((sms * 8,), (256,), (x, out, two, N // 4))
    with nna.context_scope("cuda"):
        a = nna.from_dlpack(x)
        rows["nnarray F.mul(x, 2.0)"] = lambda: F.mul(a, 2.0)
        try:
            import torch
            t = torch.from_dlpack(x)
            rows["torch x * 2"] = lambda: t * 2.0
        except ImportError:
            pass
        for name, fn in rows.items():
            s = _time(cupy, fn)
            print(f"{name:32s} {s * 1e6:9.1f} us  {2 * 4 * N / s / 1e9:7.0f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
