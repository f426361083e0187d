"""Mapping one task over many items: in this process, in a local process pool, or on a Dask cluster.

A task is a picklable top-level function of one item that reports its own failures in its result, so
the pool adds only what a task cannot report itself: a worker process that died. Such an item is run
again, alone; if its worker dies again it is reported as `TaskFailed`. Results come back in item order,
whatever order they finished in, so a parallel run reports exactly what a serial one does.
"""
from __future__ import annotations

import logging
import multiprocessing
import signal
import threading
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Callable, Sequence

from ..engine import blas_threads, heap
from .dask_wait import Finishing
from .tasks import _STARTUP_THREAD_ENV, ParallelError, TaskFailed, _describe, _distributed

CONNECT_TIMEOUT = "10s"


def map_ordered(task: Callable, items: Sequence, jobs: int = 1, dask: str | None = None,
                on_result: Callable[[int, object], None] | None = None) -> list:
    """`[task(item) for item in items]`, computed here (jobs 1), in `jobs` local worker processes, or on
    the Dask scheduler at `dask` ('local': a LocalCluster of `jobs` worker processes on this machine).
    `on_result(index, result)` is called in this process as each item finishes (for progress)."""
    if jobs < 1:
        raise ParallelError(f"jobs must be at least 1, not {jobs}")
    notify = on_result or (lambda index, result: None)
    if dask is not None:
        return _map_dask(task, items, dask, jobs, notify)
    if jobs == 1 or len(items) <= 1:
        results = []
        for index, item in enumerate(items):
            results.append(task(item))
            notify(index, results[-1])
        return results
    return _map_pool(task, items, jobs, notify)


# ---------------------------------------------------------------- local process pool

def _ignore_interrupts() -> None:
    """Workers leave Ctrl-C to the parent, which stops them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start_method() -> str:
    """Fork when this process runs no other Python thread (workers then start at once and share what it has
    loaded, copy-on-write); spawn otherwise (forking a threaded process, e.g. one running a Dask client,
    can deadlock the child)."""
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def _start_worker(blas_thread_count: int | None) -> None:
    _ignore_interrupts()
    if blas_thread_count is not None:
        blas_threads.set_threads(blas_thread_count)


def _new_pool(jobs: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context(_start_method()),
                               initializer=_start_worker,
                               initargs=(blas_threads.per_worker(jobs, _STARTUP_THREAD_ENV),))


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: queued items are dropped and running workers terminated."""
    for process in list(getattr(pool, "_processes", {}).values()):
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)


IN_FLIGHT_PER_WORKER = 2  # each worker has its next item at hand when it finishes one (no round trip idle)


def _map_pool(task, items, jobs, notify) -> list:
    """At most IN_FLIGHT_PER_WORKER items per worker in flight. When a worker dies the pool breaks and every
    item in flight becomes a suspect; suspects then run one at a time, alone, in a new pool, so an item that
    kills its worker twice is the one reported, and the others finish normally."""
    results: list = [None] * len(items)
    queue, suspects = deque(range(len(items))), deque()
    while queue or suspects:
        pool = _new_pool(jobs)
        try:
            _run_until_broken(pool, task, items, jobs, queue, suspects, results, notify)
        except BaseException:
            _stop(pool)
            raise
        pool.shutdown(wait=True)
    return results


def _run_until_broken(pool, task, items, jobs, queue, suspects, results, notify) -> None:
    """Feed `pool` until every item is done or a worker dies (its items in flight then join `suspects`)."""
    in_flight: dict = {}  # future -> (item index, running alone)
    while queue or suspects or in_flight:
        if suspects and not in_flight:
            index = suspects.popleft()
            in_flight[pool.submit(task, items[index])] = (index, True)
        lone_running = any(alone for _, alone in in_flight.values())
        while not suspects and not lone_running and queue and len(in_flight) < jobs * IN_FLIGHT_PER_WORKER:
            index = queue.popleft()
            in_flight[pool.submit(task, items[index])] = (index, False)
        done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
        broken = False
        for future in done:
            index, alone = in_flight.pop(future)
            try:
                results[index] = future.result()
            except BrokenProcessPool:
                broken = True
                if not alone:
                    suspects.append(index)
                    continue
                results[index] = TaskFailed("its worker process died while running it (run twice, the second "
                                            "time alone)")
            except Exception as exc:  # noqa: BLE001 - a task's own bug is that item's failure
                results[index] = TaskFailed(_describe(exc))
            notify(index, results[index])
        if broken:
            suspects.extend(index for index, _ in in_flight.values())
            return


# ---------------------------------------------------------------- Dask

# Items go to Dask in chunks, one task each: a task costs the scheduler and the worker a few milliseconds, as
# much as checking a small IR. Each chunk takes 1 / (CHUNKS_PER_WORKER * worker threads) of the items left, so
# chunks shrink to single items towards the end and the workers finish together (guided self-scheduling); a
# chunk holds at most MAX_CHUNK items so progress is reported often and a lost worker costs little work.
CHUNKS_PER_WORKER = 4
MAX_CHUNK = 32


PAUSE_DASK_PROFILER = True  # False (set where the client runs): Dask workers' profilers run during irrun's chunks
_pause_lock = threading.Lock()
_pause_holders = 0  # irrun chunks running in this worker process
_paused = None  # the profiler callback they stopped, to start again


def _worker_profiler():
    """(this Dask worker, its sampling profiler's periodic callback), or (None, None)."""
    try:
        worker = _distributed().get_worker()
        return worker, worker.periodic_callbacks.get("profile")
    except (ValueError, AttributeError, ParallelError):  # not in a worker, or a Dask without it
        return None, None


@contextmanager
def _dask_profiler_paused(pause: bool):
    """The worker's sampling profiler stopped while irrun's chunks run on it, then started again. Every 10 ms
    it takes the GIL to walk the task thread's stack: a sixth of the throughput of checks of small IRs
    (measured), for profiles that would only show irrun's own code. Chunks running side by side on one
    worker's threads share the pause: the last to finish starts the profiler again."""
    global _pause_holders, _paused
    worker, callback = _worker_profiler() if pause else (None, None)
    if callback is None:
        yield
        return
    with _pause_lock:
        _pause_holders += 1
        stop = _pause_holders == 1 and callback.is_running()
        if stop:
            _paused = callback
    if stop:
        worker.loop.add_callback(callback.stop)
    try:
        yield
    finally:
        with _pause_lock:
            _pause_holders -= 1
            restart = _paused if _pause_holders == 0 else None
            if restart is not None:
                _paused = None
        if restart is not None:
            worker.loop.add_callback(restart.start)


def run_chunk(task: Callable, items: Sequence, pause_profiler: bool = True) -> list:
    """`[task(item) for item in items]` in a Dask worker; an item whose task raises fails alone."""
    results = []
    with heap.roomy_while_configured(), _dask_profiler_paused(pause_profiler):
        for item in items:
            try:
                results.append(task(item))
            except Exception as exc:  # noqa: BLE001 - a task's own bug is that item's failure
                results.append(TaskFailed(f"the Dask task failed: {_describe(exc)}"))
    return results


def chunk_bounds(items: int, worker_threads: int) -> list[range]:
    """The item indices of each chunk, in order."""
    share = max(1, worker_threads) * CHUNKS_PER_WORKER
    chunks, start = [], 0
    while start < items:
        size = max(1, min(MAX_CHUNK, -(-(items - start) // share)))
        chunks.append(range(start, start + size))
        start += size
    return chunks


def _map_dask(task, items, address: str, jobs: int, notify) -> list:
    if address == "local":
        from .dask_local import LocalDaskCluster

        with LocalDaskCluster(jobs) as cluster:
            _distributed()  # imported here while the cluster starts
            return _map_on_scheduler(task, items, cluster.address(), notify)
    return _map_on_scheduler(task, items, address, notify)


class _CancelBeforeStart(logging.Filter):
    """Drops the traceback Dask's sync() leaves on Ctrl-C: the cancel callback it schedules fails with a
    NameError when its future does not exist yet, and tornado logs that as an error (distributed 2026.8)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, NameError) and "'future'" in str(error))


def _map_on_scheduler(task, items, address: str, notify) -> list:
    distributed = _distributed()
    try:
        client = distributed.Client(address, set_as_default=False, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise ParallelError(f"cannot reach the Dask scheduler at {address}: {_describe(exc)}") from None
    tornado_errors, quiet = logging.getLogger("tornado.application"), _CancelBeforeStart()
    tornado_errors.addFilter(quiet)
    try:
        return _run_on_dask(distributed, client, task, items, notify, address)
    finally:
        client.close()
        tornado_errors.removeFilter(quiet)


def _run_on_dask(distributed, client, task, items, notify, address: str) -> list:
    """Chunks of items as tasks, results reported per item as their chunk finishes. A chunk that fails (its
    workers kept dying: Dask retries it on other workers first) makes its items suspects, and suspects run
    one at a time, alone in their task, as in the process pool: only an item that kills its workers while it
    is the only suspect is reported. (Dask also blames a dying worker's queued tasks, so innocent items can
    be in a failed chunk.)"""
    results: list = [None] * len(items)
    in_flight = {}  # future -> (the item indices it runs, whether it runs a suspect)
    suspects: deque = deque()
    finishing = Finishing(distributed, client, address)

    def submit(indices, suspect):
        future = client.submit(run_chunk, task, [items[i] for i in indices], PAUSE_DASK_PROFILER, pure=False)
        in_flight[future] = (indices, suspect)
        finishing.watch(future)

    try:
        for chunk in chunk_bounds(len(items), sum(client.nthreads().values())):
            submit(chunk, False)
        while in_flight:
            for future in finishing.finished():
                indices, suspect = in_flight.pop(future)
                try:
                    outcomes = future.result()
                except Exception as exc:  # noqa: BLE001 - a lost worker is the chunk's failure
                    if not suspect:
                        suspects.extend(indices)
                        outcomes = None
                    else:
                        outcomes = [TaskFailed(f"the Dask task failed: {_describe(exc)}")]
                for index, outcome in zip(indices, outcomes or ()):
                    results[index] = outcome
                    notify(index, outcome)
                if suspects and not any(suspect for _, suspect in in_flight.values()):
                    index = suspects.popleft()
                    submit(range(index, index + 1), True)
    finally:
        finishing.close()
        if in_flight:
            client.cancel(list(in_flight))
    return results
