"""Waiting for Dask tasks, but not forever on a cluster without workers: all of them died and none was restarted
(a Dask nanny does not restart a worker that dies while the nanny is still starting it), or none connected."""
from __future__ import annotations

import time

from .ctrl_c import KeptInterrupt
from .tasks import ParallelError

# Seconds a scheduler may have no worker while tasks wait. A nanny restarts a worker in seconds, but on a loaded
# machine a spawned worker took over a minute to import what it needs (a test run at load 12 under nice 10).
NO_WORKERS_TIMEOUT = 180.0
CHECK_INTERVAL = 1.0  # seconds between looks at the scheduler's workers while no task finishes
POLL_INTERVAL = 0.02  # seconds between looks for finished tasks (Dask's as_completed itself looks every 0.1 s)


class Finishing:
    """The futures given to `watch`, handed out by `finished` as they finish. (No done-callbacks: Dask runs
    them on a thread that would outlive the client, and a process with other threads cannot fork a host.)"""

    def __init__(self, distributed, client, address: str):
        self._client, self._address, self._ctrl_c = client, address, KeptInterrupt()
        self._ctrl_c.start()
        self._futures = distributed.as_completed(loop=client.loop)

    def close(self) -> None:
        self._ctrl_c.stop()

    def watch(self, future) -> None:
        self._futures.add(future)

    def finished(self) -> list:
        """The watched futures that are done, once one is. Raises ParallelError when the scheduler has had no
        worker for NO_WORKERS_TIMEOUT seconds meanwhile."""
        without_workers_since, next_check = None, time.monotonic() + CHECK_INTERVAL
        while not self._futures.has_ready():
            self._ctrl_c.check()
            time.sleep(POLL_INTERVAL)
            now = time.monotonic()
            if now < next_check:
                continue
            next_check = now + CHECK_INTERVAL
            if self._client.nthreads():
                without_workers_since = None
                continue
            if without_workers_since is None:
                without_workers_since = now
            if now - without_workers_since >= NO_WORKERS_TIMEOUT:
                raise ParallelError(f"the Dask scheduler at {self._address} has had no workers for "
                                    f"{NO_WORKERS_TIMEOUT:g} s (they died and were not restarted, or none "
                                    f"connected): {self._futures.count()} tasks could not run")
        self._ctrl_c.check()
        return self._futures.next_batch(block=False)
