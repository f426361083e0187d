"""`irrun precision`: reduced-precision emulation, the layer ranking, the smallest set kept in f32, the marked IR
(checked in OpenVINO's CPU plugin in bf16) and the search's cost on a 1,000-layer model."""
import functools
import json
import math
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest
from click.testing import CliRunner

import irrun
from irrun.cli.main import cli
from irrun.tools.precision import analyse, output_error, round_array

DATA = Path(__file__).parent / "data" / "precision"


def invoke(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def saved_input(tmp_path, name):
    path = tmp_path / f"{name}_x.npy"
    np.save(path, np.load(DATA / f"{name}.npz")["x"])
    return path


def test_rounding_by_hand():
    f16 = round_array(np.array([65504.0, 65520.0, 70000.0, -1e6, 2049.0, 2051.0, 1e-8], np.float32), "f16")
    np.testing.assert_array_equal(f16, np.array([65504, np.inf, np.inf, -np.inf, 2048, 2052, 0], np.float32))
    bf16 = round_array(np.array([1.00390625, 1.01171875, 1.0078125, 3e38, 1e-8], np.float32), "bf16")
    np.testing.assert_array_equal(bf16[:3], np.array([1.0, 1.015625, 1.0078125], np.float32))
    assert math.isfinite(bf16[3]) and bf16[4] != 0  # bf16 has f32's range
    ints = np.array([70000], np.int32)
    assert round_array(ints, "f16") is ints


def test_overflow_is_named_first_and_the_marked_ir_fixes_it(tmp_path):
    x = saved_input(tmp_path, "overflow")
    marked = tmp_path / "marked.xml"
    result = invoke("precision", DATA / "overflow.xml", "-i", x, "--type", "f16", "--output", marked,
                    "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["error_all"] == 1.0  # the normalisation divides by inf: every output is 0
    first = document["ranking"][0]
    assert (first["name"], first["type"]) == ("square", "Multiply-1") and first["overflow"] > 0
    assert document["keep"] == ["5", "7", "8"]  # square, mean_square, rms: their values exceed 65504
    assert document["error_kept"] < 1e-2 and document["marked_ir"] == str(marked)
    # irrun's emulation honours the marks: the marked IR computes in f16 within the tolerance
    again = invoke("precision", marked, "-i", x, "--type", "f16")
    assert again.exit_code == 0, again.output
    assert "(3 more marked in the IR to stay in f32)" in again.output
    assert "every layer can compute in f16" in again.output
    # OpenVINO reads the marks, and the CPU plugin keeps those layers in f32 under the bf16 hint
    core = ov.Core()
    nodes = {n.get_friendly_name(): n for n in core.read_model(str(marked)).get_ordered_ops()}
    assert all("DisablePrecisionConversion_0" in nodes[name].get_rt_info() for name in ("square", "mean_square", "rms"))
    assert "DisablePrecisionConversion_0" not in nodes["scale_up"].get_rt_info()

    def runtime_precision(path):
        compiled = core.compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
        return {n.get_friendly_name(): n.get_rt_info()["runtimePrecision"].astype(str)
                for n in compiled.get_runtime_model().get_ordered_ops()}

    if plugin_computes_bf16():
        assert runtime_precision(DATA / "overflow.xml")["square"] == "bf16"
        assert runtime_precision(marked)["square"] == "f32"


@functools.lru_cache(maxsize=1)
def plugin_computes_bf16() -> bool:
    """Whether the CPU plugin computes in bf16 under the bf16 hint on this machine: only CPUs with AVX512-BF16 or
    AMX do (without them the hint falls back to f32; under ONEDNN_MAX_CPU_ISA=AVX2 such models do not compile).
    The plugin-side checks of the bf16 tests need it; irrun's side runs everywhere."""
    x = ov.opset13.parameter([2, 16], np.float32, name="x")
    product = ov.opset13.matmul(x, ov.opset13.constant(np.ones((16, 16), np.float32)), False, False)
    try:
        compiled = ov.Core().compile_model(ov.Model([product], [x]), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    except RuntimeError:
        return False
    return any(n.get_rt_info()["runtimePrecision"].astype(str) == "bf16"
               for n in compiled.get_runtime_model().get_ordered_ops() if n.get_type_name() != "Parameter")


def test_text_output(tmp_path):
    result = invoke("precision", DATA / "overflow.xml", "-i", saved_input(tmp_path, "overflow"), "--type", "f16")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "7 layers: output error 1 " in lines[0]
    assert lines[3].split()[:4] == ["1", "5", "square", "Multiply-1"]
    assert "Keep in f32 (3 layers): square (5), mean_square (7), rms (8)" in result.output


def test_bf16_emulation_and_marks_against_the_cpu_plugin(tmp_path):
    """The plugin in bf16 (AVX512-BF16/AMX on this machine): its output error is what irrun's emulation
    predicts, and with the layers the command names marked, it is under the tolerance asked."""
    saved = np.load(DATA / "mlp.npz")
    model = irrun.load(DATA / "mlp.xml")
    plugin_error = output_error({"y": saved["y_bf16"]}, {"y": saved["y"]})  # recorded on an AMX CPU
    analysis = analyse(model, {"x": saved["x"]}, "bf16", tolerance=1.0)
    assert plugin_error / 2 < analysis.error_all < plugin_error * 2
    core = ov.Core()
    for tolerance in (3e-3, 1e-3):
        marked = tmp_path / f"mlp_{tolerance:g}.xml"
        result = invoke("precision", DATA / "mlp.xml", "-i", saved_input(tmp_path, "mlp"), "--type", "bf16",
                        "--tolerance", tolerance, "--output", marked)
        assert result.exit_code == 0, result.output
        assert analyse(irrun.load(marked), {"x": saved["x"]}, "bf16", tolerance=1.0).error_all <= tolerance
        if not plugin_computes_bf16():
            continue
        compiled = core.compile_model(str(marked), "CPU", {"INFERENCE_PRECISION_HINT": "bf16",
                                                          "INFERENCE_NUM_THREADS": 1})
        error = output_error({"y": np.array(compiled({0: saved["x"]})[0])}, {"y": saved["y"]})
        assert error <= tolerance < plugin_error


def test_the_search_scales_to_a_thousand_layers(tmp_path):
    """1,024 layers, one of which overflows f16 (and the next, which brings the values back, must stay in f32
    with it): found in about 2 log2(N) runs per harmful layer, not N."""
    x = ops.parameter([1, 8], np.float32, name="x")
    value = x
    for i in range(1024):
        if i == 700:
            value = ops.multiply(value, ops.constant(np.float32(3e4)), name="blow_up")
        elif i == 701:
            value = ops.multiply(value, ops.constant(np.float32(1 / 3e4)), name="scale_back")
        else:
            value = ops.add(value, ops.constant(np.float32(1e-3 * (i % 3 - 1))), name=f"add{i}")
    ov.save_model(ov.Model([ops.result(value)], [x]), tmp_path / "chain.xml", compress_to_fp16=False)
    model = irrun.load(tmp_path / "chain.xml")
    feeds = {"x": np.linspace(-3, 3, 8, dtype=np.float32)[None]}  # |x| > 2.18 overflows: 2 elements
    analysis = analyse(model, feeds, "f16", tolerance=1e-2)
    assert analysis.candidates == 1024
    assert [r.name for r in analysis.ranking[:2]] == ["blow_up", "scale_back"]
    assert analysis.ranking[0].overflow == 2
    assert [model.graph.nodes[i].ref.name for i in analysis.keep_layers] == ["blow_up", "scale_back"]
    assert analysis.error_kept <= 1e-2
    assert analysis.runs <= 2 * 2 * math.ceil(math.log2(1024)) + math.ceil(math.log2(1024)) + 8


def test_usage_errors(tmp_path):
    x = saved_input(tmp_path, "overflow")
    assert invoke("precision", DATA / "overflow.xml", "-i", x, "--type", "f8").exit_code == 2
    result = invoke("precision", DATA / "overflow.xml", "-i", x, "--type", "f16", "--output", tmp_path / "m.txt")
    assert result.exit_code == 1
    assert result.stderr.strip() == f"irrun: error: --output {tmp_path / 'm.txt'}: expected a .xml path"


@pytest.mark.parametrize("kind", ["f16"])
def test_precision_report(tmp_path, kind, browser):
    from test_report import assert_figures_drawn

    page = tmp_path / "precision.html"
    result = invoke("precision", DATA / "overflow.xml", "-i", saved_input(tmp_path, "overflow"), "--type", kind,
                    "--report", page)
    assert result.exit_code == 0, result.output
    dom, console = browser.browse(page)
    assert console == []
    assert_figures_drawn(dom, 1)
    assert "keep 3 layers in f32" in dom
