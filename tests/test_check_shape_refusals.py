"""Shape and type checks of OpenVINO's reader that irrun's ops did not make (issue 22, found with
tools/probe_shapes.py): each model is one op written valid by OpenVINO, then one Parameter's shape or element
type, or one attribute, is edited. OpenVINO's verdict is taken live (oracle.reader_refuses): it must refuse the
edited file, and irrun must report an error of the OpenVINO class with the rule given; the unedited file must
pass both."""
from __future__ import annotations

import re

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset2, opset3, opset5, opset7, opset8, opset9, opset11, opset13, opset15, opset16
from openvino.utils.node_factory import NodeFactory

import irrun
from oracle import reader_refuses
from irrun.tools.rule_classes import OPENVINO, rule_class

PARAMETER = re.compile(r'type="Parameter"[^>]*>\s*<data shape="([^"]*)" element_type="([^"]*)"')


_PARAMETERS: list = []  # the Parameters of the model being built, in the order the edits number them


def _p(shape, dtype=np.float32):
    _PARAMETERS.append(opset1.parameter(shape, dtype))
    return _PARAMETERS[-1]


def _i64(shape):
    return _p(shape, np.int64)


def _seq():
    return _p([2, 5, 6])


def _broadcast_explicit():
    return [opset3.broadcast(_p([5]), opset1.constant(np.array([2, 5, 3], np.int64)), _i64([1]), "explicit")]


def _lstm_sequence():
    return list(opset5.lstm_sequence(_seq(), _p([2, 1, 3]), _p([2, 1, 3]), _p([2], np.int32),
                                     _p([1, 12, 6]), _p([1, 12, 3]), _p([1, 12]), 3, "forward").outputs())


def _detection_output():
    attrs = {"background_label_id": 0, "top_k": 5, "variance_encoded_in_target": False, "keep_top_k": [5],
             "code_type": "caffe.PriorBoxParameter.CORNER", "share_location": True, "nms_threshold": 0.5,
             "confidence_threshold": 0.1, "clip_after_nms": False, "clip_before_nms": False,
             "decrease_label_id": False, "normalized": True, "input_height": 1, "input_width": 1,
             "objectness_score": 0.0}
    return [opset8.detection_output(_p([1, 40]), _p([1, 30]), _p([1, 2, 40]), attrs)]


def _strided_slice():
    return [opset1.strided_slice(_seq(), _i64([3]), _i64([3]), _i64([3]), [0, 1, 0], [0, 0, 1])]


def _if():
    """An If whose then_body adds its two Parameters (the 4th and 5th Parameters of the file)."""
    tx, ty, ex = (opset1.parameter([2, 3], np.float32) for _ in range(3))
    then = ov.Model([opset1.result(opset1.add(tx, ty))], [tx, ty], "then")
    other = ov.Model([opset1.result(opset1.negative(ex))], [ex], "else")
    node = opset8.if_op(_p([], bool))
    node.set_then_body(then)
    node.set_else_body(other)
    x, y = _p([2, 3]), _p([2, 3])
    node.set_input(x.output(0), tx, ex)
    node.set_input(y.output(0), ty, None)
    return [node.set_output(then.get_results()[0], other.get_results()[0])]


def _tensor_iterator():
    """A TensorIterator over [2,5,4] whose body adds a slice to the running [2,4] (body Parameters 3 and 4)."""
    xi, hi = opset1.parameter([2, 1, 4], np.float32), opset1.parameter([2, 4], np.float32)
    ho = opset1.add(opset1.squeeze(xi, opset1.constant(np.array([1], np.int64))), hi)
    node = opset8.tensor_iterator()
    node.set_body(ov.Model([opset1.result(ho)], [xi, hi], "body"))
    node.set_sliced_input(xi, _p([2, 5, 4]).output(0), 0, 1, 1, -1, 1)
    node.set_merged_input(hi, _p([2, 4]).output(0), ho.output(0))
    return [node.get_iter_value(ho.output(0), -1)]


# name: (outputs, edit, rule); an edit is (parameter number, new shape or None, new element type or None)
# or (old text, new text) for an attribute
CASES = {
    "Broadcast target shape a scalar": (
        lambda: [opset3.broadcast(_p([5, 1]), _i64([3]))], (1, "", None), "port.rank"),
    "Broadcast axes_mapping longer than the input's rank": (_broadcast_explicit, (1, "2", None), "port.dims"),
    "Tile repeats a scalar": (lambda: [opset1.tile(_seq(), _i64([3]))], (1, "", None), "port.rank"),
    "Interpolate-11 sizes u8": (
        lambda: [opset11.interpolate(_p([1, 2, 4, 4]), _i64([2]), "nearest", "sizes", axes=_i64([2]))],
        (1, None, "u8"), "port.type"),
    "Interpolate-11 axes i8": (
        lambda: [opset11.interpolate(_p([1, 2, 4, 4]), _p([2]), "linear", "scales", axes=_i64([2]))],
        (2, None, "i8"), "port.type"),
    "Interpolate-11 scales f64": (
        lambda: [opset11.interpolate(_p([1, 2, 4, 4]), _p([2]), "linear", "scales", axes=_i64([2]))],
        (1, None, "f64"), "port.type"),
    "ScaledDotProductAttention key E of 1": (
        lambda: [opset13.scaled_dot_product_attention(_p([2, 4, 5, 8]), _p([2, 4, 7, 8]), _p([2, 4, 7, 6]),
                                                      causal=False)], (1, "2,4,7,1", None), "shape.broadcast"),
    "ScatterUpdate updates rank, axis not known": (
        lambda: [opset3.scatter_update(_seq(), _i64([2]), _p([2, 2, 6]), _i64([]))], (1, "2,1", None),
        "port.rank"),
    "Einsum input rank above its labels": (
        lambda: [opset7.einsum([_seq(), _p([6, 3])], "abc,cd->abd")], (0, "2,5,6,1", None), "port.rank"),
    "LSTMSequence initial H hidden size unlike C's": (_lstm_sequence, (1, "2,1,5", None), "port.dims"),
    "BatchToSpace crops_begin i32": (
        lambda: [opset3.batch_to_space(_seq(), _i64([3]), _i64([3]), _i64([3]))], (2, None, "i32"), "port.type"),
    "Col2Im kernel_size i32, output_size i64": (
        lambda: [opset15.col2im(_p([1, 12, 9]), _i64([2]), _i64([2]))], (2, None, "i32"), "port.type"),
    "Col2Im output_size of dynamic length": (
        lambda: [opset15.col2im(_p([1, 12, 9]), _i64([2]), _i64([2]))], (1, "?", None), "port.dims"),
    "DetectionOutput class predictions f16": (_detection_output, (1, None, "f16"), "port.type"),
    "DetectionOutput proposals i32": (_detection_output, (2, None, "i32"), "port.type"),
    "SliceScatter updates larger than data": (
        lambda: [opset15.slice_scatter(_seq(), _p([2, 2, 6]), _i64([1]), _i64([1]), _i64([1]), _i64([1]))],
        (1, "3,2,6", None), "port.dims"),
    "StridedSlice mask element 2": (_strided_slice, ('begin_mask="0, 1, 0"', 'begin_mask="0, 2, 0"'),
                                    "attr.value"),
    "StridedSlice masks of two lengths": (_strided_slice, ('end_mask="0, 0, 1"', 'end_mask="0, 0"'),
                                          "attr.length"),
    "NMSRotated iou_threshold i32": (
        lambda: list(opset13.nms_rotated(_p([1, 6, 5]), _p([1, 2, 6]), _i64([]), _p([]), _p([])).outputs()),
        (3, None, "i32"), "port.type"),
    "SegmentMax num_segments u8": (
        lambda: [opset16.segment_max(_p([4, 3]), _i64([4]), _i64([]), "zero")], (2, None, "u8"), "port.type"),
    "ExperimentalDetectronPriorGridGenerator im_data f16": (
        lambda: [NodeFactory("opset6").create("ExperimentalDetectronPriorGridGenerator", [
            _p([3, 4]).output(0), _p([1, 8, 4, 4]).output(0), _p([1, 3, 32, 32]).output(0)],
            {"flatten": True, "h": 0, "w": 0, "stride_x": 0.0, "stride_y": 0.0})], (2, None, "f16"), "port.type"),
    "GenerateProposals pre_nms_count 0": (
        lambda: list(opset9.generate_proposals(_p([1, 3]), _p([4, 4, 3, 4]), _p([1, 12, 4, 4]), _p([1, 3, 4, 4]),
                                               0.0, 0.7, 10, 5).outputs()),
        ('pre_nms_count="10"', 'pre_nms_count="0"'), "attr.value"),
    "If then_body Parameter declared unlike its sibling": (_if, (3, "3,3", None), "shape.broadcast"),
    "If else_body Parameter declared boolean": (_if, (5, None, "boolean"), "port.type"),
    "TensorIterator body Parameter declared unlike the other": (_tensor_iterator, (3, "2,5", None),
                                                                "shape.broadcast"),
    "ShapeOf-3 without output_type": (lambda: [opset3.shape_of(_seq(), "i64")],
                                      (' output_type="i64"', ""), "attr.missing"),
    "Bucketize without output_type": (lambda: [opset3.bucketize(_seq(), _p([4]))],
                                      (' output_type="i64"', ""), "attr.missing"),
    "DepthToSpace without block_size": (lambda: [opset1.depth_to_space(_p([2, 4, 8, 8]), "blocks_first", 2)],
                                        (' block_size="2"', ""), "attr.missing"),
    "DeformableConvolution-8 without deformable_group": (
        lambda: [opset8.deformable_convolution(_p([2, 4, 8, 8]), _p([2, 18, 6, 6]), _p([6, 4, 3, 3]), [1, 1],
                                               [0, 0], [0, 0], [1, 1])], (' deformable_group="1"', ""),
        "attr.missing"),
    "PSROIPooling without mode": (lambda: [opset1.psroi_pooling(_p([2, 8, 8, 8]), _p([3, 5]), 2, 2, 1.0, 1, 1,
                                                                "average")], (' mode="average"', ""),
                                  "attr.missing"),
    "VariadicSplit of unknown lengths keeps the other dims": (
        lambda: [opset1.concat([opset1.variadic_split(_p([-1, 4, 4]), opset1.constant(np.int64(0)),
                                                      _i64([1])).output(0), _p([-1, 4, 4])], 0)],
        (2, "?,4,5", None), "port.dims"),
    "ROIPooling output_roi of one value, pooled_w given": (
        lambda: [opset2.roi_pooling(_p([2, 4, 8, 8]), _p([3, 5]), [2, 2], 1.0)],
        ('output_roi="2, 2"', 'output_roi="2"'), "attr.length"),
}


def _edited(text: str, edit) -> str:
    if len(edit) == 2:
        old, new = edit
        assert old in text
        return text.replace(old, new, 1)
    number, shape, element_type = edit
    match = list(PARAMETER.finditer(text))[number]
    new = f'{match.group(0)[:match.start(1) - match.start()]}{match.group(1) if shape is None else shape}'
    new += f'" element_type="{element_type or match.group(2)}"'
    return text[:match.start()] + new + text[match.end():]


@pytest.mark.parametrize("case", CASES)
def test_refused_by_both(case, tmp_path):
    make, edit, rule = CASES[case]
    _PARAMETERS.clear()
    outputs = make()
    xml = tmp_path / "model.xml"
    ov.save_model(ov.Model(outputs, list(_PARAMETERS)), str(xml), compress_to_fp16=False)
    assert not reader_refuses(xml) and not irrun.check(xml).errors
    xml.write_text(_edited(xml.read_text(), edit))
    assert reader_refuses(xml)
    rules = {d.rule for d in irrun.check(xml).errors if rule_class(d.rule).kind == OPENVINO}
    assert rule in rules, rules


def test_assign3_needs_a_readvalue3_upstream(tmp_path):
    """Assign-3 finds its variable only through a ReadValue-3 of it that its input depends on: fed by a
    Parameter instead, the file is refused although the ReadValue-3 is in the model."""
    x, y = opset1.parameter([2, 3], np.float32), opset1.parameter([2, 3], np.float32)
    total = opset1.add(opset3.read_value(x, "v"), y)
    xml = tmp_path / "model.xml"
    ov.save_model(ov.Model([opset1.result(total)], [opset3.assign(total, "v")], [x, y], "m"), str(xml))
    assert not reader_refuses(xml) and not irrun.check(xml).errors
    text = xml.read_text()
    edge = '<edge from-layer="3" from-port="2" to-layer="4" to-port="0" />'
    assert edge in text and 'id="4" name="Assign' in text
    xml.write_text(text.replace(edge, '<edge from-layer="1" from-port="0" to-layer="4" to-port="0" />'))
    assert reader_refuses(xml)
    assert "variable.assign" in {d.rule for d in irrun.check(xml).errors}


@pytest.mark.parametrize("init_shape,refused", [("?,3", True), ("...", True), ("2,3", False)])
def test_readvalue6_variable_shape_must_relax_a_parameter_init(init_shape, refused, tmp_path):
    """variable_shape [2,3] against an init Parameter: [?,3] is not relaxed by it (refused), [2,3] is."""
    from openvino.op.util import Variable, VariableInfo

    info = VariableInfo()
    info.variable_id, info.data_shape, info.data_type = "v", ov.PartialShape([2, 3]), ov.Type.f32
    variable = Variable(info)
    init, x = opset1.parameter([2, 3], np.float32), opset1.parameter([2, 3], np.float32)
    total = opset1.add(ov.op.read_value(init, variable), x)
    xml = tmp_path / "model.xml"
    ov.save_model(ov.Model([opset1.result(total)], [ov.op.assign(total, variable)], [init, x], "m"), str(xml))
    text = xml.read_text()
    old = '<data shape="2,3" element_type="f32"'
    assert old in text
    xml.write_text(text.replace(old, f'<data shape="{init_shape}" element_type="f32"', 1))
    assert reader_refuses(xml) == refused
    assert ("variable.shape" in {d.rule for d in irrun.check(xml).errors}) == refused
