"""Convert an SSDlite-style detection head with score-threshold post-processing to IR (needs torch, openvino).

Writes models/torch_ssd_head/: a depthwise-separable conv head predicts per-anchor scores (sigmoid) and box
offsets; `boxes[scores > 0.5]` selects the surviving anchors. `openvino.convert_model` (default settings) turns
the boolean-mask indexing into NonZero-3 -> Transpose -> GatherND-8, the op torchvision's ssdlite stopped at.
The outputs' length depends on the data. Inputs in inputs.npz (`image`); expected.npz from the CPU plugin with
INFERENCE_PRECISION_HINT=f32.

    python models/make_ssd_head_model.py
"""
from __future__ import annotations

import collections
import pathlib
import sys

import numpy as np
import openvino as ov
import torch
import torch.nn as nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_models import save_npz  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent / "torch_ssd_head"


class SSDHead(nn.Module):
    def __init__(self, anchors=3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU6(), nn.Conv2d(8, 8, 3, 1, 1, groups=8),
                                      nn.Conv2d(8, 16, 1), nn.ReLU6())
        self.cls = nn.Conv2d(16, anchors, 1)
        self.reg = nn.Conv2d(16, anchors * 4, 1)

    def forward(self, image):
        f = self.backbone(image)
        scores = torch.sigmoid(self.cls(f)).flatten(1)                      # [N, A]
        boxes = self.reg(f).permute(0, 2, 3, 1).reshape(f.shape[0], -1, 4)  # [N, A, 4]
        keep = scores > 0.5
        return boxes[keep], scores[keep]


def main():
    torch.manual_seed(20261123)
    module = SSDHead().eval()
    image = np.random.default_rng(20261123).standard_normal((2, 3, 16, 16)).astype(np.float32)
    converted = ov.convert_model(module, example_input=torch.from_numpy(image))
    converted.inputs[0].get_tensor().set_names({"image"})
    for output, name in zip(converted.outputs, ("boxes", "scores")):
        output.get_tensor().set_names({name})
    OUT.mkdir(exist_ok=True)
    ov.save_model(converted, str(OUT / "model.xml"))
    compiled = ov.Core().compile_model(str(OUT / "model.xml"), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled.create_infer_request().infer([image])
    outputs = {o.get_any_name(): np.array(result[o]) for o in compiled.outputs}
    save_npz(OUT / "inputs.npz", {"image": image})
    save_npz(OUT / "expected.npz", outputs)
    ops = collections.Counter(f"{o.get_type_name()}-{o.get_type_info().version_id}"
                              for o in ov.Core().read_model(str(OUT / "model.xml")).get_ordered_ops())
    print(sorted(ops.items()), {k: v.shape for k, v in outputs.items()})
    print(f"{OUT.name}: {sum(p.stat().st_size for p in OUT.iterdir()) / 1024:.1f} KB")


if __name__ == "__main__":
    main()
