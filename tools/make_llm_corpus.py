"""Build tests/data/llm: tiny random-weight LLM exports, as optimum-intel writes them, with OpenVINO's logits.

    python tools/make_llm_corpus.py [--only llama,qwen3_moe] [--out tests/data/llm]

Needs torch, transformers, optimum-intel, nncf and openvino; no network (models are built from transformers
config classes with random weights, saved, then exported by optimum-intel from the local folder). Each
corpus folder holds the IR, config.json (+ generation_config.json) and steps.npz: every input and the
logits of every step of a fixed scenario, run by OpenVINO's CPU plugin in f32 (see README.md there).
Architectures that fail to export are listed in failures.json with the error.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

CPU_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32",
              "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0", "INFERENCE_NUM_THREADS": "1"}
VOCAB = 256
SEED = 20261123

# ---------------------------------------------------------------- architectures

def _decoder_configs():
    import transformers as t

    common = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return {
        "llama": (t.LlamaConfig, dict(common, num_hidden_layers=2), t.LlamaForCausalLM),
        "qwen2": (t.Qwen2Config, common, t.Qwen2ForCausalLM),
        "qwen3": (t.Qwen3Config, dict(common, head_dim=8), t.Qwen3ForCausalLM),
        "mistral": (t.MistralConfig, dict(common, sliding_window=None), t.MistralForCausalLM),
        "phi3": (t.Phi3Config, dict(common, original_max_position_embeddings=128), t.Phi3ForCausalLM),
        "gemma": (t.GemmaConfig, dict(common, head_dim=8), t.GemmaForCausalLM),
        "gemma2": (t.Gemma2Config, dict(common, head_dim=8, query_pre_attn_scalar=8, sliding_window=4),
                   t.Gemma2ForCausalLM),
        "gemma3_text": (t.Gemma3TextConfig, dict(common, head_dim=8, query_pre_attn_scalar=8, sliding_window=4,
                                                 num_hidden_layers=2, layer_types=["sliding_attention",
                                                                                    "full_attention"]),
                        t.Gemma3ForCausalLM),
        "gpt2": (t.GPT2Config, dict(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=4, n_positions=128,
                                    bos_token_id=1, eos_token_id=2), t.GPT2LMHeadModel),
        "gpt_neox": (t.GPTNeoXConfig, dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                                           num_hidden_layers=1, num_attention_heads=4, rotary_pct=0.5,
                                           max_position_embeddings=128, bos_token_id=1, eos_token_id=2),
                     t.GPTNeoXForCausalLM),
        "falcon": (t.FalconConfig, dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1,
                                        num_attention_heads=4, bos_token_id=1, eos_token_id=2),
                   t.FalconForCausalLM),
        "opt": (t.OPTConfig, dict(vocab_size=VOCAB, hidden_size=32, ffn_dim=64, num_hidden_layers=1,
                                  num_attention_heads=4, word_embed_proj_dim=32, max_position_embeddings=128,
                                  pad_token_id=0, bos_token_id=1, eos_token_id=2), t.OPTForCausalLM),
        "bloom": (t.BloomConfig, dict(vocab_size=VOCAB, hidden_size=32, n_layer=1, n_head=4,
                                      bos_token_id=1, eos_token_id=2, pad_token_id=0), t.BloomForCausalLM),
        "phi": (t.PhiConfig, dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                  num_attention_heads=4, partial_rotary_factor=0.5, max_position_embeddings=128,
                                  bos_token_id=1, eos_token_id=2), t.PhiForCausalLM),
        "mixtral": (t.MixtralConfig, dict(common, num_local_experts=4, num_experts_per_tok=2),
                    t.MixtralForCausalLM),
        "qwen3_moe": (t.Qwen3MoeConfig, dict(common, head_dim=8, num_experts=4, num_experts_per_tok=2,
                                             moe_intermediate_size=32, decoder_sparse_step=1, mlp_only_layers=[]),
                      t.Qwen3MoeForCausalLM),
    }


def _seq2seq_configs():
    import transformers as t

    return {
        "t5": (t.T5Config, dict(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=1,
                                num_decoder_layers=1, num_heads=4, decoder_start_token_id=0, pad_token_id=0,
                                eos_token_id=2), t.T5ForConditionalGeneration),
        "bart": (t.BartConfig, dict(vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1,
                                    encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                                    decoder_ffn_dim=64, max_position_embeddings=128, pad_token_id=0,
                                    bos_token_id=1, eos_token_id=2, decoder_start_token_id=2,
                                    forced_eos_token_id=None), t.BartForConditionalGeneration),
        "whisper": (t.WhisperConfig, dict(vocab_size=VOCAB, num_mel_bins=8, d_model=32, encoder_layers=1,
                                          decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
                                          encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=16,
                                          max_target_positions=64, pad_token_id=0, bos_token_id=1,
                                          eos_token_id=2, decoder_start_token_id=3, suppress_tokens=None,
                                          begin_suppress_tokens=None),
                    t.WhisperForConditionalGeneration),
    }


# Weight formats: name -> nncf.compress_weights keyword arguments (None: save with f16 weights).
ALL_VARIANTS = {
    "f16": None,
    "int8_asym": dict(mode="INT8_ASYM"),
    "int8_sym": dict(mode="INT8_SYM"),
    "int4_sym": dict(mode="INT4_SYM", group_size=16, ratio=1.0),
    "int4_asym": dict(mode="INT4_ASYM", group_size=16, ratio=1.0),
    "int4_asym_channel": dict(mode="INT4_ASYM", group_size=-1, ratio=1.0),
    "nf4": dict(mode="NF4", group_size=16, ratio=1.0),
    "mxfp4": dict(mode="MXFP4", group_size=32, ratio=1.0),
    "fp4": dict(mode="FP4", group_size=16, ratio=1.0),
    "nvfp4": dict(mode="NVFP4", group_size=16, ratio=1.0),
    "fp8_e4m3": dict(mode="FP8_E4M3", group_size=16, ratio=1.0),
    "mxfp8_e4m3": dict(mode="MXFP8_E4M3", group_size=32, ratio=1.0),
    "cb4": dict(mode="CB4", group_size=16, ratio=1.0),
    "codebook": dict(mode="CODEBOOK", group_size=16, ratio=1.0),
}
# Every format for llama; the brief's list for the MoE model.
VARIANTS_BY_ARCH = {"llama": list(ALL_VARIANTS),
                    "qwen3_moe": ["int8_asym", "int4_sym", "int4_asym", "nf4", "mxfp4", "cb4", "codebook"]}
# One compressed variant for every other architecture, rotating through the formats.
ONE_VARIANT = {
    "qwen2": "int4_asym", "qwen3": "int4_sym", "mistral": "nf4", "phi3": "int8_asym", "gemma": "mxfp4",
    "gemma2": "int4_asym", "gemma3_text": "cb4", "gpt2": "int8_asym", "gpt_neox": "int4_sym",
    "falcon": "nf4", "opt": "int4_asym", "bloom": "int8_sym", "phi": "fp4", "mixtral": "int4_asym",
    "t5": "int8_asym", "bart": "int4_asym", "whisper": "int8_asym",
}
# Stateless (stateful=False) exports: explicit past_key_values inputs, present.* outputs.
STATELESS_ARCHS = {"llama", "gpt2"}
STATELESS_VARIANTS: dict[str, list[str]] = {}


def _compress(model, variant: str):
    import nncf
    from nncf.quantization.advanced_parameters import AdvancedCompressionParameters

    kwargs = dict(ALL_VARIANTS[variant])
    kwargs["mode"] = getattr(nncf.CompressWeightsMode, kwargs["mode"])
    if variant == "codebook":
        codebook = np.array([-8, -4, -2, -1, -0.5, 0, 0.5, 1, 2, 4, 8], dtype=np.float32)
        kwargs["advanced_parameters"] = AdvancedCompressionParameters(codebook=codebook)
    return nncf.compress_weights(model, **kwargs)


# ---------------------------------------------------------------- running OpenVINO through a scenario

def compile_cpu(core, model):
    return core.compile_model(model, "CPU", CPU_CONFIG)


def _input_names(model):
    return [port.get_any_name() for port in model.inputs]


class Stepper:
    """Feeds a decoder (stateful or not) step by step the way optimum-intel does."""

    def __init__(self, core, model, batch: int, encoder_states=None, encoder_mask=None):
        self.compiled = compile_cpu(core, model)
        self.request = self.compiled.create_infer_request()
        self.names = _input_names(model)
        self.ports = {p.get_any_name(): p for p in model.inputs}
        self.batch = batch
        self.length = 0
        self.encoder_states, self.encoder_mask = encoder_states, encoder_mask
        self.past = {}
        if any(n.startswith("past_key_values") for n in self.names):
            for name in self.names:
                if name.startswith("past_key_values"):
                    self.past[name] = self._empty_past(self.ports[name])
        self.request.reset_state()

    def _empty_past(self, port):
        shape = port.get_partial_shape()
        dims = []
        for i, dim in enumerate(shape):
            if dim.is_static:
                dims.append(dim.get_length())
            else:
                dims.append(self.batch if i == 0 else 0)
        return np.zeros(dims, dtype=np.float32)

    def step(self, ids: np.ndarray, beam_idx: np.ndarray | None = None):
        batch, count = ids.shape
        feeds = {}
        for name in self.names:
            if name in ("input_ids", "decoder_input_ids"):
                feeds[name] = ids.astype(np.int64)
            elif name == "attention_mask":
                feeds[name] = np.ones((batch, self.length + count), dtype=np.int64)
            elif name == "position_ids":
                feeds[name] = np.tile(np.arange(self.length, self.length + count, dtype=np.int64), (batch, 1))
            elif name == "cache_position":
                feeds[name] = np.arange(self.length, self.length + count, dtype=np.int64)
            elif name == "beam_idx":
                feeds[name] = (np.arange(batch) if beam_idx is None else beam_idx).astype(np.int32)
            elif name == "encoder_hidden_states":
                feeds[name] = self.encoder_states
            elif name in ("encoder_attention_mask",):
                feeds[name] = self.encoder_mask
            elif name.startswith("past_key_values"):
                past = self.past[name]
                if beam_idx is not None:
                    past = np.take(past, beam_idx, axis=0)
                feeds[name] = past
            else:
                raise RuntimeError(f"do not know how to feed input {name!r}")
        results = self.request.infer(feeds)
        outputs = {port.get_any_name(): results[port] for port in self.compiled.outputs}
        for name in list(self.past):
            self.past[name] = outputs[name.replace("past_key_values", "present")]
        self.length += count
        return feeds, outputs


def run_scenario(core, model, encoder=None):
    """b1: prefill of 5 tokens + 4 greedy decode steps. b2: batch 2, prefill of 4 tokens + 3 decode steps with
    beam_idx [0,1], [1,0], [1,1] (a reorder, then a duplication, as beam search does)."""
    rng = np.random.default_rng(SEED)
    record = {}
    plans = {"b1": (1, 5, [None, None, None, None]),
             "b2": (2, 4, [np.array([0, 1]), np.array([1, 0]), np.array([1, 1])])}
    for scenario, (batch, prefill, beams) in plans.items():
        encoder_states = encoder_mask = None
        if encoder is not None:
            encoder_feeds, encoder_states = encoder(batch, rng)
            encoder_mask = encoder_feeds.get("attention_mask")
            for key, value in encoder_feeds.items():
                record[f"{scenario}/encoder/{key}"] = value
            record[f"{scenario}/encoder/last_hidden_state"] = encoder_states
        stepper = Stepper(core, model, batch, encoder_states, encoder_mask)
        ids = rng.integers(3, VOCAB, size=(batch, prefill))
        for step, beam in enumerate([None] + beams):
            feeds, outputs = stepper.step(ids, beam)
            for key, value in feeds.items():
                record[f"{scenario}/{step}/{key}"] = value
            logits = outputs["logits"]
            record[f"{scenario}/{step}/logits"] = logits
            chosen = logits[:, -1].argmax(-1)
            if step < len(beams) and beams[step] is not None:
                chosen = chosen[beams[step]]
            ids = chosen.reshape(batch, 1)
        record[f"{scenario}/steps"] = np.array(len(beams) + 1)
    return record


# ---------------------------------------------------------------- export

def _make_hf(arch, config_class, kwargs, model_class, folder: Path):
    import torch

    torch.manual_seed(SEED)
    config = config_class(**kwargs)
    model = model_class(config).eval()
    model.save_pretrained(folder)
    return config


def _save(core_model, out: Path, export_dir: Path, xml_name: str, variant: str | None):
    import openvino as ov

    if variant is not None and variant != "f16":
        core_model = _compress(core_model, variant)
    ov.save_model(core_model, out / xml_name, compress_to_fp16=(variant == "f16"))
    for extra in ("config.json", "generation_config.json"):
        if (export_dir / extra).exists() and not (out / extra).exists():
            shutil.copy(export_dir / extra, out / extra)


def export_decoder(arch, spec, root: Path, work: Path, variants, stateless_variants, log):
    import openvino as ov
    from optimum.intel import OVModelForCausalLM

    core = ov.Core()
    src = work / f"{arch}_hf"
    _make_hf(arch, *spec, src)
    for stateful in (True, False):
        names = variants if stateful else stateless_variants
        if not names:
            continue
        export_dir = work / f"{arch}_ov_{'stateful' if stateful else 'stateless'}"
        OVModelForCausalLM.from_pretrained(src, export=True, compile=False, stateful=stateful,
                                           load_in_8bit=False).save_pretrained(export_dir)
        for variant in names:
            name = arch + ("" if stateful else "_stateless") + ("" if variant is None else f"_{variant}")
            out = root / name
            try:
                if out.exists():
                    shutil.rmtree(out)
                out.mkdir(parents=True)
                model = core.read_model(export_dir / "openvino_model.xml")
                _save(model, out, export_dir, "openvino_model.xml", variant)
                saved = core.read_model(out / "openvino_model.xml")
                np.savez_compressed(out / "steps.npz", **run_scenario(core, saved))
                log(name, "ok")
            except Exception as exc:  # noqa: BLE001 - recorded as a corpus failure
                shutil.rmtree(out, ignore_errors=True)
                log(name, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}")


def export_seq2seq(arch, spec, root: Path, work: Path, variants, log):
    import openvino as ov
    from optimum.intel import OVModelForSeq2SeqLM

    core = ov.Core()
    src = work / f"{arch}_hf"
    config = _make_hf(arch, *spec, src)
    export_dir = work / f"{arch}_ov"
    if arch == "whisper":  # optimum's dummy audio is 3000 frames unless told: the tiny encoder takes 32
        from optimum.exporters.openvino import main_export

        main_export(str(src), export_dir, task="automatic-speech-recognition-with-past",
                    nb_max_frames=2 * config.max_source_positions)
    else:
        OVModelForSeq2SeqLM.from_pretrained(src, export=True, compile=False,
                                            load_in_8bit=False).save_pretrained(export_dir)
    decoder_xml = "openvino_decoder_model.xml"
    for variant in variants:
        name = arch + ("" if variant is None else f"_{variant}")
        out = root / name
        try:
            if out.exists():
                shutil.rmtree(out)
            out.mkdir(parents=True)
            for xml in ("openvino_encoder_model.xml", decoder_xml):
                _save(core.read_model(export_dir / xml), out, export_dir, xml, variant)
            encoder_compiled = compile_cpu(core, core.read_model(out / "openvino_encoder_model.xml"))

            def encoder(batch, rng, encoder_compiled=encoder_compiled):  # run within this iteration
                if arch == "whisper":
                    feeds = {"input_features": rng.standard_normal(
                        (batch, config.num_mel_bins, 2 * config.max_source_positions)).astype(np.float32)}
                else:
                    feeds = {"input_ids": rng.integers(3, VOCAB, size=(batch, 6)).astype(np.int64),
                             "attention_mask": np.ones((batch, 6), dtype=np.int64)}
                feeds = {k: v for k, v in feeds.items()
                         if k in [p.get_any_name() for p in encoder_compiled.inputs]}
                result = encoder_compiled(feeds)
                return feeds, result[encoder_compiled.output("last_hidden_state")]

            decoder = core.read_model(out / decoder_xml)
            np.savez_compressed(out / "steps.npz", **run_scenario(core, decoder, encoder))
            log(name, "ok")
        except Exception as exc:  # noqa: BLE001
            shutil.rmtree(out, ignore_errors=True)
            log(name, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}")


README_HEAD = """# Tiny optimum-intel LLM exports (test corpus)

**Generated** by `python tools/make_llm_corpus.py` (needs torch, transformers, optimum-intel, nncf, openvino;
no network); edit that script, not this file. Versions used: {versions}.

Each folder is one model as optimum-intel exports it, built from a transformers config class with tiny random
weights (hidden size 32, 1 layer (llama and gemma3_text: 2), 4 attention heads (2 KV heads where the
architecture has GQA), vocabulary {vocab}, seed {seed}):

- `openvino_model.xml/.bin` (decoders) or `openvino_encoder_model.xml/.bin` + `openvino_decoder_model.xml/.bin`
  (t5, bart, whisper); `config.json` and `generation_config.json` as optimum-intel saved them.
- `<arch>`: the export with f32 weights, stateful (KV cache in ReadValue/Assign variables, `beam_idx` input).
  `<arch>_<format>`: the same model with its weights compressed by `nncf.compress_weights` (formats below;
  int4/nf4/fp4/codebook modes keep the embedding and lm_head in int8_asym, nncf's default backup mode;
  `f16` is the f32 export saved with `compress_to_fp16=True`). `<arch>_stateless[_<format>]`: exported with
  `stateful=False` (explicit `past_key_values.N.key/value` inputs and `present.N.key/value` outputs).
- `steps.npz`: OpenVINO's CPU plugin (`INFERENCE_PRECISION_HINT=f32`, `KV_CACHE_PRECISION=f32`,
  `DYNAMIC_QUANTIZATION_GROUP_SIZE=0`, 1 thread) on a fixed scenario, every input of every step and its logits:
  - `b1`: batch 1, a prefill of 5 random tokens, then 4 decode steps each feeding the greedy token;
  - `b2`: batch 2, a prefill of 4 tokens, then 3 decode steps with `beam_idx` [0,1], [1,0], [1,1] (a
    reorder, then a duplication, as beam search does); row i is fed the greedy token of row beam_idx[i].
  Keys: `<scenario>/<step>/<input name>` (the arrays fed: `input_ids`, `attention_mask`, `position_ids`,
  `beam_idx`, `cache_position`, `encoder_hidden_states`, `encoder_attention_mask`, `past_key_values.*`, as
  the model takes them), `<scenario>/<step>/logits` and `<scenario>/steps` (the step count). Seq2seq folders
  add `<scenario>/encoder/<input>` and `<scenario>/encoder/last_hidden_state` (the encoder's run; the decoder
  is fed that output at every step). A stateless model's `past_key_values.*` at a step are OpenVINO's
  `present.*` of the previous step (reordered by beam_idx in `b2`), so every step can be checked alone.

Weight formats (nncf `CompressWeightsMode`; group size 16 unless said): `int8_asym`, `int8_sym` (per output
channel), `int4_sym`, `int4_asym`, `int4_asym_channel` (per channel), `nf4`, `mxfp4` (group 32, e8m0 scales),
`fp4` (f4e2m1), `nvfp4`, `fp8_e4m3`, `mxfp8_e4m3` (group 32), `cb4` (u4 indices into nncf's f8e4m3 codebook),
`codebook` (a custom 11-entry codebook).

Notes:
- Whisper exports through `OVModelForSpeechSeq2Seq.from_pretrained(export=True)` fail for a tiny config
  (optimum's dummy audio is 3000 frames; the tiny encoder takes `2 * max_source_positions`): the script calls
  `optimum.exporters.openvino.main_export(..., nb_max_frames=32)` instead.
- Only the CPU plugin's results are recorded: OpenVINO's core reference (`Node.evaluate`) is not practical for
  these models, since ScaledDotProductAttention-13 and BitwiseAnd-13 on booleans have no reference `evaluate`
  in 2026.4.1.
- t5, bart (decoders), falcon, opt and bloom use ScatterNDUpdate-4 (the causal-mask slice assignment).

"""


def write_readme(root: Path) -> None:
    import importlib.metadata as md

    versions = ", ".join(f"{p} {md.version(p)}" for p in ("openvino", "optimum-intel", "nncf", "transformers",
                                                         "torch"))
    rows = ["| folder | files | inputs | size |", "| --- | --- | --- | --- |"]
    total = 0
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        size = sum(f.stat().st_size for f in folder.iterdir())
        total += size
        xmls = sorted(f.name for f in folder.glob("*.xml"))
        steps = np.load(folder / "steps.npz")
        inputs = sorted({k.split("/", 2)[2] for k in steps.files if k.startswith("b1/0/") and not
                         k.endswith("/logits")})
        inputs = [i for i in inputs if not i.startswith("past_key_values")] + (
            ["past_key_values.*"] if any(i.startswith("past_key_values") for i in inputs) else [])
        rows.append(f"| `{folder.name}` | {', '.join(xmls)} | {', '.join(inputs)} | {size / 1024:.0f} KB |")
    failures = json.loads((root / "failures.json").read_text()) if (root / "failures.json").exists() else {}
    text = README_HEAD.format(versions=versions, vocab=VOCAB, seed=SEED)
    text += f"{len(rows) - 2} models, {total / 2**20:.1f} MB in all.\n\n" + "\n".join(rows) + "\n"
    text += "\n## Export failures\n\n"
    text += "\n".join(f"- `{k}`: {v}" for k, v in failures.items()) + "\n" if failures else "None.\n"
    (root / "README.md").write_text(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated architectures")
    parser.add_argument("--stateless-only", action="store_true",
                        help="export only stateless (stateful=False) f32 variants, of every architecture asked")
    parser.add_argument("--readme-only", action="store_true", help="only rewrite README.md")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "tests" / "data" / "llm"))
    args = parser.parse_args(argv)
    root = Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    if args.readme_only:
        write_readme(root)
        return 0
    decoders, seq2seq = _decoder_configs(), _seq2seq_configs()
    wanted = args.only.split(",") if args.only else list(decoders) + list(seq2seq)
    failures_path = root / "failures.json"
    failures = json.loads(failures_path.read_text()) if failures_path.exists() else {}

    def log(name, status):
        print(f"{name}: {status}", flush=True)
        if status == "ok":
            failures.pop(name, None)
        else:
            failures[name] = status

    for arch in wanted:
        variants = [None] + (VARIANTS_BY_ARCH[arch] if arch in VARIANTS_BY_ARCH else [ONE_VARIANT[arch]])
        stateless = ([None] + STATELESS_VARIANTS.get(arch, [])) if arch in STATELESS_ARCHS else []
        if args.stateless_only:
            variants, stateless = [], [None]
        with tempfile.TemporaryDirectory() as tmp:
            try:
                if arch in decoders:
                    export_decoder(arch, decoders[arch], root, Path(tmp), variants, stateless, log)
                else:
                    export_seq2seq(arch, seq2seq[arch], root, Path(tmp), variants, log)
            except Exception as exc:  # noqa: BLE001 - the whole architecture failed to export
                traceback.print_exc()
                log(arch, f"export failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
    failures_path.write_text(json.dumps(dict(sorted(failures.items())), indent=1) + "\n")
    write_readme(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
