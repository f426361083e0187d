"""How many threads matrix products run on, and setting it from inside this process.

By default the BLAS (OpenBLAS in NumPy's wheels) uses one thread per core. Worker processes each doing that
oversubscribe the cores, which costs more than the threads gain (measured: 20 ResNet-50 inputs on 2 cores took
2.5x longer with 2 workers than with 1), so a pool gives each worker cores / workers threads (at least one).
The same oversubscription hits a single process when other programs keep cores busy: the BLAS's threads wait
for each other at every product, and a thread that lost its core holds the others up (measured: ResNet-50 at
1.5x its one-thread time with one core busy elsewhere). So before a run (at most every CHECK_EVERY seconds)
`fit_to_load` gives products only the cores that no other process is running on, never fewer than one nor more
than the process's share: a quiet machine keeps every thread, a busy one falls back to one.

The BLAS's own threads would make the bits depend on that count (ops/blas.py), so once irrun sets a count the
BLAS runs on one thread and ops/blas.py's `matmul` runs blocks of each large product on that many threads, the
blocks fixed by the shapes: the same bits on every count. The BLAS is set through OpenBLAS's own
openblas_set_num_threads, found in the library this process has loaded (NumPy's wheels), or else through
threadpoolctl when it is installed. Environment variables would not do: NumPy reads them once, when it is
imported, and forked workers start with NumPy already imported.

A count the user chose through the environment (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS) turns
all this off: the BLAS keeps it in every run and every worker."""
from __future__ import annotations

import ctypes
import functools
import os
import time

from ..ops import blas
from ..ops.blas_accumulate import openblas_function as _openblas_function

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
FIT_TO_LOAD = True  # each run fits the product threads to the cores other processes leave free
CHECK_EVERY = 0.05  # seconds between looks at the machine's load
_clock = time.monotonic
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def user_chose(environ=os.environ) -> bool:
    return any(environ.get(name) for name in THREAD_VARIABLES)


def per_worker(workers: int, environ=os.environ) -> int | None:
    """The thread count for each of `workers` processes sharing the cores; None: leave the user's setting."""
    return None if user_chose(environ) else max(1, cores() // workers)


class _Policy:
    """This process's share of the cores (set for a pool worker) and the count the BLAS runs on now."""

    def __init__(self):
        self.active = not user_chose()
        self.share = None
        self.current = None
        self.checked = -CHECK_EVERY


_POLICY = _Policy()


def set_threads(count: int) -> bool:
    """Give the BLAS of this process `count` threads from now on, its share of the cores; False when no way
    to set them was found."""
    _POLICY.share = count
    return _apply(count)


def fit_to_load() -> None:
    """The BLAS on the cores no other process is running on (see the module's docstring)."""
    policy = _POLICY
    now = _clock()
    if not FIT_TO_LOAD or not policy.active or now - policy.checked < CHECK_EVERY:
        return
    policy.checked = now
    busy = _busy_elsewhere()
    if busy is None:
        policy.active = False
        return
    available = cores()
    count = max(1, min(policy.share or available, available - busy))
    if count != policy.current and not _apply(count):
        policy.active = False


def _busy_elsewhere() -> int | None:
    """Runnable threads of other processes now (Linux's /proc), or None when that cannot be read."""
    try:
        with open("/proc/loadavg") as file:
            runnable = int(file.read().split()[3].split("/")[0])
        own = 0
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/stat") as file:
                own += file.read().rsplit(")", 1)[1].split()[0] == "R"
    except (OSError, ValueError, IndexError):
        return None
    return max(0, runnable - own)


def _apply(count: int) -> bool:
    """Products on `count` threads (ops/blas.py), the BLAS itself on one; False when the BLAS cannot be set."""
    if not _blas_on_one_thread():
        return False
    _POLICY.current = count
    blas.set_workers(count)
    return True


@functools.lru_cache(maxsize=None)
def _blas_on_one_thread() -> bool:
    setter = _openblas_function(_SETTERS)
    if setter is not None:
        setter(ctypes.c_int(1))
        return True
    try:
        import threadpoolctl
    except ImportError:
        return False
    threadpoolctl.threadpool_limits(1, user_api="blas")
    return True


def threads() -> int | None:
    """The threads products run on now: irrun's (ops/blas.py) once it set the BLAS to one, else the BLAS's own
    count (None when it cannot be read)."""
    if _POLICY.current is not None:
        return blas.workers()
    getter = _openblas_function(_GETTERS)
    if getter is not None:
        return int(getter())
    try:
        import threadpoolctl
    except ImportError:
        return None
    counts = [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]
    return counts[0] if counts else None
