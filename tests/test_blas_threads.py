"""The BLAS thread policy: pool workers share the cores unless the user set a count; a run gives the BLAS only
the cores no other process is busy on; the count is set with and without threadpoolctl."""
import os
import subprocess
import sys

import pytest

from irrun.engine import blas_threads
from irrun.scale import parallel


def worker_threads(_):
    return blas_threads.threads()


@pytest.fixture
def policy(monkeypatch):
    applied = []
    monkeypatch.setattr(blas_threads, "_POLICY", blas_threads._Policy())
    monkeypatch.setattr(blas_threads, "FIT_TO_LOAD", True)
    blas_threads._POLICY.active = True
    monkeypatch.setattr(blas_threads, "_apply", lambda count: applied.append(count) or True)
    monkeypatch.setattr(blas_threads, "cores", lambda: 4)
    monkeypatch.setattr(blas_threads, "_clock", lambda: 100.0)  # the checks below come at one moment
    return applied


def test_workers_share_the_cores_unless_the_user_chose():
    assert blas_threads.per_worker(2, {}) == max(1, blas_threads.cores() // 2)
    assert blas_threads.per_worker(blas_threads.cores() * 3, {}) == 1
    assert blas_threads.per_worker(2, {"OPENBLAS_NUM_THREADS": "3"}) is None


@pytest.mark.parametrize("busy,share,expected", [(0, None, 4), (1, None, 3), (3, None, 1), (9, None, 1), (0, 2, 2),
                                                 (3, 2, 1)])
def test_a_run_takes_the_cores_nobody_else_is_busy_on(policy, monkeypatch, busy, share, expected):
    monkeypatch.setattr(blas_threads, "_busy_elsewhere", lambda: busy)
    blas_threads._POLICY.share = share
    blas_threads.fit_to_load()
    assert policy == [expected]
    blas_threads.fit_to_load()  # looked at again only after CHECK_EVERY seconds
    assert policy == [expected]


def test_no_policy_when_the_user_chose_or_load_is_unreadable(policy, monkeypatch):
    monkeypatch.setattr(blas_threads, "_busy_elsewhere", lambda: None)
    blas_threads.fit_to_load()
    assert policy == [] and not blas_threads._POLICY.active
    blas_threads._POLICY = blas_threads._Policy()
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert not blas_threads._Policy().active


def test_runs_fit_the_load_by_default(monkeypatch):
    """On by default: results do not depend on the count (tests/test_blas_bits.py); off when nothing can set it."""
    for settable, expected_active in ((True, True), (False, False)):
        applied = []
        monkeypatch.setattr(blas_threads, "_apply", lambda count: applied.append(count) or settable)
        monkeypatch.setattr(blas_threads, "_busy_elsewhere", lambda: 9)
        monkeypatch.setattr(blas_threads, "_POLICY", blas_threads._Policy())
        blas_threads._POLICY.active = True
        blas_threads.fit_to_load()
        assert applied == [1] and blas_threads._POLICY.active == expected_active


def test_busy_elsewhere_reads_the_machine():
    assert blas_threads._busy_elsewhere() >= 0


SET_AND_READ = """
import sys
from irrun.engine import blas_threads
if sys.argv[1] == "threadpoolctl":  # as with a BLAS other than OpenBLAS
    blas_threads._openblas_function = lambda names: None
try:
    import threadpoolctl
except ImportError:
    threadpoolctl = None
done = blas_threads.set_threads(1)
if threadpoolctl is None:
    print(done, blas_threads.threads())
else:
    print(done, [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"][0])
"""


@pytest.mark.parametrize("way", ["openblas", "threadpoolctl"])
def test_set_threads_reaches_the_blas(way):
    env = {k: v for k, v in os.environ.items() if k not in blas_threads.THREAD_VARIABLES}
    out = subprocess.run([sys.executable, "-c", SET_AND_READ, way], capture_output=True, text=True, env=env,
                         check=True).stdout.split()
    if way == "threadpoolctl" and out[1] == "None":  # threadpoolctl is not installed: nothing can set them
        assert out == ["False", "None"]
    else:
        assert out == ["True", "1"]


def test_pool_workers_get_their_share(monkeypatch):
    monkeypatch.setattr(parallel, "_STARTUP_THREAD_ENV", {})
    counts = parallel.map_ordered(worker_threads, [0, 1, 2, 3], jobs=2)
    assert counts == [max(1, blas_threads.cores() // 2)] * 4
