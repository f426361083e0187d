"""Does OpenVINO compute the same when its intermediate outputs are not exposed?

`irrun compare --against openvino` reads OpenVINO's intermediate tensors by adding a Result on every node
output. The CPU plugin then compiles a different program: a node whose output is a model output cannot be
fused into its consumer, so, for example, a weight decompression chain stops being a FullyConnected with
compressed weights. This module compiles the unmodified model too, runs it on the same inputs and compares
its outputs with irrun's and with the instrumented run's. When they differ it lists the fused patterns
nearest the first affected output (compressed MatMul/Gather weights, found as irrun's own
`engine/decompression.py` finds them) and, for the plugin differences docs/semantics.md records (nf4 levels
read in f32 on the fused path), reruns irrun with the plugin's arithmetic to see whether that explains it.
"""
from __future__ import annotations

import math
from collections import deque
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import numpy as np

from .compare import Diff, _first_line, _jsonable, _num, diff_arrays, import_openvino
from .tables import text_table

# Plugin departures on the fused path that irrun can emulate: code element type -> what the plugin does.
PLUGIN_DEPARTURES = {
    "nf4": "the CPU plugin's fused path reads nf4 levels in f32, where OpenVINO's reference (and irrun) round "
           "them to f16 by the chain's Convert(nf4 -> f16): up to 1 f16 ulp of each level times its scale "
           "(docs/semantics.md, \"Constant folding and compressed weights\")",
}
NEIGHBOURHOOD_LAYERS = 200   # how far back from the affected output to look for fused patterns
SUSPECTS_SHOWN = 5


@dataclass
class Suspect:
    """A compressed weight (decompression chain) the plugin fuses into its reader."""

    layer_id: str        # the reader (MatMul or Gather)
    name: str
    type: str
    codes_type: str      # element type of the weight codes
    distance: int        # layers between the reader and the affected output
    chain: list[str]     # the chain's layer names, codes first

    @property
    def label(self) -> str:
        return f"layer {self.layer_id} ({self.name}, {self.type}) reads {self.codes_type} weights"


@dataclass
class FusedNode:
    """A node of the plugin's runtime graph (unmodified model) that merges layers or reads compressed weights."""

    name: str
    type: str              # the plugin's layer type: FullyConnected, Eltwise, Subgraph, ...
    precision: str         # its runtime precision
    weights: str | None    # element type of a FullyConnected/Gather's weights, when not f32
    layers: list[str]      # the model's layers it computes (the plugin's originalLayersNames)
    distance: int = 0      # layers between the nearest of them and the affected output

    @property
    def label(self) -> str:
        what = f"{self.type} {self.name!r}" + (f" with {self.weights} weights" if self.weights else "")
        merged = f", merging {len(self.layers)} layers" if len(self.layers) > 1 else ""
        precision = f" in {self.precision}" if self.precision not in ("f32", self.weights) else ""
        return f"{what}{merged}{precision}"


@dataclass
class PlainRun:
    """OpenVINO's unmodified compiled model against irrun (`outputs`) and against OpenVINO's own run with every
    node output exposed (`exposure`), one Diff per model output."""

    rtol: float
    atol: float
    outputs: list[Diff] = field(default_factory=list)
    exposure: list[Diff] = field(default_factory=list)
    suspects: list[Suspect] = field(default_factory=list)
    fused: list[FusedNode] = field(default_factory=list)   # near the first affected output, nearest first
    emulated: dict | None = None   # {"codes": [...], "outputs": [Diff]} irrun with the plugin's arithmetic
    error: str | None = None       # why the unmodified model could not be run

    @property
    def passed(self) -> bool:
        return self.error is None and all(d.ok for d in self.outputs)

    @property
    def affected(self) -> list[Diff]:
        return [d for d in self.outputs if not d.ok]

    @property
    def exposure_changes_result(self) -> bool:
        return any(not d.ok for d in self.exposure)

    @property
    def explained(self) -> bool:
        return bool(self.emulated) and all(d.ok for d in self.emulated["outputs"])

    def to_dict(self) -> dict:
        return {"passed": self.passed, "error": self.error,
                "exposing_outputs_changes_result": self.exposure_changes_result,
                "outputs": [_jsonable(asdict(d)) for d in self.outputs],
                "exposed_vs_unmodified": [_jsonable(asdict(d)) for d in self.exposure],
                "suspects": [dict(asdict(s), note=PLUGIN_DEPARTURES.get(s.codes_type)) for s in self.suspects],
                "fused_nodes": [asdict(f) for f in self.fused],
                "emulation": None if self.emulated is None else {
                    "codes": self.emulated["codes"], "explained": self.explained,
                    "outputs": [_jsonable(asdict(d)) for d in self.emulated["outputs"]]}}

    def text(self) -> list[str]:
        if self.error is not None:
            return [f"OpenVINO's unmodified model: not run ({self.error})"]
        lines = ["OpenVINO's unmodified model (no intermediate outputs exposed) against irrun:"]
        lines += text_table([("", "output", "max_abs", "max_rel", "mismatch", "exposed vs unmodified max_abs")] + [
            ("" if d.ok else "!", d.name, _num(d.max_abs), _num(d.max_rel), str(d.mismatches), _num(e.max_abs))
            for d, e in zip(self.outputs, self.exposure)], right={2, 3, 4, 5})
        if self.passed:
            return lines + ["the unmodified model agrees with irrun"]
        names = ", ".join(d.name for d in self.affected)
        worst = max(self.affected, key=lambda d: d.max_abs)
        if self.exposure_changes_result:
            lines.append(f"OpenVINO's result changes when its intermediate outputs are exposed: the unmodified "
                         f"model differs from irrun on {names} (max abs {_num(worst.max_abs)}, max rel "
                         f"{_num(worst.max_rel)}), so the layer comparison above does not show the program "
                         f"OpenVINO really runs")
        else:
            lines.append(f"the unmodified model differs from irrun on {names} (max abs {_num(worst.max_abs)})")
        if self.fused:
            lines.append("fused by the CPU plugin near the first affected output (nodes of its runtime graph "
                         "that merge layers or read compressed weights):")
            for node in self.fused[:SUSPECTS_SHOWN]:
                lines.append(f"  {node.label}, {node.distance} layers before the output")
            if len(self.fused) > SUSPECTS_SHOWN:
                lines.append(f"  ... and {len(self.fused) - SUSPECTS_SHOWN} more")
        if self.suspects:
            for codes in sorted({s.codes_type for s in self.suspects if s.codes_type in PLUGIN_DEPARTURES}):
                lines.append(f"known difference: {PLUGIN_DEPARTURES[codes]}")
        if self.emulated is not None:
            worst_emulated = max((d.max_abs for d in self.emulated["outputs"]), default=0.0)
            codes = ", ".join(self.emulated["codes"])
            if self.explained:
                lines.append(f"explained: irrun computing {codes} weights as the plugin's fused path does agrees "
                             f"with the unmodified model (max abs {_num(worst_emulated)}); irrun keeps "
                             f"OpenVINO's reference semantics")
            else:
                lines.append(f"not explained by the known {codes} difference: with it emulated irrun still "
                             f"differs by {_num(worst_emulated)}")
        return lines


def compiled_outputs(model, feeds: dict, threads: int = 1) -> tuple[list[np.ndarray], list[FusedNode]]:
    """The unmodified model file compiled for the CPU plugin (the f32 settings `compare` uses): its outputs in
    the model's output order, and the nodes of its runtime graph that merge layers or read compressed weights."""
    from .compare import openvino_config, openvino_feeds

    ov = import_openvino()
    core = ov.Core()
    ov_model = core.read_model(str(model.path))
    compiled = core.compile_model(ov_model, "CPU", openvino_config(threads))
    request = compiled.create_infer_request()
    request.infer(openvino_feeds(model, ov_model, feeds))
    outputs = [np.array(request.get_output_tensor(i).data, copy=True) for i in range(len(compiled.outputs))]
    return outputs, _fused_nodes(compiled.get_runtime_model())


def _fused_nodes(runtime_model) -> list[FusedNode]:
    nodes = []
    for node in runtime_model.get_ordered_ops():
        info = node.get_rt_info()
        kind = info["layerType"].astype(str)
        layers = [n for n in info["originalLayersNames"].astype(str).split(",") if n]
        weights = None
        if kind in ("FullyConnected", "Gather") and node.get_input_size() > 1:
            weights = node.input(1 if kind == "FullyConnected" else 0).get_element_type().get_type_name()
            weights = None if weights in ("f32", "dynamic") else weights
        if len(layers) > 1 or weights:
            nodes.append(FusedNode(node.get_friendly_name(), kind, info["runtimePrecision"].astype(str), weights,
                                   layers))
    return nodes


def check_plain_run(model, feeds: dict, irrun_outputs: dict, exposed_outputs: dict, rtol: float, atol: float,
                    threads: int = 1) -> PlainRun:
    """Run the unmodified model in OpenVINO and compare its outputs with irrun's and with `exposed_outputs`
    (OpenVINO's outputs with every intermediate exposed), both {output name: array}."""
    check = PlainRun(rtol, atol)
    try:
        plain, fused = compiled_outputs(model, feeds, threads)
    except Exception as exc:  # noqa: BLE001 - the instrumented run worked; say why this one did not
        check.error = _first_line(exc)
        return check
    plain = {desc.name: array for desc, array in zip(model.outputs, plain)}
    for desc in model.outputs:
        where = dict(layer_id=None, name=desc.name, type=None, version=None, port=None)
        check.outputs.append(diff_arrays(irrun_outputs[desc.name], plain[desc.name], rtol, atol, **where))
        if desc.name in exposed_outputs:
            check.exposure.append(diff_arrays(exposed_outputs[desc.name], plain[desc.name], rtol, atol, **where))
    if check.passed:
        return check
    result_id = _first_affected(model, check)
    check.suspects = fused_suspects(model, result_id)
    check.fused = _near(model, result_id, fused)
    codes = sorted({s.codes_type for s in check.suspects if s.codes_type in PLUGIN_DEPARTURES})
    if codes:
        emulated = run_with_plugin_arithmetic(model.path, feeds, codes)
        check.emulated = {"codes": codes, "outputs": [
            diff_arrays(emulated[desc.name], plain[desc.name], rtol, atol, layer_id=None, name=desc.name, type=None,
                        version=None, port=None) for desc in model.outputs]}
    return check


def _first_affected(model, check: PlainRun) -> str:
    """The Result layer of the affected output whose producer comes first in execution order."""
    position = {layer_id: i for i, layer_id in enumerate(model.graph.order)}
    affected = {d.name for d in check.affected}
    results = [(position.get(model.graph.nodes[r].inputs[0][0], math.inf), r)
               for desc, r in zip(model.outputs, model.graph.results) if desc.name in affected]
    return min(results)[1]


def _upstream(model, result_id: str) -> dict[str, int]:
    """Layers upstream of `result_id` by breadth-first distance, at most NEIGHBOURHOOD_LAYERS of them."""
    graph = model.graph
    distance = {result_id: 0}
    queue = deque([result_id])
    while queue and len(distance) < NEIGHBOURHOOD_LAYERS:
        layer_id = queue.popleft()
        for source in graph.nodes[layer_id].inputs:
            if source is not None and source[0] not in distance:
                distance[source[0]] = distance[layer_id] + 1
                queue.append(source[0])
    return distance


def _near(model, result_id: str, fused: list[FusedNode]) -> list[FusedNode]:
    by_name = {}
    for layer_id, hops in _upstream(model, result_id).items():
        name = model.graph.nodes[layer_id].ref.name
        by_name[name] = min(hops - 1, by_name.get(name, hops))
    near = []
    for node in fused:
        hops = [by_name[name] for name in [node.name, *node.layers] if name in by_name]
        if hops:
            node.distance = min(hops)
            near.append(node)
    return sorted(near, key=lambda n: n.distance)


def fused_suspects(model, result_id: str) -> list[Suspect]:
    """The decompression chains read by layers upstream of `result_id`, nearest first."""
    from ..engine.decompression import find_chains

    graph = model.graph
    chains = {reader: chain for chain in find_chains(graph) for reader, _ in chain.consumers}
    suspects = []
    for layer_id, hops in sorted(_upstream(model, result_id).items(), key=lambda item: item[1]):
        if layer_id in chains:
            chain, node = chains[layer_id], graph.nodes[layer_id]
            suspects.append(Suspect(layer_id, node.ref.name, f"{node.ref.type}-{node.ref.version}",
                                    graph.nodes[chain.codes].op.element_type.name, hops - 1,
                                    [graph.nodes[i].ref.name for i in chain.absorbed]))
    return suspects


@contextmanager
def plugin_arithmetic(codes):
    """While active, models loaded and run read the `codes` weight types as the CPU plugin's fused path does
    (see PLUGIN_DEPARTURES)."""
    from ..engine.folding import WideValues

    saved = WideValues.unrounded_codes
    WideValues.unrounded_codes = frozenset(codes)
    try:
        yield
    finally:
        WideValues.unrounded_codes = saved


def run_with_plugin_arithmetic(path, feeds: dict, codes) -> dict:
    from ..engine.loader import load

    with plugin_arithmetic(codes):
        return load(path).run(feeds)


def departures(model) -> dict[str, int]:
    """Code types of the model's fused compressed weights that the CPU plugin computes differently
    (PLUGIN_DEPARTURES), with how many MatMul/Gather layers read them."""
    from ..engine.decompression import find_chains

    counts: dict[str, int] = {}
    for chain in find_chains(model.graph):
        codes = model.graph.nodes[chain.codes].op.element_type.name
        if codes in PLUGIN_DEPARTURES:
            counts[codes] = counts.get(codes, 0) + len(chain.consumers)
    return counts


def explain_generation(folder, prompt, max_new_tokens: int, max_memory=None) -> str | None:
    """For `generate --against openvino`: when the decoder has weights the plugin computes differently, the
    same generation with irrun computing them as the plugin does, and what that leaves of the difference."""
    from ..engine.loader import load
    from .generate import generate_folder, read_folder

    counts = departures(load(read_folder(folder)[0], max_memory=max_memory))
    if not counts:
        return None
    with plugin_arithmetic(counts):
        emulated = generate_folder(folder, prompt, max_new_tokens, against_openvino=True, max_memory=max_memory)
    worst = max((s.max_logit_diff for s in emulated.steps), default=0.0)
    layers = ", ".join(f"{n} layers read {codes} weights" for codes, n in sorted(counts.items()))
    return (f"{layers}: {'; '.join(PLUGIN_DEPARTURES[c] for c in sorted(counts))}. With irrun computing them as "
            f"the plugin does, the max |logit diff| is {_num(worst)}")
