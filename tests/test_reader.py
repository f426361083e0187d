"""Reading IR: element types, opset tables, legacy and case-insensitive names, attribute parsing,
Parameter shapes and tensor names, each compared with what OpenVINO reads from the same file."""
import re

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset8

import irrun
from irbuild import IRBuilder
from oracle import cpu_config
from irrun.errors import InvalidAttributeError
from irrun.ir.opsets import resolve

CORE = ov.Core()


def save(model, tmp_path, name="model"):
    path = tmp_path / f"{name}.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    return path


def cpu(path, feeds=()):
    compiled = CORE.compile_model(CORE.read_model(str(path)), "CPU", cpu_config())
    return [np.asarray(v) for v in compiled(list(feeds)).values()]


@pytest.mark.parametrize("type_name,values", [
    ("u1", [0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0]),
    ("u2", [0, 1, 2, 3, 3, 2, 1]),
    ("u3", [0, 1, 2, 3, 4, 5, 6, 7, 7, 5, 3]),
    ("u4", [0, 15, 7, 8, 1]),
    ("u6", [0, 63, 17, 32, 48, 1, 2]),
    ("i4", [-8, 7, -1, 0, 3]),
    ("nf4", [-1.0, 0.1, 0.44, 1.0, -0.2]),
    ("f4e2m1", [0.5, -4.0, 6.0, 1.5, 0.0]),
    ("f8e4m3", [0.3125, -448.0, 1e-3, 17.0]),
    ("f8e5m2", [0.25, -57344.0, 3e-5, 1.5]),
    ("f8e8m0", [0.25, 8.0, 2.0 ** -100, 1.0]),
    ("bf16", [1.1, -3.3e38, 1e-30, 0.0]),
    ("f16", [1.5, -65504.0, 6e-8, 0.0]),
    ("boolean", [True, False, True]),
    ("i8", [-128, 127, 0]), ("u16", [65535, 1, 0]), ("u32", [2 ** 32 - 1, 5]), ("u64", [2 ** 63, 1]),
    ("i16", [-32768, 5]), ("f64", [1.5, -2.5]),  # the CPU plugin computes f64 in f32
])
def test_const_element_types_decode_as_openvino_reads_them(tmp_path, type_name, values):
    const = ov.op.Constant(getattr(ov.Type, type_name), ov.Shape([len(values)]), values)
    path = save(ov.Model([opset1.convert(const, "f64" if type_name in ("u64", "f64") else "f32").output(0)], [], "m"),
                tmp_path)
    (expected,) = cpu(path)
    (got,) = irrun.load(path).run([]).values()
    np.testing.assert_array_equal(got, expected.astype(got.dtype))


def test_opset_selects_the_op_version():
    for opset in range(1, 17):
        expected = 1 if opset < 8 else 8 if opset < 14 else 14
        assert resolve("MaxPool", f"opset{opset}") == ("MaxPool", expected)
    assert resolve("AdaptiveMaxPool", "opset7") == ("AdaptiveMaxPool", None)
    assert resolve("ROIPooling", "opset1") == ("ROIPooling", 2)  # OpenVINO reads opset1 ROIPooling from opset2
    assert resolve("Gelu", "opset2") == ("Gelu", 2) and resolve("Gelu", "opset7") == ("Gelu", 7)
    # The headers list Xor in opset1-3; OpenVINO's reader takes it from opset1 only.
    assert resolve("Xor", "opset1") == ("Xor", 1) and resolve("Xor", "opset2") == ("Xor", None)


def _relu_model(tmp_path, relu_type, const_type, case_type):
    b = IRBuilder()
    p = b.parameter([2, 2], name="x")
    c = b.const(np.array([[1, -2], [3, -4]], np.float32))
    b.layers[c].type = const_type
    add = b.op(case_type, "opset1", [(p, 0), (c, 0)], {}, [([2, 2], "f32")])
    relu = b.op(relu_type, "opset1", [(add, 0)], {}, [([2, 2], "f32")])
    b.result((relu, 0))
    return b.save(tmp_path)


@pytest.mark.parametrize("relu_type,case_type", [("ReLU", "Add"), ("relu", "add"), ("RELU", "ADD"), ("Relu", "aDd")])
def test_legacy_and_case_insensitive_type_names(tmp_path, relu_type, case_type):
    path = _relu_model(tmp_path, relu_type, "Const", case_type)
    x = np.array([[0.5, 0.5], [-9, 9]], np.float32)
    (expected,) = cpu(path, [x])
    (got,) = irrun.load(path).run([x]).values()
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("const_type", ["const", "CONST", "Constant"])
def test_weights_constant_must_be_spelled_const(tmp_path, const_type):
    path = _relu_model(tmp_path, "Relu", const_type, "Add")
    with pytest.raises(RuntimeError):
        cpu(path, [np.zeros((2, 2), np.float32)])
    with pytest.raises(irrun.IRError, match=const_type):
        irrun.load(path)


def _maxpool_xml(tmp_path, **attrs):
    p = opset8.parameter([1, 1, 4, 4], np.float32, name="x")
    pool = opset8.max_pool(p, [1, 1], [1, 1], [0, 0], [0, 0], [2, 2], name="pool")
    path = save(ov.Model(pool.outputs(), [p], "m"), tmp_path)
    text = path.read_text()
    for key, value in attrs.items():
        text = re.sub(rf'{key}="[^"]*"', f'{key}="{value}"', text)
    path.write_text(text)
    return path


@pytest.mark.parametrize("attrs,accepted", [
    ({"strides": "1,1", "kernel": "2 , 2"}, True),   # spaces around items
    ({"rounding_type": "CEIL"}, True),               # enums are case-insensitive
    ({"auto_pad": "Same_Upper"}, True),
    ({"index_element_type": "I32"}, True),
    ({"strides": "1,,1"}, False),                     # an empty list item

    ({"rounding_type": "round"}, False),
])
def test_attribute_parsing_follows_openvino(tmp_path, attrs, accepted):
    path = _maxpool_xml(tmp_path, **attrs)
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    try:
        expected = cpu(path, [x])
    except RuntimeError:
        expected = None
    assert (expected is not None) == accepted
    if accepted:
        got = list(irrun.load(path).run([x]).values())
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)
    else:
        with pytest.raises(irrun.IRError):
            irrun.load(path)


def test_fractional_integers_are_refused(tmp_path):
    """OpenVINO reads kernel="2.5,2" as 2,2 (its stream parser stops at the '.'); irrun refuses the value
    rather than guess what the writer meant (docs/semantics.md)."""
    path = _maxpool_xml(tmp_path, kernel="2.5,2")
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    assert cpu(path, [x])[0].shape == (1, 1, 3, 3)
    with pytest.raises(InvalidAttributeError, match="kernel"):
        irrun.load(path)


def test_plain_string_attributes_are_case_sensitive(tmp_path):
    b = IRBuilder()
    fm = b.parameter([1, 1, 4, 4], name="fm")
    rois = b.const(np.array([[0, 0, 0, 3, 3]], np.float32))
    layer = b.op("ROIPooling", "opset2", [(fm, 0), (rois, 0)],
                 {"pooled_h": 2, "pooled_w": 2, "spatial_scale": 1, "method": "MAX"}, [([1, 1, 2, 2], "f32")])
    b.result((layer, 0))
    with pytest.raises(InvalidAttributeError, match="method"):
        irrun.load(b.save(tmp_path))


@pytest.mark.parametrize("shape_attr,expected", [
    ("1,3,?,8", (1, 3, None, 8)), ("-1", (None,)), ("2..8", (None,)), ("..5", (None,)), ("4..", (None,)),
    ("[2,?]", (2, None)), ("...", None), ("", ()),
])
def test_parameter_shapes(tmp_path, shape_attr, expected):
    b = IRBuilder()
    p = b.parameter([], name="x", shape_attr=shape_attr)
    b.result((p, 0))
    model = irrun.load(b.save(tmp_path))
    assert model.inputs[0].shape == expected
    ov_shape = CORE.read_model(str(tmp_path / "model.xml")).inputs[0].get_partial_shape()
    if expected is None:
        assert ov_shape.rank.is_dynamic
    else:
        assert [None if d.is_dynamic else d.get_length() for d in ov_shape] == list(expected)


def test_interval_bounds_are_enforced_on_inputs(tmp_path):
    b = IRBuilder()
    p = b.parameter([], name="x", shape_attr="2..3,1")
    b.result((p, 0))
    model = irrun.load(b.save(tmp_path))
    model.run([np.zeros((3, 1), np.float32)])
    with pytest.raises(irrun.IRError, match="expected 2..3,1"):
        model.run([np.zeros((4, 1), np.float32)])


def _names_variant(tmp_path, version, port_names, output_names):
    p = opset8.parameter([1, 1, 2, 2], np.float32, name="x")
    pool = opset8.max_pool(p, [1, 1], [1, 1], [0, 0], [0, 0], [1, 1], name="pool")
    path = save(ov.Model(pool.outputs(), [p], "m"), tmp_path)
    text = path.read_text().replace('version="11"', f'version="{version}"', 1)
    text = re.sub(r' output_names="[^"]*"', "", text)
    text = re.sub(r'(<port id="[12]" precision="[A-Z0-9]+") names="[^"]*"', r"\1", text)
    if port_names:
        text = text.replace('<port id="1" precision="FP32"', f'<port id="1" precision="FP32" names="{port_names}"')
    if output_names:
        text = text.replace('type="Result" version="opset1"', f'type="Result" version="opset1" output_names="{output_names}"', 1)
    path.write_text(text)
    return path


@pytest.mark.parametrize("version,port_names,output_names", [
    (11, "zeta,alpha", None), (11, "zeta,alpha", "out1,out0"), (11, None, None), (10, "zeta,alpha", None),
    (10, None, None), (11, "a\\,b,c", None),
])
def test_output_names_match_openvino(tmp_path, version, port_names, output_names):
    path = _names_variant(tmp_path, version, port_names, output_names)
    ov_outputs = CORE.read_model(str(path)).outputs
    expected = [o.get_any_name() if o.get_names() else f"output{i}" for i, o in enumerate(ov_outputs)]
    assert [d.name for d in irrun.load(path).outputs] == expected
