"""Compressed weights on the CPU plugin's fused path (tests/data/fused, tools/make_fused_models.py), and the honest
`compare --against openvino`: it also runs the unmodified compiled model, whose fused FullyConnected reads nf4
levels in f32 where OpenVINO's reference and irrun round them to f16 (docs/semantics.md)."""
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import irrun
from irrun.cli.main import cli
from irrun.tools.openvino_fusion import plugin_arithmetic

DATA = Path(__file__).parent / "data" / "fused"
FORMATS = sorted(p.stem[len("mlp_"):] for p in DATA.glob("mlp_*.xml"))
# Formats whose levels are exact in f16 (integers, f4e2m1, f8 codes): irrun computes what the fused path computes.
EXACT = [f for f in FORMATS if f != "nf4"]


def test_every_weight_format_is_there():
    assert set(FORMATS) >= {"f16", "int8_asym", "int8_sym", "int4_sym", "int4_asym", "int4_asym_channel", "nf4",
                            "mxfp4", "fp4", "nvfp4", "fp8_e4m3", "mxfp8_e4m3", "cb4", "codebook"}


def _scale(y):
    return float(np.abs(y).max())


@pytest.mark.parametrize("fmt", EXACT)
def test_irrun_matches_the_fused_path(fmt):
    """OpenVINO's unmodified model, default ISA and AVX2: the same values to the order of the sums."""
    saved = np.load(DATA / f"mlp_{fmt}.npz")
    got = irrun.load(DATA / f"mlp_{fmt}.xml").run({"x": saved["x"]})["y"]
    for key in ("y", "y_avx2", "y_exposed"):
        np.testing.assert_allclose(got, saved[key], rtol=0, atol=2e-6 * _scale(saved[key]), err_msg=f"{fmt} {key}")


def test_nf4_fused_path_reads_levels_in_f32():
    """Pinned plugin departure: the fused path differs from irrun (and from the plugin's own run with the chain
    exposed, which rounds the levels to f16 as the reference does) by far more than the order of the sums; with
    the levels unrounded irrun gives the fused path's values."""
    saved = np.load(DATA / "mlp_nf4.npz")
    path = DATA / "mlp_nf4.xml"
    got = irrun.load(path).run({"x": saved["x"]})["y"]
    scale = _scale(saved["y"])
    np.testing.assert_allclose(got, saved["y_exposed"], rtol=0, atol=2e-6 * scale)
    for key in ("y", "y_avx2"):
        assert np.abs(got - saved[key]).max() > 1e-4 * scale
    with plugin_arithmetic(["nf4"]):
        emulated = irrun.load(path).run({"x": saved["x"]})["y"]
    for key in ("y", "y_avx2"):
        np.testing.assert_allclose(emulated, saved[key], rtol=0, atol=2e-6 * scale)


def test_issue_llama_nf4_logits():
    """The issue's model: 8.8e-4 from the plugin's logits at every step; the nf4 levels explain all of it."""
    folder = DATA / "llama64_nf4"
    steps = np.load(folder / "steps.npz")
    prefix = "b1/0/"
    feeds = {k[len(prefix):]: steps[k] for k in steps.files if k.startswith(prefix) and not k.endswith("logits")}
    expected = steps["b1/0/logits"]
    got = irrun.load(folder / "openvino_model.xml").session().run(feeds)["logits"]
    assert 5e-4 < np.abs(got - expected).max() < 2e-3
    with plugin_arithmetic(["nf4"]):
        emulated = irrun.load(folder / "openvino_model.xml").session().run(feeds)["logits"]
    np.testing.assert_allclose(emulated, expected, rtol=0, atol=5e-6)


def _compare(tmp_path, fmt, *extra):
    x = tmp_path / "x.npy"
    np.save(x, np.load(DATA / f"mlp_{fmt}.npz")["x"])
    return CliRunner().invoke(cli, ["compare", str(DATA / f"mlp_{fmt}.xml"), "-i", str(x), "--against", "openvino",
                                    *extra])


def test_compare_says_when_exposing_outputs_changes_openvino(tmp_path):
    result = _compare(tmp_path, "nf4")
    assert result.exit_code == 1, result.output
    text = result.output
    assert "every compared layer is within tolerance" in text  # the instrumented run agrees ...
    assert "OpenVINO's result changes when its intermediate outputs are exposed" in text  # ... the real one not
    assert "FullyConnected 'head' with nf4 weights, 0 layers before the output" in text
    assert "FullyConnected 'mlp.gate_proj' with nf4 weights, merging 2 layers, 4 layers before the output" in text
    assert "reads nf4 levels in f32" in text and "explained:" in text
    assert text.strip().splitlines()[-1].startswith("FAIL: all 1 outputs match OpenVINO with its intermediate "
                                                    "outputs exposed, but 1 differ from its unmodified model")
    document = json.loads(_compare(tmp_path, "nf4", "--format", "json").output)
    plain = document["openvino_unmodified"]
    assert document["passed"] is False and all(d["ok"] for d in document["outputs"])
    assert plain["exposing_outputs_changes_result"] is True and plain["passed"] is False
    assert plain["outputs"][0]["name"] == "y" and plain["outputs"][0]["max_abs"] > 1e-4
    assert [s["name"] for s in plain["suspects"]] == ["head", "mlp.down_proj", "mlp.up_proj", "mlp.gate_proj"]
    assert plain["suspects"][0]["codes_type"] == "nf4" and "f32" in plain["suspects"][0]["note"]
    fused = {node["name"]: node for node in plain["fused_nodes"]}
    assert fused["head"]["weights"] == "nf4" and fused["head"]["type"] == "FullyConnected"
    assert fused["mlp.gate_proj"]["layers"] == ["mlp.gate_proj", "mlp.act"]
    assert plain["emulation"]["explained"] is True and plain["emulation"]["codes"] == ["nf4"]


def test_compare_passes_when_the_unmodified_model_agrees(tmp_path):
    result = _compare(tmp_path, "int4_asym")
    assert result.exit_code == 0, result.output
    assert "the unmodified model agrees with irrun" in result.output
    assert result.output.strip().splitlines()[-1] == "PASS: all 1 outputs match"


def test_generate_explains_the_nf4_difference():
    result = CliRunner().invoke(cli, ["generate", str(DATA / "llama64_nf4"), "--ids", "5,17,42", "--max-new-tokens",
                                      "2", "--against", "openvino"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert float(lines[2].rsplit(" ", 1)[1]) > 5e-4  # openvino: 2/2 tokens agree, max |logit diff| ...
    assert lines[3].startswith("note: 14 layers read nf4 weights: the CPU plugin's fused path reads nf4 levels in f32")
    assert float(lines[3].rsplit(" ", 1)[1]) < 1e-5  # ... the max |logit diff| is 1.3e-06
