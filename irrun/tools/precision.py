"""Which layers must stay in f32 when a device computes in f16 or bf16?

`Emulation` runs a model as a device computing in a narrower float type would: every float tensor a layer
produces is rounded to that type (f16 overflows to inf beyond 65504), and so are the weights and inputs
such a layer reads. A layer *kept* in f32 computes on what it is given and its output is not rounded, unless
a layer that is not kept reads it (OpenVINO then inserts a Convert to the narrow type; with readers of both
kinds the emulation rounds for all of them, a slight pessimism). Arithmetic inside a layer stays f32, as
plugins accumulate in f32.

`analyse` ranks the layers by how much harm computing each one in the narrow type does, with the others in
f32 (the error of the model outputs against the f32 run), by group testing: a group of layers, in execution
order, is run narrow; when its error is below a fraction of the tolerance the whole group is harmless and is
not looked into, otherwise it is split in two. With k harmful layers among N this costs about
2 k log2(N / k) model runs (bounded by `max_runs`), not N. The smallest set to keep in f32 is then a prefix
of the ranking (binary search: log2 N runs), pruned one layer at a time when it is small. `mark_ir` writes a
copy of the IR with those layers carrying the rt_info OpenVINO 2026 reads to keep a layer out of precision
conversion (`DisablePrecisionConversion`, the successor of `disable_fp16_compression`).
"""
from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..ops.conversion import round_to_bf16

TYPES = ("f16", "bf16")
GIVEN = ("Parameter", "Constant", "Result", "ReadValue", "Assign")
HARMLESS_FRACTION = 0.1     # a group whose error stays under this fraction of the tolerance is not split
PRUNE_LIMIT = 24            # keep-sets up to this size are pruned one layer at a time
PRECISIONS = "dynamic:bf16,f16"  # DisablePrecisionConversion's value: from any type to bf16 or f16


def round_array(array: np.ndarray, kind: str) -> np.ndarray:
    """`array` rounded to f16 (overflow to inf) or bf16, in its own dtype; other dtypes unchanged."""
    if array is None or array.dtype.kind != "f":
        return array
    if kind == "f16":
        with np.errstate(over="ignore"):
            return array.astype(np.float16).astype(array.dtype)
    return round_to_bf16(array.astype(np.float32)).astype(array.dtype)


class Emulation:
    """Runs `model` computing in `kind` except the layers in `keep`; `run(feeds, keep)` returns the outputs."""

    def __init__(self, model, kind: str):
        if kind not in TYPES:
            raise InputError(f"--type {kind}: expected one of {', '.join(TYPES)}")
        self.model, self.kind = model, kind
        graph = model.graph
        self.readers: dict[tuple[str, int], list[str]] = {}
        for layer_id in graph.order:
            for source in graph.nodes[layer_id].inputs:
                if source is not None:
                    self.readers.setdefault(source, []).append(layer_id)
        at_load = {lid for (lid, _), info in model.infos.items() if info.value is not None}
        floats = {lid for (lid, _), info in model.infos.items() if info.type is not None and info.type.is_float}
        # candidates: layers computed at run time with a float output
        self.marked = marked_layers(model.path, kind) & set(graph.order)
        self.candidates = [lid for lid in graph.order if graph.nodes[lid].ref.type not in GIVEN
                           and lid not in at_load and lid in floats and lid not in self.marked]
        self.runs = 0
        self.overflows: dict[str, int] = {}   # layer id -> elements that became inf when rounded (last run)

    def run(self, feeds: dict, keep=frozenset(), narrow=None) -> dict:
        """With `narrow` given, only those candidates compute narrow (the others and `keep` stay f32)."""
        narrow_set = (set(self.candidates) if narrow is None else set(narrow)) - set(keep) - self.marked
        self.runs += 1
        self.overflows = {}

        def observe(node, outputs, seconds):
            if node.ref.type == "Result":
                return None
            changed, replaced = False, list(outputs)
            for port, array in enumerate(outputs):
                if array is None or array.dtype.kind != "f":
                    continue
                readers = self.readers.get((node.id, port), [])
                if node.id in narrow_set or any(r in narrow_set for r in readers):
                    rounded = round_array(array, self.kind)
                    new_inf = int(np.isinf(rounded).sum() - np.isinf(array).sum())
                    if new_inf:
                        self.overflows[node.id] = self.overflows.get(node.id, 0) + new_inf
                    replaced[port], changed = rounded, True
            return replaced if changed else None

        return self.model.run(feeds, observer=observe)


def marked_layers(path, kind: str) -> set[str]:
    """The ids of the layers whose rt_info keeps them out of conversion to `kind`, as OpenVINO 2026 reads it:
    DisablePrecisionConversion whose value names `kind` (or any type), or the legacy `precise` (f16)."""
    from lxml import etree

    from ..ir.xml import _parser

    try:
        root = etree.parse(str(path), _parser()).getroot()
    except (OSError, etree.XMLSyntaxError):
        return set()
    marked = set()
    for layer in root.iterfind("./layers/layer"):
        for attribute in layer.iterfind("./rt_info/attribute"):
            name, value = attribute.get("name"), attribute.get("value", "")
            targets = {t.strip() for part in value.split(";") for t in part.split(":")[-1].split(",")}
            if (name == "DisablePrecisionConversion" and (kind in targets or "dynamic" in targets)) or \
                    (name == "precise" and kind == "f16"):
                marked.add(layer.get("id"))
    return marked


def output_error(got: dict, reference: dict) -> float:
    """The largest relative error over the float outputs: max |got - ref| / max |ref|; inf when a value is
    not finite where the reference is."""
    worst = 0.0
    for name, ref in reference.items():
        if ref.dtype.kind != "f":
            continue
        a, b = got[name].astype(np.float64), ref.astype(np.float64)
        finite = np.isfinite(b)
        if np.any(finite & ~np.isfinite(a)):
            return math.inf
        scale = float(np.abs(b[finite]).max()) if finite.any() else 0.0
        error = float(np.abs(a - b)[finite].max()) if finite.any() else 0.0
        worst = max(worst, error / scale if scale > 0 else (0.0 if error == 0 else math.inf))
    return worst


@dataclass
class Ranked:
    layer_id: str
    name: str
    type: str
    harm: float           # output error with only this layer (or its group) narrow
    group: int = 1        # >1: a group not split further (its members' harm is at most `harm`)
    overflow: int = 0     # elements that overflowed to inf when this layer's output was rounded (all narrow)


@dataclass
class Analysis:
    model: str
    kind: str
    tolerance: float
    error_all: float                          # every candidate narrow
    candidates: int
    marked: int = 0                           # layers the IR already marks to stay in f32 (kept)
    ranking: list[Ranked] = field(default_factory=list)
    keep: list[Ranked] = field(default_factory=list)
    keep_layers: list[str] = field(default_factory=list)   # the layer ids of `keep` (groups expanded)
    error_kept: float | None = None           # with `keep` in f32
    runs: int = 0
    max_runs: int = 0
    budget_exhausted: bool = False

    def to_dict(self) -> dict:
        from dataclasses import asdict

        def clean(v):
            return None if isinstance(v, float) and not math.isfinite(v) else v

        return {"model": self.model, "type": self.kind, "tolerance": self.tolerance,
                "error_all": clean(self.error_all), "candidates": self.candidates, "marked": self.marked,
                "error_kept": clean(self.error_kept), "runs": self.runs, "max_runs": self.max_runs,
                "budget_exhausted": self.budget_exhausted,
                "ranking": [{k: clean(v) for k, v in asdict(r).items()} for r in self.ranking],
                "keep": self.keep_layers}

    def text(self, top: int = 20) -> str:
        lines = [f"{self.model}: computing in {self.kind} (weights and every layer output rounded"
                 + (", overflow to inf" if self.kind == "f16" else "") + f"), {self.candidates} layers"
                 + (f" ({self.marked} more marked in the IR to stay in f32)" if self.marked else "") + ": "
                 f"output error {_num(self.error_all)} (max |y - y_f32| / max |y_f32|; tolerance "
                 f"{self.tolerance:g})"]
        if self.error_all <= self.tolerance:
            lines.append(f"every layer can compute in {self.kind} ({self.runs} runs)")
            return "\n".join(lines)
        lines.append(f"Layers by the output error they cause alone in {self.kind} (the others in f32):")
        rows = [("rank", "id", "layer", "type", "error alone", "overflow")]
        for i, r in enumerate(self.ranking[:top]):
            name = r.name if r.group == 1 else f"{r.name} and {r.group - 1} more (not split: at most)"
            rows.append((str(i + 1), r.layer_id, name, r.type, _num(r.harm), str(r.overflow) if r.overflow else ""))
        from .tables import text_table

        lines += text_table(rows, right={0, 4, 5})
        if len(self.ranking) > top:
            lines.append(f"  ... {len(self.ranking) - top} more")
        if self.keep:
            lines.append(f"Keep in f32 ({len(self.keep_layers)} layers): " + ", ".join(
                f"{r.name} ({r.layer_id})" + (f" and the next {r.group - 1} (group)" if r.group > 1 else "")
                for r in self.keep))
            lines.append(f"  output error with these in f32: {_num(self.error_kept)} "
                         f"({'under' if self.error_kept <= self.tolerance else 'NOT under'} the tolerance)")
        else:
            lines.append("no set of layers found that brings the error under the tolerance")
        lines.append(f"{self.runs} model runs" + (f" (the ranking's budget of {self.max_runs} was reached: "
                                                   f"groups left unsplit)" if self.budget_exhausted else ""))
        return "\n".join(lines)


def _num(value) -> str:
    return "inf" if value is None or math.isinf(value) else f"{value:.3g}"


def analyse(model, feeds: dict, kind: str, tolerance: float = 1e-2, max_runs: int = 200) -> Analysis:
    emulation = Emulation(model, kind)
    graph = model.graph
    reference = model.run(feeds)
    all_narrow = emulation.run(feeds)
    overflow = dict(emulation.overflows)
    analysis = Analysis(str(model.path), kind, tolerance, output_error(all_narrow, reference),
                        len(emulation.candidates), len(emulation.marked), max_runs=max_runs)
    if analysis.error_all <= tolerance:
        analysis.runs = emulation.runs + 1
        return analysis

    def harm(group):
        return output_error(emulation.run(feeds, narrow=group), reference)

    def entry(group, value):
        ref = graph.nodes[group[0]].ref
        return Ranked(ref.id, ref.name, f"{ref.type}-{ref.version}", value, len(group),
                      sum(overflow.get(lid, 0) for lid in group))

    ranked: list[Ranked] = []
    pending = [(list(emulation.candidates), analysis.error_all)]
    while pending:
        group, value = pending.pop(0)
        if value <= HARMLESS_FRACTION * tolerance or len(group) == 1:
            ranked.append(entry(group, value))
            continue
        if emulation.runs + 2 > max_runs:
            analysis.budget_exhausted = True
            ranked.append(entry(group, value))
            continue
        half = len(group) // 2
        pending += [(part, harm(part)) for part in (group[:half], group[half:])]
    position = {lid: i for i, lid in enumerate(graph.order)}
    ranked.sort(key=lambda r: (-_sortable(r.harm), -r.overflow, r.group, position[r.layer_id]))
    analysis.ranking = ranked
    members = {r.layer_id: _group_members(emulation.candidates, r) for r in ranked}
    keep = _smallest_prefix(emulation, feeds, reference, ranked, members, tolerance)
    if keep is not None:
        keep = _prune(emulation, feeds, reference, keep, members, tolerance)
        analysis.keep = keep
        analysis.keep_layers = sorted(_layers(keep, members), key=position.get)
        analysis.error_kept = output_error(emulation.run(feeds, keep=set(analysis.keep_layers)), reference)
    analysis.runs = emulation.runs + 1
    return analysis


def _sortable(value: float) -> float:
    return 1e300 if math.isinf(value) else value


def _group_members(candidates: list[str], ranked: Ranked) -> list[str]:
    start = candidates.index(ranked.layer_id)
    return candidates[start:start + ranked.group]


def _layers(entries, members) -> set[str]:
    return {lid for r in entries for lid in members[r.layer_id]}


def _smallest_prefix(emulation, feeds, reference, ranked, members, tolerance):
    """The shortest prefix of the ranking that, kept in f32, brings the error under the tolerance (binary
    search, assuming more layers in f32 never hurt); None when even the whole ranking does not."""
    low, high = 1, len(ranked)
    if output_error(emulation.run(feeds, keep=_layers(ranked, members)), reference) > tolerance:
        return None
    while low < high:
        middle = (low + high) // 2
        if output_error(emulation.run(feeds, keep=_layers(ranked[:middle], members)), reference) <= tolerance:
            high = middle
        else:
            low = middle + 1
    return ranked[:low]


def _prune(emulation, feeds, reference, keep, members, tolerance):
    """Drop entries (last ranked first) whose removal keeps the error under the tolerance."""
    if len(keep) > PRUNE_LIMIT:
        return keep
    keep = list(keep)
    for entry in reversed(list(keep)):
        trial = [r for r in keep if r is not entry]
        if trial and output_error(emulation.run(feeds, keep=_layers(trial, members)), reference) <= tolerance:
            keep = trial
    return keep


def mark_ir(model, layer_ids, destination) -> Path:
    """A copy of the model's IR (XML and .bin) at `destination` (.xml) whose layers `layer_ids` carry
    `DisablePrecisionConversion` from any type to f16 and bf16, which OpenVINO's precision conversion honours."""
    from lxml import etree

    from ..ir.xml import _parser

    source = Path(model.path)
    destination = Path(destination)
    if destination.suffix.lower() != ".xml":
        raise InputError(f"--output {destination}: expected a .xml path")
    try:
        tree = etree.parse(str(source), _parser())
    except (OSError, etree.XMLSyntaxError) as exc:
        raise InputError(f"cannot read {source}: {exc}") from None
    layers = {layer.get("id"): layer for layer in tree.getroot().iterfind("./layers/layer")}
    for layer_id in layer_ids:
        layer = layers.get(layer_id)
        if layer is None:
            raise InputError(f"{source}: no layer with id {layer_id} to mark")
        rt_info = layer.find("rt_info")
        if rt_info is None:
            rt_info = etree.Element("rt_info")
            data = layer.find("data")
            layer.insert(0 if data is None else layer.index(data) + 1, rt_info)
        for old in rt_info.findall("attribute[@name='DisablePrecisionConversion']"):
            rt_info.remove(old)
        etree.SubElement(rt_info, "attribute", name="DisablePrecisionConversion", version="0", value=PRECISIONS)
    try:
        tree.write(str(destination), encoding="utf-8", xml_declaration=True)
        shutil.copyfile(source.with_suffix(".bin"), destination.with_suffix(".bin"))
    except OSError as exc:
        raise InputError(f"cannot write {destination}: {exc.strerror or exc}") from None
    return destination
