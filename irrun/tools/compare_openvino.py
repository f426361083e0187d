"""`compare --against openvino`: the layer-by-layer comparison with OpenVINO's CPU plugin (compare.py) together
with the check of its unmodified compiled model (openvino_fusion.py)."""
from __future__ import annotations

from .compare import Comparison, _output_diffs, _where, diff_arrays, openvino_layer_outputs
from .dumps import GIVEN, Observer, chain, output_arrays
from .inputs import named_feeds
from .openvino_fusion import check_plain_run


def compare_with_openvino(model, feeds: dict, rtol: float = 1e-4, atol: float = 1e-4,
                          observer: Observer | None = None, threads: int = 1, unmodified: bool = True,
                          sampler=None) -> Comparison:
    """Run the model in irrun and in OpenVINO's CPU plugin, every layer output exposed, and compare each
    layer output (matched by friendly name = layer name, and output index) and each final output. With
    `unmodified`, also the unmodified compiled model's outputs (openvino_fusion.py: exposing outputs changes
    what the plugin fuses)."""
    feeds = named_feeds(model, feeds)
    reference_layers, reference_outputs = openvino_layer_outputs(model, feeds, threads)
    comparison = Comparison(str(model.path), "openvino", rtol, atol)
    seen = set()

    def observe(node, outputs, seconds):
        if node.ref.type in GIVEN:
            return
        for port, array in enumerate(output_arrays(node, outputs)):
            key = (node.ref.name, port)
            if key not in reference_layers:
                comparison.missing.append(f"{node.ref} port {port}: OpenVINO has no output {port} of a node "
                                          f"named {node.ref.name!r}")
                continue
            seen.add(key)
            comparison.layers.append(diff_arrays(array, reference_layers[key], rtol, atol, **_where(node, port)))
            if sampler is not None:
                sampler(comparison.layers[-1], array, reference_layers[key])

    results = model.run(feeds, observer=chain(observe, observer))
    reference = {desc.name: array for desc, array in zip(model.outputs, reference_outputs)}
    _output_diffs(model, results, reference, rtol, atol, comparison)
    if unmodified:
        comparison.plain = check_plain_run(model, feeds, results, reference, rtol, atol, threads)
    return comparison
