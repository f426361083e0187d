"""`--openvino-compatible` where the mutation corpora (tools/mutate_corpus.py, issue 22) found irrun and OpenVINO's
reader disagreeing: each model is built valid by OpenVINO, then one thing in the file is edited, and OpenVINO's
verdict on the edited file is taken live. Compatible mode must fail exactly when OpenVINO refuses."""
from __future__ import annotations

import re

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset3, opset4, opset6, opset8
from openvino.op.util import Variable, VariableInfo

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


def _edit(xml, pattern: str, replacement: str) -> None:
    """Substitute the first match of `pattern` (it must match) in the saved IR."""
    text = xml.read_text()
    assert re.search(pattern, text)
    xml.write_text(re.sub(pattern, replacement, text, count=1))


def _edit_parameter_shape(xml, name, shape):
    _edit(xml, rf'(<layer id="\d+" name="{name}" type="Parameter"[^>]*>\s*<data shape=")[^"]*', rf"\g<1>{shape}")


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


def _edit_attribute(xml, old, new):
    text = xml.read_text()
    assert old in text
    xml.write_text(text.replace(old, new, 1))


# x [1,4,9,8] through one op, plus y [?,?,?,?] set to [1,1,N,1] afterwards: the op's first spatial dim must be
# 1 or N. (op, attribute edit, N, OpenVINO refuses): a negative stride is read as a huge unsigned one (and
# Convolution's same padding wraps it to 0 outputs), a missing strides attribute as 1 per axis.
_WEIGHTS = np.ones([6, 4, 1, 1], np.float32)
STEP_EDITS = {
    "Convolution stride -1": (lambda x: opset1.convolution(x, opset1.constant(_WEIGHTS), [1, 1], [0, 0], [0, 0],
                                                           [1, 1]), ('strides="1, 1"', 'strides="-1, 1"'), 3, False),
    "Convolution same_upper stride -1": (lambda x: opset1.convolution(
        x, opset1.constant(_WEIGHTS), [1, 1], [0, 0], [0, 0], [1, 1], "same_upper"),
        ('strides="1, 1"', 'strides="-1, 1"'), 3, True),
    "Convolution without strides": (lambda x: opset1.convolution(x, opset1.constant(_WEIGHTS), [2, 2], [0, 0],
                                                                 [0, 0], [1, 1]), (' strides="2, 2"', ""), 5, True),
    "MaxPool stride -2": (lambda x: opset1.max_pool(x, [1, 1], [0, 0], [0, 0], [2, 2]),
                          ('strides="1, 1"', 'strides="-2, 1"'), 3, False),
    "AvgPool ceil stride -1": (lambda x: opset1.avg_pool(x, [1, 1], [0, 0], [0, 0], [2, 2], True, "ceil"),
                               ('strides="1, 1"', 'strides="-1, 1"'), 3, False),
}


@pytest.mark.parametrize("case", STEP_EDITS)
def test_inference_goes_on_past_a_stricter_step_error(case, tmp_path):
    """The layer itself is reported (a `.spec` rule, a warning in compatible mode); its outputs are what
    OpenVINO infers, so the Add below it fails exactly when OpenVINO refuses the file."""
    make, (old, new), n, refused = STEP_EDITS[case]
    x, y = opset1.parameter([1, 4, 9, 8], np.float32), opset1.parameter([-1, -1, -1, -1], np.float32)
    y.set_friendly_name("y")
    xml = _save([opset1.add(make(x), y)], [x, y], tmp_path / "model.xml")
    _edit_attribute(xml, old, new)
    _edit_parameter_shape(xml, "y", f"1,1,{n},1")
    assert reader_refuses(xml) is refused
    assert any(d.rule.endswith(".spec") for d in irrun.check(xml).errors)
    assert ("shape.broadcast" in _openvino_errors(xml)) is refused
    assert bool(irrun.check(xml, openvino_compatible=True).errors) is refused


@pytest.mark.parametrize("dim", [2**31 - 2, 2**31 - 1, 2**31 + 5])
@pytest.mark.parametrize("output_type", ["i32", "i64"])
def test_an_i32_shape_value_at_the_type_maximum_is_unknown(dim, output_type, tmp_path):
    """Reshape(x, Concat(ReduceProd(ShapeOf(x)), [-1])), x [dim, 1]: OpenVINO's bounds read an i32 ShapeOf element
    of 2**31 - 1 or more as a dynamic dim (not wrapped), and the Reshape as [?, 1..]; irrun used to wrap it to a
    negative target value and refuse the file."""
    x = opset1.parameter([dim, 1], np.bool_)
    dtype = np.int32 if output_type == "i32" else np.int64
    product = opset1.reduce_prod(opset3.shape_of(x, output_type), opset1.constant(dtype(0)), True)
    target = opset1.concat([product, opset1.constant(np.array([-1], dtype))], 0)
    xml = _save([opset1.reshape(x, target, True)], [x], tmp_path / "model.xml")
    assert not reader_refuses(xml)
    assert not irrun.check(xml).errors
    shape = ov.Core().read_model(str(xml)).output(0).get_partial_shape()
    known = output_type == "i64" or dim < 2**31 - 1
    assert shape.is_static is known


def test_an_i32_shape_product_that_wraps_is_still_refused(tmp_path):
    """x [2**31 - 2, 1] (known to OpenVINO) made [2**31 - 2, 2]: the i32 product wraps to -4, which OpenVINO refuses."""
    x = opset1.parameter([2**31 - 2, 1], np.bool_)
    x.set_friendly_name("x")
    product = opset1.reduce_prod(opset3.shape_of(x, "i32"), opset1.constant(np.int32(0)), True)
    target = opset1.concat([product, opset1.constant(np.array([-1], np.int32))], 0)
    xml = _save([opset1.reshape(x, target, True)], [x], tmp_path / "model.xml")
    _edit_parameter_shape(xml, "x", f"{2**31 - 2},2")
    assert reader_refuses(xml)
    assert "attr.range" in _openvino_errors(xml)


@pytest.mark.parametrize("pattern,refused", [([0, -1], True), ([3, -1], False)])
def test_a_missing_special_zero_is_read_as_false(pattern, refused, tmp_path):
    """Reshape-1 without special_zero: OpenVINO reads false (measured by tools/probe_missing_attrs.py), so a
    pattern [0, -1] asks for a 0 dim beside -1 and is refused; irrun checks on with that value."""
    x = opset1.parameter([3, 4], np.float32)
    xml = _save([opset1.reshape(x, _i64(pattern), True)], [x], tmp_path / "model.xml")
    _edit_attribute(xml, ' special_zero="true"', "")
    assert reader_refuses(xml) is refused
    assert "attr.value.spec" in {d.rule for d in irrun.check(xml).errors}
    assert ("shape.reshape" in _openvino_errors(xml)) is refused
    assert bool(irrun.check(xml, openvino_compatible=True).errors) is refused


def _patch_int64s(xml, old, new):
    """Overwrite the int64 values `old` in model.bin with `new` (same length)."""
    blob = bytearray(xml.with_suffix(".bin").read_bytes())
    at = bytes(blob).find(np.array(old, np.int64).tobytes())
    assert at >= 0
    blob[at:at + 8 * len(old)] = np.array(new, np.int64).tobytes()
    xml.with_suffix(".bin").write_bytes(bytes(blob))


# x [3,4] through one op whose size input is a Const [7,9] (or [3,4]), then patched: OpenVINO reads a negative
# size from a Const layer (-1 a dynamic dim, or 0 for Tile; below -1 a 0 dim, which x's 3 does not broadcast to)
# and infers on.
SIZE_EDITS = {
    "Tile [-1,2]": (lambda x, c: opset1.tile(x, c), [7, 9], [-1, 2], False),
    "Tile [2,-5]": (lambda x, c: opset1.tile(x, c), [7, 9], [2, -5], False),
    "Broadcast [-1,4]": (lambda x, c: opset3.broadcast(x, c), [3, 4], [-1, 4], False),
    "Broadcast [-2,4]": (lambda x, c: opset3.broadcast(x, c), [3, 4], [-2, 4], True),
    "Broadcast bidirectional [3,-1]": (lambda x, c: opset3.broadcast(x, c, broadcast_spec="bidirectional"), [3, 4],
                                       [3, -1], False),
    "Broadcast explicit [-1,1]": (lambda x, c: opset3.broadcast(x, c, _i64([0, 1]), "explicit"), [3, 4], [-1, 1],
                                  True),
    "AdaptiveAvgPool [-2,2]": (lambda x, c: opset8.adaptive_avg_pool(opset1.reshape(x, _i64([1, 1, 3, 4]), False), c),
                               [5, 6], [-2, 2], False),
}


@pytest.mark.parametrize("case", SIZE_EDITS)
def test_a_negative_size_read_from_a_const(case, tmp_path):
    make, built, patched, refused = SIZE_EDITS[case]
    x = opset1.parameter([3, 4], np.float32)
    xml = _save([make(x, _i64(built))], [x], tmp_path / "model.xml")
    _patch_int64s(xml, built, patched)
    assert reader_refuses(xml) is refused
    assert bool(_openvino_errors(xml)) is refused
    assert bool(irrun.check(xml, openvino_compatible=True).errors) is refused
    assert irrun.check(xml).errors  # the stricter rule, or OpenVINO's


def test_gathernd_u8_indices_are_inferred_on(tmp_path):
    """GatherND-8 indices made u8: OpenVINO's reader takes any integer type; irrun's `.spec` error is a warning
    in compatible mode and inference goes on (no OpenVINO-class type error after it)."""
    data, indices = opset1.parameter([2, 5, 6], np.float32), opset1.parameter([3, 2], np.int64)
    indices.set_friendly_name("indices")
    xml = _save([opset8.gather_nd(data, indices, 0)], [data, indices], tmp_path / "model.xml")
    _edit(xml, r'(<layer id="\d+" name="indices" type="Parameter"[^>]*>\s*<data shape="3,2" element_type=")i64',
          r"\g<1>u8")
    assert not reader_refuses(xml)
    assert "port.type.spec" in {d.rule for d in irrun.check(xml).errors}
    assert not irrun.check(xml, openvino_compatible=True).errors


@pytest.mark.parametrize("value,refused", [(2, False), (-1, True), (-3, True)])
def test_tile_repeats_partly_known_must_not_be_negative(value, refused, tmp_path):
    """Tile(x, Concat(Gather(ShapeOf(y), 0), [k])): OpenVINO evaluates the repeats' bounds, which must not be
    negative ("Value for partial shape evaluation can't be lower than zero"), even where the rest is unknown."""
    x, y = opset1.parameter([3, 4], np.float32), opset1.parameter([-1, 5], np.float32)
    repeats = opset1.concat([opset8.gather(opset3.shape_of(y), _i64([0]), _i64(0)), _i64([7])], 0)
    xml = _save([opset1.tile(x, repeats)], [x, y], tmp_path / "model.xml")
    _patch_int64s(xml, [7], [value])
    assert reader_refuses(xml) is refused
    assert ("attr.range" in _openvino_errors(xml)) is refused
    assert bool(irrun.check(xml, openvino_compatible=True).errors) is refused


@pytest.mark.parametrize("op_name", ["Squeeze", "Unsqueeze"])
def test_boolean_axes_values_cannot_be_read(op_name, tmp_path):
    """Squeeze/Unsqueeze read axes of any number type, but not the values of a boolean Const (OpenVINO:
    "Element not supported")."""
    x = opset1.parameter([2, 1, 3], np.float32)
    make = opset1.squeeze if op_name == "Squeeze" else opset1.unsqueeze
    xml = _save([make(x, _i64(1))], [x], tmp_path / "model.xml")
    _edit_attribute(xml, 'element_type="i64"', 'element_type="boolean"')
    assert reader_refuses(xml)
    assert "port.type" in _openvino_errors(xml)


# Values of a dynamic type (docs/rules.md). x [2,3] f32 through Convert(x, f32) named "dyn", edited to a Convert to
# dynamic (or one without destination_type, the mutant of seed 38), then `use`; its result initialises a
# ReadValue-6 of the type and shape `use` had before the edit. OpenVINO carries the dynamic type through ops whose
# output type is their input's and merges it with any other type; a ReadValue-6 of a concrete type refuses it.
def _var(shape, element):
    info = VariableInfo()
    info.data_shape, info.data_type, info.variable_id = shape, element, "state"
    return Variable(info)


DYNAMIC_USES = {
    "directly": (lambda d, f: d, True),
    "Broadcast": (lambda d, f: opset3.broadcast(d, _i64([4, 2, 3])), True),
    "Gather of it": (lambda d, f: opset8.gather(d, _i64([1]), _i64(0)), True),
    "Add of two": (lambda d, f: opset1.add(d, d), True),
    "Add with f32": (lambda d, f: opset1.add(d, f), False),
    "Concat with f32": (lambda d, f: opset1.concat([d, f], 0), False),
    "MatMul with f32": (lambda d, f: opset1.matmul(d, f, False, True), False),
    "ShapeOf": (lambda d, f: opset3.shape_of(d), False),
    "Convert": (lambda d, f: opset1.convert(d, "f16"), False),
}


def _dynamic_state_model(use, tmp_path, variable_type=None):
    x, f = opset1.parameter([2, 3], np.float32), opset1.parameter([2, 3], np.float32)
    dyn = opset1.convert(x, "f32")
    dyn.set_friendly_name("dyn")
    init = use(dyn, f).output(0)
    variable = _var(init.get_partial_shape(), variable_type or init.get_element_type())
    state = opset6.read_value(init, variable)
    model = ov.Model([state.output(0)], [opset6.assign(state, variable)], [x, f])
    ov.save_model(model, str(tmp_path / "model.xml"), compress_to_fp16=False)
    return tmp_path / "model.xml"


def _edit_dyn_convert(xml, new):
    _edit(xml, r'(<layer id="\d+" name="dyn" type="Convert" version="opset1">\s*<data) destination_type="f32"',
          rf"\g<1>{new}")


@pytest.mark.parametrize("edit", [' destination_type="dynamic"', ""])
@pytest.mark.parametrize("use", DYNAMIC_USES)
def test_a_variable_init_of_dynamic_type(use, edit, tmp_path):
    make, refused = DYNAMIC_USES[use]
    xml = _dynamic_state_model(make, tmp_path)
    assert not reader_refuses(xml) and not irrun.check(xml).errors
    _edit_dyn_convert(xml, edit)
    assert reader_refuses(xml) is refused
    assert ("variable.type" in _openvino_errors(xml)) is refused
    assert bool(irrun.check(xml, openvino_compatible=True).errors) is refused
    assert "attr.value.spec" in {d.rule for d in irrun.check(xml).errors}  # default mode: the stricter rule


def test_a_variable_of_dynamic_type_takes_an_init_of_dynamic_type(tmp_path):
    xml = _dynamic_state_model(DYNAMIC_USES["Broadcast"][0], tmp_path, ov.Type.dynamic)
    _edit_dyn_convert(xml, ' destination_type="dynamic"')
    assert not reader_refuses(xml)
    assert not irrun.check(xml, openvino_compatible=True).errors


def test_a_parameter_of_dynamic_type_initialising_a_variable(tmp_path):
    x = opset1.parameter([2, 3], np.float32)
    x.set_friendly_name("x")
    state = opset6.read_value(x, _var(ov.PartialShape([2, 3]), ov.Type.f32))
    xml = _save([state], [x], tmp_path / "model.xml")
    _edit_attribute(xml, 'element_type="f32"', 'element_type="dynamic"')
    assert reader_refuses(xml)
    assert "variable.type" in _openvino_errors(xml)


# A Const K (i64) made element_type="dynamic" (the mutant of seed 38: Unsqueeze axes): OpenVINO cannot read its
# values ("Element not supported", or an uninitialised tensor through ops it folds to get them); a Const whose
# value nothing reads is fine.
def _f32(shape=(2, 3)):
    return opset1.parameter(list(shape), np.float32)


def _k(value):
    const = _i64(value)
    const.set_friendly_name("K")
    return const


def _parameters(node) -> list:
    """The Parameters `node` depends on."""
    found, seen, waiting = [], set(), [node]
    while waiting:
        op = waiting.pop()
        if op.get_friendly_name() in seen:
            continue
        seen.add(op.get_friendly_name())
        found += [op] if op.get_type_name() == "Parameter" else []
        waiting += [port.get_source_output().get_node() for port in op.inputs()]
    return found


DYNAMIC_CONSTS = {
    "Unsqueeze axes": (lambda: opset1.unsqueeze(_f32(), _k([0])), True),
    "Squeeze axes": (lambda: opset1.squeeze(_f32((1, 3)), _k([0])), True),
    "Reshape target": (lambda: opset1.reshape(_f32(), _k([3, 2]), False), True),
    "Transpose order": (lambda: opset1.transpose(_f32(), _k([1, 0])), True),
    "Gather axis": (lambda: opset8.gather(_f32(), _i64([0]), _k(0)), True),
    "Tile repeats": (lambda: opset1.tile(_f32(), _k([2, 1])), True),
    "ReduceSum axes": (lambda: opset1.reduce_sum(_f32(), _k([0])), True),
    "Range stop": (lambda: opset4.range(_i64(0), _k(5), _i64(1), "i64"), True),
    "Convert then Unsqueeze axes": (lambda: opset1.unsqueeze(_f32(), opset1.convert(_k([0]), "i32")), True),
    "Concat then Reshape target": (lambda: opset1.reshape(_f32(), opset1.concat([_k([3]), _i64([2])], 0), False),
                                   True),
    "Gather indices": (lambda: opset8.gather(_f32(), _k([0]), _i64(0)), False),
    "Unsqueeze data": (lambda: opset1.unsqueeze(_k([1, 2]), _i64([0])), False),
    "Add with a Parameter then Unsqueeze axes": (lambda: opset1.unsqueeze(_f32(), opset1.add(
        _k([0]), opset1.parameter([1], np.int64))), False),
    "ShapeOf then Reshape target": (lambda: opset1.reshape(_f32((6,)), opset3.shape_of(_k([[1, 2, 3], [4, 5, 6]])),
                                                           False), False),
    "a Result": (lambda: _k([1, 2]), False),
}


def _make_dynamic(xml, name: str, layer_type: str, attribute: str) -> None:
    """Rewrite the i64 `attribute` of layer `name` in the saved IR to dynamic."""
    _edit(xml, rf'(<layer id="\d+" name="{name}" type="{layer_type}" version="opset1">\s*<data {attribute}=")i64',
          r"\g<1>dynamic")


@pytest.mark.parametrize("case", DYNAMIC_CONSTS)
def test_the_values_of_a_const_of_dynamic_type(case, tmp_path):
    make, refused = DYNAMIC_CONSTS[case]
    node = make()
    xml = _save([node], _parameters(node), tmp_path / "model.xml")
    _make_dynamic(xml, "K", "Const", "element_type")
    assert reader_refuses(xml) is refused
    assert ("const.type" in _openvino_errors(xml)) is refused
    assert bool(irrun.check(xml, openvino_compatible=True).errors) is refused
    assert "const.type.spec" in {d.rule for d in irrun.check(xml).errors}  # default mode: the stricter rule


@pytest.mark.parametrize("constant", [True, False])
def test_the_value_of_a_convert_to_dynamic(constant, tmp_path):
    """Unsqueeze axes Convert(axes, i64) made a Convert to dynamic: OpenVINO folds a Const's Convert to get the
    axes and cannot ("Tensor was not initialized"); a Parameter's it does not try to fold."""
    x, p = opset1.parameter([2, 3], np.float32), opset1.parameter([], np.int64)
    axes = opset1.convert(_i64(0) if constant else p, "i64")
    axes.set_friendly_name("dyn")
    xml = _save([opset1.unsqueeze(x, axes)], [x] if constant else [x, p], tmp_path / "model.xml")
    _make_dynamic(xml, "dyn", "Convert", "destination_type")
    assert reader_refuses(xml) is constant
    assert ("const.type" in _openvino_errors(xml)) is constant
    assert bool(irrun.check(xml, openvino_compatible=True).errors) is constant


def test_mutant_seed_38_convert_without_destination_type_initialising_a_variable(tmp_path):
    """m38_00166 (llama_f16): a decompression Convert of an f16 scalar Const lost destination_type; it is
    broadcast to [?,2,0,8] and initialises a ReadValue-6 of f32 [?,2,?,8]."""
    batch = opset1.parameter([-1, 5], np.float32)
    dyn = opset1.convert(opset1.constant(np.float16(0)), "f32")
    dyn.set_friendly_name("dyn")
    target = opset1.concat([opset8.gather(opset3.shape_of(batch), _i64([0]), _i64(0)), _i64([2, 0, 8])], 0)
    variable = _var(ov.PartialShape([-1, 2, -1, 8]), ov.Type.f32)
    state = opset6.read_value(opset3.broadcast(dyn, target), variable)
    model = ov.Model([state.output(0)], [opset6.assign(state, variable)], [batch])
    xml = tmp_path / "model.xml"
    ov.save_model(model, str(xml), compress_to_fp16=False)
    _edit_dyn_convert(xml, "")
    assert reader_refuses(xml)
    assert _openvino_errors(xml) == {"variable.type"}
    assert [d.rule for d in irrun.check(xml, openvino_compatible=True).errors] == ["variable.type"]


def test_mutant_seed_38_scalar_unsqueeze_axis_of_dynamic_type(tmp_path):
    """m38_00569 (opt_int4_asym): Unsqueeze of an i64 [?,1,?] tensor by a scalar Const axis whose element_type
    became dynamic."""
    data = opset1.parameter([-1, 1, -1], np.int64)
    xml = _save([opset1.unsqueeze(data, _k(1))], [data], tmp_path / "model.xml")
    _edit_attribute(xml, 'element_type="i64" shape=""', 'element_type="dynamic" shape=""')
    assert reader_refuses(xml)
    assert _openvino_errors(xml) == {"const.type"}
    assert [d.rule for d in irrun.check(xml, openvino_compatible=True).errors] == ["const.type"]
