"""Waiting for Dask tasks, but not forever on a cluster without workers: all of them died and none was restarted
(a Dask nanny does not restart a worker that dies while the nanny is still starting it), or none connected."""
from __future__ import annotations

import threading
import time

from .tasks import ParallelError

NO_WORKERS_TIMEOUT = 60.0  # seconds a scheduler may have no worker while tasks wait (a nanny restarts one in seconds)
CHECK_INTERVAL = 1.0  # seconds between looks at the scheduler's workers while no task finishes


class Finishing:
    """The futures given to `watch`, handed out by `finished` as they finish."""

    def __init__(self, client, address: str):
        self._client, self._address = client, address
        self._some_finished = threading.Event()

    def watch(self, future) -> None:
        future.add_done_callback(lambda _: self._some_finished.set())

    def finished(self, futures) -> list:
        """Those of `futures` that are done, once one is. Raises ParallelError when the scheduler has had no
        worker for NO_WORKERS_TIMEOUT seconds meanwhile."""
        without_workers_since = None
        while True:
            self._some_finished.clear()
            done = [future for future in futures if future.done()]
            if done:
                return done
            if self._some_finished.wait(CHECK_INTERVAL):
                continue
            if self._client.nthreads():
                without_workers_since = None
                continue
            now = time.monotonic()
            if without_workers_since is None:
                without_workers_since = now
            if now - without_workers_since >= NO_WORKERS_TIMEOUT:
                raise ParallelError(f"the Dask scheduler at {self._address} has had no workers for "
                                    f"{NO_WORKERS_TIMEOUT:g} s (they died and were not restarted, or none "
                                    f"connected): {len(futures)} tasks could not run")
