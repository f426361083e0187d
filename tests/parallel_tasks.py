"""Tasks for tests/test_parallel.py that worker processes import (spawned workers cannot run test-local code)."""
import os
import sys
import time
from pathlib import Path


def square(x):
    return x * x


def die_on(item):
    """(value, marker path or None): a worker running value 3 dies; with a marker, only the first time.
    A Dask worker dies only once its nanny has seen it started: a nanny does not restart a worker that dies
    while the nanny is still starting it (a new worker can be handed the task at once)."""
    value, marker = item
    if value == 3 and (marker is None or not Path(marker).exists()):
        if marker is not None:
            Path(marker).write_text("died once")
        if _in_dask_worker():
            _wait_until_the_nanny_has_started_this_worker()
        else:
            time.sleep(0.5)
        os._exit(17)
    return value * 10


def _in_dask_worker():
    distributed = sys.modules.get("distributed")
    try:
        return distributed is not None and distributed.get_worker() is not None
    except ValueError:
        return False


def _started_by_this_nanny(address, dask_worker=None):
    """Run in a nanny (`dask_worker` is the Nanny): whether it runs and has seen its worker at `address` start."""
    process = dask_worker.process
    return (dask_worker.status.name == "running" and dask_worker.worker_address == address
            and process is not None and process.status.name == "running")


def _wait_until_the_nanny_has_started_this_worker():
    import distributed

    worker = distributed.get_worker()
    client = distributed.get_client()
    while not client.run(_started_by_this_nanny, worker.address, workers=[worker.address], nanny=True).get(
            worker.address):
        time.sleep(0.05)


def raise_on(value):
    if value == 2:
        raise RuntimeError("task bug")
    return value


def stall(value):
    """Items 0-4 (the first chunk of 40 items on two workers: parallel.chunk_bounds) return at once, the others
    wait a minute, longer than any test waits: a run of them is still running whenever a test signals it."""
    if value >= 5:
        time.sleep(60)
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


def heartbeat_traceback_shown(closed):
    """Whether this worker would log the traceback of a heartbeat that failed on a closed connection to the
    scheduler (`closed`), or on one the scheduler refused."""
    import logging

    from distributed.comm import CommClosedError

    error = CommClosedError("in <TCP (closed) heartbeat_worker>: Stream is closed") if closed else \
        ConnectionRefusedError("refused")
    record = logging.LogRecord("distributed.worker", logging.ERROR, __file__, 0,
                               "Failed to communicate with scheduler during heartbeat.", (),
                               (type(error), error, None))
    return bool(logging.getLogger("distributed.worker").filter(record))


MARK = None  # set by a client before it starts a cluster: workers forked from it see the value


def worker_origin(_):
    """(MARK as this worker sees it, the worker's parent process id)."""
    return MARK, os.getppid()
