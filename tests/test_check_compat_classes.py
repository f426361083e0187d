"""The class of a rule is what OpenVINO's reader does with the file (issue 22): small IRs, each read here by
`Core.read_model` (the oracle, live). A file OpenVINO reads gets a stricter-class rule, which
`--openvino-compatible` reports as a warning and the runtime refuses with one IRError; a file it refuses
gets an error of the OpenVINO class in compatible mode too (including where a stricter check used to come
first and hide it)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import irrun
from irbuild import IRBuilder
from oracle import reader_refuses
from irrun.tools.rule_classes import CLASS_NAMES, OPENVINO, RULE_CLASSES, STRICTER, rule_class
from test_check_compat_probes import assert_read_and_stricter


def _i64(*values):
    return np.array(values, np.int64)


def _op(op_type, opset, x_shape, consts, attrs, out_rank, outputs=1, out_types=None, computed=False):
    """x (a Parameter of x_shape, f32), then one Const per input of `consts`, into one op; `computed`: each
    i64 Const goes through an Add of zeros first (a value other layers compute)."""
    def make(directory):
        b = IRBuilder()
        x = b.parameter(x_shape, name="x")
        sources = [(x, 0)] + [(_value(b, np.asarray(c), computed), 0) for c in consts]
        types = out_types or ["f32"] * outputs
        layer = b.op(op_type, opset, sources, attrs, [([-1] * out_rank, t) for t in types])
        for index in range(outputs):
            b.result((layer, index))
        return b.save(directory)
    return make


def _value(b, array, computed):
    const = b.const(array)
    if not computed or array.dtype != np.int64:
        return const
    return b.op("Add", "opset1", [(const, 0), (b.const(np.zeros_like(array)), 0)], {}, [(list(array.shape), "i64")])


def _edited(make, old, new):
    def edited(directory):
        path = make(directory)
        path.write_text(path.read_text().replace(old, new))
        return path
    return edited


def _gather_axis(et, shape):
    def make(directory):
        b = IRBuilder()
        x, indices = b.parameter([3, 4], name="x"), b.parameter([2], "i32", name="indices")
        axis = b.parameter(shape, et, name="axis")
        b.result((b.op("Gather", "opset8", [(x, 0), (indices, 0), (axis, 0)], {"batch_dims": 0},
                       [([-1, -1], "f32")]), 0))
        return b.save(directory)
    return make


def _const_into_add(**attrs):
    def make(directory):
        b = IRBuilder()
        x, c = b.parameter([2], name="x"), b.const(np.zeros(2, np.float32))
        b.layers[c].attrs.update(attrs)
        b.result((b.op("Add", "opset1", [(x, 0), (c, 0)], {}, [([2], "f32")]), 0))
        return b.save(directory)
    return make


def _convert(attrs):
    def make(directory):
        b = IRBuilder()
        x = b.parameter([2, 3], name="x")
        converted = b.op("Convert", "opset1", [(x, 0)], attrs, [([2, 3], "f32")])
        b.result((b.op("ReLU", "opset1", [(converted, 0)], {}, [([2, 3], "f32")]), 0))
        return b.save(directory)
    return make


def _reduce_keep_dims(text):
    return _op("ReduceSum", "opset1", [2, 3], [_i64(1)], {"keep_dims": text}, 1)


def _gru_hidden_sizes(state_hidden, r_hidden, lengths_type=np.int64):
    def make(directory):
        b = IRBuilder()
        x = b.parameter([1, 2, 4], name="x")
        state = b.parameter([1, 1, state_hidden], name="h")
        lengths = b.const(np.array([2], lengths_type))
        w, r = b.const(np.zeros((1, 9, 4), np.float32)), b.const(np.zeros((1, 9, r_hidden), np.float32))
        bias = b.const(np.zeros((1, 9), np.float32))
        layer = b.op("GRUSequence", "opset5", [(x, 0), (state, 0), (lengths, 0), (w, 0), (r, 0), (bias, 0)],
                     {"hidden_size": 3, "direction": "forward"}, [([1, 1, 2, 3], "f32"), ([1, 1, 3], "f32")])
        b.result((layer, 0))
        b.result((layer, 1))
        return b.save(directory)
    return make


INTERPOLATE = {"mode": "nearest", "shape_calculation_mode": "sizes"}
X4 = [1, 3, 5, 6]


def _without(make, layer_type, attribute):
    """`make`'s file with one attribute of its `layer_type` layer removed."""
    def edited(directory):
        path = make(directory)
        text = path.read_text()
        at = text.index(f'type="{layer_type}"')
        data = text.index("<data ", at)
        new = re.sub(rf' {attribute}="[^"]*"', "", text[data:text.index(">", data)], count=1)
        path.write_text(text[:data] + new + text[text.index(">", data):])
        return path
    return edited


def _parameter_of_type(et):
    def make(directory):
        b = IRBuilder()
        x = b.parameter([2, 3], name="x")
        if et is None:
            del b.layers[x].attrs["element_type"]
        else:
            b.layers[x].attrs["element_type"] = et
        b.result((b.op("ReLU", "opset1", [(x, 0)], {}, [([2, 3], "f32")]), 0))
        return b.save(directory)
    return make


def _one_hot(directory):
    b = IRBuilder()
    indices = b.parameter([3], "i64", name="indices")
    values = [b.const(v) for v in (np.array(4, np.int64), np.array(1, np.float32), np.array(0, np.float32))]
    layer = b.op("OneHot", "opset1", [(indices, 0)] + [(v, 0) for v in values], {"axis": -1}, [([3, 4], "f32")])
    b.result((layer, 0))
    return b.save(directory)


def _interpolate_into_concat(directory):
    """Interpolate-11 with more sizes than axes (OpenVINO reads [1,3,4,6]) concatenated with x [1,3,5,6]."""
    b = IRBuilder()
    x = b.parameter(X4, name="x")
    sizes, axes = b.const(_i64(4, 8)), b.const(_i64(2))
    resized = b.op("Interpolate", "opset11", [(x, 0), (sizes, 0), (axes, 0)], INTERPOLATE, [([-1] * 4, "f32")])
    b.result((b.op("Concat", "opset1", [(resized, 0), (x, 0)], {"axis": 1}, [([1, 6, -1, 6], "f32")]), 0))
    return b.save(directory)


def _attention_scale(directory):
    """ScaledDotProductAttention-13 with a scale input of shape [?,?]: OpenVINO wants rank 0 or 1."""
    b = IRBuilder()
    q, k, v = (b.parameter([1, 2, 3, 4], name=name) for name in "qkv")
    mask, scale = b.parameter([1, 1, 3, 3], name="mask"), b.parameter([-1, -1], name="scale")
    sources = [(q, 0), (k, 0), (v, 0), (mask, 0), (scale, 0)]
    b.result((b.op("ScaledDotProductAttention", "opset13", sources, {"causal": "false"}, [([1, 2, 3, 4], "f32")]), 0))
    return b.save(directory)


def _bad_byte_in_an_edge(directory):
    """A byte invalid in UTF-8 inside an edge's from-layer: OpenVINO's parser reads the text, then finds no
    such layer."""
    b = IRBuilder()
    x = b.parameter([2, 3], name="x")
    b.result((b.op("ReLU", "opset1", [(x, 0)], {}, [([2, 3], "f32")]), 0))
    path = b.save(directory)
    path.write_bytes(path.read_bytes().replace(b'<edge from-layer="1"', b'<edge from-layer="1\x93-h"'))
    return path


def _broadcast_to_unknown_target(mode, opset="opset3"):
    """Broadcast of x [1,1,6] to a target shape of one value no layer knows (a Parameter)."""
    def make(directory):
        b = IRBuilder()
        x, target = b.parameter([1, 1, 6], name="x"), b.parameter([1], "i64", name="target")
        b.result((b.op("Broadcast", opset, [(x, 0), (target, 0)], {"mode": mode}, [([-1] * 3, "f32")]), 0))
        return b.save(directory)
    return make


def _shape_of(directory):
    b = IRBuilder()
    x = b.parameter([2, 3], name="x")
    b.result((b.op("ShapeOf", "opset3", [(x, 0)], {"output_type": "i64"}, [([2], "i64")]), 0))
    return b.save(directory)


def _convolution(directory):
    b = IRBuilder()
    x, w = b.parameter([1, 2, 5, 5], name="x"), b.const(np.ones((3, 2, 3, 3), np.float32))
    attrs = {"strides": "1,1", "pads_begin": "0,0", "pads_end": "0,0", "dilations": "1,1", "auto_pad": "explicit"}
    b.result((b.op("Convolution", "opset1", [(x, 0), (w, 0)], attrs, [([1, 3, 3, 3], "f32")]), 0))
    return b.save(directory)


def _max_pool(directory):
    b = IRBuilder()
    x = b.parameter([1, 2, 5, 5], name="x")
    attrs = {"strides": "1,1", "pads_begin": "0,0", "pads_end": "0,0", "kernel": "2,2", "rounding_type": "floor",
             "auto_pad": "explicit", "dilations": "1,1"}
    layer = b.op("MaxPool", "opset8", [(x, 0)], attrs, [([1, 2, 4, 4], "f32"), ([1, 2, 4, 4], "i64")])
    b.result((layer, 0))
    b.result((layer, 1))
    return b.save(directory)



# name -> (a file OpenVINO reads, the stricter rule irrun reports and refuses to run with)
READ_BY_OPENVINO = {
    "Tile negative repeats": (_op("Tile", "opset1", [2, 3], [_i64(-1, 2)], {}, 2), "attr.range.spec"),
    "Broadcast-3 negative target shape": (_op("Broadcast", "opset3", [1, 3], [_i64(-2, 3)], {"mode": "numpy"}, 2),
                                          "attr.range.spec"),
    "Broadcast-1 negative target shape": (_op("Broadcast", "opset1", [1, 3], [_i64(-2, 3)], {"mode": "numpy"}, 2),
                                          "attr.range.spec"),
    "Pad-12 with a negative resulting dim": (_op("Pad", "opset12", [2, 3], [_i64(0, -2), _i64(0, -2)],
                                                 {"pad_mode": "constant"}, 2), "attr.range.spec"),
    "Pad-1 negative pads": (_op("Pad", "opset1", [2, 3], [_i64(0, -1), _i64(0, 0)], {"pad_mode": "constant"}, 2),
                            "attr.range.spec"),
    "SpaceToBatch negative pads": (_op("SpaceToBatch", "opset2", [1, 2, 4], [_i64(1, 1, 2), _i64(0, 0, -2),
                                                                             _i64(0, 0, -2)], {}, 3),
                                   "attr.range.spec"),
    "Interpolate-11 negative sizes": (_op("Interpolate", "opset11", X4, [_i64(-4, 8), _i64(2, 3)], INTERPOLATE, 4),
                                      "attr.range.spec"),
    "Interpolate-11 repeated axes": (_op("Interpolate", "opset11", X4, [_i64(4, 8), _i64(2, 2)], INTERPOLATE, 4),
                                     "attr.value.spec"),
    "Interpolate-11 more sizes than axes": (_op("Interpolate", "opset11", X4, [_i64(4, 8, 3), _i64(2, 3)],
                                                INTERPOLATE, 4), "port.dims.spec"),
    "Interpolate-4 more scales than axes": (_op("Interpolate", "opset4", X4, [
        _i64(4, 8), np.array([2, 2, 2], np.float32), _i64(2, 3)], {**INTERPOLATE, "shape_calculation_mode": "scales"},
        4), "port.dims.spec"),
    "Interpolate-4 repeated axes": (_op("Interpolate", "opset4", X4, [_i64(4, 8), np.ones(2, np.float32),
                                                                      _i64(2, 2)], INTERPOLATE, 4), "attr.value.spec"),
    "Interpolate-1 negative sizes": (_op("Interpolate", "opset1", X4, [_i64(-4, 8)], {"mode": "nearest",
                                                                                     "axes": "2,3"}, 4),
                                     "attr.range.spec"),
    "AdaptiveAvgPool negative output_size": (_op("AdaptiveAvgPool", "opset8", X4, [_i64(-2, 3)], {}, 4),
                                             "attr.range.spec"),
    "AdaptiveMaxPool negative output_size": (_op("AdaptiveMaxPool", "opset8", X4, [_i64(-2, 3)],
                                                 {"index_element_type": "i64"}, 4, 2, ["f32", "i64"]),
                                             "attr.range.spec"),
    "Col2Im output_size -1": (_op("Col2Im", "opset15", [1, 12, 9], [_i64(-1, 4), _i64(2, 2)], {}, 3),
                              "attr.range.spec"),
    "DFT signal_size below -1": (_op("DFT", "opset7", [2, 8, 2], [_i64(1), _i64(-2)], {}, 3), "attr.range.spec"),
    "RDFT signal_size below -1": (_op("RDFT", "opset9", [2, 8], [_i64(1), _i64(-2)], {}, 3), "attr.range.spec"),
    "SegmentMax negative num_segments": (_op("SegmentMax", "opset16", [4, 3], [_i64(0, 0, 1, 1), np.int64(-2)],
                                             {"fill_mode": "ZERO"}, 2), "attr.range.spec"),
    "EmbeddingSegmentsSum negative num_segments": (_op("EmbeddingSegmentsSum", "opset3", [4, 3], [
        _i64(0, 1, 2), _i64(0, 0, 1), np.int64(-2)], {}, 2), "attr.range.spec"),
    "MVN-6 repeated axes": (_op("MVN", "opset6", [2, 3, 4], [_i64(2, 2)], {
        "normalize_variance": "true", "eps": "1e-5", "eps_mode": "inside_sqrt"}, 3), "attr.value.spec"),
    "Convert to dynamic": (_convert({"destination_type": "dynamic"}), "attr.value.spec"),
    "Convert without destination_type": (_convert({}), "attr.value.spec"),
    "boolean ' true' (OpenVINO reads false)": (_reduce_keep_dims(" true"), "attr.value.spec"),
    "boolean 'yes' (OpenVINO reads false)": (_reduce_keep_dims("yes"), "attr.value.spec"),
    "Gather i64 axis of shape [2,?]": (_gather_axis("i64", [2, -1]), "port.rank.spec"),
    "MVN-6 axes of f32": (_op("MVN", "opset6", [2, 3, 4], [np.array([2.0], np.float32)], {
        "normalize_variance": "true", "eps": "1e-5", "eps_mode": "inside_sqrt"}, 3), "port.type.spec"),
    "a repeated attribute (OpenVINO takes the first)": (_edited(_reduce_keep_dims("false"), 'keep_dims="false"',
                                                                'keep_dims="false" keep_dims="true"'),
                                                        "file.xml.attribute"),
    "GRUSequence sequence lengths of f16": (_gru_hidden_sizes(3, 3, np.float16), "port.type.spec"),
    "Parameter of type dynamic": (_parameter_of_type("dynamic"), "attr.value.spec"),
    "Parameter without element_type (OpenVINO reads dynamic)": (_parameter_of_type(None), "attr.value.spec"),
    "Concat without axis (OpenVINO reads 0)": (_without(_op("Concat", "opset1", [2, 3], [np.zeros((1, 3), np.float32)],
                                                            {"axis": 0}, 2), "Concat", "axis"), "attr.value.spec"),
    "OneHot without axis (OpenVINO reads 0)": (_without(_one_hot, "OneHot", "axis"), "attr.value.spec"),
    "MaxPool without pads_begin (OpenVINO reads zeros)": (_without(_max_pool, "MaxPool", "pads_begin"),
                                                          "attr.value.spec"),
    "Convolution without strides (OpenVINO reads ones)": (_without(_convolution, "Convolution", "strides"),
                                                          "attr.length.spec"),
}

# name -> (a file OpenVINO refuses, the OpenVINO-class rule irrun reports in compatible mode)
REFUSED_BY_OPENVINO = {
    "SpaceToBatch block_shape below 1": (_op("SpaceToBatch", "opset2", [1, 2, 4], [_i64(1, 1, -2), _i64(0, 0, 0),
                                                                                   _i64(0, 0, 0)], {}, 3),
                                         "attr.range"),
    "BatchToSpace negative crops": (_op("BatchToSpace", "opset2", [2, 2, 4], [_i64(1, 1, 2), _i64(0, 0, -1),
                                                                              _i64(0, 0, 0)], {}, 3), "attr.range"),
    "Col2Im negative kernel_size": (_op("Col2Im", "opset15", [1, 12, 9], [_i64(4, 4), _i64(-2, 2)], {}, 3),
                                    "attr.range"),
    "Interpolate-11 fewer sizes than axes": (_op("Interpolate", "opset11", X4, [_i64(4), _i64(2, 3)], INTERPOLATE,
                                                 4), "port.dims"),
    "Gather f32 axis of shape [2,?] (behind the rank rule)": (_gather_axis("f32", [2, -1]), "port.type"),
    "Const offset '1,,2'": (_const_into_add(offset="1,,2"), "attr.value"),
    "Const size '8,,2'": (_const_into_add(size="8,,2"), "attr.value"),
    "Const of type dynamic beyond the .bin (behind the type rule)": (_const_into_add(element_type="dynamic",
                                                                                     size="100"), "const.offset"),
    "AdaptiveMaxPool output_size of u6 (behind the type rule)": (_edited(_op(
        "AdaptiveMaxPool", "opset8", X4, [_i64(2, 3)], {"index_element_type": "i64"}, 4, 2, ["f32", "i64"]),
        '<data element_type="i64"', '<data element_type="u6"'), "port.type"),
    "GRUSequence initial state and R disagree on the hidden size": (_gru_hidden_sizes(3, 5), "port.dims"),
    "Interpolate-11 axes of u8": (_op("Interpolate", "opset11", X4, [_i64(4, 8), np.array([2, 3], np.uint8)],
                                      INTERPOLATE, 4), "port.type"),
    "Interpolate-4 sizes of i8": (_op("Interpolate", "opset4", X4, [np.array([4, 8], np.int8), np.ones(2, np.float32),
                                                                    _i64(2, 3)], INTERPOLATE, 4), "port.type"),
    "Concat after an Interpolate with more sizes than axes (checked on with OpenVINO's reading)": (
        _interpolate_into_concat, "port.dims"),
    "ScaledDotProductAttention scale of rank 2, dynamic": (_attention_scale, "port.dims"),
    "edge from a missing layer, with a byte invalid in UTF-8": (_bad_byte_in_an_edge, "edge.ref"),
    "MVN-6 on a scalar with one axis (behind the axes' range)": (_op("MVN", "opset6", [], [_i64(-1)], {
        "normalize_variance": "true", "eps": "1e-5", "eps_mode": "inside_sqrt"}, 0), "port.dims"),
    "output port without precision": (_edited(_reduce_keep_dims("true"), '<port id="2" precision="FP32">',
                                              '<port id="2">'), "port.precision"),
    "ShapeOf-3 without output_type": (_without(_shape_of, "ShapeOf", "output_type"), "attr.missing"),
    "Const shape of blanks": (_const_into_add(shape=" "), "attr.value"),
    # a negative size computed by other layers (OpenVINO's bounds evaluation), not read from a Const
    "Tile negative repeats, computed": (_op("Tile", "opset1", [2, 3], [_i64(-1, 2)], {}, 2, computed=True),
                                        "attr.range"),
    "Broadcast-3 negative target shape, computed": (_op("Broadcast", "opset3", [1, 3], [_i64(-2, 3)],
                                                        {"mode": "numpy"}, 2, computed=True), "attr.range"),
    "Interpolate-11 negative sizes, computed": (_op("Interpolate", "opset11", X4, [_i64(-4, 8), _i64(2, 3)],
                                                    INTERPOLATE, 4, computed=True), "attr.range"),
    "AdaptiveAvgPool negative output_size, computed": (_op("AdaptiveAvgPool", "opset8", X4, [_i64(-2, 3)], {}, 4,
                                                           computed=True), "attr.range"),
    "SegmentMax negative num_segments, computed": (_op("SegmentMax", "opset16", [4, 3], [
        _i64(0, 0, 1, 1), np.int64(-2)], {"fill_mode": "ZERO"}, 2, computed=True), "attr.range"),
}


@pytest.mark.parametrize("name", sorted(READ_BY_OPENVINO))
def test_openvino_reads_it_so_the_rule_is_stricter(name, tmp_path):
    make, rule = READ_BY_OPENVINO[name]
    assert_read_and_stricter(make(tmp_path / "m"), rule)


@pytest.mark.parametrize("name", sorted(REFUSED_BY_OPENVINO))
def test_openvino_refuses_it_so_compatible_mode_does_too(name, tmp_path):
    make, rule = REFUSED_BY_OPENVINO[name]
    path = make(tmp_path / "m")
    assert reader_refuses(path)
    assert rule_class(rule).kind == OPENVINO
    compatible = irrun.check(path, openvino_compatible=True)
    assert rule in {d.rule for d in compatible.errors}, compatible.lines()


def test_docs_give_every_rule_its_class_and_an_example():
    """docs/rules.md: each `- rule — **class**.` line says the class rule_classes gives it, and an example."""
    text = (Path(__file__).parents[1] / "docs" / "rules.md").read_text()
    entries = dict(re.findall(r"^- `([a-z_.]+)` — (.*)$", text, re.M))
    assert set(RULE_CLASSES) <= set(entries), sorted(set(RULE_CLASSES) - set(entries))
    names = {CLASS_NAMES[OPENVINO].replace("this ", ""): OPENVINO, CLASS_NAMES[STRICTER]: STRICTER}
    for rule, line in entries.items():
        assert "Example:" in line, rule
        documented = re.match(r"\*\*(.+?)\*\*", line)
        if documented is None:
            assert line.startswith("*warning*"), rule
            continue
        assert names[documented.group(1)] == rule_class(rule).kind, rule


def test_interpolate1_takes_sizes_of_any_integer_type(tmp_path):
    path = _op("Interpolate", "opset1", X4, [np.array([4, 8], np.uint8)], {"mode": "nearest", "axes": "2,3"}, 4)(
        tmp_path / "m")
    assert not reader_refuses(path)
    assert not {d.rule for d in irrun.check(path).errors} & {"port.type", "port.type.spec"}


def test_an_input_port_without_precision_is_read_and_run_as_openvino_does(tmp_path):
    """OpenVINO takes an input's type from its producer and never reads the input port's precision."""
    path = _reduce_keep_dims("true")(tmp_path / "m")
    text = path.read_text()
    at = text.index('precision="FP32"', text.index('type="ReduceSum"'))
    path.write_text(text[:at] + text[at + len('precision="FP32"'):])
    assert not reader_refuses(path)
    assert "port.precision.spec" in {d.rule for d in irrun.check(path).errors}
    assert not irrun.check(path, openvino_compatible=True).errors
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (got,) = irrun.load(path).run([x]).values()
    np.testing.assert_array_equal(got, [[3], [12]])  # sums of [0, 1, 2] and [3, 4, 5], keep_dims


def test_a_malformed_xml_declaration_is_skipped_as_openvino_skips_it(tmp_path):
    path = _reduce_keep_dims("true")(tmp_path / "m")
    path.write_text(path.read_text().replace('<?xml version="1.0"?>', '<?xml version="MaxPool"?>'))
    assert not reader_refuses(path)
    report = irrun.check(path, openvino_compatible=True)
    assert not report.errors and not [d for d in report.diagnostics if d.rule.startswith("file.")], report.lines()
    (got,) = irrun.load(path).run([np.ones((2, 3), np.float32)]).values()
    np.testing.assert_array_equal(got, [[3], [3]])


@pytest.mark.parametrize("mode", ["numpy", "bidirectional"])
def test_broadcast_to_fewer_dims_of_unknown_values_is_read(mode, tmp_path):
    """OpenVINO checks a numpy Broadcast's target rank only against a target it can evaluate."""
    path = _broadcast_to_unknown_target(mode)(tmp_path / "m")
    assert not reader_refuses(path)
    assert not irrun.check(path, openvino_compatible=True).errors
