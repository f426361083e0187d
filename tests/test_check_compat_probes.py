"""`--openvino-compatible` on the probes' stricter trials (issue 22, tools/probe_shapes.py): one op written valid
by OpenVINO, one Parameter's shape or type or one attribute edited, a file OpenVINO's reader takes (checked here,
live). The default check still refuses it with the `.spec` rule given, compatible mode only warns, and irrun
refuses to run it with that rule (one IRError). The last cases are the neighbouring edits OpenVINO refuses:
irrun must refuse them with a rule of OpenVINO's class in both modes."""
from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset2, opset3, opset4, opset5, opset6, opset8, opset9, opset11, opset12, opset14, opset15
from openvino import opset16

import irrun
from oracle import reader_refuses
from irrun.tools.rule_classes import OPENVINO, STRICTER, rule_class
from test_check_shape_refusals import _PARAMETERS, _edited, _i64, _p, _seq


def _image():
    return _p([2, 4, 8, 8])


def _max_pool():
    return [opset14.max_pool(_image(), [1, 1], [1, 1], [0, 0], [0, 0], [2, 2]).output(0)]


def _proposal():
    attrs = {"base_size": np.uint32(16), "pre_nms_topn": np.uint32(10), "post_nms_topn": np.uint32(5),
             "nms_thresh": 0.7, "feat_stride": np.uint32(16), "min_size": np.uint32(1), "ratio": [1.0],
             "scale": [1.0, 2.0, 4.0]}
    return list(opset4.proposal(_p([1, 6, 4, 4]), _p([1, 12, 4, 4]), _p([3]), attrs).outputs())


def _lstm_cell():
    return list(opset4.lstm_cell(_p([2, 6]), _p([2, 3]), _p([2, 3]), _p([12, 6]), _p([12, 3]), _p([12]),
                                 3).outputs())


def _generate_proposals():
    return list(opset9.generate_proposals(_p([1, 3]), _p([4, 4, 3, 4]), _p([1, 12, 4, 4]), _p([1, 3, 4, 4]),
                                          0.0, 0.7, 10, 5).outputs())


def _pad():
    return [opset12.pad(_seq(), _i64([3]), _i64([3]), "constant", _p([]))]


def _ctc_loss():
    return [opset4.ctc_loss(_seq(), _p([2], np.int32), _p([2, 5], np.int32), _p([2], np.int32), _p([], np.int32))]


def _interpolate_scales():
    return [opset11.interpolate(_image(), _p([2]), "linear", "scales", axes=_p([2], np.int32))]


def _extract_image_patches():
    return [opset3.extract_image_patches(_image(), [2, 2], [1, 1], [1, 1], "valid")]


# name: (outputs, edit, rule); an edit is (parameter number, new shape or None, new element type or None),
# (old text, new text) of the XML, or None (the file as OpenVINO writes it)
READ = {
    "MaxPool-14 without pads_begin": (_max_pool, (' pads_begin="0, 0"', ""), "attr.value.spec"),
    "TopK-11 without axis": (lambda: [opset11.topk(_seq(), _i64([]), 1, "max", "value").output(0)],
                             (' axis="1"', ""), "attr.value.spec"),
    "Convolution without strides": (lambda: [opset1.convolution(_image(), _p([6, 4, 3, 3]), [1, 1], [0, 0],
                                                                [0, 0], [1, 1])], (' strides="1, 1"', ""),
                                    "attr.length.spec"),
    "BinaryConvolution of boolean filters": (lambda: [opset1.binary_convolution(
        _image(), _p([6, 4, 3, 3], bool), [1, 1], [0, 0], [0, 0], [1, 1], "xnor-popcount", 0.0)], None,
        "port.type.spec"),
    "PRelu slope of 3 channels on 4": (lambda: [opset1.prelu(_image(), _p([4, 1, 1]))], (1, "3,1,1", None),
                                       "shape.broadcast.spec"),
    "LSTMCell W input size unlike X's": (_lstm_cell, (0, "2,5", None), "port.dims.spec"),
    "GRUCell hidden_size unlike the inputs'": (lambda: list(opset3.gru_cell(
        _p([2, 6]), _p([2, 3]), _p([9, 6]), _p([9, 3]), _p([9]), 3).outputs()), ('hidden_size="3"', 'hidden_size="5"'),
        "attr.value.spec"),
    "RNNSequence hidden_size 0": (lambda: list(opset5.rnn_sequence(
        _seq(), _p([2, 1, 3]), _p([2], np.int32), _p([1, 3, 6]), _p([1, 3, 3]), _p([1, 3]), 3,
        "forward").outputs()), ('hidden_size="3"', 'hidden_size="0"'), "attr.value.spec"),
    "LSTMSequence sequence lengths f16": (lambda: list(opset5.lstm_sequence(
        _seq(), _p([2, 1, 3]), _p([2, 1, 3]), _p([2], np.int32), _p([1, 12, 6]), _p([1, 12, 3]), _p([1, 12]), 3,
        "forward").outputs()), (3, None, "f16"), "port.type.spec"),
    "MVN-6 on i32 data": (lambda: [opset6.mvn(_seq(), _i64([1]), True, 1e-5, "inside_sqrt")], (0, None, "i32"),
                          "port.type.spec"),
    "LRN on u8 data": (lambda: [opset1.lrn(_image(), _i64([1]))], (0, None, "u8"), "port.type.spec"),
    "SliceScatter updates f16 into f32": (lambda: [opset15.slice_scatter(
        _seq(), _p([2, 2, 6]), _i64([1]), _i64([1]), _i64([1]), _i64([1]))], (1, None, "f16"), "port.type.spec"),
    "DeformablePSROIPooling ROIs of width 3": (lambda: [opset1.deformable_psroi_pooling(
        _p([2, 8, 8, 8]), _p([3, 5]), 2, 1.0, 2, "bilinear_deformable", 1, 1, 0.0, 1)], (1, "3,3", None),
        "port.dims.spec"),
    "GenerateProposals anchors f16": (_generate_proposals, (1, None, "f16"), "port.type.spec"),
    "MaxPool-14 pads_end -2": (_max_pool, ('pads_end="0, 0"', 'pads_end="0,-2"'), "attr.value.spec"),
    "RandomUniform op_seed -1": (lambda: [opset8.random_uniform(_i64([2]), _p([1]), _p([1]), "f32")],
                                 ('op_seed="0"', 'op_seed="-1"'), "attr.value.spec"),
    "Proposal-4 post_nms_topn -1": (_proposal, ('post_nms_topn="5"', 'post_nms_topn="-1"'), "attr.value.spec"),
    "Col2Im strides of 3 values": (lambda: [opset15.col2im(_p([1, 12, 9]), _i64([2]), _i64([2]))],
                                   ('strides="1, 1"', 'strides="1,1,1"'), "attr.length.spec"),
    "ExtractImagePatches sizes -1": (_extract_image_patches, ('sizes="2, 2"', 'sizes="-1,2"'), "attr.value.spec"),
    "Pad-12 pads_begin of 2 values, not known, on rank 3": (_pad, (1, "2", None), "port.dims.spec"),
    "Split into more outputs than declared": (lambda: list(opset1.split(_seq(), _i64([]), 5).outputs()),
                                              ('num_splits="5"', 'num_splits="100"'), "port.count.spec"),
    "Gather-1 indices f16": (lambda: [opset1.gather(_seq(), _i64([3]), _i64([]))], (1, None, "f16"),
                             "port.type.spec"),
    "CTCLoss logit_length i64 among i32": (_ctc_loss, (1, None, "i64"), "port.type.spec"),
    "TopK-11 on boolean data": (lambda: [opset11.topk(_seq(), _i64([]), 1, "max", "value").output(0)],
                                (0, None, "boolean"), "port.type.spec"),
    "ISTFT data of last dim 3": (lambda: [opset16.istft(_p([2, 9, 4, 2]), _p([16]), _i64([]), _i64([]), False,
                                                        False)], (0, "2,9,4,3", None), "port.dims.spec"),
    "ConvolutionBackpropData output dim below 0": (lambda: [opset1.convolution_backprop_data(
        _image(), _p([4, 3, 3, 3]), [2, 2])], ('pads_begin="0, 0"', 'pads_begin="100,0"'), "shape.infer.spec"),
    "ROIPooling pooled_h -1": (lambda: [opset2.roi_pooling(_image(), _p([3, 5]), [2, 2], 1.0)],
                               ('pooled_h="2"', 'pooled_h="-1"'), "attr.range.spec"),
    "GroupNormalization of boolean data": (lambda: [opset12.group_normalization(_image(), _p([4]), _p([4]), 2,
                                                                                1e-5)], (0, None, "boolean"),
                                           "port.type.spec"),
}

# The neighbouring edits OpenVINO refuses: (outputs, edit, rule of OpenVINO's class)
REFUSED = {
    "MaxPool-14 pads_end -1 (read as a dynamic dim)": (_max_pool, ('pads_end="0, 0"', 'pads_end="0,-1"'),
                                                       "attr.value"),
    "ExtractImagePatches strides 0": (_extract_image_patches, ('strides="1, 1"', 'strides="0,1"'), "attr.range"),
    "Pad-12 pads_begin of 5 values on rank 3": (_pad, (1, "5", None), "port.dims"),
    "CTCLoss logit_length f16": (_ctc_loss, (1, None, "f16"), "port.type"),
    "Interpolate-11 scales without shape_calculation_mode": (_interpolate_scales,
                                                             (' shape_calculation_mode="scales"', ""),
                                                             "port.type"),  # read as "sizes", of f32 values
    "ROIPooling pooled_h 0": (lambda: [opset2.roi_pooling(_image(), _p([3, 5]), [2, 2], 1.0)],
                              ('pooled_h="2"', 'pooled_h="0"'), "attr.range"),
    "ShapeOf-3 without output_type": (lambda: [opset3.shape_of(_seq())], (' output_type="i64"', ""), "attr.missing"),
}


def _written(make, edit, directory):
    _PARAMETERS.clear()
    xml = directory / "model.xml"
    ov.save_model(ov.Model(make(), list(_PARAMETERS)), str(xml), compress_to_fp16=False)
    if edit is not None:
        xml.write_text(_edited(xml.read_text(), edit))
    return xml


def assert_read_and_stricter(path, rule: str) -> None:
    """OpenVINO's reader takes the file (live); irrun's default check reports `rule`, a stricter-class rule,
    compatible mode no error, and the runtime refuses the file with that rule."""
    assert not reader_refuses(path)
    assert rule_class(rule).kind == STRICTER
    assert rule in {d.rule for d in irrun.check(path).errors}, irrun.check(path).lines()
    compatible = irrun.check(path, openvino_compatible=True)
    assert not compatible.errors, compatible.lines()
    with pytest.raises(irrun.IRError) as refused:
        irrun.load(path)
    assert refused.value.rule == rule


@pytest.mark.parametrize("name", sorted(READ))
def test_a_file_openvino_reads_passes_in_compatible_mode(name, tmp_path):
    make, edit, rule = READ[name]
    assert_read_and_stricter(_written(make, edit, tmp_path), rule)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_neighbouring_file_openvino_refuses_still_fails(name, tmp_path):
    make, edit, rule = REFUSED[name]
    xml = _written(make, edit, tmp_path)
    assert reader_refuses(xml)
    errors = irrun.check(xml, openvino_compatible=True).errors
    assert rule in {d.rule for d in errors if rule_class(d.rule).kind == OPENVINO}, [d.rule for d in errors]
