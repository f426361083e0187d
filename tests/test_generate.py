"""`irrun generate` (issue 9, item 5) on the tiny optimum-intel exports of tests/data/llm: the tokens and logits
OpenVINO recorded there, `--against openvino` live, and the errors a user can trigger."""
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import irrun
from irrun.tools import generate as gen
from irrun.cli.main import cli

CORPUS = Path(__file__).parent / "data" / "llm"
# Stateful exports (KV cache in variables, carried by a session) and stateless ones (past_key_values inputs).
F32_FOLDERS = ["llama", "qwen3_moe", "llama_stateless", "gpt2_stateless"]
# f32 weights: irrun and OpenVINO agree to about 1e-6 on the logits.
F32_LOGITS = dict(rtol=1e-4, atol=1e-5)


def invoke(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def assert_one_line_error(result, text):
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("irrun: error: "), result.stderr
    assert text in lines[0], lines[0]


def recorded_greedy(folder: Path):
    """The b1 scenario of steps.npz: OpenVINO's prompt, its logits per step and the greedy tokens they give."""
    steps = np.load(folder / "steps.npz")
    count = int(steps["b1/steps"])
    logits = [steps[f"b1/{k}/logits"][0, -1] for k in range(count)]
    return [int(i) for i in steps["b1/0/input_ids"][0]], logits, [int(np.argmax(l)) for l in logits]


def expected_tokens(folder: Path, tokens: list[int]) -> list[int]:
    eos = gen.GenerationConfig.read(folder).eos_token_ids
    for i, token in enumerate(tokens):
        if token in eos:
            return tokens[:i + 1]
    return tokens


@pytest.mark.parametrize("name", F32_FOLDERS)
def test_generate_gives_openvinos_greedy_tokens_and_logits(name):
    folder = CORPUS / name
    prompt, logits, tokens = recorded_greedy(folder)
    decoder = gen.IrrunDecoder(irrun.load(folder / gen.MODEL_XML))
    decoder.reset()
    fed = np.array([prompt], dtype=np.int64)
    for want, token in zip(logits, tokens):
        np.testing.assert_allclose(decoder.step(fed), want, **F32_LOGITS)
        fed = np.array([[token]], dtype=np.int64)
    result = gen.generate_folder(folder, prompt, len(tokens))
    assert result.tokens == expected_tokens(folder, tokens)
    assert [s.fed for s in result.steps] == [len(prompt)] + [1] * (len(result.tokens) - 1)


@pytest.mark.parametrize("name", ["llama", "llama_stateless"])
def test_generate_twice_starts_from_an_empty_cache(name):
    folder = CORPUS / name
    prompt, _, tokens = recorded_greedy(folder)
    model, config = irrun.load(folder / gen.MODEL_XML), gen.GenerationConfig.read(folder)
    decoder = gen.IrrunDecoder(model)
    first = gen.generate(decoder, config, prompt, 3)
    second = gen.generate(decoder, config, prompt, 3)
    assert first.tokens == second.tokens == expected_tokens(folder, tokens[:3])


def test_cli_prints_the_tokens():
    folder = CORPUS / "llama"
    prompt, _, tokens = recorded_greedy(folder)
    result = invoke("generate", folder, "--ids", ",".join(map(str, prompt)), "--max-new-tokens", 4)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == ",".join(map(str, expected_tokens(folder, tokens[:4])))


@pytest.mark.parametrize("name", ["llama", "llama_int4_asym"])
def test_cli_against_openvino_reports_every_step(name):
    folder = CORPUS / name
    prompt, _, tokens = recorded_greedy(folder)
    result = invoke("generate", folder, "--ids", ",".join(map(str, prompt)), "--max-new-tokens", 3,
                    "--against", "openvino")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert [l.split(":")[0] for l in lines[:3]] == ["step 0", "step 1", "step 2"]
    assert all("same token" in l for l in lines[:3])
    assert lines[3].startswith("openvino: 3/3 tokens agree, max |logit diff| ")
    assert float(lines[3].rsplit(" ", 1)[1]) < (1e-3 if "int4" in name else 1e-5)
    assert lines[4] == ",".join(map(str, tokens[:3]))


def test_against_openvino_records_per_step_differences():
    folder = CORPUS / "gpt2_stateless"
    prompt, _, tokens = recorded_greedy(folder)
    result = gen.generate_folder(folder, prompt, 2, against_openvino=True)
    assert [s.reference_token for s in result.steps] == tokens[:len(result.steps)]
    assert all(s.agree and 0 <= s.max_logit_diff < 1e-5 for s in result.steps)


def test_eos_from_generation_config_stops(tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(CORPUS / "llama", folder)
    prompt, _, tokens = recorded_greedy(folder)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [250, tokens[1]]}))
    result = gen.generate_folder(folder, prompt, 5)
    assert result.tokens == tokens[:2] and result.stopped_by_eos
    config = json.loads((folder / "config.json").read_text())
    (folder / "generation_config.json").unlink()
    (folder / "config.json").write_text(json.dumps(dict(config, eos_token_id=tokens[0])))
    assert gen.generate_folder(folder, prompt, 5).tokens == tokens[:1]


def test_tokenizer_is_noted_and_left(tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(CORPUS / "llama_stateless", folder)
    (folder / "openvino_tokenizer.xml").write_text("<net/>")
    result = invoke("generate", folder, "--ids", "5,6", "--max-new-tokens", 1)
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == ("irrun: note: openvino_tokenizer.xml found; token ids in and out only, "
                                     "the tokenizer is not used")


# ---------------------------------------------------------------- errors

def test_missing_folder_and_files(tmp_path):
    assert_one_line_error(invoke("generate", tmp_path / "nope", "--ids", "1"), "is not a directory")
    assert_one_line_error(invoke("generate", tmp_path, "--ids", "1"), "has no openvino_model.xml")
    folder = tmp_path / "model"
    shutil.copytree(CORPUS / "llama_stateless", folder)
    (folder / "config.json").unlink()
    assert_one_line_error(invoke("generate", folder, "--ids", "1"), "config.json does not exist")
    (folder / "config.json").write_text("{not json")
    assert_one_line_error(invoke("generate", folder, "--ids", "1"), "cannot read")


@pytest.mark.parametrize("ids, text", [("300", "token id 300 is outside the vocabulary [0, 256)"),
                                       ("1,-1", "token id -1 is outside the vocabulary"),
                                       (",", "--ids is empty")])
def test_bad_prompts(ids, text):
    assert_one_line_error(invoke("generate", CORPUS / "llama_stateless", "--ids", ids), text)


def test_ids_that_are_not_numbers_are_a_usage_error():
    result = invoke("generate", CORPUS / "llama_stateless", "--ids", "a,b")
    assert result.exit_code == 2 and "comma-separated list of token ids" in result.stderr


def test_model_without_input_ids(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    source = Path(__file__).parents[1] / "models" / "torch_resnet"
    shutil.copy(source / "model.xml", folder / "openvino_model.xml")
    shutil.copy(source / "model.bin", folder / "openvino_model.bin")
    (folder / "config.json").write_text("{}")
    assert_one_line_error(invoke("generate", folder, "--ids", "1"), "the model has no input_ids input")


def test_model_with_an_input_generate_cannot_build():
    spec = [gen.InputSpec("input_ids", np.dtype(np.int64), (None, None)),
            gen.InputSpec("encoder_hidden_states", np.dtype(np.float32), (None, None, 32))]
    with pytest.raises(irrun.IRError, match="cannot build the model's input 'encoder_hidden_states'"):
        gen.StepFeeder(spec, "model")


def test_against_openvino_without_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "openvino", None)
    result = invoke("generate", CORPUS / "llama_stateless", "--ids", "5", "--against", "openvino")
    assert_one_line_error(result, "needs the openvino package")


def test_seq2seq_folder_is_refused_in_one_line():
    assert_one_line_error(invoke("generate", CORPUS / "t5", "--ids", "1"), "has no openvino_model.xml")


class _ShiftedReference:
    """A reference that prefers the next token id: every step disagrees, by a known logit difference."""

    def __init__(self, xml_path, threads: int = 1):
        self.inner = gen.IrrunDecoder(irrun.load(xml_path))

    def reset(self):
        self.inner.reset()

    def step(self, ids):
        logits = self.inner.step(ids)
        shifted = logits.copy()
        shifted[(int(np.argmax(logits)) + 1) % logits.size] = logits.max() + 0.5
        return shifted


def test_cli_exits_1_when_a_token_disagrees(monkeypatch):
    monkeypatch.setattr(gen, "OpenVINODecoder", _ShiftedReference)
    result = invoke("generate", CORPUS / "llama", "--ids", "5,6,7", "--max-new-tokens", 2, "--against", "openvino")
    assert result.exit_code == 1, result.output
    lines = result.stdout.strip().splitlines()
    assert "DIFFERENT (openvino " in lines[0] and "DIFFERENT (openvino " in lines[1]
    assert lines[2].startswith("openvino: 0/2 tokens agree")
    assert result.stderr == ""
