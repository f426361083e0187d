"""Per-layer profiles of a run (accounting for all of its time, engine/timeline.py) and the progress shown
while a model runs."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass


from ..engine.graph import Node
from ..engine.timeline import INFERENCE, KERNEL_TIME, Timeline
from .tables import text_table


@dataclass
class LayerTime:
    layer_id: str
    name: str
    type: str
    version: int | None
    status: str        # EXECUTED, AT_LOAD (constant, computed once at load) or INPUT
    seconds: float     # the kernel
    inference: float = 0.0  # shapes inferred at run time (where value-dependent ops and If/Loop bodies compute)

    @property
    def total(self) -> float:
        return self.seconds + self.inference


class Profiler(Timeline):
    """An observer recording each layer's kernel and run-time inference time, and (through the run's marks,
    engine/timeline.py) the time spent outside layers; `report()` is benchmark_app's counters report: every
    executed layer, the slowest ones, time by op type and the rest, adding up to the run's wall time. It times the
    plan a plain run executes: a fused step (engine/mvn_transposes.py) counts as its last layer."""

    sees_plain_run = True

    def __init__(self, model):
        super().__init__()
        self.times: list[LayerTime] = []
        self._recorded: dict[tuple[str, str], float] = {}
        # layers whose values were computed when the model was loaded (Constants, constant subgraphs)
        self._at_load = {lid for (lid, _), info in model.infos.items() if info.value is not None}

    def __call__(self, node: Node, outputs, seconds) -> None:
        if node.ref.type == "Parameter":
            status = "INPUT"
        elif node.id in self._at_load:
            status = "AT_LOAD"
        else:
            status = "EXECUTED"
        ref = node.ref
        inference = self._new_charge(node.id, INFERENCE)
        if self._last is not None:  # the run marks its milestones: take the kernel time on the same clock
            seconds = self._new_charge(node.id, KERNEL_TIME)
        self.times.append(LayerTime(ref.id, ref.name, ref.type, ref.version, status, seconds, inference))

    def _new_charge(self, layer_id: str, label: str) -> float:
        """What the layer was charged for `label` since it was last recorded (a profiler may see several runs)."""
        total = self.layer(layer_id, label)
        recorded = self._recorded.get((layer_id, label), 0.0)
        self._recorded[(layer_id, label)] = total
        return total - recorded

    @property
    def executed(self) -> list[LayerTime]:
        return [t for t in self.times if t.status == "EXECUTED"]

    @property
    def wall(self) -> float:
        """The run's time: every layer and everything outside them (the layers alone without marks)."""
        return self.total if self._last is not None else sum(t.total for t in self.executed)

    def by_type(self) -> list[tuple[str, int, float]]:
        totals: dict[str, list] = {}
        for t in self.executed:
            key = f"{t.type}-{t.version}"
            entry = totals.setdefault(key, [0, 0.0])
            entry[0] += 1
            entry[1] += t.total
        return sorted(((k, n, s) for k, (n, s) in totals.items()), key=lambda row: -row[2])

    def to_dict(self, top: int = 10) -> dict:
        total = self.wall

        def row(t):
            return dict(asdict(t), ms=t.seconds * 1e3, inference_ms=t.inference * 1e3)
        return {
            "total_ms": total * 1e3,
            "layers": [row(t) for t in self.times],
            "top": [row(t) for t in self.top(top)],
            "by_type": [{"type": k, "count": n, "ms": s * 1e3, "percent": _percent(s, total)}
                        for k, n, s in self.by_type()],
            "outside_layers": [{"what": k, "ms": s * 1e3, "percent": _percent(s, total)}
                               for k, s in self.outside.items()],
        }

    def top(self, count: int = 10) -> list[LayerTime]:
        return sorted(self.executed, key=lambda t: -t.total)[:count]

    def report(self, top: int = 10) -> str:
        executed = self.executed
        total = self.wall
        lines = ["Per-layer times (execution order):"]
        lines += text_table([("id", "layer", "type", "status", "kernel ms", "inference ms", "%")] + [
            (t.layer_id, t.name, f"{t.type}-{t.version}", t.status, f"{t.seconds * 1e3:.3f}",
             f"{t.inference * 1e3:.3f}", f"{_percent(t.total, total):.1f}") for t in executed], right={4, 5, 6})
        lines += ["", f"Top {min(top, len(executed))} layers by time:"]
        lines += text_table([("id", "layer", "type", "ms", "%")] + [
            (t.layer_id, t.name, f"{t.type}-{t.version}", f"{t.total * 1e3:.3f}",
             f"{_percent(t.total, total):.1f}") for t in self.top(top)], right={3, 4})
        lines += ["", "Time by op type:"]
        lines += text_table([("type", "layers", "ms", "%")] + [
            (k, str(n), f"{s * 1e3:.3f}", f"{_percent(s, total):.1f}") for k, n, s in self.by_type()], right={1, 2, 3})
        lines += ["", "Time outside layers:"]
        lines += text_table([("what", "ms", "%")] + [
            (k, f"{s * 1e3:.3f}", f"{_percent(s, total):.1f}") for k, s in self.outside.items()], right={1, 2})
        skipped = Counter(t.status for t in self.times if t.status != "EXECUTED")
        kernels, inference = sum(t.seconds for t in executed), sum(t.inference for t in executed)
        lines += ["", (f"Total: {total * 1e3:.3f} ms, the run's wall time: {kernels * 1e3:.3f} ms in the kernels "
                       f"and {inference * 1e3:.3f} ms in run-time inference of {len(executed)} executed layers "
                       f"({skipped.get('AT_LOAD', 0)} computed at load, {skipped.get('INPUT', 0)} inputs), "
                       f"{(total - kernels - inference) * 1e3:.3f} ms outside layers")]
        most = max(executed, key=lambda t: t.inference, default=None)
        if most is not None and most.inference > 0.25 * inference > 0:
            lines.append(f"Most of the run-time inference is {most.type}-{most.version} {most.name!r} "
                         f"({most.inference * 1e3:.3f} ms): a value-dependent op or an If/Loop body computes "
                         f"while its shapes are inferred")
        return "\n".join(lines)


def _percent(part: float, total: float) -> float:
    return 100.0 * part / total if total > 0 else 0.0


class Progress:
    """An observer advancing a click progress bar on stderr, one step per layer. Only meant to be used
    when stderr is a terminal (see `on_terminal`); `close()` clears it."""

    sees_plain_run = True

    def __init__(self, model, label: str = "running"):
        import sys

        import click

        self._bar = click.progressbar(length=len(model.graph.order), label=label, file=sys.stderr,
                                      show_pos=True, item_show_func=lambda name: name)
        self._bar.__enter__()

    def __call__(self, node, outputs, seconds):
        self._bar.update(1, node.ref.name[:40])

    def close(self):
        self._bar.__exit__(None, None, None)


def on_terminal() -> bool:
    import sys

    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
