"""Every model shipped in models/ runs and matches the outputs OpenVINO computed for it."""
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import irrun
from irrun.cli.main import cli

MODELS = sorted(p.parent for p in (Path(__file__).parents[1] / "models").glob("*/model.xml"))
# Tolerance for float outputs; the seed pooling models are exact except ROIPooling bilinear, where the
# CPU plugin rounds one ulp differently from OpenVINO's reference formula.
FLOAT_ATOL = {"maxpool_example": 0.0, "pooling_mix": 1e-6}


def tolerance(model_dir: Path) -> float:
    for prefix, atol in FLOAT_ATOL.items():
        if model_dir.name.startswith(prefix):
            return atol
    return 1e-4


def assert_outputs_match(model_dir: Path, outputs: dict) -> None:
    expected = np.load(model_dir / "expected.npz")
    assert list(outputs) == list(expected.files)
    atol = tolerance(model_dir)
    for name in expected.files:
        got, want = outputs[name], expected[name]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if want.dtype.kind == "f" and atol:
            np.testing.assert_allclose(got, want, rtol=1e-4 if atol >= 1e-4 else 0, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


def model_inputs(model_dir: Path) -> dict:
    npz = model_dir / "inputs.npz"
    if npz.exists():
        return dict(np.load(npz))
    return {"input": np.load(model_dir / "input.npy")}


@pytest.mark.parametrize("model_dir", MODELS, ids=lambda p: p.name)
def test_shipped_model_matches_openvino(model_dir):
    model = irrun.load(model_dir / "model.xml")
    assert_outputs_match(model_dir, model.run(model_inputs(model_dir)))


CLI_MODELS = [m for m in MODELS if m.name in ("maxpool_example1", "pooling_mix", "torch_lstm")]


@pytest.mark.parametrize("model_dir", CLI_MODELS, ids=lambda p: p.name)
def test_cli_saves_outputs_by_tensor_name(model_dir, tmp_path):
    out = tmp_path / "out.npz"
    args = [str(model_dir / "model.xml")]
    if (model_dir / "input.npy").exists():
        args += ["-i", str(model_dir / "input.npy")]
    else:
        args += ["-i", str(model_dir / "inputs.npz")]
    result = CliRunner().invoke(cli, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert_outputs_match(model_dir, dict(np.load(out)))
