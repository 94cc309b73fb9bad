"""Every CUDA C program of the CUDA backend compiles under NVRTC (the compiler CuPy uses,
which needs no GPU) for compute_70 and compute_90, in every specialisation the backend
can produce. Runs on every machine: the test extra installs NVRTC, CuPy and CUDA's
headers (CuPy imports without a GPU; only its code generator and headers are used).

The programs come from the backend's table (``nnarray/backends/cuda/table.py``), so a
kernel declared there is compiled without editing this file; a scan of nnarray's
files checks that the table holds every ``__global__`` function and that every CuPy
kernel constructor is one the table feeds.

- ``raw.Source`` (``cupy.RawKernel``): each dtype or item size, CuPy's RawKernel options.
- ``table.Elementwise`` (``cupy.ElementwiseKernel``): each dtype and argument layout,
  wrapped by CuPy's own generator with CuPy's headers prepended, as its ``__call__`` does.
"""

from __future__ import annotations

import os
import re
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

import nnarray
from nnarray.backends.cuda import programs, table

pytestmark = pytest.mark.skipif(sys.platform == "darwin",
                                reason="NVIDIA ships no NVRTC or CuPy wheels for macOS")

def _archs() -> tuple[str, str]:
    """compute_70 and compute_90, or the oldest architecture the installed NVRTC still
    targets in place of compute_70 (NVRTC 13, on GPU machines, dropped Volta)."""
    try:
        from cuda.bindings import nvrtc
        have = {int(a) for a in nvrtc.nvrtcGetSupportedArchs()[1]}
    except Exception:  # not installed: the tests say so when they run
        return ("compute_70", "compute_90")
    return (f"compute_{70 if 70 in have or not have else min(have)}", "compute_90")


ARCHS = _archs()
#: Kernels NVRTC cannot compile this way, with the reason (their cases must fail).
UNCOMPILABLE: dict[str, str] = {}
#: NVRTC notes that say nothing about the source.
_BENIGN = re.compile(r"nvrtc: warning: Architectures prior to .* are deprecated.*\n?")
#: ElementwiseKernel argument layouts CuPy can pass: (ndim, C-contiguous, 32-bit index).
LAYOUTS = {"0-d": (0, True, True), "1-d": (1, True, True),
           "3-d strided 64-bit": (3, False, False)}
#: Where CuPy kernel objects may be constructed: the table's two sinks.
SINKS = {"RawKernel": "backends/cuda/raw.py", "ElementwiseKernel": "backends/cuda/table.py"}


class Case(NamedTuple):
    kind: str  # the CuPy class that compiles it
    kernels: str  # its __global__ function(s)
    variant: str  # dtype, item size or argument layout
    arch: str
    entry: Any  # the table entry
    key: Any  # the specialisation

    @property
    def id(self) -> str:
        return f"{self.kernels}-{self.variant}-{self.arch}".replace(" ", "_")


def _cases() -> list[Case]:
    sources, elementwise = programs.load()
    cases = []
    for arch in ARCHS:
        for src in sources:
            for key in src.variants:
                variant = f"{key}-byte" if src.by == "itemsize" else \
                    key if src.by == "plain" else np.dtype(key).name
                cases.append(Case("RawKernel", "+".join(src.names), variant, arch, src, key))
        for e in elementwise:
            for dt in e.dtypes:
                for layout in LAYOUTS:
                    cases.append(Case("ElementwiseKernel", e.name, f"{dt} {layout}", arch, e,
                                      (dt, layout)))
    return cases


CASES = _cases()


# -- the compiler and CuPy's wrapping --------------------------------------------------
class _Env(NamedTuple):
    nvrtc: Any
    version: str
    cupy: Any
    core: Any  # cupy._core.core

    def options(self, own: tuple[str, ...], arch: str) -> list[str]:
        """CuPy's NVRTC options around the backend's ``own``, in CuPy's order:
        ``compile_with_cache`` assembles them and adds -ftz=true, the NVRTC call adds
        the arch and the default execution space."""
        return [*self.core.assemble_cupy_compiler_options(tuple(own)), "-ftz=true",
                f"-arch={arch}", "--device-as-default-execution-space"]


@pytest.fixture(scope="module")
def env() -> _Env:
    try:
        import cupy
        from cuda.bindings import nvrtc
        from cupy._core import core
        _, major, minor = nvrtc.nvrtcVersion()
        env = _Env(nvrtc, f"{major}.{minor}", cupy, core)
        env.options((), ARCHS[0])  # finds CUDA's headers
    except Exception as e:  # a missing piece fails, never skips
        pytest.fail(f"NVRTC, CuPy or CUDA's headers missing ({type(e).__name__}: {e}); "
                    "install the test extra: pip install -e '.[test]'")
    return env


def _elementwise_code(cupy: Any, e: table.Elementwise, dtype: str, layout: str,
                      in_dtypes: tuple[str, ...] | None = None) -> str:
    """The code ``ElementwiseKernel.__call__`` compiles, from CuPy's own generator, for
    inputs of ``dtype`` (or of ``in_dtypes`` each)."""
    from cupy._core import _carray, _kernel, core
    k = e.build(cupy)
    in_types, out_types, type_map = k._decide_params_type(
        tuple(np.dtype(d) for d in (in_dtypes or (dtype,) * k.nin)), ())
    ndim, contiguous, index32 = LAYOUTS[layout]
    infos = tuple(_kernel._ArgInfo(1, cupy.ndarray, t, ndim, contiguous, index32)
                  for t in in_types + out_types)  # 1: an ndarray argument
    infos += (_kernel._ArgInfo(2, _carray.Indexer, None, ndim, True, index32),)  # 2: indexer
    code = _kernel._get_elementwise_kernel_code(infos, type_map, k.params, k.operation,
                                                k.name, k.preamble, **k.kwargs)
    return "".join(f"#include <{h}>\n" for h in core._cupy_header_list) + code


def _source(env: _Env, case: Case) -> tuple[str, tuple[str, ...]]:
    """The code and the backend's own options for ``case``."""
    if case.kind == "RawKernel":
        return case.entry.variants[case.key], ()
    code = _elementwise_code(env.cupy, case.entry, *case.key)
    return code, case.entry.options


def _nvrtc(env: _Env, code: str, options: list[str]) -> tuple[bool, str]:
    """``(compiled, log)`` of ``code`` (cuda.bindings releases the GIL while compiling)."""
    nvrtc = env.nvrtc
    err, prog = nvrtc.nvrtcCreateProgram(code.encode(), b"kernel.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    try:
        opts = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return err == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.rstrip(b"\0").decode(errors="replace")


def _compile(env: _Env, case: Case) -> tuple[bool, str, str, list[str]]:
    code, own = _source(env, case)
    options = env.options(own, case.arch)
    ok, log = _nvrtc(env, code, options)
    return ok, _BENIGN.sub("", log).strip(), code, options


_INCLUDE = re.compile(r"^[ \t]*#include\b.*$", re.M)


def _batch_key(env: _Env, case: Case) -> tuple | None:
    """Cases of one key compile as one program (``_batch``): ElementwiseKernels of one
    architecture, options and set of headers (no case sees a header it does not include
    itself); ``None``: a RawKernel, compiled alone."""
    if case.kind != "ElementwiseKernel":
        return None
    code, own = _source(env, case)
    return case.arch, own, frozenset(m.strip() for m in _INCLUDE.findall(code))


def _batch(codes: list[str]) -> str:
    """One program holding every code of ``codes``: their headers once, then each code in
    a namespace of its own, its kernel there (C++ linkage: the names may repeat)."""
    heads = sorted({m.strip() for code in codes for m in _INCLUDE.findall(code)})
    bodies = [f"namespace nna_case_{i} {{\n" +
              _INCLUDE.sub("", code).replace('extern "C" __global__', "__global__") + "\n}\n"
              for i, code in enumerate(codes)]
    return "\n".join(heads) + "\n" + "".join(bodies)


def _compile_batch(env: _Env, cases: list[Case]) -> bool:
    """Whether ``cases`` compile as one program with an empty log."""
    codes = [_source(env, c)[0] for c in cases]
    ok, log = _nvrtc(env, _batch(codes), env.options(cases[0].entry.options, cases[0].arch))
    return ok and not _BENIGN.sub("", log).strip()


@pytest.fixture(scope="module")
def compiled(request, env: _Env) -> dict[str, Future]:
    """The selected cases compiling in parallel: case id -> future of ``_compile``, or of
    whether its batch compiled clean (``_batch_key``: one NVRTC run for all the cases of
    a key, where one each paid the headers each time; a case whose batch failed compiles
    alone in its test, which then fails by name)."""
    selected = [c for c in CASES if c.id in {i.callspec.id for i in request.session.items
                                               if getattr(i, "originalname", "") ==
                                               "test_nvrtc_compiles"}]
    batches: dict[tuple, list[Case]] = {}
    for c in selected:
        key = _batch_key(env, c)
        if key is not None:
            batches.setdefault(key, []).append(c)
    pool = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1))
    futures = {c.id: pool.submit(_compile, env, c) for c in selected
               if _batch_key(env, c) is None}
    for group in batches.values():
        done = pool.submit(_compile_batch, env, group)
        futures.update({c.id: done for c in group})
    yield futures
    pool.shutdown(cancel_futures=True)


def _numbered(code: str) -> str:
    return "\n".join(f"{i:4} {line}" for i, line in enumerate(code.splitlines(), 1))


# -- the tests -------------------------------------------------------------------------
@pytest.mark.parametrize("case", [
    pytest.param(c, id=c.id, marks=[pytest.mark.xfail(reason=UNCOMPILABLE[c.kernels],
                                                      strict=True)]
                 if c.kernels in UNCOMPILABLE else []) for c in CASES])
def test_nvrtc_compiles(case: Case, compiled: dict[str, Future], env: _Env):
    got = compiled[case.id].result()
    if got is True:  # its batch compiled clean
        return
    ok, log, code, options = _compile(env, case) if got is False else got
    assert ok and not log, (
        f"{case.kind} {case.kernels} for {case.variant}, {case.arch}: NVRTC {env.version} "
        f"{'rejected it' if not ok else 'warned'}:\n{log}\noptions: {' '.join(options)}\n"
        f"source:\n{_numbered(code)}")


@pytest.mark.parametrize("which", ["float rows", "float16 rows", "integer rows",
                                   "special constants"])
def test_nvrtc_compiles_fused_programs(env: _Env, which: str):
    """Every row that fuses, inside one generated ``fused_elementwise`` kernel
    (``backends/cuda/fused.py``) with mixed input dtypes and constants, compiles: the
    programs ``tests/ops/test_fusion.py`` checks on numpy and OpenCL; so do infinite, NaN and
    bool constants, and float16 inputs (read as float, outputs rounded to CuPy's
    ``float16``). (The table's samples, the chain and its backward, are compiled with
    the other entries, float16 too.)"""
    from helpers import fused_rows, row_program, special_program

    from nnarray.backends.cuda import fused
    if which == "special constants":
        program, dts = special_program(), ("float32",)
    else:
        integral = which == "integer rows"
        program = row_program(fused_rows(integral), integral)
        f = "float16" if which == "float16 rows" else "float32"
        dts = ("int32", "int64", "int32") if integral else (f, "float64", f)
    e = fused.elementwise(program, dts)
    code = _elementwise_code(env.cupy, e, dts[0], "3-d strided 64-bit", dts)
    for arch in ARCHS:
        ok, log = _nvrtc(env, code, env.options(e.options, arch))
        log = _BENIGN.sub("", log).strip()
        assert ok and not log, f"{arch}: NVRTC {env.version}:\n{log}\nsource:\n{_numbered(code)}"


def test_nvrtc_sources_are_what_the_backend_hands_cupy(env: _Env):
    """``raw.kernel``/``kernel_bytes`` give CuPy exactly the code compiled above, with no
    options of the backend's own (making a ``cupy.RawKernel`` compiles nothing)."""
    from nnarray.backends.cuda import raw
    sources, _ = programs.load()
    for src in sources:
        get = {"itemsize": raw.kernel_bytes, "plain": raw.kernel_plain}.get(src.by, raw.kernel)
        for key, code in src.variants.items():
            for name in src.names:
                k = get(src, name, key)
                assert isinstance(k, env.cupy.RawKernel)
                assert (k.code, k.name, k.options) == (code, name, ())


def _package_files() -> dict[str, str]:
    """Every Python file of nnarray (CUDA C outside the CUDA backend is caught too)."""
    root = Path(nnarray.__file__).parent
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.py"))}


def _module(path: str) -> str:
    """The module name of a file of nnarray (``backends/cuda/raw.py`` ->
    ``nnarray.backends.cuda.raw``)."""
    return "nnarray." + path[:-3].replace("/", ".").removesuffix(".__init__")


def test_nvrtc_table_covers_every_global_function():
    """Every ``__global__`` function written in nnarray is in a ``raw.Source`` that the
    table lists (a source defined outside ``programs.load()``'s modules is not)."""
    sources, elementwise = programs.load()
    listed = {n for s in sources for n in s.names}
    assert len(listed) == sum(len(s.names) for s in sources), "a kernel name is repeated"
    assert {e.name for e in elementwise}.isdisjoint(listed)
    found = {(f, n) for f, text in _package_files().items()
             for n in re.findall(r"__global__\s+void\s+(\w+)", text)}
    assert found, "the scan found no kernel at all"
    missing = sorted(f"{f}: {n}" for f, n in found if n not in listed)
    assert not missing, ("CUDA kernels outside the table (declare them with raw.Source in a "
                         f"module that programs.load() imports): {missing}")


def test_nvrtc_table_covers_every_cupy_kernel_constructor():
    """CuPy kernel objects are made only by the table's sinks, and every ``raw.Source``
    and ``Elementwise`` written in nnarray is one that the table lists."""
    files = _package_files()
    ctors = sorted(f"{f}: {c}" for f, text in files.items()
                   for c in re.findall(r"\b(ElementwiseKernel|ReductionKernel|RawKernel|"
                                       r"RawModule)\s*\(", text) if SINKS.get(c) != f)
    assert not ctors, ("CuPy kernels constructed outside the table's sinks "
                       f"{SINKS} (declare them in table.py so NVRTC checks them): {ctors}")
    for name, sink in SINKS.items():
        assert re.search(rf"\b{name}\s*\(", files[sink]), f"{sink} no longer makes {name}"
    sources, elementwise = programs.load()
    for cls, listed in (("Source", sources), ("Elementwise", elementwise)):
        where = [f for f, t in files.items() if re.search(rf"(?<!class )\b{cls}\(", t)]
        unloaded = [f for f in where if _module(f) not in sys.modules]
        assert not unloaded, (f"{cls}(...) written in {unloaded}, modules programs.load() does "
                              "not import: import them there")
        made = sum(len(re.findall(rf"(?<!class )\b{cls}\(", files[f])) for f in where)
        assert made <= len(listed), f"{made} {cls}(...) written, {len(listed)} in the table"
