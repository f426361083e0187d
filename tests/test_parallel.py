"""Batch runs and parallel checks: `--jobs N` (a local process pool) and Dask (a real LocalCluster of worker
processes on localhost) give exactly the reports and outputs of a serial run; failures are reported per item;
a dying worker loses nothing silently."""
from __future__ import annotations

import multiprocessing
import random
import shutil
import sys
import time
from pathlib import Path

import distributed
import numpy as np
import pytest
from click.testing import CliRunner

import irrun
import parallel_tasks
from irrun.scale import dask_local, parallel, tasks
from irrun.cli.main import cli
from irrun.scale.parallel import ParallelError, TaskFailed, map_ordered

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
import fuzz  # noqa: E402
import fuzz_corpus  # noqa: E402

MODELS = Path(__file__).parents[1] / "models"
POOLING = MODELS / "pooling_mix" / "model.xml"


# The tests that use the shared cluster run on one xdist worker (--dist loadgroup), which starts it once.
ON_THE_SHARED_CLUSTER = pytest.mark.xdist_group("test_parallel-cluster")


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster with two worker processes, shared by this module's Dask tests (closed after them: an idle
    cluster takes a few percent of a core)."""
    with dask_local.in_process_cluster(distributed, 2) as local:
        yield local.scheduler_address


@pytest.fixture(scope="module")
def batch_inputs(tmp_path_factory) -> Path:
    """Twelve inputs for pooling_mix, the seventh of the wrong shape and the tenth not an array file."""
    directory = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(5)
    for index in range(12):
        shape = (1, 8, 31, 32) if index == 6 else (1, 8, 32, 32)
        np.save(directory / f"x{index:02}.npy", rng.standard_normal(shape).astype(np.float32))
    (directory / "x09.npy").write_bytes(b"not an array")
    (directory / "notes.txt").write_text("ignored")
    return directory


def _outputs(directory: Path) -> dict:
    return {path.name: dict(np.load(path)) for path in sorted(directory.glob("*.npz"))}


def _assert_same_outputs(left: Path, right: Path):
    a, b = _outputs(left), _outputs(right)
    assert list(a) == list(b)
    for name in a:
        assert list(a[name]) == list(b[name])
        for key in a[name]:
            np.testing.assert_array_equal(a[name][key], b[name][key], err_msg=f"{name}:{key}")


# ---------------------------------------------------------------- map_ordered

@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_map_ordered_keeps_item_order(jobs):
    seen = []
    results = map_ordered(parallel_tasks.square, list(range(9)), jobs=jobs, on_result=lambda i, r: seen.append(i))
    assert results == [x * x for x in range(9)]
    assert sorted(seen) == list(range(9))


def test_a_worker_that_dies_once_is_retried(tmp_path):
    items = [(value, str(tmp_path / "marker")) for value in range(6)]
    assert map_ordered(parallel_tasks.die_on, items, jobs=2) == [value * 10 for value in range(6)]
    assert (tmp_path / "marker").exists()


def test_a_worker_that_always_dies_is_reported_and_nothing_else_is_lost():
    results = map_ordered(parallel_tasks.die_on, [(value, None) for value in range(6)], jobs=2)
    assert [r for i, r in enumerate(results) if i != 3] == [0, 10, 20, 40, 50]
    assert isinstance(results[3], TaskFailed) and "died" in results[3].message


def test_a_task_that_raises_fails_only_its_item():
    results = map_ordered(parallel_tasks.raise_on, [0, 1, 2, 3], jobs=2)
    assert results[:2] == [0, 1] and results[3] == 3
    assert isinstance(results[2], TaskFailed) and "task bug" in results[2].message


def test_interrupt_stops_the_workers():
    def interrupt(index, result):
        raise KeyboardInterrupt

    others = set(multiprocessing.active_children())  # e.g. the workers of this module's Dask cluster
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        map_ordered(parallel_tasks.stall, list(range(40)), jobs=2, on_result=interrupt)
    assert time.perf_counter() - started < 30  # waiting for the tasks would take minutes
    deadline = time.time() + 5
    while set(multiprocessing.active_children()) - others and time.time() < deadline:
        time.sleep(0.05)
    assert set(multiprocessing.active_children()) - others == set()


@ON_THE_SHARED_CLUSTER
def test_dask_keeps_order_and_reports_a_dying_worker(cluster):
    assert map_ordered(parallel_tasks.square, list(range(7)), dask=cluster) == [x * x for x in range(7)]
    import cloudpickle
    import dask

    cloudpickle.register_pickle_by_value(parallel_tasks)  # the workers cannot import tests/
    try:  # a cluster of its own: the shared one keeps both its workers for the tests after this one
        with dask.config.set({"distributed.scheduler.allowed-failures": 1}), \
                dask_local.in_process_cluster(distributed, 2) as dying:
            results = map_ordered(parallel_tasks.die_on, [(value, None) for value in range(5)],
                                  dask=dying.scheduler_address)
    finally:
        cloudpickle.unregister_pickle_by_value(parallel_tasks)
    assert [r for i, r in enumerate(results) if i != 3] == [0, 10, 20, 40]
    assert isinstance(results[3], TaskFailed) and "KilledWorker" in results[3].message


def test_missing_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ParallelError, match=r"irrun\[dask\]"):
        map_ordered(parallel_tasks.square, [1, 2], dask="local")
    result = CliRunner().invoke(cli, ["check", str(POOLING), "--dask", "local"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [f"irrun: error: {tasks.DASK_EXTRA_HINT}"]


def test_unreachable_scheduler_is_one_line(monkeypatch):
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(ParallelError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        map_ordered(parallel_tasks.square, [1], dask="tcp://127.0.0.1:9")


# ---------------------------------------------------------------- batch runs

@pytest.fixture(scope="module")
def serial_run(batch_inputs, tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    report = irrun.run_batch(POOLING, irrun.input_files(batch_inputs), out)
    return report, out


def test_serial_batch_reports_the_bad_inputs_and_runs_the_rest(serial_run, batch_inputs):
    report, out = serial_run
    assert [Path(item.input).name for item in report.items] == [f"x{i:02}.npy" for i in range(12)]
    assert [Path(item.input).name for item in report.failed] == ["x06.npy", "x09.npy"]
    assert "input 'input' has shape [1, 8, 31, 32]" in report.failed[0].error
    assert report.failed[0].error.startswith(str(batch_inputs / "x06.npy") + ": ")
    assert report.summary().endswith("10 done, 2 failed")
    single = irrun.load(POOLING).run({"input": np.load(batch_inputs / "x03.npy")})
    saved = np.load(out / "x03.npz")
    assert list(saved) == list(single)
    for key in single:
        np.testing.assert_array_equal(saved[key], single[key])


@pytest.mark.parametrize("mode", ["jobs2", pytest.param("dask", marks=ON_THE_SHARED_CLUSTER)])
def test_parallel_batch_equals_serial(mode, serial_run, batch_inputs, tmp_path, request):
    report, out = serial_run
    options = {"jobs": 2} if mode == "jobs2" else {"dask": request.getfixturevalue("cluster")}
    parallel_report = irrun.load(POOLING).run_batch(irrun.input_files(batch_inputs), tmp_path, **options)
    assert [(i.input, i.output, i.error) for i in parallel_report.items] == \
        [(i.input, i.output and str(tmp_path / Path(i.output).name), i.error) for i in report.items]
    _assert_same_outputs(out, tmp_path)


def test_cli_batch_with_jobs(batch_inputs, serial_run, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(POOLING), "--inputs-dir", str(batch_inputs), "--outputs-dir",
                                      str(out), "--jobs", "2"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert [line.split(": ")[2] for line in lines[:2]] == [str(batch_inputs / "x06.npy"),
                                                           str(batch_inputs / "x09.npy")]
    assert all(line.startswith("irrun: error: ") for line in lines[:2])
    assert lines[2].startswith("ran 12 inputs in ") and lines[2].endswith("10 done, 2 failed")
    _assert_same_outputs(serial_run[1], out)


@ON_THE_SHARED_CLUSTER
def test_cli_batch_dask_on_a_shipped_model(tmp_path, cluster):
    """On this module's cluster: `--dask local` from the command line is tests/test_dask_local.py's (and from a
    process with threads, as here, its in-process cluster is test_with_other_threads_running_the_cluster...)."""
    model = MODELS / "torch_resnet"
    inputs = tmp_path / "in"
    inputs.mkdir()
    for name in ("a", "b", "c"):
        shutil.copy(model / "input.npy", inputs / f"{name}.npy")
    result = CliRunner().invoke(cli, ["run", str(model / "model.xml"), "--inputs-dir", str(inputs),
                                      "--outputs-dir", str(tmp_path / "dask"), "--dask", cluster])
    assert result.exit_code == 0, result.output
    serial = CliRunner().invoke(cli, ["run", str(model / "model.xml"), "--inputs-dir", str(inputs),
                                      "--outputs-dir", str(tmp_path / "serial")])
    assert serial.exit_code == 0, serial.output
    _assert_same_outputs(tmp_path / "serial", tmp_path / "dask")


@pytest.mark.parametrize("args, message", [
    (["--jobs", "2"], "--inputs-dir and --outputs-dir go together"),
    (["--inputs-dir", "."], "--inputs-dir and --outputs-dir go together"),
    (["--inputs-dir", ".", "--outputs-dir", "o", "-o", "x.npz"], "drop -i/-o"),
    (["--inputs-dir", ".", "--outputs-dir", "o", "--profile"], "--profile works on single runs"),
])
def test_batch_usage_errors(args, message):
    result = CliRunner().invoke(cli, ["run", str(POOLING), *args])
    assert result.exit_code == 2 and message in result.output


def test_inputs_dir_problems_are_one_line(tmp_path):
    (tmp_path / "a.npy").write_bytes(b"")
    (tmp_path / "a.npz").write_bytes(b"")
    result = CliRunner().invoke(cli, ["run", str(POOLING), "--inputs-dir", str(tmp_path), "--outputs-dir", "o"])
    assert result.exit_code == 1
    assert result.output.strip() == "irrun: error: a.npy and a.npz would both write a.npz"
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["run", str(POOLING), "--inputs-dir", str(empty), "--outputs-dir", "o"])
    assert result.output.strip() == f"irrun: error: {empty} has no .npy or .npz files"


# ---------------------------------------------------------------- parallel checks

@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[Path]:
    """The shipped models and 40 mutations of the small ones (broken attributes, dims, edges, bytes; mutations
    of Faster R-CNN and Swin took four fifths of the checks' time)."""
    directory = tmp_path_factory.mktemp("corpus")
    seeds = fuzz_corpus.small_model_seeds()
    rng = random.Random(12)
    paths = sorted(MODELS.glob("*/model.xml"))
    for index in range(40):
        xml_bytes, bin_bytes, _ = fuzz.mutate(rng.choice(seeds), rng)
        (directory / f"m{index:02}.xml").write_bytes(xml_bytes)
        (directory / f"m{index:02}.bin").write_bytes(bin_bytes)
        paths.append(directory / f"m{index:02}.xml")
    return paths


@ON_THE_SHARED_CLUSTER
def test_parallel_checks_equal_serial(corpus, cluster):
    serial = [irrun.check(path) for path in corpus]
    assert any(not report.conformant for report in serial) and any(report.conformant for report in serial)
    for options in ({"jobs": 2}, {"dask": cluster}):
        assert irrun.check_many(corpus, **options) == serial, options


def test_cli_check_jobs_output_is_identical(corpus):
    args = ["check", *map(str, corpus), "--format", "json"]
    serial = CliRunner().invoke(cli, args)
    pooled = CliRunner().invoke(cli, [*args, "--jobs", "2"])
    assert pooled.exit_code == serial.exit_code == 1
    assert pooled.output == serial.output
