"""`--openvino-compatible` where the mutation corpora (tools/mutate_corpus.py, issue 22) found irrun and OpenVINO's
reader disagreeing: each model is built valid by OpenVINO, then one thing in the file is edited, and OpenVINO's
verdict on the edited file is taken live. Compatible mode must fail exactly when OpenVINO refuses."""
from __future__ import annotations

import re

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset3, opset8

import irrun
from oracle import reader_refuses
from irrun.tools.rule_classes import OPENVINO, rule_class


def _i64(value):
    return opset1.constant(np.array(value, np.int64))


def _save(outputs, parameters, path):
    ov.save_model(ov.Model(outputs, parameters), str(path), compress_to_fp16=False)
    return path


def _openvino_errors(xml) -> set[str]:
    return {d.rule for d in irrun.check(xml, openvino_compatible=True).errors if rule_class(d.rule).kind == OPENVINO}


def _edit_parameter_shape(xml, name, shape):
    text = xml.read_text()
    pattern = rf'(<layer id="\d+" name="{name}" type="Parameter"[^>]*>\s*<data shape=")[^"]*'
    assert re.search(pattern, text)
    xml.write_text(re.sub(pattern, rf"\g<1>{shape}", text, count=1))


# Broadcast-3 (numpy) of d [4] to a target of one value computed from x [?,5]; d then becomes rank 3. OpenVINO
# evaluates the bounds of shape arithmetic: a target of unknown values but known length is checked against the
# rank; a target it cannot bound (a Parameter's values in it) is not.
TARGETS = {
    "Gather of ShapeOf": (lambda x, q: opset8.gather(opset3.shape_of(x), _i64([0]), _i64(0)), True),
    "Convert of Gather of ShapeOf": (lambda x, q: opset1.convert(opset8.gather(
        opset3.shape_of(x), _i64([0]), _i64(0)), "i32"), True),
    "ShapeOf times 2": (lambda x, q: opset1.multiply(opset8.gather(opset3.shape_of(x), _i64([0]), _i64(0)),
                                                     _i64([2])), True),
    "ShapeOf plus a Parameter": (lambda x, q: opset1.add(opset8.gather(opset3.shape_of(x), _i64([0]), _i64(0)), q),
                                 False),
    "a Parameter": (lambda x, q: q, False),
}


@pytest.mark.parametrize("target", TARGETS)
def test_broadcast_target_of_unknown_values_has_a_known_length(target, tmp_path):
    make, refused = TARGETS[target]
    x, d, q = opset1.parameter([-1, 5], np.float32), opset1.parameter([4], np.float32), opset1.parameter([1], np.int64)
    d.set_friendly_name("d")
    xml = _save([opset3.broadcast(d, make(x, q))], [x, d, q], tmp_path / "model.xml")
    assert not reader_refuses(xml) and not irrun.check(xml).errors
    _edit_parameter_shape(xml, "d", "2,3,4")
    assert reader_refuses(xml) is refused
    assert ("shape.broadcast" in _openvino_errors(xml)) is refused
    assert bool(irrun.check(xml, openvino_compatible=True).errors) is refused
