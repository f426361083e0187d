import contextlib
import gc
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


def pytest_configure(config):
    """Bytecode: cached where it is not (PYTHONDONTWRITEBYTECODE), and compiled once for the xdist workers."""
    if hasattr(config, "workerinput"):
        return
    _cache_bytecode_in_private_folder()
    if config.getoption("numprocesses", None) and not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        _compile_for_the_workers(config)


def _cache_bytecode_in_private_folder():
    """Where PYTHONDONTWRITEBYTECODE is set (it is on our machines), every xdist worker and every subprocess the
    tests start (process pools, Dask workers, the CLI) compiled irrun and the rewritten test modules anew: a
    second or more of CPU each. Test processes cache bytecode instead, outside the source tree, in a folder of
    pytest's own private temporary root (pytest-of-<user>, made 0700 as pytest makes it, and used only when it
    is ours and no one else can write to it)."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    if not hasattr(os, "getuid"):
        return
    import getpass
    import stat

    private = Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}"
    try:
        private.mkdir(mode=0o700, exist_ok=True)
        status = private.lstat()
    except OSError:
        return
    if stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid() and not status.st_mode & 0o022:
        os.environ.pop("PYTHONDONTWRITEBYTECODE")
        os.environ["PYTHONPYCACHEPREFIX"] = str(private / "bytecode")
        from bytecode_seed import seed

        seed(private / "bytecode", Path(__file__).parents[1])


def _compile_for_the_workers(config):
    """On a fresh checkout every xdist worker compiled irrun, tools/ and the test helpers at once, each for
    itself (2 s of CPU a worker), and rewrote the asserts of every test module (3 s more): compiled and rewritten
    here once, before the workers start, they find the bytecode written."""
    import compileall

    root = Path(__file__).parents[1]
    saved = sys.pycache_prefix
    sys.pycache_prefix = os.environ.get("PYTHONPYCACHEPREFIX") or saved  # where the workers will look
    try:
        for folder in ("irrun", "tools"):
            compileall.compile_dir(root / folder, quiet=2)
        compileall.compile_dir(Path(__file__).parent, maxlevels=0, quiet=2, rx=re.compile(r"(test_|conftest)[^/]*$"))
        _rewrite_test_modules(config)
    finally:
        sys.pycache_prefix = saved


def _rewrite_test_modules(config):
    """The test modules (and this conftest) as pytest's assertion rewriter caches them. This uses its private
    functions; should they change, the workers rewrite for themselves as before (and test_suite_machinery.py
    fails)."""
    try:
        for source in sorted(Path(__file__).parent.glob("test_*.py")) + [Path(__file__)]:
            rewritten_pyc(source, config)
    except Exception:  # noqa: BLE001 - pytest's private API changed: the workers rewrite for themselves
        pass


def rewritten_pyc(source: Path, config) -> Path:
    """The file where pytest caches `source` with its asserts rewritten, written unless it is there already."""
    from _pytest.assertion import rewrite

    pyc = rewrite.get_cache_dir(source) / (source.name[:-3] + rewrite.PYC_TAIL)
    if rewrite._read_pyc(source, pyc) is None and rewrite.try_makedirs(pyc.parent):
        source_stat, code = rewrite._rewrite_test(source, config)
        rewrite._write_pyc(config.stash[rewrite.assertstate_key], code, source_stat, pyc)
    return pyc


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker more than the cores this process may use. A good part of the suite waits (Dask
    clusters starting and stopping, subprocesses, the CPU plugin's compile threads), so one more worker keeps the
    cores busy; more oversubscribe their BLAS and plugin threads. Measured on 2 cores: 2 workers 175 s, 3 140 s,
    4 144-157 s, 6 184 s."""
    return len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) + 1


# Tests that take seconds of CPU each (measured with --durations), started first so that none of them is left
# running alone on one worker at the end of a parallel run.
# The Dask tests that wait the longest (workers dying and restarted, a host and its workers stopped) go first too:
# at the end of a run they left the cores idle.
STARTED_FIRST = ("test_hostile.py::test_fuzzed_new_seeds", "test_hostile.py::test_long_chain", "test_weights_release.py",
                 "test_compare_against_openvino_on_every_model[torch_", "test_precision.py::test_precision_report",
                 "test_parallel_chunks.py::test_a_worker_dying", "test_parallel_chunks.py::test_a_chunk_whose_worker",
                 "test_parallel.py::test_dask_keeps_order", "test_parallel.py::test_parallel_checks_equal_serial",
                 "test_dask_local.py::test_a_killed_client", "test_dask_local.py::test_ctrl_c")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: not any(part in item.nodeid for part in STARTED_FIRST))


def pytest_collection_finish(session):
    """The collected tests, their modules and what those imported live until the end: the collector skips them
    from here on. Each of its full collections scanned them all, 0.1-0.2 s each, about 34 times a worker: 6-7 s
    of each worker's CPU (issue 18)."""
    gc.collect()
    gc.freeze()


@contextlib.contextmanager
def _tempfile_folder(folder: Path):
    """tempfile (and the TMPDIR of subprocesses) writes into `folder` inside the block."""
    saved = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = saved[0]
        if saved[1] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved[1]


@pytest.fixture(scope="session", autouse=True)
def temporary_files_under_pytest(tmp_path_factory):
    """Everything the tests, their fixtures and their subprocesses write through tempfile (oracle models above
    all) goes under pytest's base temporary directory, which pytest prunes, instead of piling up in the system's."""
    import multiprocessing.util

    # multiprocessing makes its folder once a process (the forkserver's socket goes there) and deletes it at exit:
    # in the system's, not in a test's folder (deleted with the test) or in this one (deleted before the exit)
    multiprocessing.util.get_temp_dir()
    with _tempfile_folder(tmp_path_factory.mktemp("tempfile")):
        yield


_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        item.stash[_FAILED] = True
    return report


@pytest.fixture(autouse=True)
def temporary_files_of_the_test(request):
    """A test's own tempfile files (a sweep writes hundreds of oracle models) go into a folder deleted when the
    test passes, kept when it fails, as pytest treats tmp_path (tmp_path_retention_policy = "failed" in
    pyproject.toml). Left to pytest, the 17,000 files of the suite's tempfile folders were deleted at the end of
    the run, on one core, after the last test (3.3 s), as were the tmp_path files of the run three runs before
    (2.5 s more); deleted as each test ends, while the other workers go on, they leave about 1,000 (issue 18).
    (Session and module fixtures, set up before this, write under temporary_files_under_pytest's folder.)"""
    folder = tempfile.mkdtemp(prefix=re.sub(r"\W", "_", request.node.name)[:40] + "-")  # in the session's folder
    with _tempfile_folder(folder):
        yield
    if not request.node.stash.get(_FAILED, False):
        try:
            os.rmdir(folder)  # most tests write nothing there: one call, not rmtree's several
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def environment_restored():
    """Each test leaves os.environ as it found it: a plain Dask LocalCluster's nanny writes its workers' settings
    (MALLOC_TRIM_THRESHOLD_, OMP_NUM_THREADS, ...) into the process's environment for good, and a cluster a later
    test starts would hand them to its workers."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """One headless Chromium for every test (of this xdist worker) that opens an HTML page."""
    from headless_chromium import Chromium

    chromium = Chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield chromium
    chromium.close()


def _lingering_children():
    """This process's descendants still running after its tests, less multiprocessing's own helper processes
    (resource tracker, forkserver), which live as long as the process that started them (so they are not waited
    for either)."""
    import psutil

    helpers = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")

    def command(process):
        try:
            return " ".join(process.cmdline())
        except psutil.Error:
            return ""

    children = [child for child in psutil.Process().children(recursive=True)
                if not any(helper in command(child) for helper in helpers)]
    _, alive = psutil.wait_procs(children, timeout=10)
    return [f"{child.pid} {command(child)[:120]}" for child in alive if child.is_running()]


_LINGERING_IN_WORKERS: list = []


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist: what a worker found still running when its tests ended."""
    _LINGERING_IN_WORKERS.extend(getattr(node, "workeroutput", {}).get("lingering", ()))


def pytest_sessionfinish(session, exitstatus):
    """Tests leave no process behind: a descendant still running at the end fails the run."""
    lingering = _lingering_children()
    if hasattr(session.config, "workeroutput"):  # an xdist worker: the controller reports
        session.config.workeroutput["lingering"] = lingering
        return
    lingering += _LINGERING_IN_WORKERS
    if lingering:
        sys.stderr.write("processes left behind by the tests:\n  " + "\n  ".join(lingering) + "\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "loadgroup":
        from xdist_crash_safe import CrashSafeLoadGroupScheduling

        return CrashSafeLoadGroupScheduling(config, log)
