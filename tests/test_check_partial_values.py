"""`irrun check` against OpenVINO's reader where OpenVINO decides with partial values of shape arithmetic
(irrun/ops/partial.py): each model is valid as built; one Const's bytes in model.bin are then changed, and
OpenVINO's verdict on the changed file is taken live. Where OpenVINO refuses it, irrun reports an error of
the OpenVINO class."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset3, opset8, opset12  # opset12.range is Range-4 (opset4.range is Range-1)

import irrun
from oracle import reader_refuses
from irrun.tools.rule_classes import OPENVINO, rule_class


def _save(outputs, parameters, path: Path) -> Path:
    ov.save_model(ov.Model(outputs, parameters), str(path), compress_to_fp16=False)
    return path


def _patch_const(xml: Path, name: str, value) -> None:
    """Overwrite the data of the Const layer `name` in model.bin with `value` (same type and size)."""
    text = xml.read_text()
    layer = re.search(rf'<layer id="\d+" name="{re.escape(name)}" type="Const"[^>]*>\s*<data ([^>]*)/>', text)
    attrs = dict(re.findall(r'(\w+)="([^"]*)"', layer.group(1)))
    data = np.asarray(value, dtype={"i64": np.int64, "f32": np.float32}[attrs["element_type"]]).tobytes()
    assert len(data) == int(attrs["size"])
    blob = bytearray(xml.with_suffix(".bin").read_bytes())
    blob[int(attrs["offset"]):int(attrs["offset"]) + len(data)] = data
    xml.with_suffix(".bin").write_bytes(bytes(blob))



def _const(value, name, dtype=np.int64):
    node = opset1.constant(np.array(value, dtype=dtype))
    node.set_friendly_name(name)
    return node


def _shape_target_model(op_name, operand, tmp_path):
    """Add(y [?,4], Broadcast(0, Op(ShapeOf(x [?,4]), operand))): the target's second element is 4 op k."""
    x, y = opset1.parameter([-1, 4], np.float32), opset1.parameter([-1, 4], np.float32)
    factory = {"Add": opset1.add, "Subtract": opset1.subtract, "Multiply": opset1.multiply,
               "Divide": opset1.divide, "Maximum": opset1.maximum, "Minimum": opset1.minimum}[op_name]
    target = factory(opset3.shape_of(x), _const(operand, "k"))
    out = opset1.add(y, opset3.broadcast(opset1.constant(np.float32(0)), target))
    return _save([out], [x, y], tmp_path / "model.xml")


# (op, the operand as built (second element keeps 4), a patched operand whose second element does not)
ARITHMETIC = [("Add", [0, 0], [0, 1]), ("Subtract", [0, 0], [0, 1]), ("Multiply", [1, 1], [1, 3]),
              ("Divide", [1, 1], [1, 2]), ("Maximum", [0, 4], [0, 9]), ("Minimum", [100, 4], [100, 3])]


@pytest.mark.parametrize("op_name,good,bad", ARITHMETIC, ids=[a[0] for a in ARITHMETIC])
def test_arithmetic_on_shapes_is_followed(op_name, good, bad, tmp_path):
    xml = _shape_target_model(op_name, good, tmp_path)
    assert not reader_refuses(xml) and not irrun.check(xml).errors
    _patch_const(xml, "k", bad)
    assert reader_refuses(xml)
    assert {d.rule for d in irrun.check(xml).errors} >= {"shape.broadcast"}


@pytest.mark.parametrize("kind", ["Slice", "StridedSlice"])
def test_a_slice_of_a_shape_is_followed(kind, tmp_path):
    """Concat(ShapeOf(x)[0:1], ShapeOf(x)[start:start+1]) with x [?,4,6]: start 1 gives [?,4], start 2 [?,6]."""
    x, y = opset1.parameter([-1, 4, 6], np.float32), opset1.parameter([-1, 4], np.float32)
    shape = opset3.shape_of(x)
    start, stop = _const([1], "start"), _const([2], "stop")
    if kind == "Slice":
        part = opset8.slice(shape, start, stop, _const([1], "step"))
    else:
        part = opset1.strided_slice(shape, start, stop, _const([1], "step"), begin_mask=[0], end_mask=[0])
    batch = opset8.gather(shape, _const([0], "i0"), _const(0, "axis"))
    target = opset1.concat([batch, part], 0)
    out = opset1.add(y, opset3.broadcast(opset1.constant(np.float32(0)), target))
    xml = _save([out], [x, y], tmp_path / "model.xml")
    assert not reader_refuses(xml) and not irrun.check(xml).errors
    _patch_const(xml, "start", [2])
    _patch_const(xml, "stop", [3])
    assert reader_refuses(xml)
    assert "shape.broadcast" in {d.rule for d in irrun.check(xml).errors}


def _slice_with_unknown_stop(tmp_path):
    """Slice(z [?,3,5,7], 0, stop from a Parameter, 1, axes=[1]) + w [?,4,5,7]: the axis sliced becomes
    dynamic, the others keep their dims."""
    z, w = opset1.parameter([-1, 3, 5, 7], np.float32), opset1.parameter([-1, 4, 5, 7], np.float32)
    stop = opset1.parameter([1], np.int64)
    sliced = opset8.slice(z, _const([0], "start"), stop, _const([1], "step"), _const([1], "axes"))
    return _save([opset1.add(sliced, w)], [z, w, stop], tmp_path / "model.xml")


def test_a_slice_with_unknown_stops_keeps_the_axes_it_does_not_slice(tmp_path):
    xml = _slice_with_unknown_stop(tmp_path)
    assert not reader_refuses(xml) and not irrun.check(xml).errors
    _patch_const(xml, "axes", [2])  # now axis 1 keeps 3, against 4
    assert reader_refuses(xml)
    assert "shape.broadcast" in {d.rule for d in irrun.check(xml).errors}


def test_slice_axes_are_checked_while_stops_are_unknown(tmp_path):
    xml = _slice_with_unknown_stop(tmp_path)
    _patch_const(xml, "axes", [9])
    assert reader_refuses(xml)
    assert "attr.range" in {d.rule for d in irrun.check(xml).errors}


@pytest.mark.parametrize("version", [1, 4])
@pytest.mark.parametrize("which,value", [("step", 0), ("step", np.inf), ("stop", np.nan)])
def test_range_checks_each_known_input(version, which, value, tmp_path):
    """Range(start from a Parameter, stop 10, step 1): a step of 0 or a stop of NaN is refused although
    start is not known."""
    start = opset1.parameter([], np.float32)
    stop, step = _const(10, "stop", np.float32), _const(1, "step", np.float32)
    node = opset12.range(start, stop, step, "f32") if version == 4 else opset1.range(start, stop, step)
    xml = _save([node], [start], tmp_path / "model.xml")
    assert not reader_refuses(xml) and not irrun.check(xml).errors
    _patch_const(xml, which, value)
    assert reader_refuses(xml)
    rules = {d.rule for d in irrun.check(xml).errors}
    assert "attr.range" in rules and all(rule_class(rule).kind == OPENVINO for rule in rules)


LOOP_SEED = Path(__file__).parents[1] / "models" / "torch_loop_if" / "model.xml"
BODY_CONDITION = ('<layer id="6" name="4_1_1" type="Const" version="opset1">\n\t\t\t\t\t\t<data element_type="boolean" '
                  'shape="" offset="0" size="1" />')
OUTER_CONDITION = ('<layer id="2" name="4_1_1" type="Const" version="opset1">\n\t\t\t<data element_type="boolean" '
                   'shape="" offset="0" size="1" />')
CURRENT_ITERATION = '<layer id="0" name="11" type="Parameter" version="opset1">\n\t\t\t\t\t\t<data shape=""'
LOOP_EDITS = {  # OpenVINO's Loop-5: conditions and current_iteration of rank 0 or 1, a known condition one value
    "body condition of two values": (BODY_CONDITION, 'shape=""', 'shape="2"', "port.dims"),
    "body condition of rank 2": (BODY_CONDITION, 'shape=""', 'shape="1,1"', "port.rank"),
    "outer condition of two values": (OUTER_CONDITION, 'shape=""', 'shape="2"', "port.dims"),
    "current_iteration of rank 2": (CURRENT_ITERATION, 'shape=""', 'shape="1,1"', "port.rank"),
}


@pytest.mark.parametrize("edit", LOOP_EDITS)
def test_loop_conditions(edit, tmp_path):
    anchor, old, new, rule = LOOP_EDITS[edit]
    text = LOOP_SEED.read_text()
    assert anchor in text
    (tmp_path / "model.xml").write_text(text.replace(anchor, anchor.replace(old, new).replace('size="1"', 'size="2"')
                                                     if "two values" in edit else anchor.replace(old, new)))
    (tmp_path / "model.bin").symlink_to(LOOP_SEED.with_suffix(".bin"))
    assert reader_refuses(tmp_path / "model.xml")
    assert rule in {d.rule for d in irrun.check(tmp_path / "model.xml").errors}
