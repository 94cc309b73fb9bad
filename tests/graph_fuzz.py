"""Mutated saved graphs: seeds covering the ops whose attributes or constants reach
kernels, a mutator over their JSON, and a runner that loads, binds and evaluates one
mutated file, saying how it ended.

Used by ``test_graph_fuzz.py`` (in a subprocess, so a crash fails the test) and runnable
as a script that counts outcomes over many cases (``python tests/graph_fuzz.py BACKEND
N``): ``ok`` (the result matches the numpy backend's), ``typed`` (an ``NnarrayError``),
``untyped`` (any other exception) or ``wrong`` (a result the reference disagrees with).
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

import numpy as np
from helpers import CHILD_LIMIT

import nnarray as nna
from nnarray import functions as F
from nnarray.errors import NnarrayError
from nnarray.grad import Graph, Variable
from nnarray.ops.indexing import scatter_add

#: Integers a mutation puts in place of another: edges, negatives and huge counts.
EDGES = (0, 1, 2, 3, 4, 5, -1, -2, -5, 7, 8, 64, 4096, 2**20, 2**31, 2**40, -(2**31))


def seeds() -> list[str]:
    """Valid saved graphs (JSON text) over small arguments."""
    x = Variable((4,), name="x")
    m = Variable((2, 3, 4), name="m")
    img = Variable((1, 2, 4, 4), name="img")
    w = Variable((3, 2, 3, 3), name="w")
    t = Variable((2,), dtype=np.int64, name="t")
    idx = nna.asarray(np.array([0, 3, 1], np.int64))
    out = [
        F.exp(x[1:3]) + x[::-1][:2],
        F.sum(x[idx] * 2.0),
        scatter_add(x, nna.asarray(np.array([0, 2, 2, 1], np.int64)), size=3),
        F.transpose(m, (2, 0, 1)).reshape((4, 6))[1:, ::2],
        F.concatenate([m[:, :1], m[:, 1:]], axis=1).sum(axis=2),
        F.broadcast_to(x, (3, 4)) + F.cumulative_sum(x),
        F.take(m, nna.asarray(np.array([2, 0], np.int64)), axis=2),
        F.softmax(m, axis=1) + F.max(m, axis=0, keepdims=True),
        F.one_hot(t, 3),
        F.conv2d(img, w, pad=1, stride=1),
        F.max_pooling(img, (2, 2)),
        F.matmul(m, F.transpose(m, (0, 2, 1))),
        F.argmax(m, axis=2),
    ]
    return [Graph(o).to_json() for o in out] + _more_seeds(x, m, img, t)


def _more_seeds(x: Variable, m: Variable, img: Variable, t: Variable) -> list[str]:
    """Seeds over the other ops with attributes: pooling, col2im, casts, sorting,
    losses, axes."""
    from nnarray.ops import sorting as sort_ops
    from nnarray.xp import sorting
    cols = Variable((1, 8, 25), name="cols")
    lab = Variable((2, 4), dtype=np.int64, name="lab")
    out = [
        F.col2im(cols, (2, 4, 4), (2, 2), stride=1, pad=1),
        F.average_pooling(img, (2, 2), stride=(1, 2), pad=(1, 0)),
        F.im2col(img, (3, 2), stride=(2, 1), pad=(1, 0), dilation=(1, 2)),
        F.cast(F.clip(m, -0.5, 0.5) * 4.0, np.int32) + F.leaky_relu(m, 0.1),
        F.where(F.greater(m, 0.0), m, F.cumulative_sum(m, axis=1)),
        sorting.sort(m, axis=1) + F.cast(sorting.argsort(m, axis=2), np.float32),
        sort_ops.searchsorted(F.cumulative_sum(F.abs(x)), F.reshape(m, (24,)), side="left"),
        F.softmax_cross_entropy(F.transpose(m, (0, 2, 1)), lab, axis=2),
        F.one_hot(t, 5, axis=0) * F.mean(m, axis=(0, 2), keepdims=True)[0, 0],
        F.stack(F.split(m, 3, axis=1), axis=0),
        F.take(F.reshape(m, (6, 4)), nna.asarray(np.array([5, -1, 0], np.int64)), axis=0),
        F.max(m, axis=(0, 2)) + F.prod(m, axis=0)[:, 0],
        F.batch_normalization(img, *(nna.asarray(np.full((1, 2, 1, 1), v, np.float32))
                                     for v in (1.5, 0.5, 0.25, 2.0)), training=False),
        F.affine(F.reshape(m, (6, 4)), F.reshape(m, (4, 6)), F.reshape(m, (24,))[:6]),
        F.mean_squared_error(m, F.dropout(m, 0.5, training=False) * 0.5),
    ]
    return [Graph(o).to_json() for o in out]


def _ints(doc: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every integer (not bool) inside ``doc``."""
    found = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            found += _ints(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found += _ints(v, path + (i,))
    elif isinstance(doc, int) and not isinstance(doc, bool):
        found.append(path)
    return found


def _containers(doc: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every dict and list inside ``doc`` (the root included)."""
    found = [path] if isinstance(doc, (dict, list)) else []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) \
        if isinstance(doc, list) else ()
    for k, v in items:
        found += _containers(v, path + (k,))
    return found


def _at(doc: Any, path: tuple) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _set(doc: Any, path: tuple, value: Any) -> None:
    _at(doc, path[:-1])[path[-1]] = value


_DEEP = "<deep>"


def mutate(text: str, rnd: random.Random, n: int = 1) -> str:
    """``text`` with ``n`` random mutations: an integer replaced (attributes, constant
    values and shapes, references), a key dropped, a list or its item replaced, an op
    renamed, a value nested deep."""
    doc = json.loads(text)
    for _ in range(n):
        try:
            doc = _mutate_once(doc, rnd)
        except (TypeError, KeyError, IndexError, AttributeError):
            pass  # nothing of that kind left to mutate
        if isinstance(doc, str):
            return doc  # nested too deep to parse here: final
    return json.dumps(doc)


def _mutate_once(doc: Any, rnd: random.Random) -> Any:
    """One mutation of ``doc`` (in place): the document, or text nested too deep."""
    kind = max(rnd.randrange(8) - 2, 0)
    if kind <= 1:  # an integer: of an attribute or constant (kind 0), or anywhere
        paths = _ints(doc)
        if kind == 0:
            paths = [p for p in paths if "attrs" in p or "constants" in p] or paths
        if paths:
            p = rnd.choice(paths)
            _set(doc, p, rnd.choice(EDGES) if rnd.random() < 0.7 else
                 _at(doc, p) + rnd.choice((-1, 1)))
    elif kind == 2:  # drop a key or a list item
        paths = [p for p in _containers(doc) if _at(doc, p)]
        p = rnd.choice(paths)
        c = _at(doc, p)
        key = rnd.choice(list(c)) if isinstance(c, dict) else rnd.randrange(len(c))
        del c[key]
    elif kind == 3:  # a value of another type
        paths = [p for p in _containers(doc) if p]
        p = rnd.choice(paths)
        _set(doc, p, rnd.choice([None, "x", 1.5, [], {}, True, [1, 2], {"tuple": [9]}]))
    elif kind == 4:  # an op or a function call renamed (to one with other attributes)
        calls = [e["call"] for e in doc["nodes"] if isinstance(e, dict) and "call" in e]
        if calls and rnd.random() < 0.3:
            rnd.choice(calls)["function"] = rnd.choice(
                ["getitem", "conv2d", "softmax", "split", "stack", "affine", "dropout",
                 "batch_normalization", "mean_squared_error", "max_pooling"])
            return doc
        nodes = [e for e in doc["nodes"] if isinstance(e, dict) and "op" in e]
        if nodes:
            rnd.choice(nodes)["op"] = rnd.choice(
                ["slice", "scatter_add", "gather", "take", "reshape", "transpose",
                 "broadcast_to", "im2col", "col2im", "one_hot", "sum", "softmax",
                 "concatenate", "cumulative_sum", "max", "argmax", "exp", "add"])
    else:  # nesting, deep or not (spliced into the text: json nests by recursion)
        paths = [p for p in _containers(doc) if p]
        _set(doc, rnd.choice(paths), _DEEP)
        depth = rnd.choice((3, 50, 5000, 100000))
        opened, closed = rnd.choice([('{"tuple": [', "]}"), ("[", "]"),
                                     ('{"items": [', '], "kind": "list"}')])
        text = json.dumps(doc).replace(json.dumps(_DEEP), opened * depth + "1" +
                                       closed * depth, 1)
        return json.loads(text) if depth < 500 else text
    return doc


def arguments(g: Graph, grow: int = 0, seed: int = 0) -> dict:
    """Small values for every argument of ``g`` (integers in ``[0, 3)``), ``grow`` longer
    along their first axis than the saved shapes (binding to new shapes)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, v in g.argument_variables().items():
        shape = v.shape[:1] and (max(v.shape[0] + grow, 0),) + v.shape[1:]
        if np.dtype(v.dtype).kind in "iu":
            a = rng.integers(0, 3, shape).astype(v.dtype)
        elif np.dtype(v.dtype).kind == "b":
            a = rng.random(shape) < 0.5
        else:
            a = rng.standard_normal(shape).astype(v.dtype)
        out[name] = nna.NdArray.from_numpy_array(a)
    return out


def run_case(text: str, backend: str) -> tuple[str, str]:
    """``(outcome, detail)`` of loading ``text``, then binding it on ``backend`` to
    arguments of the saved shapes and of shapes one longer and one shorter, and running
    it; results other than numpy's are compared with the numpy backend's."""
    try:
        g = Graph.from_json(text)
    except NnarrayError as e:
        return "typed", f"{type(e).__name__}: {str(e)[:160]}"
    except Exception as e:  # noqa: BLE001 - what the fuzz looks for
        return "untyped", f"{type(e).__name__}: {str(e)[:160]}"
    if _big(g):
        return "typed", "big arrays (not run)"
    worst = ("typed", "")
    for grow in (0, 1, -1):
        outcome, detail = _bound(g, backend, arguments(g, grow))
        if outcome not in ("ok", "typed"):
            return outcome, f"{detail} (arguments grown by {grow})"
        if grow == 0:
            worst = (outcome, detail)
    return worst


#: The most elements an argument or node output of a case may have to be run (files
#: asking for more memory are another matter: they are not run here).
BIG = 1 << 22


def _big(g: Graph) -> bool:
    sizes = [v.shape for v in g.argument_variables().values()]
    sizes += [shape for n in g._order for shape, _ in getattr(n, "out_metas", ())]
    return any(int(np.prod(s, dtype=np.float64)) > BIG for s in sizes)


def _bound(g: Graph, backend: str, args: dict) -> tuple[str, str]:
    """One run of ``g`` on ``args``, checked against the numpy backend's."""
    try:
        ex = g.bind(backend, args, grad_req="null")
        if _big(ex.graph):
            return "typed", "big arrays (not run)"
        got = [o.numpy() for o in ex.forward(is_train=False)]
    except NnarrayError as e:
        return "typed", f"{type(e).__name__}: {str(e)[:160]}"
    except Exception as e:  # noqa: BLE001 - what the fuzz looks for
        return "untyped", f"{type(e).__name__}: {str(e)[:160]}"
    for o, v in zip(got, ex.graph.output_variables()):
        if o.shape != v.shape or o.dtype != v.dtype:
            return "wrong", f"output {o.shape} {o.dtype}, inferred {v.shape} {v.dtype}"
    if backend != "numpy":
        try:
            want = [o.numpy() for o in g.eval("numpy", **args)]
        except Exception as e:  # noqa: BLE001 - numpy refuses what the backend ran
            return "wrong", f"ran, where numpy raises {type(e).__name__}: {str(e)[:120]}"
        for a, b in zip(got, want):
            if not np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True):
                return "wrong", "differs from the numpy backend"
    return "ok", ""


def cases(n: int, seed: int = 0) -> list[str]:
    """``n`` mutated seeds, reproducibly."""
    rnd = random.Random(seed)
    base = seeds()
    return [mutate(rnd.choice(base), rnd, rnd.choice((1, 1, 2, 3))) for _ in range(n)]


def survey(backend: str, n: int, env: dict | None = None,
           timeout: float = CHILD_LIMIT) -> list:
    """``[(case, outcome, detail)]`` of the first ``n`` cases, each run by this script in a
    child process that is started again after a crash (outcome ``crash``: the exit
    status) or a hang (``hang``: no answer in ``timeout`` seconds, then killed)."""
    import select
    import subprocess
    out: list = []
    while len(out) < n:
        p = subprocess.Popen([sys.executable, __file__, backend, str(n), str(len(out))],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env=env)
        while len(out) < n:
            if not select.select([p.stdout], [], [], timeout)[0]:
                p.kill()
                p.wait()
                out.append((len(out), "hang", f"no answer in {timeout} s"))
                break
            line = p.stdout.readline()
            if not line:
                p.wait()
                out.append((len(out), "crash", f"exit status {p.returncode}"))
                break
            i, outcome, detail = line.rstrip("\n").split("\t", 2)
            out.append((int(i), outcome, detail))
        p.stdout.close()
        if p.poll() is None:
            p.kill()
            p.wait()
    return out


if __name__ == "__main__":  # BACKEND N [FIRST]: one line a case; survey BACKEND N: counts
    if sys.argv[1] == "survey":
        from collections import Counter
        res = survey(sys.argv[2], int(sys.argv[3]))
        for i, outcome, detail in res:
            if outcome not in ("ok", "typed"):
                print(f"{i}\t{outcome}\t{detail}")
        print(dict(Counter(o for _, o, _ in res)))
        sys.exit(0)
    be, n = sys.argv[1], int(sys.argv[2])
    first = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    for i, text in enumerate(cases(n)[first:], first):
        outcome, detail = run_case(text, be)
        print(f"{i}\t{outcome}\t{detail}", flush=True)
