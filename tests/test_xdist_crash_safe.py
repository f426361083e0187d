"""A worker that crashes fails the test it was running, once, and every other test still runs: the suite's
`--dist loadgroup` scheduler (tests/xdist_crash_safe.py), driven with stand-in workers."""
from types import SimpleNamespace

from xdist_crash_safe import CrashSafeLoadGroupScheduling

TESTS = ["t.py::a", "t.py::b", "t.py::c", "g.py::x@g", "g.py::y@g", "u.py::z"]


class Worker:
    def __init__(self, name):
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[str] = []

    def send_runtest_some(self, indices):
        self.sent += [TESTS[i] for i in indices]

    def shutdown(self):
        self.shutting_down = True


def scheduler_running(*workers):
    settings = {"dist": "loadgroup", "tx": [f"{len(workers)}*popen"]}
    config = SimpleNamespace(getvalue=settings.get, option=SimpleNamespace(loadscopereorder=True))
    scheduler = CrashSafeLoadGroupScheduling(config)
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, TESTS)
    scheduler.schedule()
    return scheduler


def finish(scheduler, worker, test):
    scheduler.mark_test_complete(worker, TESTS.index(test))


def test_a_crash_fails_its_test_once_and_the_rest_still_run():
    first, second = Worker("gw0"), Worker("gw1")
    scheduler = scheduler_running(first, second)
    assert first.sent and second.sent
    crashed_on = first.sent[0]
    assert scheduler.remove_node(first) == crashed_on

    replacement = Worker("gw2")
    scheduler.add_node(replacement)
    scheduler.add_node_collection(replacement, TESTS)
    scheduler.schedule()
    ran = set(second.sent) | set(replacement.sent)
    for _ in range(len(TESTS)):
        for worker in (second, replacement):
            for test in list(worker.sent):
                if scheduler.assigned_work[worker].get(scheduler._split_scope(test), {}).get(test) is False:
                    finish(scheduler, worker, test)
        ran |= set(second.sent) | set(replacement.sent)
    assert crashed_on not in set(second.sent) | set(replacement.sent)
    assert ran | {crashed_on} == set(TESTS)
    assert not scheduler.has_pending
    assert second.shutting_down and replacement.shutting_down


def test_a_worker_that_finished_its_tests_reports_no_crash():
    only = Worker("gw0")
    scheduler = scheduler_running(only)
    for _ in range(len(TESTS)):
        for test in list(only.sent):
            if scheduler.assigned_work[only].get(scheduler._split_scope(test), {}).get(test) is False:
                finish(scheduler, only, test)
    assert set(only.sent) == set(TESTS)
    assert scheduler.remove_node(only) is None


def test_two_crashes_while_a_replacement_is_still_collecting():
    first, second = Worker("gw0"), Worker("gw1")
    scheduler = scheduler_running(first, second)
    crashed = {scheduler.remove_node(first)}
    collecting = Worker("gw2")
    scheduler.add_node(collecting)
    crashed.add(scheduler.remove_node(second))
    scheduler.add_node_collection(collecting, TESTS)
    scheduler.schedule()
    for _ in range(len(TESTS)):
        for test in list(collecting.sent):
            if scheduler.assigned_work[collecting].get(scheduler._split_scope(test), {}).get(test) is False:
                finish(scheduler, collecting, test)
    assert set(collecting.sent) | crashed == set(TESTS) and not crashed & set(collecting.sent)
    assert not scheduler.has_pending and collecting.shutting_down
