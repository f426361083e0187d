"""Make small signal-processing IRs through OpenVINO's ONNX frontend and store them under
tests/data/onnx_signal/, so the test suite needs neither `onnx` nor the frontend.

Dev-only script (needs `onnx` and `openvino`, never irrun):

    python tools/make_onnx_signal_models.py

Each folder <name>/ holds model.xml / model.bin (ov.convert_model on the .onnx, saved without f16
compression), inputs.npz (keyed by Parameter name) and expected.npz (OpenVINO's CPU plugin outputs with
INFERENCE_PRECISION_HINT=f32, keyed by output get_any_name(), in model output order). The script prints
the op types each IR holds.
"""
from __future__ import annotations

import pathlib
import tempfile

import numpy as np
import onnx
import openvino as ov
from onnx import TensorProto, helper

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "onnx_signal"


def dft_model():
    """ONNX DFT-17 three ways: complex forward, complex inverse, and real one-sided (RDFT), with dft_length
    trimming and padding."""
    nodes = [
        helper.make_node("DFT", ["x", "", ], ["spectrum"], axis=1),
        helper.make_node("DFT", ["x", "n_pad"], ["inverse_padded"], axis=2, inverse=1),
        helper.make_node("DFT", ["real", "n_trim"], ["onesided"], axis=1, onesided=1),
    ]
    graph = helper.make_graph(
        nodes, "dft",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 12, 6, 2]),
         helper.make_tensor_value_info("real", TensorProto.FLOAT, [3, 10, 1])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None] * 4)
         for n in ("spectrum", "inverse_padded", "onesided")],
        initializer=[helper.make_tensor("n_pad", TensorProto.INT64, [], [9]),
                     helper.make_tensor("n_trim", TensorProto.INT64, [], [7])])
    rng = np.random.default_rng(0)
    return graph, {"x": rng.standard_normal((2, 12, 6, 2)).astype(np.float32),
                   "real": rng.standard_normal((3, 10, 1)).astype(np.float32)}


def stft_model():
    """ONNX STFT-17 of a batch of real signals with a Hann window."""
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(16) / 16)).astype(np.float32)
    nodes = [helper.make_node("STFT", ["signal", "step", "window", "frame_length"], ["spectrogram"], onesided=1)]
    graph = helper.make_graph(
        nodes, "stft",
        [helper.make_tensor_value_info("signal", TensorProto.FLOAT, [2, 70, 1])],
        [helper.make_tensor_value_info("spectrogram", TensorProto.FLOAT, [None, None, None, None])],
        initializer=[helper.make_tensor("step", TensorProto.INT64, [], [6]),
                     helper.make_tensor("window", TensorProto.FLOAT, [16], window.tolist()),
                     helper.make_tensor("frame_length", TensorProto.INT64, [], [16])])
    rng = np.random.default_rng(1)
    return graph, {"signal": rng.standard_normal((2, 70, 1)).astype(np.float32)}


MODELS = {"onnx_dft": dft_model, "onnx_stft": stft_model}


def main():
    core = ov.Core()
    for name, make in MODELS.items():
        graph, inputs = make()
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        onnx.checker.check_model(model)
        folder = OUT / name
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / f"{name}.onnx"
            onnx.save(model, path)
            converted = ov.convert_model(str(path))
        ov.save_model(converted, str(folder / "model.xml"), compress_to_fp16=False)
        saved = core.read_model(str(folder / "model.xml"))
        names = [p.get_any_name() for p in saved.inputs]
        compiled = core.compile_model(saved, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        result = compiled.create_infer_request().infer([inputs[n] for n in names])
        expected = {o.get_any_name(): np.array(result[o]) for o in compiled.outputs}
        np.savez(folder / "inputs.npz", **{n: inputs[n] for n in names})
        np.savez(folder / "expected.npz", **expected)
        ops = sorted({f"{op.get_type_name()}-{op.get_type_info().version_id}" for op in saved.get_ordered_ops()})
        print(name, ops, {k: v.shape for k, v in expected.items()})


if __name__ == "__main__":
    main()
