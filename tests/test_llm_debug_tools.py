"""The debugging commands on stateful LLM exports (tests/data/llm): `compare --against openvino` adds a Result
on every layer output except on Assign (a sink: OpenVINO refuses a Result there) and compiles the CPU plugin
with f32 KV cache and no dynamic quantization, as an LLM needs to be compared in f32."""
from pathlib import Path

from click.testing import CliRunner

from irrun.cli.main import cli

LLAMA = Path(__file__).parent / "data" / "llm" / "llama" / "openvino_model.xml"
SHAPES = "input_ids[1,4],attention_mask[1,4],position_ids[1,4],beam_idx[1]"


def test_compare_against_openvino_runs_a_stateful_model():
    result = CliRunner().invoke(cli, ["compare", str(LLAMA), "--against", "openvino", "--random-input",
                                      "--seed", "3", "--shape", SHAPES])
    assert result.exit_code == 0, result.output + result.stderr
    assert "PASS: all 1 outputs match" in result.output
    assert "ReadValue" in result.output  # the variables' reads are compared like any layer


def test_info_on_a_stateful_model_names_its_inputs_and_logits():
    result = CliRunner().invoke(cli, ["info", str(LLAMA)])
    assert result.exit_code == 0, result.output
    assert "Not implemented by irrun" not in result.output
    for name in ("input_ids", "attention_mask", "position_ids", "beam_idx", "logits"):
        assert name in result.output
