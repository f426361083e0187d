"""Tasks for tests/test_parallel.py that worker processes import (spawned workers cannot run test-local code)."""
import os
import sys
import time
from pathlib import Path


def square(x):
    return x * x


def die_on(item):
    """(value, marker path or None): a worker running value 3 dies; with a marker, only the first time.
    It dies only once its process is a few seconds old: a Dask nanny does not restart a worker that dies while
    the nanny is still starting it (a newly started worker can be handed the task at once, and on a busy machine
    the nanny can take more than a second to see it started)."""
    value, marker = item
    if value == 3 and (marker is None or not Path(marker).exists()):
        if marker is not None:
            Path(marker).write_text("died once")
        _die_when_older_than(3.0 if _in_dask_worker() else 0.5)
    return value * 10


def _in_dask_worker():
    distributed = sys.modules.get("distributed")
    try:
        return distributed is not None and distributed.get_worker() is not None
    except ValueError:
        return False


def _die_when_older_than(seconds):
    import psutil

    time.sleep(max(0.5, seconds - (time.time() - psutil.Process().create_time())))
    os._exit(17)


def raise_on(value):
    if value == 2:
        raise RuntimeError("task bug")
    return value


def slow(value):
    time.sleep(1)
    return value


def environ_value(name):
    return os.environ.get(name)


def dask_setting(name):
    """The worker's Dask configuration value `name`."""
    import dask

    return dask.config.get(name)


def profiler_running(_):
    """Whether this Dask worker's sampling profiler runs, a moment into the task (a pause takes effect on the
    worker's event loop)."""
    import distributed

    time.sleep(0.3)
    return distributed.get_worker().periodic_callbacks["profile"].is_running()


MARK = None  # set by a client before it starts a cluster: workers forked from it see the value


def worker_origin(_):
    """(MARK as this worker sees it, the worker's parent process id)."""
    return MARK, os.getppid()
