"""Dask runs items in chunks, one task each (irrun/parallel.py): results stay per item and in order, an item
whose task raises fails alone, the items of a chunk whose workers die run again alone, so only the item
that kills them is reported; the malloc settings a chunk runs under, and the worker's profiler paused."""
from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

import cloudpickle
from click.testing import CliRunner
import dask
import distributed
import pytest

import parallel_tasks
from irrun.cli.main import cli
from irrun.engine import heap
from irrun.scale import dask_local, dask_wait, parallel, tasks
from irrun.scale.parallel import CHUNKS_PER_WORKER, MAX_CHUNK, TaskFailed, chunk_bounds, map_ordered


# The tests that use the shared cluster run on one xdist worker (--dist loadgroup), which starts it once.
ON_THE_SHARED_CLUSTER = pytest.mark.xdist_group("test_parallel_chunks-cluster")


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster with two worker processes, shared by this module's Dask tests (closed after them: an idle
    cluster takes a few percent of a core)."""
    with dask_local.in_process_cluster(distributed, 2) as local:
        yield local.scheduler_address


@pytest.fixture
def dying_cluster():
    """A cluster of its own for a test whose workers die, so the shared one keeps both its workers. Its scheduler
    retries a task once (read when the scheduler starts): every death costs a restart."""
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), \
            dask_local.in_process_cluster(distributed, 2) as local:
        yield local.scheduler_address


@pytest.fixture
def tasks_by_value():
    cloudpickle.register_pickle_by_value(parallel_tasks)  # the workers cannot import tests/
    yield
    cloudpickle.unregister_pickle_by_value(parallel_tasks)


@pytest.mark.parametrize("items, threads", [(0, 2), (1, 2), (16, 2), (40, 2), (200, 2), (200, 0), (10_000, 4)])
def test_chunks_cover_the_items_in_order_and_shrink_to_single_items(items, threads):
    chunks = chunk_bounds(items, threads)
    assert [i for chunk in chunks for i in chunk] == list(range(items))
    sizes = [len(chunk) for chunk in chunks]
    share = max(1, threads) * CHUNKS_PER_WORKER
    assert sizes == sorted(sizes, reverse=True) and all(1 <= size <= MAX_CHUNK for size in sizes)
    if items:
        assert sizes[0] == min(MAX_CHUNK, -(-items // share)) and sizes[-1] == 1
        assert sizes.count(1) <= share  # single items only once fewer than one per share are left


@ON_THE_SHARED_CLUSTER
def test_chunked_results_come_in_item_order(cluster, tasks_by_value):
    seen = []
    results = map_ordered(parallel_tasks.square, list(range(50)), dask=cluster,
                          on_result=lambda index, result: seen.append((index, result)))
    assert len(chunk_bounds(50, 2)) > 10
    assert results == [x * x for x in range(50)]
    assert sorted(seen) == [(x, x * x) for x in range(50)]


@ON_THE_SHARED_CLUSTER
def test_a_task_that_raises_in_a_chunk_fails_only_its_item(cluster, tasks_by_value):
    values = list(range(1, 41))  # chunks of 5: (1, 2, 3, 4, 5) first
    results = map_ordered(parallel_tasks.raise_on, values, dask=cluster)
    assert [r for v, r in zip(values, results) if v != 2] == [v for v in values if v != 2]
    assert isinstance(results[1], TaskFailed) and "RuntimeError: task bug" in results[1].message


POOLING = Path(__file__).parents[1] / "models" / "pooling_mix" / "model.xml"
VALUES = list(range(2, 42))  # chunks of 5: (2, ..., 6) first, and die_on's worker dies on 3


def test_a_worker_dying_in_a_chunk_reports_only_its_item(dying_cluster, tasks_by_value):
    results = map_ordered(parallel_tasks.die_on, [(value, None) for value in VALUES], dask=dying_cluster)
    assert [r for v, r in zip(VALUES, results) if v != 3] == [v * 10 for v in VALUES if v != 3]
    assert isinstance(results[1], TaskFailed) and "KilledWorker" in results[1].message


def test_a_chunk_whose_worker_died_once_is_retried(dying_cluster, tasks_by_value, tmp_path):
    items = [(value, str(tmp_path / "marker")) for value in VALUES]
    assert map_ordered(parallel_tasks.die_on, items, dask=dying_cluster) == [value * 10 for value in VALUES]
    assert (tmp_path / "marker").exists()


def test_a_cluster_without_workers_is_one_error_not_a_wait_forever(monkeypatch):
    """All workers dead and none restarted, or none ever connected: the same to irrun (a scheduler alone)."""
    monkeypatch.setattr(dask_wait, "NO_WORKERS_TIMEOUT", 0.0)
    monkeypatch.setattr(dask_wait, "CHECK_INTERVAL", 0.01)
    with dask_local.in_process_cluster(distributed, 0) as empty:
        result = CliRunner().invoke(cli, ["check", str(POOLING), "--dask", empty.scheduler_address])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"irrun: error: the Dask scheduler at {empty.scheduler_address} has had no workers for 0 s (they died and "
        "were not restarted, or none connected): 1 tasks could not run"]


@ON_THE_SHARED_CLUSTER
def test_local_cluster_workers_get_no_malloc_trim_threshold(cluster, tasks_by_value):
    assert map_ordered(parallel_tasks.environ_value, ["MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS"],
                       dask=cluster) == [None, tasks._STARTUP_THREAD_ENV["OMP_NUM_THREADS"]]


@ON_THE_SHARED_CLUSTER
def test_local_cluster_workers_run_no_sampling_profiler(cluster, tasks_by_value):

    assert dask.config.get("distributed.worker.profile.enabled")  # the caller's own setting is left alone
    assert map_ordered(parallel_tasks.dask_setting, ["distributed.worker.profile.enabled"], dask=cluster) == [False]


class FakeLibc:
    def __init__(self):
        self.calls = []

    def mallopt(self, parameter, value):
        self.calls.append(("mallopt", parameter, value))
        return 1

    def malloc_trim(self, pad):
        self.calls.append(("malloc_trim", pad))
        return 1


def test_a_chunk_runs_with_roomy_malloc_and_puts_the_workers_settings_back(monkeypatch):
    libc = FakeLibc()
    monkeypatch.setattr(heap, "glibc", lambda: libc)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert parallel.run_chunk(lambda item: libc.calls.append(("task", item)) or item, [7]) == [7]
    assert libc.calls == [("mallopt", -3, 32 << 20), ("mallopt", -1, 64 << 20), ("task", 7),
                          ("mallopt", -1, 65536), ("mallopt", -3, 128 << 10), ("malloc_trim", 0)]


def test_a_chunk_leaves_malloc_alone_when_the_worker_did_not_fix_its_thresholds(monkeypatch):
    libc = FakeLibc()
    monkeypatch.setattr(heap, "glibc", lambda: libc)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    assert parallel.run_chunk(parallel_tasks.square, [1, 2]) == [1, 4]
    assert libc.calls == []


def test_a_chunk_puts_malloc_back_when_a_task_raises(monkeypatch):
    libc = FakeLibc()
    monkeypatch.setattr(heap, "glibc", lambda: libc)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    results = parallel.run_chunk(parallel_tasks.raise_on, [1, 2, 3])
    assert results[0] == 1 and results[2] == 3 and isinstance(results[1], TaskFailed)
    assert libc.calls[-1] == ("malloc_trim", 0)


def test_glibc_is_found_on_glibc_only():
    libc = heap.glibc()
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        assert libc.malloc_trim(0) in (0, 1) and callable(libc.mallopt)  # setting a threshold here would stay
    else:
        assert libc is None


@pytest.fixture(scope="module")
def plain_cluster():
    """A LocalCluster with Dask's own worker settings (its sampling profiler on)."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0", silence_logs=40) as plain:
        yield plain


@pytest.mark.xdist_group("test_parallel_chunks-plain-cluster")
@pytest.mark.parametrize("pause", [True, False])
def test_chunks_pause_the_workers_profiler_and_start_it_again(plain_cluster, tasks_by_value, monkeypatch, pause):
    monkeypatch.setattr(parallel, "PAUSE_DASK_PROFILER", pause)
    with distributed.Client(plain_cluster) as client:
        assert map_ordered(parallel_tasks.profiler_running, [0, 1, 2], dask=plain_cluster.scheduler_address) == \
            [not pause] * 3

        def running_again(dask_worker):
            deadline = time.monotonic() + 5
            while not dask_worker.periodic_callbacks["profile"].is_running() and time.monotonic() < deadline:
                time.sleep(0.01)
            return dask_worker.periodic_callbacks["profile"].is_running()
        assert list(client.run(running_again).values()) == [True]
