"""`irrun info` names inputs and outputs as `run` does, also on a model irrun cannot load (issue 9, item 6):
tensor names rather than Result layer names, element types (f32) rather than IR precisions (FP32)."""
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import irrun
from irrun.tools.info import model_info
from irrun.cli.main import cli

from irbuild import IRBuilder

ROOT = Path(__file__).parents[1]
MODELS = sorted(p.parent for p in (ROOT / "models").glob("*/model.xml"))


def unloadable_copy(model_dir: Path, tmp_path: Path) -> Path:
    """The model with one inner layer moved to an unknown opset, so that irrun cannot load it."""
    xml = (model_dir / "model.xml").read_text()
    layer = next(m for m in re.finditer(r'<layer [^>]*type="([A-Za-z]+)"[^>]*version="(opset\d+)"', xml)
                 if m.group(1) not in ("Parameter", "Result", "Const"))
    broken = xml[:layer.start()] + layer.group(0).replace(f'version="{layer.group(2)}"', 'version="opset999"') \
        + xml[layer.end():]
    (tmp_path / "model.xml").write_text(broken)
    shutil.copy(model_dir / "model.bin", tmp_path / "model.bin")
    return tmp_path / "model.xml"


@pytest.mark.parametrize("model_dir", MODELS, ids=lambda p: p.name)
def test_unloadable_model_is_described_with_the_names_and_types_run_uses(model_dir, tmp_path):
    loaded = model_info(model_dir / "model.xml", with_checker=False)
    broken = model_info(unloadable_copy(model_dir, tmp_path), with_checker=False)
    assert "load_error" in broken and "load_error" not in loaded
    model = irrun.load(model_dir / "model.xml")
    assert [o["name"] for o in broken["outputs"]] == [d.name for d in model.outputs]
    assert [i["name"] for i in broken["inputs"]] == [d.name for d in model.inputs]
    for section in ("inputs", "outputs"):
        for got, want in zip(broken[section], loaded[section]):
            assert (got["name"], got["names"], got["element_type"]) == (want["name"], want["names"],
                                                                       want["element_type"])


def _two_output_model(tmp_path: Path, version: int) -> Path:
    """Parameter -> Relu -> Result "activations"; Parameter -> UnknownOp -> Result (so the model cannot load)."""
    b = IRBuilder(version=version)
    x = b.parameter([1, 4], "f32", name="x")
    relu = b.op("Relu", "opset1", [(x, 0)], {}, [([1, 4], "f32")], name="relu_layer")
    b.layers[relu].outputs = [([1, 4], "f32", "activations")]
    odd = b.op("NoSuchOp", "opset1", [(x, 0)], {}, [([1, 4], "f16")], name="odd_layer")
    b.layers[odd].outputs = [([1, 4], "f16", "odd_values")]
    b.result((relu, 0), name="Result_2648")
    b.result((odd, 0), name="Result_2649")
    return b.save(tmp_path)


def test_info_names_outputs_by_tensor_name_and_prints_element_types(tmp_path):
    path = _two_output_model(tmp_path, 11)
    result = CliRunner().invoke(cli, ["info", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert "NoSuchOp" in info["load_error"]
    assert [(o["name"], o["element_type"], o["shape"]) for o in info["outputs"]] == [
        ("activations", "f32", "[1,4]"), ("odd_values", "f16", "[1,4]")]
    assert [(i["name"], i["element_type"]) for i in info["inputs"]] == [("x", "f32")]
    text = CliRunner().invoke(cli, ["info", str(path)]).output
    assert "Result_2648" not in text and "FP32" not in text and "FP16" not in text
    assert re.search(r"activations\s+\[1,4\]\s+f32", text) and re.search(r"odd_values\s+\[1,4\]\s+f16", text)


def test_ir_v10_output_names_include_the_producer_layer_name(tmp_path):
    info = model_info(_two_output_model(tmp_path, 10), with_checker=False)
    assert info["outputs"][0]["names"] == ["activations", "relu_layer"]
    assert info["outputs"][1]["names"] == ["odd_layer", "odd_values"]
