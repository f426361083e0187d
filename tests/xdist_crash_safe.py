"""pytest-xdist's `--dist loadgroup` scheduler, mended for a worker that crashes (an oracle segfaulting in the CPU
plugin, as it does under some ONEDNN_MAX_CPU_ISA caps). xdist 3.8's scope schedulers put the crashed test back
in the queue with the rest of the dead worker's tests: it is run again and crashes again, and the run either
loses tests or waits forever with every worker idle. Here the crashed test is reported failed once (xdist's own
report) and only the dead worker's unfinished tests go back to the queue; a replacement worker gets tests once it
has collected them (xdist offered it work before, and the controller stopped on a KeyError)."""
from __future__ import annotations

from xdist.scheduler import LoadGroupScheduling


class CrashSafeLoadGroupScheduling(LoadGroupScheduling):
    def remove_node(self, node) -> str | None:
        workload = self.assigned_work.pop(node)
        unfinished = [(unit, test) for unit in workload.values() for test, done in unit.items() if not done]
        if not unfinished:
            return None
        unit, crashed = unfinished[0]
        unit[crashed] = True
        self.workqueue.update((scope, unit) for scope, unit in workload.items() if not all(unit.values()))
        for other in self.assigned_work:
            self._reschedule(other)
        return crashed

    def _reschedule(self, node) -> None:
        if node in self.registered_collections:
            super()._reschedule(node)
