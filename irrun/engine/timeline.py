"""Where a run's time goes, every moment of it: an observer with a `mark(label, node=None)` method is handed
the run's milestones by `Model.run`, and the time since the previous mark is charged to `label` (to the
layer `node` for KERNEL_TIME and INFERENCE). One clock, read when a mark begins and when it ends: what the mark
itself takes is charged to OBSERVERS (a run marks each step five or six times, which would otherwise swell the
checks and the step loop the profile reports), and the charges add up to the time from the run's first mark to
its last, which is the run's wall time but for the call itself."""
from __future__ import annotations

import time

START = "start"                    # the run begins: nothing is charged
THREADS = "BLAS threads"           # fitting the BLAS's thread count to the machine's load (blas_threads.py)
INPUTS = "inputs"                  # binding and checking the inputs
PLANNING = "planning"              # finding or building the plan for these input shapes
INFERENCE = "inference"            # a layer's shapes inferred at run time (value-dependent ops compute here)
KERNEL_TIME = "kernel"             # a layer's kernel
CHECKS = "budget and checks"       # memory budget checks before a kernel, output checks after it
OBSERVERS = "observers"            # the observers themselves (profiler, dumps, progress)
STEPS = "step loop"                # moving between steps: bookkeeping, freeing, returning the outputs

OUTSIDE_LAYERS = (PLANNING, INPUTS, THREADS, CHECKS, OBSERVERS, STEPS)


class Timeline:
    """Seconds charged to each layer (kernel, inference) and to each label outside layers."""

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        self.layers: dict[str, dict[str, float]] = {}  # layer id -> {KERNEL_TIME or INFERENCE: seconds}
        self.outside: dict[str, float] = dict.fromkeys(OUTSIDE_LAYERS, 0.0)
        self._last = None

    def mark(self, label: str, node=None) -> None:
        now = self.clock()
        if label == START or self._last is None:
            self._last = now
            return
        elapsed = now - self._last
        if node is None:
            self.outside[label] = self.outside.get(label, 0.0) + elapsed
        else:
            charges = self.layers.setdefault(node.id, {})
            charges[label] = charges.get(label, 0.0) + elapsed
        self._last = self.clock()
        self.outside[OBSERVERS] += self._last - now

    def layer(self, layer_id: str, label: str) -> float:
        return self.layers.get(layer_id, {}).get(label, 0.0)

    @property
    def in_layers(self) -> float:
        return sum(sum(charges.values()) for charges in self.layers.values())

    @property
    def total(self) -> float:
        return self.in_layers + sum(self.outside.values())
