"""Required attributes OpenVINO's reader takes when they are missing: it keeps the value the op's default
constructor gives (measured with OpenVINO 2026.4.1: the attribute removed from a valid IR, then the value of
`node.get_attributes()` after `read_model`). irrun reports such a file with the stricter rule attr.value.spec,
checks it on with OpenVINO's value, and refuses to run it. Where OpenVINO's value cannot be written as the
attribute's text (pads it fills with zeros for every spatial axis, an output type `dynamic`), None: the
layer stops at the stricter rule."""
from __future__ import annotations

OPENVINO_READS_MISSING: dict[tuple[str, int, str], str | None] = {
    ("Concat", 1, "axis"): "0",
    ("Convert", 1, "destination_type"): "dynamic",
    ("Clamp", 1, "min"): "0",
    ("Parameter", 1, "element_type"): "dynamic",
    ("OneHot", 1, "axis"): "0",
    ("MVN", 6, "eps"): "0",
    ("MVN", 6, "normalize_variance"): "false",
    ("MVN", 6, "eps_mode"): "inside_sqrt",
    ("GRUSequence", 5, "hidden_size"): "0",
    ("LSTMSequence", 5, "hidden_size"): "0",
    ("LSTMSequence", 5, "direction"): "forward",
    ("Interpolate", 4, "mode"): "nearest",
    ("Interpolate", 4, "shape_calculation_mode"): "sizes",
    ("Interpolate", 11, "mode"): "nearest",
    ("Interpolate", 11, "shape_calculation_mode"): "sizes",
    ("TopK", 11, "axis"): "0",
    ("TopK", 11, "mode"): "max",
    ("TopK", 11, "sort"): "none",
    ("ROIAlign", 9, "sampling_ratio"): "0",
    ("ROIAlign", 9, "mode"): "avg",
    ("ROIAlign", 9, "spatial_scale"): None,
    ("Range", 4, "output_type"): None,
    ("MaxPool", 8, "pads_begin"): None,
    ("MaxPool", 8, "pads_end"): None,
    ("MaxPool", 14, "pads_begin"): None,
    ("MaxPool", 14, "pads_end"): None,
    ("AvgPool", 14, "pads_begin"): None,
    ("AvgPool", 14, "pads_end"): None,
}

UNKNOWN = object()


def openvino_reads_missing(op_type: str, version: int | None, name: str):
    """The text OpenVINO reads for a missing required attribute, None when it reads one irrun cannot write,
    UNKNOWN when OpenVINO refuses it or it was not measured."""
    return OPENVINO_READS_MISSING.get((op_type, version, name), UNKNOWN)
