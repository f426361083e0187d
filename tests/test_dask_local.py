"""`--dask local` from a process without other threads (irrun/dask_local.py): the cluster runs in a host
process forked from the client, its workers forked from the host. Each test runs its client in a fresh
process, as the command line is one (pytest's own process runs threads, so there the cluster runs in
process: one test below)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psutil
from click.testing import CliRunner

from irrun.cli.main import cli
from irrun.scale import dask_local

ROOT = Path(__file__).parents[1]
MODELS = ROOT / "models"


def _environment() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]))


def _python(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                          env=_environment(), timeout=120)


def _script(code: str) -> subprocess.CompletedProcess:
    return _python("-c", textwrap.dedent(code))


def _irrun(*args) -> subprocess.CompletedProcess:
    return _python("-m", "irrun", *args)


def _serial_cli(*args):
    """The command line run here (not about processes: no interpreter to start)."""
    return CliRunner().invoke(cli, list(map(str, args)))


def test_workers_are_forked_from_one_host_that_is_gone_afterwards():
    result = _script("""
        import json, os, threading
        import parallel_tasks
        from irrun.scale.parallel import map_ordered
        parallel_tasks.MARK = "set in the client"
        origins = map_ordered(parallel_tasks.worker_origin, list(range(6)), jobs=2, dask="local")
        hosts = sorted({parent for _, parent in origins})
        settings = map_ordered(parallel_tasks.dask_setting, ["distributed.admin.tick.interval",
                               "distributed.worker.profile.enabled", "distributed.worker.multiprocessing-method"],
                               jobs=2, dask="local")
        omp = map_ordered(parallel_tasks.environ_value, ["OMP_NUM_THREADS"], jobs=2, dask="local")
        heartbeats = map_ordered(parallel_tasks.heartbeat_traceback_shown, [True, False], jobs=2, dask="local")
        print(json.dumps({"heartbeat tracebacks": heartbeats, "client": os.getpid(), "marks": [mark for mark, _ in origins], "hosts": hosts,
                          "alive": [os.path.exists(f"/proc/{pid}") for pid in hosts],
                          "threads": threading.active_count(), "settings": settings, "omp": omp}))
    """)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["marks"] == ["set in the client"] * 6  # forked: the client's memory, not a fresh import
    assert len(seen["hosts"]) == 1 and seen["hosts"] != [seen["client"]]
    assert seen["alive"] == [False] and seen["threads"] == 1
    assert seen["settings"] == ["1s", False, "fork"]
    assert seen["omp"] == [os.environ.get("OMP_NUM_THREADS")]  # the client's, not Dask's 1
    # a heartbeat in flight as the cluster closes (Ctrl-C) meets a closed connection: no traceback for that
    assert seen["heartbeat tracebacks"] == [False, True]


def test_cli_check_and_batch_through_the_host_equal_serial(tmp_path):
    parallel = _irrun("check", MODELS, "--dask", "local", "-j", "2")
    serial = _serial_cli("check", MODELS)
    assert parallel.returncode == serial.exit_code == 0, parallel.stderr
    assert parallel.stdout == serial.stdout
    model = MODELS / "pooling_mix"
    inputs = tmp_path / "in"
    inputs.mkdir()
    for name in ("a", "b", "c"):
        (inputs / f"{name}.npy").write_bytes((model / "input.npy").read_bytes())
    serial = _serial_cli("run", model / "model.xml", "--inputs-dir", inputs, "--outputs-dir", tmp_path / "serial")
    assert serial.exit_code == 0, serial.output
    result = _irrun("run", model / "model.xml", "--inputs-dir", inputs, "--outputs-dir", tmp_path / "dask",
                    "--dask", "local", "-j", "2")
    assert result.returncode == 0, result.stderr
    for name in ("a", "b", "c"):
        assert (tmp_path / "dask" / f"{name}.npz").read_bytes() == (tmp_path / "serial" / f"{name}.npz").read_bytes()


def test_dying_workers_are_restarted_by_the_host(tmp_path):
    result = _script(f"""
        import dask, parallel_tasks
        from irrun.scale.parallel import TaskFailed, map_ordered
        once = map_ordered(parallel_tasks.die_on, [(v, {str(tmp_path / 'marker')!r}) for v in range(6)],
                           jobs=2, dask="local")
        with dask.config.set({{"distributed.scheduler.allowed-failures": 1}}):
            always = map_ordered(parallel_tasks.die_on, [(v, None) for v in range(5)], jobs=2, dask="local")
        print(once)
        print([r for i, r in enumerate(always) if i != 3], isinstance(always[3], TaskFailed), always[3])
    """)
    assert result.returncode == 0, result.stderr
    once, always = result.stdout.splitlines()
    assert once == str([value * 10 for value in range(6)])
    assert always.startswith("[0, 10, 20, 40] True") and "KilledWorker" in always


SLOW_RUN = """
    import signal
    import sys
    import parallel_tasks
    # Ctrl-C raises KeyboardInterrupt as in a terminal's foreground process, even when the tests run where SIGINT is
    # ignored (a background job of a non-interactive shell passes that on: the run then finished with exit 0)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from irrun.scale.parallel import map_ordered
    try:
        map_ordered(parallel_tasks.stall, list(range(40)), jobs=2, dask="local",
                    on_result=lambda index, result: print("result", flush=True))
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
"""


def _start_slow_run():
    """The client of a slow run on `--dask local` and, once a first result is in, its descendants."""
    client = subprocess.Popen([sys.executable, "-c", textwrap.dedent(SLOW_RUN)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT, env=_environment(), start_new_session=True)
    assert client.stdout.readline() == "result\n"
    descendants = psutil.Process(client.pid).children(recursive=True)
    assert len(descendants) >= 3  # the host and its two workers
    return client, descendants


def _assert_gone(processes, within: float) -> None:
    _, alive = psutil.wait_procs(processes, timeout=within)
    assert alive == [], f"still running: {alive}"


def test_ctrl_c_closes_the_host_and_its_workers_quietly():
    client, descendants = _start_slow_run()
    os.killpg(client.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the client, the host and the workers
    code = client.wait(timeout=30)
    out, err = client.stdout.read(), client.stderr.read()
    assert (code, out.splitlines()[-1:], err) == (130, ["interrupted"], ""), f"stdout ends {out[-300:]!r}"
    _assert_gone(descendants, within=10)


def test_a_killed_client_takes_the_host_and_its_workers_with_it():
    client, descendants = _start_slow_run()
    client.kill()
    client.wait(timeout=10)
    _assert_gone(descendants, within=20)


def test_a_cluster_that_cannot_start_is_one_error():
    result = _script("""
        import distributed
        from irrun.scale.parallel import ParallelError, map_ordered
        def no_cluster(*args, **kwargs):
            raise RuntimeError("no cluster here")
        distributed.LocalCluster = no_cluster  # the host is forked: it has this too
        try:
            map_ordered(len, ["a"], jobs=2, dask="local")
        except ParallelError as exc:
            print(exc)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "the local Dask cluster did not start: RuntimeError: no cluster here"


def test_with_other_threads_running_the_cluster_runs_in_process():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with dask_local.LocalDaskCluster(1) as cluster:
            assert cluster._host is None and cluster.address().startswith("tcp://127.0.0.1:")
    finally:
        stop.set()
        other.join()


def test_a_host_that_dies_while_its_workers_live_is_one_error_at_once():
    result = _script("""
        import os, time
        import distributed
        from irrun.scale.parallel import ParallelError, map_ordered
        def dying_cluster(*args, **kwargs):
            if os.fork() == 0:  # a worker that outlives its host holds the address pipe open
                for stream in (0, 1, 2):  # but not the test's
                    os.close(stream)
                time.sleep(15)
                os._exit(0)
            os._exit(3)
        distributed.LocalCluster = dying_cluster
        started = time.monotonic()
        try:
            map_ordered(len, ["a"], jobs=2, dask="local")
        except ParallelError as exc:
            print(exc)
        print(time.monotonic() - started < 10)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["the local Dask cluster did not start: its process ended", "True"]


def test_a_host_too_slow_to_start_is_one_error_and_is_stopped():
    result = _script("""
        import psutil
        from irrun.scale import dask_local
        from irrun.scale.parallel import ParallelError
        dask_local.START_TIMEOUT = 0.001
        try:
            with dask_local.LocalDaskCluster(1) as cluster:
                cluster.address()
        except ParallelError as exc:
            print(exc)
        print(psutil.Process().children(recursive=True))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["the local Dask cluster did not start: no scheduler within 0.001 s", "[]"]
