"""Make the Llama-shaped benchmark models (about 300M parameters, random weights) for benchmarks/llm.py.

No network: the model is built from a LlamaConfig with random init, saved with save_pretrained and
exported with optimum-intel, as an f32 variant, its f16 copy (f16 Consts + Convert, as `ov.save_model`
compresses) and an int4 variant (NNCF, group size 128); with `--moe`, also a small Qwen3-MoE (`moe-stateful`).
The models are written to a cache directory outside the repository (default /tmp/irrun-llm-bench); never
commit them.

    python benchmarks/make_llm.py [--out DIR] [--stateful] [--moe]
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path


def make(out: Path, stateful: bool) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig

    torch.manual_seed(0)
    source = out / "hf"
    if not (source / "config.json").exists():
        config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=18,
                             num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=2048,
                             tie_word_embeddings=False)
        model = LlamaForCausalLM(config)
        print(f"parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M")
        model.save_pretrained(source)
    suffix = "stateful" if stateful else "stateless"
    variants = {
        f"f32-{suffix}": dict(load_in_8bit=False),
        f"int4-{suffix}": dict(quantization_config=OVWeightQuantizationConfig(bits=4, group_size=128, sym=False,
                                                                              ratio=1.0)),
    }
    for name, options in variants.items():
        target = out / name
        if (target / "openvino_model.xml").exists():
            continue
        exported = OVModelForCausalLM.from_pretrained(source, export=True, stateful=stateful, compile=False,
                                                      use_cache=True, **options)
        exported.save_pretrained(target)
        print(name, os.path.getsize(target / "openvino_model.bin") / 1e6, "MB")
    f16 = out / f"f16-{suffix}"
    if not (f16 / "openvino_model.xml").exists():  # f16 Consts, each followed by a decompression Convert
        import shutil
        import openvino as ov
        shutil.copytree(out / f"f32-{suffix}", f16, ignore=shutil.ignore_patterns("openvino_model.*"))
        model = ov.Core().read_model(out / f"f32-{suffix}" / "openvino_model.xml")
        ov.save_model(model, f16 / "openvino_model.xml", compress_to_fp16=True)
        print(f16.name, os.path.getsize(f16 / "openvino_model.bin") / 1e6, "MB")


def make_moe(out: Path) -> None:
    """A small Qwen3-MoE (64 experts, 4 of them per token, 4 layers), exported stateful in f32 as `moe-stateful`: the
    export runs every expert's block on the rows routed to it, so most of a decode step's layers see no rows."""
    import torch
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM
    from optimum.intel import OVModelForCausalLM

    target = out / "moe-stateful"
    if (target / "openvino_model.xml").exists():
        return
    torch.manual_seed(0)
    config = Qwen3MoeConfig(vocab_size=1000, hidden_size=256, intermediate_size=512, moe_intermediate_size=128,
                            num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                            num_experts=64, num_experts_per_tok=4, max_position_embeddings=512)
    source = out / "moe-hf"
    Qwen3MoeForCausalLM(config).eval().save_pretrained(source)
    OVModelForCausalLM.from_pretrained(source, export=True, stateful=True, compile=False,
                                       load_in_8bit=False).save_pretrained(target)
    print(target.name, os.path.getsize(target / "openvino_model.bin") / 1e6, "MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.environ.get("IRRUN_LLM_BENCH", "/tmp/irrun-llm-bench"))
    parser.add_argument("--stateful", action="store_true", help="export with ReadValue/Assign state")
    parser.add_argument("--moe", action="store_true", help="also make the small mixture-of-experts model")
    args = parser.parse_args()
    make(Path(args.out), args.stateful)
    if args.moe:
        make_moe(Path(args.out))


if __name__ == "__main__":
    main()
