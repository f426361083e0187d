"""Build tests/data/fused: models on the CPU plugin's fused compressed-weight path, with OpenVINO's outputs.

    python tools/make_fused_models.py [--out tests/data/fused] [--skip-llama]

Two kinds of model (no network; needs openvino and nncf, and for the Llama export also torch, transformers and
optimum-intel, as tools/make_llm_corpus.py):

- `mlp_<format>.xml/.bin` + `.npz`: a Llama-style MLP block (gate/up/down projections and a head, hidden 64,
  intermediate 128, weights normal with std 0.08) built with OpenVINO's opset API and compressed by
  `nncf.compress_weights` in every weight format (`all_layers=True`, group size 16, ratio 1.0). The .npz holds
  `x` and OpenVINO's `y` compiled as usual (f32 hints, one thread), also with `ONEDNN_MAX_CPU_ISA=AVX2`
  (`y_avx2`), and with a Result on every node output as `irrun compare --against openvino` compiles it
  (`y_exposed`), plus `fc_weights`: the weight element type of each FullyConnected of the plugin's runtime
  graph (a compressed type: the fused path; f32: the plugin folded the decompression).
- `llama64_nf4/`: the model of issue 21, a Llama export by optimum-intel (hidden 64, intermediate 128, 2 layers,
  4 heads, 2 KV heads, vocabulary 1000, initializer_range 0.08) with NF4 weights (group 16, ratio 1.0), and
  `steps.npz` as tests/data/llm has it (OpenVINO's logits at every step of a fixed scenario).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))
import make_llm_corpus as corpus  # noqa: E402

SEED = 21
HIDDEN, INTERMEDIATE, TOKENS = 64, 128, 4
F32_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0",
              "INFERENCE_NUM_THREADS": "1"}


def mlp_model():
    """x [1, TOKENS, HIDDEN] -> down(silu(gate(x)) * up(x)) -> head, as optimum-intel exports Linear layers
    (MatMul with transpose_b) with f32 weights."""
    import openvino as ov
    import openvino.opset13 as ops

    rng = np.random.default_rng(SEED)

    def linear(x, outputs, inputs, name):
        weight = ops.constant((rng.standard_normal((outputs, inputs)) * 0.08).astype(np.float32), name=f"{name}.weight")
        return ops.matmul(x, weight, False, True, name=name)

    x = ops.parameter([1, TOKENS, HIDDEN], np.float32, name="x")
    gate = linear(x, INTERMEDIATE, HIDDEN, "mlp.gate_proj")
    up = linear(x, INTERMEDIATE, HIDDEN, "mlp.up_proj")
    act = ops.multiply(ops.swish(gate, name="mlp.act"), up, name="mlp.mul")
    down = linear(act, HIDDEN, INTERMEDIATE, "mlp.down_proj")
    head = linear(ops.add(down, x, name="residual"), HIDDEN, HIDDEN, "head")
    result = ops.result(head, name="y")
    head.output(0).set_names({"y"})
    return ov.Model([result], [x], "fused_mlp")


def compress(model, variant: str):
    import nncf

    if corpus.ALL_VARIANTS[variant] is None:
        return model
    kwargs = dict(corpus.ALL_VARIANTS[variant])
    if "group_size" in kwargs:
        kwargs["all_layers"] = True
    kwargs["mode"] = getattr(nncf.CompressWeightsMode, kwargs["mode"])
    if variant == "codebook":
        from nncf.quantization.advanced_parameters import AdvancedCompressionParameters

        codebook = np.array([-8, -4, -2, -1, -0.5, 0, 0.5, 1, 2, 4, 8], dtype=np.float32)
        kwargs["advanced_parameters"] = AdvancedCompressionParameters(codebook=codebook)
    return nncf.compress_weights(model, **kwargs)


def _infer(xml: str, x: np.ndarray, exposed: bool) -> tuple[np.ndarray, list[str]]:
    """OpenVINO's output and the weight element type of each FullyConnected of its runtime graph."""
    import openvino as ov

    core = ov.Core()
    model = core.read_model(xml)
    if exposed:
        extra = [ov.opset1.result(o) for n in model.get_ordered_ops()
                 if n.get_type_name() not in ("Parameter", "Constant", "Result") for o in n.outputs()]
        model.add_results(extra)
    compiled = core.compile_model(model, "CPU", F32_CONFIG)
    y = np.array(compiled.create_infer_request().infer({0: x})[compiled.outputs[0]])
    fused = [n.input(1).get_element_type().get_type_name() for n in compiled.get_runtime_model().get_ordered_ops()
             if n.get_rt_info()["layerType"].astype(str) == "FullyConnected"]
    return y, fused


def _infer_in_subprocess(xml: str, x_path: str, exposed: bool, isa: str | None) -> np.ndarray:
    env = dict(os.environ)
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "y.npy"
        command = [sys.executable, __file__, "--infer", xml, x_path, str(out)] + (["--exposed"] if exposed else [])
        subprocess.run(command, check=True, env=env)
        return np.load(out)


def build_mlps(root: Path) -> dict:
    import openvino as ov

    rng = np.random.default_rng(SEED + 1)
    x = rng.standard_normal((1, TOKENS, HIDDEN)).astype(np.float32)
    summary = {}
    for variant in corpus.ALL_VARIANTS:
        xml = root / f"mlp_{variant}.xml"
        ov.save_model(compress(mlp_model(), variant), xml, compress_to_fp16=(variant == "f16"))
        x_path = root / f"mlp_{variant}_x.npy"
        np.save(x_path, x)
        y, fused = _infer(str(xml), x, exposed=False)
        record = {"x": x, "y": y, "y_avx2": _infer_in_subprocess(str(xml), str(x_path), False, "AVX2"),
                  "y_exposed": _infer_in_subprocess(str(xml), str(x_path), True, None), "fc_weights": np.array(fused)}
        x_path.unlink()
        np.savez_compressed(root / f"mlp_{variant}.npz", **record)
        summary[variant] = {"fc_weights": fused,
                            "exposed_vs_plain": float(np.abs(record["y_exposed"] - y).max()),
                            "avx2_vs_default": float(np.abs(record["y_avx2"] - y).max())}
        print(variant, summary[variant], flush=True)
    return summary


def build_llama(root: Path) -> None:
    import openvino as ov
    import transformers as t
    from optimum.intel import OVModelForCausalLM

    config = dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=128, initializer_range=0.08, bos_token_id=1,
                  eos_token_id=2, pad_token_id=0)
    out = root / "llama64_nf4"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src, export = Path(tmp) / "hf", Path(tmp) / "ov"
        corpus._make_hf("llama", t.LlamaConfig, config, t.LlamaForCausalLM, src)
        OVModelForCausalLM.from_pretrained(src, export=True, compile=False, load_in_8bit=False).save_pretrained(export)
        core = ov.Core()
        corpus._save(core.read_model(export / "openvino_model.xml"), out, export, "openvino_model.xml", "nf4")
    saved = core.read_model(out / "openvino_model.xml")
    np.savez_compressed(out / "steps.npz", **corpus.run_scenario(core, saved))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(TOOLS.parent / "tests" / "data" / "fused"))
    parser.add_argument("--skip-llama", action="store_true")
    parser.add_argument("--infer", nargs=3, metavar=("XML", "X", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--exposed", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.infer:
        xml, x_path, out = args.infer
        np.save(out, _infer(xml, np.load(x_path), args.exposed)[0])
        return 0
    root = Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    summary = build_mlps(root)
    (root / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    if not args.skip_llama:
        build_llama(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
