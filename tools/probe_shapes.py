"""Differential probe of single ops' shape and type checks against OpenVINO's reader (issue 22).

The shape-and-type twin of tools/probe_values.py: each probe is one op on Parameters (and constant side
inputs), written by OpenVINO valid; each trial edits ONE Parameter's `shape` or `element_type` (a dim set to
0/1/2/3/5/dynamic, the rank one lower or higher, the rank dynamic, another element type), or with
--attributes ONE attribute of the op (an int or a list element set to 0/-1/-2/1/2/5/100, a list one shorter
or longer, a boolean flipped, an enum set to an unknown word, the attribute dropped), and asks OpenVINO
(`read_model` + `validate_nodes_and_infer_types`) and `irrun.check`. Printed: every trial where they disagree,
`missed` (OpenVINO refuses, irrun reports no error of the OpenVINO class) or `stricter` (irrun refuses with a
rule classed as OpenVINO's, OpenVINO reads the file).

    python tools/probe_shapes.py                 # every probe
    python tools/probe_shapes.py MatMul Gather   # some
    python tools/probe_shapes.py --attributes    # attribute edits instead
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutate_corpus import OpenVINO  # noqa: E402
from probe_values import disagrees  # noqa: E402

DIMS = ["0", "1", "2", "3", "5", "?"]
TYPES = ["f16", "i32", "i64", "u8", "boolean"]
PARAMETER = re.compile(r'(type="Parameter"[^>]*>\s*<data shape=")([^"]*)(" element_type=")([^"]*)(")')


def probes(ov):
    """{name: build()}; build() gives (outputs or a whole model, parameters)."""
    from openvino import opset1 as o1, opset2 as o2, opset3 as o3, opset4 as o4, opset5 as o5, opset6 as o6, opset7 as o7
    from openvino import opset8 as o8, opset9 as o9, opset10 as o10, opset11 as o11, opset12 as o12
    from openvino import opset13 as o13, opset14 as o14, opset15 as o15, opset16 as o16
    from openvino.utils.node_factory import NodeFactory

    def factory(opset, type_name, inputs, attrs):
        return NodeFactory(opset).create(type_name, [node.output(0) for node in inputs], attrs)

    params = []

    def p(shape, dtype=np.float32):
        params.append(o1.parameter(shape, dtype))
        return params[-1]

    def c(value, dtype=np.int64):
        return o1.constant(np.array(value, dtype=dtype))

    image = lambda: p([2, 4, 8, 8])  # noqa: E731
    seq = lambda: p([2, 5, 6])  # noqa: E731
    table = {
        "Convolution": lambda: [o1.convolution(image(), p([6, 4, 3, 3]), [1, 1], [0, 0], [0, 0], [1, 1])],
        "GroupConvolution": lambda: [o1.group_convolution(image(), p([2, 3, 2, 3, 3]), [1, 1], [0, 0], [0, 0],
                                                          [1, 1])],
        "ConvolutionBackpropData": lambda: [o1.convolution_backprop_data(image(), p([4, 3, 3, 3]), [2, 2])],
        "ConvolutionBackpropData.shape": lambda: [o1.convolution_backprop_data(
            image(), p([4, 3, 3, 3]), [2, 2], p([2], np.int64))],
        "GroupConvolutionBackpropData": lambda: [o1.group_convolution_backprop_data(
            image(), p([2, 2, 3, 3, 3]), [2, 2])],
        "MaxPool": lambda: [o14.max_pool(image(), [1, 1], [1, 1], [0, 0], [0, 0], [2, 2]).output(0)],
        "AvgPool": lambda: [o14.avg_pool(image(), [1, 1], [0, 0], [0, 0], [2, 2], True)],
        "AdaptiveMaxPool": lambda: [o8.adaptive_max_pool(image(), p([2], np.int64)).output(0)],
        "MatMul": lambda: [o1.matmul(seq(), p([6, 3]), False, False)],
        "MatMul.1d": lambda: [o1.matmul(p([6]), p([2, 6, 3]), False, False)],
        "Gather": lambda: [o8.gather(seq(), p([2, 3], np.int64), p([], np.int64), 1)],
        "GatherElements": lambda: [o6.gather_elements(seq(), p([2, 5, 2], np.int64), 2)],
        "GatherND": lambda: [o8.gather_nd(seq(), p([3, 2], np.int64), 0)],
        "GatherND.batch": lambda: [o8.gather_nd(seq(), p([2, 3, 1], np.int64), 1)],
        "Reshape": lambda: [o1.reshape(seq(), p([2], np.int64), True)],
        "Squeeze": lambda: [o1.squeeze(p([2, 1, 6]), p([1], np.int64))],
        "Unsqueeze": lambda: [o1.unsqueeze(seq(), p([1], np.int64))],
        "Transpose": lambda: [o1.transpose(seq(), p([3], np.int64))],
        "Concat": lambda: [o1.concat([seq(), p([2, 3, 6])], 1)],
        "Split": lambda: list(o1.split(seq(), p([], np.int64), 5).outputs()),
        "VariadicSplit": lambda: list(o1.variadic_split(seq(), p([], np.int64), p([2], np.int64)).outputs()),
        "StridedSlice": lambda: [o1.strided_slice(seq(), p([2], np.int64), p([2], np.int64), p([2], np.int64),
                                                  [0, 0], [0, 0])],
        "Slice": lambda: [o8.slice(seq(), p([2], np.int64), p([2], np.int64), p([2], np.int64),
                                   p([2], np.int64))],
        "Broadcast": lambda: [o3.broadcast(p([5, 1]), p([3], np.int64))],
        "Broadcast.explicit": lambda: [o3.broadcast(p([5]), c([2, 5, 3]), p([1], np.int64), "explicit")],
        "Tile": lambda: [o1.tile(seq(), p([3], np.int64))],
        "Interpolate11": lambda: [o11.interpolate(image(), p([2], np.int64), "nearest", "sizes",
                                                  axes=p([2], np.int64))],
        "Interpolate11.scales": lambda: [o11.interpolate(image(), p([2]), "linear", "scales",
                                                         axes=p([2], np.int32))],
        "ReduceSum": lambda: [o1.reduce_sum(seq(), p([1], np.int64), False)],
        "TopK": lambda: [o11.topk(seq(), p([], np.int64), 1, "max", "value").output(0)],
        "NMS9": lambda: list(o9.non_max_suppression(p([1, 6, 4]), p([1, 2, 6]), p([], np.int64),
                                                    p([], np.float32), p([], np.float32)).outputs()),
        "SDPA": lambda: [o13.scaled_dot_product_attention(p([2, 4, 5, 8]), p([2, 4, 7, 8]), p([2, 4, 7, 6]),
                                                          p([5, 7]), p([], np.float32), False)],
        "Convert": lambda: [o1.convert(seq(), "i32")],
        "Add": lambda: [o1.add(seq(), p([5, 1]))],
        "Select": lambda: [o1.select(p([5, 1], bool), seq(), p([6]))],
        "Softmax": lambda: [o8.softmax(seq(), -1)],
        "MVN6": lambda: [o6.mvn(seq(), p([1], np.int64), True, 1e-5, "inside_sqrt")],
        "Pad": lambda: [o12.pad(seq(), p([3], np.int64), p([3], np.int64), "constant", p([], np.float32))],
        "ScatterUpdate": lambda: [o3.scatter_update(seq(), p([2], np.int64), p([2, 2, 6]), p([], np.int64))],
        "ScatterElementsUpdate": lambda: [o12.scatter_elements_update(seq(), p([2, 5, 2], np.int64),
                                                                      p([2, 5, 2]), p([], np.int64))],
        "ScatterNDUpdate": lambda: [o4.scatter_nd_update(seq(), p([3, 1], np.int64), p([3, 5, 6]))],
        "FakeQuantize": lambda: [o1.fake_quantize(seq(), p([1, 1, 6]), p([1, 1, 6]), p([]), p([]), 256)],
        "PRelu": lambda: [o1.prelu(image(), p([4, 1, 1]))],
        "Clamp": lambda: [o1.clamp(seq(), 0.0, 1.0)],
        "BatchNormInference": lambda: [o5.batch_norm_inference(image(), p([4]), p([4]), p([4]), p([4]), 1e-5)],
        "GroupNormalization": lambda: [o12.group_normalization(image(), p([4]), p([4]), 2, 1e-5)],
        "Einsum": lambda: [o8.einsum([seq(), p([6, 3])], "abc,cd->abd")],
        "DepthToSpace": lambda: [o1.depth_to_space(image(), "blocks_first", 2)],
        "ShapeOf": lambda: [o3.shape_of(seq())],
        "Range": lambda: [o4.range(p([], np.int64), p([], np.int64), p([], np.int64), "i64")],
        "LSTMCell": lambda: list(o4.lstm_cell(p([2, 6]), p([2, 3]), p([2, 3]), p([12, 6]), p([12, 3]), p([12]),
                                              3).outputs()),
        "LSTMSequence": lambda: list(o5.lstm_sequence(seq(), p([2, 1, 3]), p([2, 1, 3]), p([2], np.int32),
                                                      p([1, 12, 6]), p([1, 12, 3]), p([1, 12]), 3,
                                                      "forward").outputs()),
        "GRUSequence": lambda: list(o5.gru_sequence(seq(), p([2, 1, 3]), p([2], np.int32), p([1, 9, 6]),
                                                    p([1, 9, 3]), p([1, 9]), 3, "forward").outputs()),
        "RNNSequence": lambda: list(o5.rnn_sequence(seq(), p([2, 1, 3]), p([2], np.int32), p([1, 3, 6]),
                                                    p([1, 3, 3]), p([1, 3]), 3, "forward").outputs()),
        "GRUCell": lambda: list(o3.gru_cell(p([2, 6]), p([2, 3]), p([9, 6]), p([9, 3]), p([9]), 3).outputs()),
        "CumSum": lambda: [o3.cumsum(seq(), p([], np.int64))],
        "OneHot": lambda: [o1.one_hot(p([3], np.int64), p([], np.int64), p([]), p([]), -1)],
        "Bucketize": lambda: [o3.bucketize(seq(), p([4]))],
        "ReverseSequence": lambda: [o1.reverse_sequence(seq(), p([2], np.int64), 0, 1)],
        "NormalizeL2": lambda: [o1.normalize_l2(seq(), p([1], np.int64), 1e-5, "add")],
        "Roll": lambda: [o8.roll(seq(), p([1], np.int64), p([1], np.int64))],
        "Multinomial": lambda: [o13.multinomial(p([2, 5]), p([], np.int64), "i64", False, False)],
        "Gather1": lambda: [o1.gather(seq(), p([3], np.int64), p([], np.int64))],
        "Gather7": lambda: [o7.gather(seq(), p([2, 3], np.int64), p([], np.int64), 1)],
        "GatherTree": lambda: [o1.gather_tree(p([5, 2, 3]), p([5, 2, 3]), p([2]), p([]))],
        "Concat3": lambda: [o1.concat([seq(), p([2, 3, 6]), p([2, 1, 6])], 1)],
        "Select.none": lambda: [o1.select(p([2, 5, 6], bool), seq(), seq(), "none")],
        "ReduceMax": lambda: [o1.reduce_max(seq(), p([2], np.int64), True)],
        "ReduceL2": lambda: [o4.reduce_l2(seq(), p([1], np.int64), False)],
        "ReduceLogicalAnd": lambda: [o1.reduce_logical_and(p([2, 5], bool), p([1], np.int64), False)],
        "TopK3": lambda: list(o3.topk(seq(), p([], np.int64), 1, "max", "value").outputs()),
        "NMS5": lambda: list(o5.non_max_suppression(p([1, 6, 4]), p([1, 2, 6]), p([], np.int64),
                                                    p([], np.float32), p([], np.float32), p([])).outputs()),
        "MatrixNms": lambda: list(o8.matrix_nms(p([1, 6, 4]), p([1, 2, 6])).outputs()),
        "MulticlassNms": lambda: list(o9.multiclass_nms(p([1, 6, 4]), p([1, 2, 6])).outputs()),
        "MulticlassNms.rois": lambda: list(o9.multiclass_nms(p([2, 6, 4]), p([2, 6]), p([2], np.int32)).outputs()),
        "ROIAlign9": lambda: [o9.roi_align(image(), p([3, 4]), p([3], np.int64), 2, 2, 2, 1.0, "avg")],
        "ROIPooling": lambda: [o2.roi_pooling(image(), p([3, 5]), [2, 2], 1.0)],
        "DeformableConvolution8": lambda: [o8.deformable_convolution(image(), p([2, 18, 6, 6]), p([6, 4, 3, 3]),
                                                                     [1, 1], [0, 0], [0, 0], [1, 1])],
        "GridSample": lambda: [o9.grid_sample(image(), p([2, 5, 5, 2]), {})],
        "ConvertLike": lambda: [o1.convert_like(seq(), p([], np.int32))],
        "Power": lambda: [o1.power(seq(), p([6]))],
        "Equal": lambda: [o1.equal(seq(), p([6]))],
        "LogicalAnd": lambda: [o1.logical_and(p([2, 5], bool), p([5], bool))],
        "BitwiseAnd": lambda: [o13.bitwise_and(p([2, 5], np.int32), p([5], np.int32))],
        "MatMul.t": lambda: [o1.matmul(seq(), p([3, 6]), False, True)],
        "LogSoftmax": lambda: [o5.log_softmax(seq(), 1)],
        "NonZero": lambda: [o3.non_zero(seq(), "i64")],
        "Unique": lambda: list(o10.unique(seq(), c(1)).outputs()),
        "SpaceToDepth": lambda: [o1.space_to_depth(image(), "blocks_first", 2)],
        "ShuffleChannels": lambda: [o3.shuffle_channels(image(), 1, 2)],
        "CTCGreedyDecoderSeqLen": lambda: list(o6.ctc_greedy_decoder_seq_len(seq(), p([2], np.int32),
                                                                           p([], np.int32)).outputs()),
        "CTCLoss": lambda: [o4.ctc_loss(seq(), p([2], np.int32), p([2, 5], np.int32), p([2], np.int32),
                                        p([], np.int32))],
        "EmbeddingBagPackedSum": lambda: [o3.embedding_bag_packed_sum(p([10, 4]), p([3, 2], np.int64),
                                                                      p([3, 2]))],
        "EmbeddingBagOffsetsSum": lambda: [o3.embedding_bag_offsets_sum(p([10, 4]), p([5], np.int64),
                                                                        p([3], np.int64), p([], np.int64),
                                                                        p([5]))],
        "ExtractImagePatches": lambda: [o3.extract_image_patches(image(), [2, 2], [1, 1], [1, 1], "valid")],
        "Eye": lambda: [o9.eye(p([], np.int64), p([], np.int64), p([], np.int64), "f32", p([1], np.int64))],
        "RandomUniform": lambda: [o8.random_uniform(p([2], np.int64), p([1]), p([1]), "f32")],
        "StridedSlice.masks": lambda: [o1.strided_slice(seq(), p([3], np.int64), p([3], np.int64),
                                                        p([3], np.int64), [0, 1, 0], [0, 0, 1], [1, 0, 0],
                                                        [0, 0, 0], [0, 0, 0])],
        "MaxPool1": lambda: [o1.max_pool(image(), [1, 1], [0, 0], [0, 0], [2, 2])],
        "AvgPool1": lambda: [o1.avg_pool(image(), [1, 1], [0, 0], [0, 0], [2, 2], True)],
        "Col2Im": lambda: [o15.col2im(p([1, 12, 9]), p([2], np.int64), p([2], np.int64))],
        "STFT": lambda: [o15.stft(p([2, 48]), p([16]), p([], np.int64), p([], np.int64), False)],
        "DFT": lambda: [o7.dft(p([2, 8, 8, 2]), p([2], np.int64), p([2], np.int64))],
        "RDFT": lambda: [o9.rdft(p([2, 8, 8]), p([2], np.int64))],
        "IRDFT": lambda: [o9.irdft(p([2, 8, 5, 2]), p([2], np.int64))],
        "SpaceToBatch": lambda: [o3.space_to_batch(seq(), p([3], np.int64), p([3], np.int64), p([3], np.int64))],
        "BatchToSpace": lambda: [o3.batch_to_space(seq(), p([3], np.int64), p([3], np.int64), p([3], np.int64))],
        "Pad1": lambda: [o1.pad(seq(), p([3], np.int64), p([3], np.int64), "constant", p([]))],
        "ScatterNDUpdate15": lambda: [o15.scatter_nd_update(seq(), p([3, 1], np.int64), p([3, 5, 6]), "sum")],
        "ScatterElementsUpdate3": lambda: [o3.scatter_elements_update(seq(), p([2, 5, 2], np.int64),
                                                                      p([2, 5, 2]), p([], np.int64))],
        "Sigmoid": lambda: [o1.sigmoid(seq())],
        "Relu": lambda: [o1.relu(seq())],
        "Exp": lambda: [o1.exp(seq())],
        "Sqrt": lambda: [o1.sqrt(seq())],
        "Abs": lambda: [o1.abs(seq())],
        "Floor": lambda: [o1.floor(seq())],
        "Sign": lambda: [o1.sign(seq())],
        "Swish": lambda: [o4.swish(seq(), p([]))],
        "HSwish": lambda: [o4.hswish(seq())],
        "Gelu7": lambda: [o7.gelu(seq(), "erf")],
        "Mish": lambda: [o4.mish(seq())],
        "SoftPlus": lambda: [o4.softplus(seq())],
        "Elu": lambda: [o1.elu(seq(), 1.0)],
        "Erf": lambda: [o1.erf(seq())],
        "LogicalNot": lambda: [o1.logical_not(p([2, 5], bool))],
        "Sin": lambda: [o1.sin(seq())],
        "Negative": lambda: [o1.negative(seq())],
        "SquaredDifference": lambda: [o1.squared_difference(seq(), p([6]))],
        "Mod": lambda: [o1.mod(seq(), p([6]))],
        "Maximum": lambda: [o1.maximum(seq(), p([6]))],
        "HardSigmoid": lambda: [o1.hard_sigmoid(seq(), p([]), p([]))],
        "Selu": lambda: [o1.selu(seq(), p([1]), p([1]))],
        "LRN": lambda: [o1.lrn(image(), p([1], np.int64))],
        "MVN1": lambda: [o2.mvn(image(), True, True, 1e-5)],
        "Proposal4": lambda: list(o4.proposal(p([1, 6, 4, 4]), p([1, 12, 4, 4]), p([3]), {
            "base_size": np.uint32(16), "pre_nms_topn": np.uint32(10), "post_nms_topn": np.uint32(5), "nms_thresh": 0.7, "feat_stride": np.uint32(16),
            "min_size": np.uint32(1), "ratio": [1.0], "scale": [1.0, 2.0, 4.0]}).outputs()),
        "PriorBox": lambda: [o8.prior_box(p([2], np.int64), c([32, 32]), {"min_size": [2.0], "aspect_ratio": [1.0], "offset": 0.5})],
        "DetectionOutput8": lambda: [o8.detection_output(p([1, 40]), p([1, 30]), p([1, 2, 40]), {
            "background_label_id": 0, "top_k": 5, "variance_encoded_in_target": False, "keep_top_k": [5],
            "code_type": "caffe.PriorBoxParameter.CORNER", "share_location": True, "nms_threshold": 0.5,
            "confidence_threshold": 0.1, "clip_after_nms": False, "clip_before_nms": False,
            "decrease_label_id": False, "normalized": True, "input_height": 1, "input_width": 1,
            "objectness_score": 0.0})],
        "FakeConvert": lambda: [o13.fake_convert(seq(), p([1, 1, 6]), p([1, 1, 6]), "f8e4m3")],
        "SliceScatter": lambda: [o15.slice_scatter(seq(), p([2, 2, 6]), p([1], np.int64), p([1], np.int64),
                                                   p([1], np.int64), p([1], np.int64))],
        "SearchSorted": lambda: [o15.search_sorted(p([2, 5]), p([2, 3]), False)],
        "Squeeze.noaxes": lambda: [o15.squeeze(p([2, 1, 6]))],
        "AdaptiveAvgPool": lambda: [o8.adaptive_avg_pool(image(), p([2], np.int64))],
        "BinaryConvolution": lambda: [o1.binary_convolution(image(), p([6, 4, 3, 3], bool), [1, 1], [0, 0], [0, 0],
                                                            [1, 1], "xnor-popcount", 0.0)],
        "CTCGreedyDecoder": lambda: [o1.ctc_greedy_decoder(p([5, 2, 6]), p([5, 2]))],
        "ConvertPromoteTypes": lambda: list(o14.convert_promote_types(seq(), p([6], np.float16)).outputs()),
        "DeformablePSROIPooling": lambda: [o1.deformable_psroi_pooling(p([2, 8, 8, 8]), p([3, 5]), 2, 1.0, 2,
                                                                       "bilinear_deformable", 1, 1, 0.0, 1)],
        "EmbeddingSegmentsSum": lambda: [o3.embedding_segments_sum(p([10, 4]), p([3], np.int64),
                                                                   p([3], np.int64), p([], np.int64))],
        "EmbeddingBagOffsets15": lambda: [o15.embedding_bag_offsets(p([10, 4]), p([5], np.int64),
                                                                    p([3], np.int64), p([], np.int64), p([5]))],
        "EmbeddingBagPacked15": lambda: [o15.embedding_bag_packed(p([10, 4]), p([3, 2], np.int64), p([3, 2]))],
        "GRN": lambda: [o1.grn(image(), 1e-5)],
        "GenerateProposals": lambda: list(o9.generate_proposals(p([1, 3]), p([4, 4, 3, 4]), p([1, 12, 4, 4]),
                                                                p([1, 3, 4, 4]), 0.0, 0.7, 10, 5).outputs()),
        "I420toRGB": lambda: [o8.i420_to_rgb(p([1, 6, 4, 1]))],
        "NV12toRGB": lambda: [o8.nv12_to_rgb(p([1, 6, 4, 1]))],
        "IDFT": lambda: [o7.idft(p([2, 8, 8, 2]), p([2], np.int64))],
        "Identity": lambda: [o16.identity(seq())],
        "Inverse": lambda: [o14.inverse(p([2, 3, 3]))],
        "IsFinite": lambda: [o10.is_finite(seq())],
        "NMSRotated": lambda: list(o13.nms_rotated(p([1, 6, 5]), p([1, 2, 6]), p([], np.int64), p([]),
                                                    p([])).outputs()),
        "PSROIPooling": lambda: [o1.psroi_pooling(p([2, 8, 8, 8]), p([3, 5]), 2, 2, 1.0, 1, 1, "average")],
        "RNNCell": lambda: list(o3.rnn_cell(p([2, 6]), p([2, 3]), p([3, 6]), p([3, 3]), p([3]), 3, ["tanh"], [], []).outputs()),
        "ROIAlignRotated": lambda: [o15.roi_align_rotated(image(), p([3, 5]), p([3], np.int64), 2, 2, 2, 1.0,
                                                          True)],
        "RegionYolo": lambda: [o1.region_yolo(p([1, 125, 4, 4]), 4, 20, 5, True, [0], 1, 3)],
        "ReorgYolo": lambda: [o2.reorg_yolo(image(), [2])],
        "SegmentMax": lambda: [o16.segment_max(p([4, 3]), p([4], np.int64), p([], np.int64), "zero")],
        "SparseFillEmptyRows": lambda: list(o16.sparse_fill_empty_rows(p([3]), p([2], np.int64), p([3, 2], np.int64),
                                                                       p([])).outputs()),
        "BitwiseNot": lambda: [o13.bitwise_not(p([2, 5], np.int32))],
        "BitwiseLeftShift": lambda: [o15.bitwise_left_shift(p([2, 5], np.int32), p([5], np.int32))],
        "Divide": lambda: [o1.divide(seq(), p([6]))],
        "FloorMod": lambda: [o1.floor_mod(seq(), p([6]))],
        "Greater": lambda: [o1.greater(seq(), p([6]))],
        "LogicalOr": lambda: [o1.logical_or(p([2, 5], bool), p([5], bool))],
        "Round": lambda: [o5.round(seq(), "half_to_even")],
        "ReduceProd": lambda: [o1.reduce_prod(seq(), p([1], np.int64), False)],
        "ReduceLogicalOr": lambda: [o1.reduce_logical_or(p([2, 5], bool), p([1], np.int64), False)],
        "HSigmoid": lambda: [o5.hsigmoid(seq())],
        "SoftSign": lambda: [o9.softsign(seq())],
        "Tan": lambda: [o1.tan(seq())],
        "Log": lambda: [o1.log(seq())],
        "ISTFT": lambda: [o16.istft(p([2, 9, 4, 2]), p([16]), p([], np.int64), p([], np.int64), False, False)],
        "PriorBoxClustered": lambda: [o1.prior_box_clustered(p([2], np.int64), c([32, 32]), {
            "width": [1.0], "height": [1.0], "clip": True, "step_widths": 1.0, "step_heights": 1.0, "offset": 0.5,
            "variance": [0.1]})],
        "ExperimentalDetectronTopKROIs": lambda: [factory("opset6", "ExperimentalDetectronTopKROIs",
                                                          [p([6, 4]), p([6])], {"max_rois": 2})],
        "ExperimentalDetectronPriorGridGenerator": lambda: [factory(
            "opset6", "ExperimentalDetectronPriorGridGenerator", [p([3, 4]), p([1, 8, 4, 4]), p([1, 3, 32, 32])],
            {"flatten": True, "h": 0, "w": 0, "stride_x": 0.0, "stride_y": 0.0})],
        "ExperimentalDetectronROIFeatureExtractor": lambda: list(factory(
            "opset6", "ExperimentalDetectronROIFeatureExtractor", [p([3, 4]), p([1, 4, 8, 8])],
            {"output_size": 2, "sampling_ratio": 2, "pyramid_scales": [4], "aligned": False}).outputs()),
        "Multiply": lambda: [o1.multiply(seq(), p([6]))],
        "Subtract": lambda: [o1.subtract(seq(), p([5, 1]))],
        "Minimum": lambda: [o1.minimum(seq(), p([6]))],
        "Less": lambda: [o1.less(seq(), p([6]))],
        "NotEqual": lambda: [o1.not_equal(seq(), p([6]))],
        "LogicalXor": lambda: [o1.logical_xor(p([2, 5], bool), p([5], bool))],
        "BitwiseOr": lambda: [o13.bitwise_or(p([2, 5], np.int32), p([5], np.int32))],
        "ReduceMean": lambda: [o1.reduce_mean(seq(), p([2], np.int64), True)],
        "ReduceMin": lambda: [o1.reduce_min(seq(), p([1], np.int64), False)],
        "ReduceL1": lambda: [o4.reduce_l1(seq(), p([1], np.int64), False)],
        "Ceiling": lambda: [o1.ceiling(seq())],
        "Cos": lambda: [o1.cos(seq())],
        "Tanh": lambda: [o1.tanh(seq())],
        "IsInf": lambda: [o10.is_inf(seq())],
        "IsNaN": lambda: [o10.is_nan(seq())],
        "Reverse": lambda: [factory("opset1", "Reverse", [seq(), p([1], np.int64)], {"mode": "index"})],
        "ExperimentalDetectronDetectionOutput": lambda: list(factory(
            "opset6", "ExperimentalDetectronDetectionOutput", [p([6, 4]), p([6, 8]), p([6, 2]), p([1, 3])],
            {"score_threshold": 0.05, "nms_threshold": 0.5, "max_delta_log_wh": 4.0, "num_classes": 2,
             "post_nms_count": 5, "max_detections_per_image": 3, "class_agnostic_box_regression": False,
             "deltas_weights": [1.0, 1.0, 1.0, 1.0]}).outputs()),
        "ExperimentalDetectronGenerateProposalsSingleImage": lambda: list(factory(
            "opset6", "ExperimentalDetectronGenerateProposalsSingleImage",
            [p([3]), p([48, 4]), p([12, 4, 4]), p([3, 4, 4])],
            {"min_size": 0.0, "nms_threshold": 0.7, "post_nms_count": 5, "pre_nms_count": 10}).outputs()),
    }

    def if_op():
        shape = [2, 3]
        tx, ty, ex = (o1.parameter(shape, np.float32) for _ in range(3))
        then = ov.Model([o1.result(o1.add(tx, ty))], [tx, ty], "then")
        other = ov.Model([o1.result(o1.negative(ex))], [ex], "else")
        node = o8.if_op(p([], bool))
        node.set_then_body(then)
        node.set_else_body(other)
        x, y = p(shape), p(shape)
        node.set_input(x.output(0), tx, ex)
        node.set_input(y.output(0), ty, None)
        return [node.set_output(then.get_results()[0], other.get_results()[0])]

    def loop():
        it, ai, bi = o1.parameter([], np.int64), o1.parameter([3], np.float32), o1.parameter([3], np.float32)
        ao = o1.add(ai, bi)
        body = ov.Model([o1.result(ao), o1.result(c(True, bool)), o1.result(o1.unsqueeze(ao, c([0])))],
                        [it, ai, bi], "body")
        node = o8.loop(p([], np.int64), p([], bool))
        node.set_function(body)
        node.set_special_body_ports([0, 1])
        node.set_merged_input(ai, p([3]).output(0), ao.output(0))
        node.set_invariant_input(bi, p([3]).output(0))
        return [node.get_iter_value(ao.output(0), -1),
                node.get_concatenated_slices(body.get_results()[2].output(0), 0, 1, 1, -1, 0)]

    def tensor_iterator():
        xi, hi = o1.parameter([2, 1, 4], np.float32), o1.parameter([2, 4], np.float32)
        ho = o1.add(o1.squeeze(xi, c([1])), hi)
        body = ov.Model([o1.result(ho), o1.result(o1.unsqueeze(ho, c([1])))], [xi, hi], "body")
        node = o8.tensor_iterator()
        node.set_body(body)
        node.set_sliced_input(xi, p([2, 5, 4]).output(0), 0, 1, 1, -1, 1)
        node.set_merged_input(hi, p([2, 4]).output(0), ho.output(0))
        return [node.get_iter_value(ho.output(0), -1),
                node.get_concatenated_slices(body.get_results()[1].output(0), 0, 1, 1, -1, 1)]

    def state():
        from openvino.op.util import Variable, VariableInfo
        info = VariableInfo()
        info.variable_id, info.data_shape, info.data_type = "v", ov.PartialShape([2, 3]), ov.Type.f32
        variable = Variable(info)
        total = o1.add(ov.op.read_value(p([2, 3]), variable), p([2, 3]))
        return ov.Model([o1.result(total)], [ov.op.assign(total, variable)], list(params), "state")

    table.update({"If": if_op, "Loop": loop, "TensorIterator": tensor_iterator, "ReadValue/Assign": state})

    def built(make):
        def build():
            params.clear()
            outputs = make()
            return outputs, list(params)
        return build
    return {name: built(make) for name, make in table.items()}


def shape_edits(shape: str) -> list[str]:
    if shape == "...":
        return []
    dims = shape.split(",") if shape else []
    edits = [",".join(dims[:i] + [d] + dims[i + 1:]) for i in range(len(dims)) for d in DIMS if d != dims[i]]
    return edits + [",".join(dims[:-1]), ",".join(dims + ["1"]), "..."] if dims else edits + ["1", "..."]


def trials(text: str):
    """(description, edited text) for every single edit of one Parameter."""
    for n, match in enumerate(PARAMETER.finditer(text)):
        def edited(shape, element_type, match=match):
            head, _, mid, _, tail = match.groups()
            new = f"{head}{shape}{mid}{element_type}{tail}"
            return text[:match.start()] + new + text[match.end():]
        shape, element_type = match.group(2), match.group(4)
        for new in shape_edits(shape):
            yield f"param{n} shape {shape!r}->{new!r}", edited(new, element_type)
        for new in TYPES:
            if new != element_type:
                yield f"param{n} type {element_type}->{new}", edited(shape, new)


OP_DATA = re.compile(r'(type="(?!Parameter"|Const"|Result")[^"]*" version="[^"]*">\s*<data )([^>]*?)(\s*/>)')
INT_VALUES = ["0", "-1", "-2", "1", "2", "5", "100"]


def attribute_values(value: str) -> list[str]:
    """Other values of one attribute: ints and int lists varied element by element, booleans flipped."""
    if value in ("true", "false"):
        return ["false" if value == "true" else "true"]
    parts = [part.strip() for part in value.split(",")] if value else []
    if not parts or not all(re.fullmatch(r"-?\d+", part) for part in parts):
        return ["bogus"] if re.fullmatch(r"[a-z_]+", value) else []
    variants = [",".join(parts[:i] + [v] + parts[i + 1:]) for i in range(len(parts)) for v in INT_VALUES
                if v != parts[i]]
    return variants + ([",".join(parts[:-1]), ",".join(parts + [parts[-1]])] if len(parts) > 1 else [])


def attribute_trials(text: str):
    """(description, edited text) for every single edit of one attribute of the probed op."""
    for match in OP_DATA.finditer(text):
        for attr in re.finditer(r'(\w+)="([^"]*)"', match.group(2)):
            start, end = match.start(2) + attr.start(2), match.start(2) + attr.end(2)
            for new in attribute_values(attr.group(2)):
                yield f"{attr.group(1)} {attr.group(2)!r}->{new!r}", text[:start] + new + text[end:]
            yield f"{attr.group(1)} dropped", text[:match.start(2) + attr.start()] + text[end + 1:]


def probe(ov, reader, name, build, directory: Path, attributes: bool = False) -> int:
    try:
        outputs, parameters = build()
    except Exception as exc:  # noqa: BLE001 - a probe OpenVINO's factories refuse is reported, not fatal
        print(f"{name}: not built: {str(exc).splitlines()[-1][:150]}")
        return 0
    xml = directory / name / "model.xml"
    xml.parent.mkdir(parents=True)
    model = outputs if isinstance(outputs, ov.Model) else ov.Model(outputs, parameters)
    ov.save_model(model, str(xml), compress_to_fp16=False)
    original = xml.read_text()
    disagreements = 0
    for description, text in (attribute_trials if attributes else trials)(original):
        xml.write_text(text)
        verdict = reader.verdict(xml)  # in a worker process: OpenVINO crashes on some edits (a refusal)
        refusal = verdict["message"].split(" | ")[-1] if verdict["refused"] else None
        disagreements += disagrees(refusal, xml, f"{name} {description}")
    return disagreements


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ops", nargs="*", help="probe names (default: all)")
    parser.add_argument("--attributes", action="store_true",
                        help="edit the op's attributes (ints, int lists, booleans, enums) instead of its inputs")
    args = parser.parse_args(argv)
    import openvino as ov

    table = probes(ov)
    reader = OpenVINO()
    with tempfile.TemporaryDirectory() as directory:
        total = sum(probe(ov, reader, name, build, Path(directory), args.attributes)
                    for name, build in table.items() if not args.ops or name in args.ops)
    reader.close()
    print(f"{total} disagreements")
    return 0


if __name__ == "__main__":
    sys.exit(main())
