"""Required attributes OpenVINO's reader lets a file leave out (issue 22, measured by tools/probe_shapes.py
--attributes on OpenVINO 2026.4.1): it keeps the op constructor's default and reads the file. irrun reports
such a file with `attr.missing.spec` (stricter than OpenVINO) and refuses to run it; every other missing
required attribute is `attr.missing` (OpenVINO refuses it too)."""
from __future__ import annotations

# (op type, op version) -> attributes OpenVINO reads the layer without
OPENVINO_DEFAULTS: dict[tuple[str, int], frozenset[str]] = {key: frozenset(names.split()) for key, names in {
    ("AvgPool", 1): "pads_begin pads_end",
    ("AvgPool", 14): "pads_begin pads_end",
    ("BatchNormInference", 5): "epsilon",
    ("BinaryConvolution", 1): "mode pad_value",
    ("Clamp", 1): "min max",
    ("Convert", 1): "destination_type",
    ("DeformablePSROIPooling", 1): "spatial_scale",
    ("DepthToSpace", 1): "mode",
    ("DetectionOutput", 8): "nms_threshold",
    ("Elu", 1): "alpha",
    ("ExperimentalDetectronDetectionOutput", 6): "deltas_weights max_delta_log_wh max_detections_per_image "
                                                 "nms_threshold post_nms_count score_threshold",
    ("ExperimentalDetectronGenerateProposalsSingleImage", 6): "min_size nms_threshold post_nms_count "
                                                              "pre_nms_count",
    ("ExperimentalDetectronROIFeatureExtractor", 6): "output_size pyramid_scales sampling_ratio",
    ("Eye", 9): "output_type",
    ("FakeQuantize", 1): "levels",
    ("GRN", 1): "bias",
    ("GRUCell", 3): "hidden_size",
    ("GRUSequence", 5): "direction hidden_size",
    ("GenerateProposals", 9): "min_size nms_threshold",
    ("GroupNormalization", 12): "epsilon",
    ("ISTFT", 16): "center normalized",
    ("Interpolate", 11): "mode",  # shape_calculation_mode: OpenVINO takes "sizes", which scales contradict
    ("LRN", 1): "alpha beta bias size",
    ("LSTMCell", 4): "hidden_size",
    ("LSTMSequence", 5): "direction hidden_size",
    ("MVN", 2): "eps",
    ("MVN", 6): "eps eps_mode normalize_variance",
    ("MaxPool", 1): "pads_begin pads_end",
    ("MaxPool", 14): "pads_begin pads_end",
    ("Multinomial", 13): "convert_type global_seed log_probs op_seed with_replacement",
    ("NormalizeL2", 1): "eps eps_mode",
    ("OneHot", 1): "axis",
    ("PriorBox", 8): "offset",
    ("PriorBoxClustered", 1): "offset",
    ("Proposal", 4): "base_size feat_stride min_size nms_thresh post_nms_topn pre_nms_topn ratio scale",
    ("RNNCell", 1): "hidden_size",
    ("RNNSequence", 5): "direction hidden_size",
    ("ROIAlign", 9): "mode pooled_h pooled_w sampling_ratio spatial_scale",
    ("ROIAlignRotated", 15): "pooled_h pooled_w sampling_ratio spatial_scale",
    ("RandomUniform", 8): "global_seed op_seed",
    ("RegionYolo", 1): "classes coords do_softmax num",
    ("Reshape", 1): "special_zero",
    ("Reverse", 1): "mode",
    ("STFT", 15): "transpose_frames",
    ("SegmentMax", 16): "fill_mode",
    ("SpaceToDepth", 1): "mode",
    ("StridedSlice", 1): "end_mask",
    ("TopK", 3): "axis mode sort",
    ("TopK", 11): "axis mode sort",
}.items()}


def missing_rule(op_type: str, version: int, names: tuple[str, ...]) -> str:
    """The rule of a missing required attribute (`names`: its spellings)."""
    tolerated = OPENVINO_DEFAULTS.get((op_type, version), frozenset())
    return "attr.missing.spec" if tolerated.intersection(names) else "attr.missing"
