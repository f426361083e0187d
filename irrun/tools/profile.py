"""Per-layer profiles of a run and the progress shown while a model runs."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass


from ..engine.graph import Node
from .tables import text_table


@dataclass
class LayerTime:
    layer_id: str
    name: str
    type: str
    version: int | None
    status: str        # EXECUTED, AT_LOAD (constant, computed once at load) or INPUT
    seconds: float


class Profiler:
    """An observer recording each layer's kernel time; `report()` is benchmark_app's counters report:
    every executed layer, the slowest ones and time by op type."""

    def __init__(self, model):
        self.times: list[LayerTime] = []
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
        self.times.append(LayerTime(ref.id, ref.name, ref.type, ref.version, status, seconds))

    @property
    def executed(self) -> list[LayerTime]:
        return [t for t in self.times if t.status == "EXECUTED"]

    def by_type(self) -> list[tuple[str, int, float]]:
        totals: dict[str, list] = {}
        for t in self.executed:
            key = f"{t.type}-{t.version}"
            entry = totals.setdefault(key, [0, 0.0])
            entry[0] += 1
            entry[1] += t.seconds
        return sorted(((k, n, s) for k, (n, s) in totals.items()), key=lambda row: -row[2])

    def to_dict(self, top: int = 10) -> dict:
        total = sum(t.seconds for t in self.executed)
        return {
            "total_ms": total * 1e3,
            "layers": [dict(asdict(t), ms=t.seconds * 1e3) for t in self.times],
            "top": [dict(asdict(t), ms=t.seconds * 1e3) for t in self.top(top)],
            "by_type": [{"type": k, "count": n, "ms": s * 1e3, "percent": _percent(s, total)}
                        for k, n, s in self.by_type()],
        }

    def top(self, count: int = 10) -> list[LayerTime]:
        return sorted(self.executed, key=lambda t: -t.seconds)[:count]

    def report(self, top: int = 10) -> str:
        executed = self.executed
        total = sum(t.seconds for t in executed)
        lines = ["Per-layer times (execution order):"]
        lines += text_table([("id", "layer", "type", "status", "ms", "%")] + [
            (t.layer_id, t.name, f"{t.type}-{t.version}", t.status, f"{t.seconds * 1e3:.3f}",
             f"{_percent(t.seconds, total):.1f}") for t in executed], right={4, 5})
        lines += ["", f"Top {min(top, len(executed))} layers by time:"]
        lines += text_table([("id", "layer", "type", "ms", "%")] + [
            (t.layer_id, t.name, f"{t.type}-{t.version}", f"{t.seconds * 1e3:.3f}",
             f"{_percent(t.seconds, total):.1f}") for t in self.top(top)], right={3, 4})
        lines += ["", "Time by op type:"]
        lines += text_table([("type", "layers", "ms", "%")] + [
            (k, str(n), f"{s * 1e3:.3f}", f"{_percent(s, total):.1f}") for k, n, s in self.by_type()], right={1, 2, 3})
        skipped = Counter(t.status for t in self.times if t.status != "EXECUTED")
        lines += ["", (f"Total: {total * 1e3:.3f} ms in {len(executed)} executed layers "
                       f"({skipped.get('AT_LOAD', 0)} computed at load, {skipped.get('INPUT', 0)} inputs)")]
        return "\n".join(lines)


def _percent(part: float, total: float) -> float:
    return 100.0 * part / total if total > 0 else 0.0


class Progress:
    """An observer advancing a click progress bar on stderr, one step per layer. Only meant to be used
    when stderr is a terminal (see `on_terminal`); `close()` clears it."""

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
