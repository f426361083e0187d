"""`--openvino-compatible` on what OpenVINO's reader takes although the spec or irrun's stricter rules do not
(found by tools/mutate_corpus.py): each file is read by OpenVINO here, live; irrun either reads it as OpenVINO
does and computes what OpenVINO computes, or reports a stricter-class rule (a warning in compatible mode) and
refuses to run it with that rule, never computing something else."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import openvino as ov
import pytest

import irrun
from irbuild import IRBuilder
from oracle import run_reference
from test_check import tiny_maxpool

ROOT = Path(__file__).parents[1]


def _openvino_reads(path: Path) -> ov.Model:
    model = ov.Core().read_model(str(path))
    model.validate_nodes_and_infer_types()
    return model


def _edited(seed: str, directory: Path, old: str, new: str) -> Path:
    """A copy of a seed model with one edit of its XML (its .bin beside it)."""
    source = ROOT / seed
    text = source.read_text()
    assert old in text
    directory.mkdir()
    path = directory / "model.xml"
    path.write_text(text.replace(old, new, 1))
    shutil.copy(source.with_suffix(".bin"), directory / "model.bin")
    return path


def _squeeze_rank2_axes(directory: Path) -> Path:
    b = IRBuilder()
    x, axes = b.parameter([1, 3, 1], name="x"), b.parameter([2, -1], "i64", name="axes")
    b.result((b.op("Squeeze", "opset1", [(x, 0), (axes, 0)], {}, [([-1, -1], "f32")]), 0))
    return b.save(directory)


def _gather_nf4_axis(directory: Path) -> Path:
    b = IRBuilder()
    x, indices = b.parameter([3, 4], name="x"), b.parameter([2], "i32", name="indices")
    axis = b.parameter([], "nf4", name="axis")
    b.result((b.op("Gather", "opset8", [(x, 0), (indices, 0), (axis, 0)], {"batch_dims": 0}, [([-1, -1], "f32")]), 0))
    return b.save(directory)


def _second_input_of(op_type: str, opset: str, et: str, attrs: dict):
    """x [1, 2, 8, 8] and a Parameter [2] of type `et` into op_type: OpenVINO takes et where the spec does not."""
    def make(directory: Path) -> Path:
        b = IRBuilder()
        x, second = b.parameter([1, 2, 8, 8], name="x"), b.parameter([2], et, name="second")
        outputs = [([1, 2, -1, -1], "f32")] + ([([1, 2, -1, -1], "i64")] if op_type == "AdaptiveMaxPool" else [])
        layer = b.op(op_type, opset, [(x, 0), (second, 0)], attrs, outputs)
        for index in range(len(outputs)):
            b.result((layer, index))
        return b.save(directory)
    return make


def _dynamic_const(directory: Path) -> Path:
    b = IRBuilder()
    x = b.parameter([1], name="x")
    c = b.const(np.zeros(1, np.float32))
    b.layers[c].attrs["element_type"] = "dynamic"
    b.result((b.op("Add", "opset1", [(x, 0), (c, 0)], {}, [([1], "f32")]), 0))
    return b.save(directory)


def _integer_prefix(directory: Path) -> Path:
    path = tiny_maxpool(directory, 2)
    path.write_text(re.sub(r'strides="\d, \d"', 'strides="1.5, 1"', path.read_text()))  # OpenVINO reads 1
    return path


def _invalid_utf8(directory: Path) -> Path:
    path = _edited("models/maxpool_example2/model.xml", directory, "", "")
    path.write_bytes(path.read_bytes().replace(b'name="maxpool"', b'name="max\xc3pool"'))
    return path


def _without_result_3(directory: Path) -> Path:
    """The second Result removed, its <edge> left in place."""
    path = _edited("models/maxpool_example2/model.xml", directory, "", "")
    path.write_text(re.sub(r'<layer id="3".*?</layer>', "", path.read_text(), flags=re.S))
    return path


def _maxpool_example2(old: str, new: str):
    return lambda directory: _edited("models/maxpool_example2/model.xml", directory, old, new)


# name -> (a file OpenVINO reads, the stricter rule irrun reports and refuses to run with)
STRICTER = {
    "int attribute with trailing text": (_integer_prefix, "attr.value.spec"),
    "MaxPool index_element_type dynamic": (_maxpool_example2('index_element_type="i64"',
                                                             'index_element_type="dynamic"'), "attr.value.spec"),
    "Squeeze axes of rank 2 with a dynamic dim": (_squeeze_rank2_axes, "port.rank.spec"),
    "Gather axis of type nf4": (_gather_nf4_axis, "port.type.spec"),
    "Const of element type dynamic": (_dynamic_const, "const.type.spec"),
    "AdaptiveMaxPool output_size of type u16": (_second_input_of("AdaptiveMaxPool", "opset8", "u16", {}),
                                                "port.type.spec"),
    "ReduceMean axes of type nf4": (_second_input_of("ReduceMean", "opset1", "nf4", {"keep_dims": "true"}),
                                    "port.type.spec"),
    # OpenVINO's reader takes the hidden size of the inputs; its CPU plugin cannot compile it.
    "LSTMSequence hidden_size unlike its inputs": (lambda directory: _edited(
        "models/torch_lstm/model.xml", directory, 'hidden_size="32"', 'hidden_size="16"'), "attr.value.spec"),
    "edge into a missing layer": (_without_result_3, "edge.ref.dangling"),
    "layer id used twice": (_maxpool_example2('<layer id="3"', '<layer id="2"'), "layer.id.duplicate"),
    "bytes invalid in UTF-8": (_invalid_utf8, "file.xml.encoding"),
}


@pytest.mark.parametrize("name", sorted(STRICTER))
def test_stricter_rule_passes_in_compatible_mode_and_refuses_to_run(name, tmp_path):
    make, rule = STRICTER[name]
    path = make(tmp_path / "m")
    _openvino_reads(path)
    assert rule in {d.rule for d in irrun.check(path).errors}, irrun.check(path).lines()
    compatible = irrun.check(path, openvino_compatible=True)
    assert not compatible.errors, compatible.lines()
    assert rule in {d.rule for d in compatible.warnings}
    with pytest.raises(irrun.IRError) as refused:
        irrun.load(path)
    assert refused.value.rule == rule


def test_unsqueeze_axes_of_a_float_type_are_cast_as_in_openvino(tmp_path):
    b = IRBuilder()
    x = b.parameter([2, 3], name="x")
    axes = b.const(np.array([1.7], np.float32))  # OpenVINO truncates: axis 1
    b.result((b.op("Unsqueeze", "opset1", [(x, 0), (axes, 0)], {}, [([2, 1, 3], "f32")]), 0))
    path = b.save(tmp_path)
    model = _openvino_reads(path)
    assert not irrun.check(path).diagnostics, irrun.check(path).lines()
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    (expected,) = run_reference(model, [data])
    (got,) = irrun.load(path).run([data]).values()
    assert got.shape == expected.shape == (2, 1, 3)
    np.testing.assert_array_equal(got, expected)


def test_the_checker_goes_on_with_the_value_openvino_reads(tmp_path):
    """kernel "9x, 1" is 9 to OpenVINO: a window larger than the input (at most 8), which it refuses, as irrun."""
    path = tiny_maxpool(tmp_path, 2)
    path.write_text(re.sub(r'kernel="\d, \d"', 'kernel="9x, 1"', path.read_text()))
    with pytest.raises(RuntimeError):
        _openvino_reads(path)
    compatible = irrun.check(path, openvino_compatible=True)
    assert {d.rule for d in compatible.errors} == {"shape.kernel"}, compatible.lines()
    assert "attr.value.spec" in {d.rule for d in compatible.warnings}


def test_invalid_bytes_in_a_malformed_file_are_refused_as_openvino_refuses(tmp_path):
    path = _invalid_utf8(tmp_path / "m")
    path.write_bytes(path.read_bytes().replace(b"</layers>", b"</layer>"))
    with pytest.raises(RuntimeError):
        _openvino_reads(path)
    assert [d.rule for d in irrun.check(path, openvino_compatible=True).errors] == ["file.xml"]


def test_an_edge_into_nowhere_does_not_hide_the_port_it_left_unfed(tmp_path):
    """In an If's else_body: OpenVINO ignores the edge, then refuses the Subtract's unfed input."""
    path = _edited("models/torch_loop_if/model.xml", tmp_path / "m", "", "")
    text = path.read_text()
    body = text.index("<else_body>")
    edge = '<edge from-layer="0" from-port="0" to-layer="2" to-port="0" />'
    at = text.index(edge, body)
    path.write_text(text[:at] + edge.replace('to-layer="2"', 'to-layer="65"') + text[at + len(edge):])
    with pytest.raises(RuntimeError):
        _openvino_reads(path)
    assert [d.rule for d in irrun.check(path, openvino_compatible=True).errors] == ["edge.unfed"]
