"""The tiny optimum-intel exports of tests/data/llm (tools/make_llm_corpus.py) against the logits OpenVINO's CPU
plugin (f32) recorded for every step of their scenario: a prefill and decode steps at batch 1, and batch 2 with
beam_idx reorders. Every step is fed the recorded inputs; a stateful model carries its KV cache in a session,
reset between scenarios."""
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.errors import UnsupportedOpError
from irrun.ops.registry import lookup

CORPUS = Path(__file__).parent / "data" / "llm"
FOLDERS = sorted(p.name for p in CORPUS.iterdir() if (p / "steps.npz").exists())
ARCHS = ("llama", "qwen2", "qwen3_moe", "qwen3", "mistral", "phi3", "gemma3_text", "gemma2", "gemma", "gpt2",
         "gpt_neox", "falcon", "opt", "bloom", "phi", "mixtral", "t5", "bart", "whisper")

# Logit tolerance (rtol, atol) per weight format. The logits of these tiny random models are of order 0.1-0.8.
#  - f32: irrun computes what OpenVINO computes in f32; only summation order differs (measured max 2e-7).
#  - f16: the f16 -> f32 Convert is exact in both (measured max 9e-8).
#  - mxfp4, mxfp8_e4m3: e8m0 (power of two) scales, so no f16 rounding is involved (measured max 1.2e-7).
#  - the other compressed formats: LOOSE UNTIL THE llm-weights BRANCH IS MERGED. OpenVINO decompresses their
#    weights in f32 without rounding the f16 scale Multiply to f16; irrun (main) rounds it: measured max
#    |diff| 1.1e-4 .. 5.2e-4 (gemma3_text_cb4) on logits below 0.8, and 2.3e-3 on t5_int8_asym, whose logits
#    reach 4.6. Once irrun follows OpenVINO, set every entry to EXACT (the target is rtol 1e-3 /
#    atol 1e-4 or better).
EXACT = (1e-4, 1e-5)
LOOSE_UNTIL_LLM_WEIGHTS = (1e-3, 3e-3)
TOLERANCES = {
    "f32": EXACT, "f16": EXACT, "mxfp4": EXACT, "mxfp8_e4m3": EXACT,
    **{fmt: LOOSE_UNTIL_LLM_WEIGHTS for fmt in (
        "int8_asym", "int8_sym", "int4_sym", "int4_asym", "int4_asym_channel", "nf4", "fp4", "nvfp4", "fp8_e4m3",
        "cb4", "codebook")},
}
# Ops some exports use that main does not implement yet, and the branch adding each. While the op is missing,
# the test checks that it is the only reason the model does not load; once merged, the model is compared.
PENDING_OPS = {("ScatterNDUpdate", 4): "ops-indexing"}


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


def pending_ops(xml: Path) -> list[str]:
    """The PENDING_OPS the model uses that irrun does not implement yet, as 'Type-version'."""
    text = xml.read_text()
    return [f"{t}-{v}" for (t, v) in PENDING_OPS if f'type="{t}"' in text and lookup(t, v) is None]


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
    missing = pending_ops(decoder_xml(path))
    if missing:
        with pytest.raises(UnsupportedOpError, match="unsupported op (" + "|".join(missing) + ")"):
            irrun.load(decoder_xml(path))
        return
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
