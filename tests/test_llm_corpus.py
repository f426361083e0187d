"""The tiny optimum-intel exports of tests/data/llm (tools/make_llm_corpus.py) against the logits OpenVINO's CPU
plugin (f32) recorded for every step of their scenario: a prefill and decode steps at batch 1, and batch 2 with
beam_idx reorders. Every step is fed the recorded inputs; a stateful model carries its KV cache in a session,
reset between scenarios."""
from pathlib import Path

import numpy as np
import pytest

import irrun

CORPUS = Path(__file__).parent / "data" / "llm"
FOLDERS = sorted(p.name for p in CORPUS.iterdir() if (p / "steps.npz").exists())
ARCHS = ("llama", "qwen2", "qwen3_moe", "qwen3", "mistral", "phi3", "gemma3_text", "gemma2", "gemma", "gpt2",
         "gpt_neox", "falcon", "opt", "bloom", "phi", "mixtral", "t5", "bart", "whisper")

# Logit tolerance (rtol, atol) per weight format. The logits of these tiny random models are of order 0.1-0.8
# (t5's reach 4.6). irrun computes what OpenVINO's CPU plugin computes in f32, compressed weights included
# (decompressed in f32 as OpenVINO folds them, docs/semantics.md "Constant folding"); only summation order
# differs. Except nf4: the stored logits come from the CPU plugin, which under the f32 hint reads nf4 levels
# as f32 where OpenVINO's ConstantFolding (and irrun) round them to f16 by the chain's Convert(nf4 -> f16);
# tests/test_decompression.py pins that difference, measured here at up to 6.3e-5 on logits of ~0.1.
EXACT = (1e-4, 1e-5)
NF4_CPU_PLUGIN = (1e-3, 1e-4)
TOLERANCES = {fmt: EXACT for fmt in (
    "f32", "f16", "mxfp4", "mxfp8_e4m3", "int8_asym", "int8_sym", "int4_sym", "int4_asym", "int4_asym_channel",
    "fp4", "nvfp4", "fp8_e4m3", "cb4", "codebook")}
TOLERANCES["nf4"] = NF4_CPU_PLUGIN


def split_name(folder: str) -> tuple[str, bool, str]:
    """'llama_stateless_int4_asym' -> ('llama', False, 'int4_asym'): architecture, stateful, weight format."""
    arch = next(a for a in ARCHS if folder == a or folder.startswith(a + "_"))
    rest = folder[len(arch) + 1:]
    stateful = not rest.startswith("stateless")
    rest = rest[len("stateless") + 1:] if not stateful else rest
    return arch, stateful, rest or "f32"


def decoder_xml(folder: Path) -> Path:
    return folder / ("openvino_decoder_model.xml" if (folder / "openvino_decoder_model.xml").exists()
                     else "openvino_model.xml")


def step_inputs(steps, scenario: str, step: int) -> dict:
    prefix = f"{scenario}/{step}/"
    return {k[len(prefix):]: steps[k] for k in steps.files if k.startswith(prefix) and not k.endswith("/logits")}


def test_every_folder_is_named_by_architecture_and_format():
    assert FOLDERS
    for folder in FOLDERS:
        _, _, weight_format = split_name(folder)
        assert weight_format in TOLERANCES, folder


@pytest.mark.parametrize("folder", FOLDERS)
def test_logits_match_openvino_at_every_step(folder):
    arch, stateful, weight_format = split_name(folder)
    rtol, atol = TOLERANCES[weight_format]
    path = CORPUS / folder
    steps = np.load(path / "steps.npz")
    model = irrun.load(decoder_xml(path))
    runner = model.session() if stateful else model
    for scenario in ("b1", "b2"):
        if stateful:
            runner.reset_state()
        for step in range(int(steps[f"{scenario}/steps"])):
            got = runner.run(step_inputs(steps, scenario, step))["logits"]
            np.testing.assert_allclose(got, steps[f"{scenario}/{step}/logits"], rtol=rtol, atol=atol,
                                       err_msg=f"{folder} {scenario} step {step}")


@pytest.mark.parametrize("folder", [f for f in FOLDERS if (CORPUS / f / "openvino_encoder_model.xml").exists()])
def test_seq2seq_encoders_match_openvino(folder):
    rtol, atol = TOLERANCES[split_name(folder)[2]]
    steps = np.load(CORPUS / folder / "steps.npz")
    model = irrun.load(CORPUS / folder / "openvino_encoder_model.xml")
    for scenario in ("b1", "b2"):
        prefix = f"{scenario}/encoder/"
        feeds = {k[len(prefix):]: steps[k] for k in steps.files
                 if k.startswith(prefix) and not k.endswith("last_hidden_state")}
        got = model.run(feeds)["last_hidden_state"]
        np.testing.assert_allclose(got, steps[prefix + "last_hidden_state"], rtol=rtol, atol=atol)
