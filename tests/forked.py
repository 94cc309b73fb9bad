"""``run``: ``subprocess.run([sys.executable, "-c", code, *args], ...)`` for the tests'
child Pythons, at a fraction of the cost. A child Python pays its imports before it does
anything (numpy; no bytecode cache in CI), so one server Python per pytest process imports
numpy once and forks a child per call (not ``ml_dtypes``: nnarray imports it only when
bfloat16 is asked for, and a child should see what a user's fresh process sees); the child
then takes the caller's environment, working directory, argv and ``sys.path``, and runs
``code`` as ``__main__``: it imports nnarray itself, so environment variables nnarray reads
at import are read as in a new process.

A server serves calls whose import-time variables of numpy and Python (``OPENBLAS_*``,
``OMP_*``, ``MKL_*``, ``NPY_*``, ``PYTHON*`` but ``PYTHONPATH``) are equal; other values get
their own server. A crash is the child's alone (its exit status is ``-signal``, as
subprocess gives); a child past ``timeout`` is killed with its server and
``subprocess.TimeoutExpired`` raised. Keep a real ``subprocess`` where the point is the
interpreter itself: its command line, ``sys.executable``, or numpy's own import. The
server imports no more than that: more objects in it made each child slower here (page
faults copying what the child's reference counts touch), and a probed device's threads
(pocl's) would not survive a fork.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SERVER = r"""
import atexit, json, os, random, sys, threading, traceback, types, warnings
import numpy as np
# Python >= 3.12 warns at a fork beside native threads; the server's are OpenBLAS's, which
# it parks and restarts around a fork (pthread_atfork)
warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
import gc
gc.freeze()  # the children's collections skip (and so do not copy) the server's objects
own = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
base = [p for p in sys.path[1:] if p not in own]
jobs = sys.stdin.buffer
while True:
    line = jobs.readline()
    if not line:
        break
    job = json.loads(line)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            for fd, (path, flags) in enumerate([(job["stdin"], os.O_RDONLY),
                                                (job["stdout"], os.O_WRONLY),
                                                (job["stderr"], os.O_WRONLY)]):
                os.dup2(os.open(path, flags), fd)
            sys.stdin = open(0, encoding="utf-8", closefd=False)
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
            sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)
            os.environ.clear()
            os.environ.update(job["env"])
            os.chdir(job["cwd"])
            path = [p for p in job["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
            sys.path[:] = ["", *path, *base]
            sys.argv = ["-c", *job["argv"]]
            random.seed()
            np.random.seed()
            main = types.ModuleType("__main__")
            sys.modules["__main__"] = main
            exec(compile(job["code"], "<string>", "exec"), main.__dict__)
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            t, e, tb = sys.exc_info()
            traceback.print_exception(t, e, tb.tb_next)  # from the code's first frame
            code = 1
        try:
            threading._shutdown()  # what an interpreter's exit does: wait for threads
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    rc = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    sys.stdout.write(json.dumps(rc) + "\n")
    sys.stdout.flush()
"""

#: Variables numpy or Python read when the server starts: a child needs a server that
#: started with the same values.
_AT_START = ("OPENBLAS", "OMP_", "MKL_", "NPY_", "PYTHON")

_servers: dict[tuple, subprocess.Popen] = {}
_lock = threading.Lock()  # one call at a time talks to the servers


def _key(env: Mapping[str, str]) -> tuple:
    return tuple(sorted((k, v) for k, v in env.items()
                        if k.startswith(_AT_START) and k != "PYTHONPATH"))


def _server(key: tuple) -> subprocess.Popen:
    p = _servers.get(key)
    if p is None or p.poll() is not None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_AT_START)}
        env.update(key)
        p = subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env, cwd=ROOT,
                             start_new_session=True)  # killpg: the server and its child
        _servers[key] = p
    return p


def _kill(key: tuple) -> None:
    p = _servers.pop(key)
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


@atexit.register
def _close() -> None:
    for p in _servers.values():
        p.stdin.close()  # the server ends at EOF
    for p in _servers.values():
        p.wait()


def run(code: str, *args: str, env: Mapping[str, str] | None = None, cwd: object = ROOT,
        input: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``code`` (argv ``args``) as ``python -c`` would with environment ``env``
    (default ``os.environ``) in ``cwd``, ``input`` on its stdin; return its exit status,
    stdout and stderr (text) as ``subprocess.run(..., capture_output=True, text=True)``
    does."""
    env = dict(os.environ if env is None else env)
    key = _key(env)
    with _lock, tempfile.TemporaryDirectory() as tmp:
        p = _server(key)
        files = {n: os.path.join(tmp, n) for n in ("stdin", "stdout", "stderr")}
        for path in files.values():
            with open(path, "w", encoding="utf-8") as f:
                f.write(input if path == files["stdin"] and input is not None else "")
        job = {"code": code, "argv": list(args), "env": env, "cwd": os.fspath(cwd), **files}
        p.stdin.write((json.dumps(job) + "\n").encode())
        p.stdin.flush()
        if not select.select([p.stdout], [], [], timeout)[0]:
            _kill(key)
            raise subprocess.TimeoutExpired(["python", "-c", code, *args], timeout)
        line = p.stdout.readline()
        if not line:  # the server itself died
            _kill(key)
            raise RuntimeError("forked.run: the server Python exited")
        rc = json.loads(line)
        out, err = _read(files["stdout"]), _read(files["stderr"])
    return subprocess.CompletedProcess(["python", "-c", code, *args], rc, out, err)


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()
