"""`--dask local`: a Dask LocalCluster of single-threaded worker processes on this machine.

From a process that runs no other Python thread (the command line), the cluster lives in a host process
forked from it. The host imports Dask while this process does (on two cores: one import's time), then starts
the workers by forking itself, so they inherit Dask, NumPy and irrun already imported (start and close 0.2 s
against 1.3 s for spawned workers, measured on 2 cores). Its main thread only runs the cluster's event loop,
so a nanny that forks a replacement worker does not fork from inside another thread's Python code. The host
closes the cluster when this process closes its end of a pipe, or dies.
Otherwise (other threads running, or no fork on this system) the cluster runs in this process and starts its
workers from a forkserver (spawns them where the system has none).
"""
from __future__ import annotations

import importlib.util
import logging
import os
import select
import signal
import sys
import threading
import time
import warnings
from contextlib import contextmanager

from ..engine import heap
from .tasks import _STARTUP_THREAD_ENV, DASK_EXTRA_HINT, ParallelError, _describe, _distributed

START_TIMEOUT = 60.0  # seconds for the host to report its scheduler's address
CLOSE_TIMEOUT = 10.0  # seconds for the host to close the cluster and exit before it is killed
POLL_INTERVAL = 0.05  # seconds between looks at a starting host
TICK_INTERVAL = "1s"
WORKER_STOP_TIMEOUT = 0.5  # seconds a stopping host gives its workers' tasks before their processes are killed


def can_fork_host() -> bool:
    """Linux (elsewhere Python itself avoids fork) and no other Python thread in this process."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


class LocalDaskCluster:
    """A LocalCluster of `jobs` workers for the length of a `with` block. It starts on construction;
    `address()` waits until its scheduler is up."""

    def __init__(self, jobs: int):
        if importlib.util.find_spec("distributed") is None:
            raise ParallelError(DASK_EXTRA_HINT)
        self._host = _Host(jobs) if can_fork_host() else None
        self._cluster = None if self._host is not None else in_process_cluster(_distributed(), jobs)

    def address(self) -> str:
        return self._host.address() if self._host is not None else self._cluster.scheduler_address

    def close(self) -> None:
        if self._host is not None:
            self._host.close()
        else:
            self._cluster.close()

    def __enter__(self) -> LocalDaskCluster:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


@contextmanager
def _cluster_settings():
    """Dask's settings for irrun's workers, applied in this process while a cluster starts. Workers get the
    BLAS thread settings this process started with: Dask's nannies would set them to 1, and write that into
    os.environ too, both undone here. Nor do they get Dask's MALLOC_TRIM_THRESHOLD_ (see irrun/engine/heap.py), nor
    run Dask's sampling profiler: every 10 ms it takes the GIL to walk the task thread's stack, which cost
    checks of small IRs about a sixth of their throughput (measured: 75 against 87 files/s, the pool 100).
    Their event loops (and the scheduler's) check they are not blocked every TICK_INTERVAL rather than every
    20 ms: an idle cluster of two workers then takes 4% of a core instead of 11% (measured)."""
    import dask

    spawn_environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ"), **_STARTUP_THREAD_ENV)
    spawn_environ[heap.TRIM_VARIABLE] = None  # None: the nanny does not set it
    saved = {name: os.environ.get(name) for name in spawn_environ}
    _set_environ(_STARTUP_THREAD_ENV)
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ": spawn_environ,
                              "distributed.worker.profile.enabled": False,
                              "distributed.admin.tick.interval": TICK_INTERVAL}):
            yield
    finally:
        _set_environ(saved)


def _set_environ(values: dict) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = str(value)


def _cluster_arguments(jobs: int) -> dict:
    return dict(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=":0", host="127.0.0.1",
                silence_logs=logging.ERROR)


def in_process_cluster(distributed, jobs: int):
    """A distributed.LocalCluster in this process, with irrun's worker settings. Where the system has one, its
    workers are forked from a forkserver, a single-threaded process that Dask makes import distributed and NumPy
    once, rather than each spawned to import them again (the Dask tests of tests/test_parallel*.py, which start
    such clusters: 45 s of CPU before, 34 s after); a worker the nanny restarts later is spawned."""
    import multiprocessing

    import dask

    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    with _cluster_settings(), dask.config.set({"distributed.worker.multiprocessing-method": method}):
        return distributed.LocalCluster(**_cluster_arguments(jobs))


class _Host:
    """The forked process that runs the cluster. Two pipes: it writes its scheduler's address (or
    'error: ...') on one; this process holds the other's writing end, and closing it stops the host."""

    def __init__(self, jobs: int):
        address_read, address_write = os.pipe()
        stop_read, stop_write = os.pipe()
        for stream in (sys.stdout, sys.stderr):  # or the child could write this process's buffered text again
            stream.flush()
        try:
            pid = os.fork()
        except OSError as exc:
            for pipe_end in (address_read, address_write, stop_read, stop_write):
                os.close(pipe_end)
            raise ParallelError(f"the local Dask cluster did not start: {_describe(exc)}") from None
        if pid == 0:
            os.close(address_read)
            os.close(stop_write)
            _host_main(jobs, address_write, stop_read)  # never returns
        os.close(address_write)
        os.close(stop_read)
        self.pid, self._address_pipe, self._stop_pipe = pid, address_read, stop_write
        self._address, self._exited = None, False

    def address(self) -> str:
        if self._address is None:
            self._address = self._read_address()
        return self._address

    def _read_address(self) -> str:
        """The host's line. Its workers hold the pipe's writing end too (they are forked while the cluster
        starts), so a host that dies before it writes is seen by polling it, not by end-of-file."""
        deadline, text = time.monotonic() + START_TIMEOUT, b""
        while not text.endswith(b"\n"):
            if time.monotonic() > deadline:
                raise ParallelError(f"the local Dask cluster did not start: no scheduler within {START_TIMEOUT:g} s")
            ready, _, _ = select.select([self._address_pipe], [], [], POLL_INTERVAL)
            chunk = os.read(self._address_pipe, 4096) if ready else b""
            if not chunk and (ready or self._ended()):
                raise ParallelError("the local Dask cluster did not start: its process ended")
            text += chunk
        line = text.decode("utf-8", "replace").strip()
        if line.startswith("error: "):
            raise ParallelError(f"the local Dask cluster did not start: {line[len('error: '):]}")
        return line

    def _ended(self) -> bool:
        if not self._exited and os.waitpid(self.pid, os.WNOHANG) != (0, 0):
            self._exited = True
        return self._exited

    def close(self) -> None:
        """Stop the host (it closes its cluster) and wait for it; kill it if it takes too long."""
        if self._stop_pipe is None:
            return
        os.close(self._stop_pipe)
        os.close(self._address_pipe)
        self._stop_pipe = None
        deadline = time.monotonic() + CLOSE_TIMEOUT
        while not self._ended():
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)  # its workers see their nanny gone and stop
                os.waitpid(self.pid, 0)
                return
            time.sleep(0.01)


class _HeartbeatOnAClosedConnection(logging.Filter):
    """Drops the traceback a worker logs when its heartbeat meets a closed connection to the scheduler. On a
    local cluster that happens only as the cluster closes, when a heartbeat is in flight as its worker or the
    scheduler closes (after Ctrl-C on a loaded machine): a lost worker is reported by the client anyway."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (str(record.msg).startswith("Failed to communicate with scheduler during heartbeat")
                    and type(error).__name__ == "CommClosedError")


def _host_main(jobs: int, address_pipe: int, stop_pipe: int) -> None:
    """The host process: start the cluster, report its address, run until the stop pipe closes, exit."""
    reported = False

    def report(line: str) -> None:
        nonlocal reported
        if not reported:
            reported = True
            os.write(address_pipe, f"{line}\n".encode())
            os.close(address_pipe)

    status = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the client's to handle: it closes the pipe
        logging.getLogger("distributed.worker").addFilter(_HeartbeatOnAClosedConnection())  # workers fork with it
        # Python 3.12+ warns at each worker's fork: the nannies' queue threads are running (multiprocessing
        # resets their queues in the child)
        warnings.filterwarnings("ignore", message=r"This process .* is multi-threaded", category=DeprecationWarning)
        import asyncio

        asyncio.run(_serve(jobs, report, stop_pipe))
        status = 0
    except BaseException as exc:  # noqa: BLE001 - reported to the client, which raises it
        try:
            report(f"error: {_describe(exc)}")
        except OSError:
            pass
    finally:
        os._exit(status)


async def _serve(jobs: int, report, stop_pipe: int) -> None:
    import asyncio

    import dask
    import distributed

    # for the host's whole life: a nanny reads the start method again each time it restarts a worker
    with _cluster_settings(), dask.config.set({"distributed.worker.multiprocessing-method": "fork"}):
        async with distributed.LocalCluster(**_cluster_arguments(jobs), asynchronous=True) as cluster:
            report(cluster.scheduler_address)
            loop, stopped = asyncio.get_running_loop(), asyncio.Event()
            loop.add_reader(stop_pipe, stopped.set)  # readable when closed: at the client's end
            await stopped.wait()
            loop.remove_reader(stop_pipe)  # or it would keep firing while the cluster closes
            # the client is done or gone: a task still running is not waited for (Dask's nannies would give it 4 s)
            await asyncio.gather(*(nanny.close(timeout=WORKER_STOP_TIMEOUT) for nanny in cluster.workers.values()))
