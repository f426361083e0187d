"""What every way of running tasks shares: the failure a task could not report, the error and the Dask import
of scale-out, and the thread settings workers start with."""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..engine import blas_threads
from ..errors import IRError

# Workers of a local pool share the cores: each runs its BLAS on cores / workers threads, unless the user set
# a count in the environment (engine/blas_threads.py). Dask workers get the thread settings this process started
# with; like every process, they then fit the count to the machine's load before each run (unless it was set).
BLAS_THREAD_VARIABLES = blas_threads.THREAD_VARIABLES
_STARTUP_THREAD_ENV = {name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES}
DASK_EXTRA_HINT = "--dask needs dask.distributed: pip install 'irrun[dask]'"


class ParallelError(IRError):
    kind = "parallel"
    default_rule = "parallel"


@dataclass(frozen=True)
class TaskFailed:
    """The result of an item whose task could not report for itself: its worker died while running it,
    twice (the second time alone), or the task raised."""

    message: str


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ParallelError(DASK_EXTRA_HINT) from None
    return distributed
