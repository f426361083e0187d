"""Convert a tiny Swin Transformer (torchvision's SwinTransformer class, random seeded weights) to IR.

Dev-only script (needs torch, torchvision, openvino): converts with `openvino.convert_model` (default settings,
the input given as [-1, 3, 32, 32]: dynamic batch, as the other torch models) and writes models/torch_swin_tiny/
with model.xml/.bin saved by `openvino.save_model` with default settings (f16-compressed weights), input.npy and
expected.npz (the CPU plugin's outputs with INFERENCE_PRECISION_HINT=f32, keyed by output name).
`openvino.convert_model` with default settings turns the shifted-window attention mask into
ScatterNDUpdate-4 (OpenVINO's v3 class), which is the op this model exists to exercise.

    python models/make_swin_model.py
"""
from __future__ import annotations

import collections
import pathlib
import sys
import xml.etree.ElementTree as ET

import numpy as np
import openvino as ov
import torch
from torchvision.models.swin_transformer import SwinTransformer

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_models import save_npy, save_npz  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "torch_swin_tiny"


def build():
    torch.manual_seed(20261123)
    model = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                            window_size=[4, 4], num_classes=10, stochastic_depth_prob=0.0)
    return model.eval()


def main():
    module = build()
    x = np.random.default_rng(20261123).standard_normal((1, 3, 32, 32)).astype(np.float32)
    with torch.no_grad():
        ref = module(torch.from_numpy(x)).numpy()
    converted = ov.convert_model(module, example_input=torch.from_numpy(x), input=[(-1, 3, 32, 32)])
    converted.inputs[0].get_tensor().set_names({"input"})
    converted.outputs[0].get_tensor().set_names({"logits"})
    OUT.mkdir(exist_ok=True)
    ov.save_model(converted, str(OUT / "model.xml"))
    back = ov.Core().read_model(str(OUT / "model.xml"))
    compiled = ov.Core().compile_model(back, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled.create_infer_request().infer([x])
    outputs = {o.get_any_name(): np.array(result[o]) for o in compiled.outputs}
    save_npy(OUT / "input.npy", x)
    save_npz(OUT / "expected.npz", outputs)
    ops = collections.Counter(f"{layer.get('type')}-{layer.get('version')}"
                              for layer in ET.parse(OUT / "model.xml").getroot().iter("layer"))
    print(sorted(ops.items()))
    print("max |openvino - torch| =", float(np.abs(outputs["logits"] - ref).max()))
    size = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"{OUT.name}: {size / 1024:.1f} KB")


if __name__ == "__main__":
    main()
