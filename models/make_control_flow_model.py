"""Write models/torch_loop_if: a scripted PyTorch module with a data-dependent loop and branch, converted by
`openvino.convert_model` into Loop-5 and If-8, with its inputs and OpenVINO's outputs.

Dev dependencies: torch==2.13.0 (CPU) and openvino. Deterministic and re-runnable."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import openvino as ov
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_models import save_npz  # noqa: E402  (deterministic .npz writer)

TARGET = pathlib.Path(__file__).resolve().parent / "torch_loop_if"


class LoopIf(torch.nn.Module):
    def forward(self, x, n: torch.Tensor):
        for _ in range(int(n)):
            x = x * 0.5 + 1.0
        if x.sum() > 0:
            x = x + 1
        else:
            x = x - 1
        return x


def main():
    model = ov.convert_model(torch.jit.script(LoopIf()), example_input=(torch.randn(2, 3), torch.tensor(3)))
    kinds = {node.get_type_name() for node in model.get_ordered_ops()}
    assert {"Loop", "If"} <= kinds, kinds
    model.inputs[0].get_tensor().set_names({"x"})
    model.inputs[1].get_tensor().set_names({"n"})
    model.outputs[0].get_tensor().set_names({"y"})
    TARGET.mkdir(exist_ok=True)
    xml = TARGET / "model.xml"
    ov.save_model(model, str(xml), compress_to_fp16=False)
    compiled = ov.Core().compile_model(str(xml), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    rng = np.random.default_rng(7)
    inputs = {"x": (rng.standard_normal((2, 3)) * -20).astype(np.float32), "n": np.array(1, np.int64)}
    outputs = compiled([inputs["x"], inputs["n"]])
    save_npz(TARGET / "inputs.npz", inputs)
    save_npz(TARGET / "expected.npz", {o.get_any_name(): np.asarray(v) for o, v in zip(compiled.outputs, outputs.values())})


if __name__ == "__main__":
    main()
