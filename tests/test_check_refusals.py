"""Single-op refusals of OpenVINO's reader that irrun's checker used to miss (found by tools/mutate_corpus.py):
each model is written valid by OpenVINO, then one thing in its XML is changed; OpenVINO's verdict on the
changed file is taken live, and irrun must report an error of the OpenVINO class."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset6, opset8, opset11, opset12

import irrun
from oracle import reader_refuses
from irrun.tools.rule_classes import OPENVINO, rule_class



def _written(outputs, parameters, path: Path) -> str:
    ov.save_model(ov.Model(outputs, parameters), str(path), compress_to_fp16=False)
    return path.read_text()


def _assert_refused_by_both(xml: Path, rule: str) -> None:
    assert reader_refuses(xml)
    rules = {d.rule for d in irrun.check(xml).errors}
    assert rule in rules and rule_class(rule).kind == OPENVINO, rules


@pytest.mark.parametrize("element_type,refused", [("u1", True), ("u2", True), ("u3", True), ("u6", True),
                                                  ("u4", False), ("i4", False), ("u8", False)])
def test_shape_values_of_types_openvino_cannot_read(element_type, refused, tmp_path):
    """A Slice start Const of u1/u2/u3/u6: OpenVINO's shape inference cannot read its value."""
    start = opset1.constant(np.array([0], np.int64))
    x = opset1.parameter([4, 6], np.float32)
    sliced = opset8.slice(x, start, opset1.constant(np.array([2], np.int64)), opset1.constant(np.array([1], np.int64)))
    xml = tmp_path / "model.xml"
    text = _written([sliced], [x], xml)
    old = 'element_type="i64" shape="1" offset="0" size="8"'
    assert old in text
    xml.write_text(text.replace(old, old.replace("i64", element_type), 1))
    if refused:
        _assert_refused_by_both(xml, "port.type")
    else:
        assert not reader_refuses(xml)
        assert not [d for d in irrun.check(xml, openvino_compatible=True).errors if d.rule == "port.type"]


@pytest.mark.parametrize("shape,refused", [("0,2,3,3", True), ("1,0,3,3", True), ("1,2,3,3", False)])
def test_pooling_refuses_a_zero_batch_or_channels(shape, refused, tmp_path):
    x = opset1.parameter([1, 2, 3, 3], np.float32)
    xml = tmp_path / "model.xml"
    text = _written([opset8.max_pool(x, [1, 1], [1, 1], [0, 0], [0, 0], [2, 2]).output(0)], [x], xml)
    xml.write_text(text.replace('shape="1,2,3,3"', f'shape="{shape}"'))
    if refused:
        _assert_refused_by_both(xml, "port.dims")
    else:
        assert not reader_refuses(xml) and not irrun.check(xml).errors


def test_mvn6_axes_must_be_one_dimensional(tmp_path):
    x = opset1.parameter([2, 3, 4], np.float32)
    axes = opset1.constant(np.array([2], np.int64))
    xml = tmp_path / "model.xml"
    text = _written([opset6.mvn(x, axes, True, 1e-5, "inside_sqrt")], [x], xml)
    old = 'element_type="i64" shape="1" offset="0" size="8"'
    assert old in text
    xml.write_text(text.replace(old, old.replace('shape="1"', 'shape=""')))
    _assert_refused_by_both(xml, "port.rank")


@pytest.mark.parametrize("axes,refused", [([-1, 2], True), ([-4, 3], True), ([3, 2], False)])
def test_interpolate_refuses_negative_axes(axes, refused, tmp_path):
    """Interpolate-11 reads its axes unsigned: a negative axis is out of range for OpenVINO."""
    x = opset1.parameter([1, 3, 5, 6], np.float32)
    sizes, axes_node = opset1.constant(np.array([4, 8], np.int64)), opset1.constant(np.array([2, 3], np.int64))
    axes_node.set_friendly_name("axes")
    xml = tmp_path / "model.xml"
    _written([opset11.interpolate(x, sizes, "nearest", "sizes", axes=axes_node)], [x], xml)
    text = xml.read_text()
    offset = int(re.search(r'name="axes" type="Const"[^>]*>\s*<data [^>]*offset="(\d+)"', text).group(1))
    blob = bytearray(xml.with_suffix(".bin").read_bytes())
    blob[offset:offset + 16] = np.array(axes, np.int64).tobytes()
    xml.with_suffix(".bin").write_bytes(bytes(blob))
    if refused:
        _assert_refused_by_both(xml, "attr.range")
    else:  # the output port still declares the old axes' dims: only that (stricter) error
        assert not reader_refuses(xml) and not irrun.check(xml, openvino_compatible=True).errors


@pytest.mark.parametrize("kernel,refused", [((2, 2), True), ((2, 1), False)])
def test_pooling_with_a_negative_dilation(kernel, refused, tmp_path):
    """OpenVINO reads dilation -1 as 2**64 - 1: a window of more than one element no longer fits the input
    (refused); a window of one element still does (read; irrun's attr.range.spec is stricter)."""
    x = opset1.parameter([1, 1, 4, 4], np.float32)
    xml = tmp_path / "model.xml"
    text = _written([opset8.max_pool(x, [1, 1], [1, 1], [0, 0], [0, 0], list(kernel)).output(0)], [x], xml)
    assert 'dilations="1, 1"' in text
    xml.write_text(text.replace('dilations="1, 1"', 'dilations="1, -1"'))
    if refused:
        _assert_refused_by_both(xml, "shape.kernel")
    else:
        assert not reader_refuses(xml)
        assert [d.rule for d in irrun.check(xml).errors] == ["attr.range.spec"]


@pytest.mark.parametrize("element_type,refused", [("u2", True), ("f8e4m3", True), ("f8e8m0", True),
                                                  ("f4e2m1", True), ("nf4", False), ("f16", False)])
def test_range_step_of_a_type_openvino_cannot_read(element_type, refused, tmp_path):
    """Range-4 takes inputs of any numeric type, but OpenVINO cannot read the value of some."""
    start = opset1.parameter([], np.int64)
    step = opset1.constant(np.int64(1))
    xml = tmp_path / "model.xml"
    text = _written([opset12.range(start, opset1.constant(np.int64(10)), step, "i64")], [start], xml)
    old = 'element_type="i64" shape="" offset="8" size="8"'
    assert old in text
    xml.write_text(text.replace(old, old.replace("i64", element_type)))
    if refused:
        _assert_refused_by_both(xml, "port.type")
    else:
        assert not reader_refuses(xml) and not irrun.check(xml, openvino_compatible=True).errors


ONE_CONST_EDITS = {  # an op on x [1,1,1] with one Const i64 [1] (value 1), and the edit of that Const's <data>
    "Reshape's target shape a scalar": (lambda x, c: opset1.reshape(x, c, False), 'shape="1"', 'shape=""',
                                        "port.rank"),
    "ReduceMean's axes u3": (lambda x, c: opset1.reduce_mean(x, c, True), "i64", "u3", "port.type"),
}


@pytest.mark.parametrize("edit", ONE_CONST_EDITS)
def test_one_const_edited(edit, tmp_path):
    make, old, new, rule = ONE_CONST_EDITS[edit]
    x = opset1.parameter([1, 1, 1], np.float32)
    xml = tmp_path / "model.xml"
    text = _written([make(x, opset1.constant(np.array([1], np.int64)))], [x], xml)
    data = 'element_type="i64" shape="1" offset="0" size="8"'
    assert data in text
    xml.write_text(text.replace(data, data.replace(old, new)))
    _assert_refused_by_both(xml, rule)
