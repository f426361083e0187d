"""Build tests/data/precision: small models for `irrun precision`, with OpenVINO's outputs.

    python tools/make_precision_models.py [--out tests/data/precision]

- `overflow.xml`: x [2, 32] -> MatMul -> Multiply(400) -> square (Multiply by itself) -> ReduceMean -> Sqrt ->
  Divide (an RMS normalisation of large values) -> MatMul -> y. In f16 the square overflows (values up to
  ~1e6 > 65504). `overflow.npz`: x and OpenVINO's y (CPU plugin, f32).
- `mlp.xml`: x [4, 64] -> MatMul -> MVN -> MatMul -> y. `mlp.npz`: x, `y` (f32) and `y_bf16`, the CPU
  plugin with INFERENCE_PRECISION_HINT=bf16 (this CPU has AVX512-BF16/AMX).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

SEED = 4


def overflow_model(rng):
    import openvino as ov
    import openvino.opset13 as ops

    x = ops.parameter([2, 32], np.float32, name="x")
    hidden = ops.matmul(x, ops.constant((rng.standard_normal((32, 32)) * 0.3).astype(np.float32)), False, True,
                        name="proj")
    scaled = ops.multiply(hidden, ops.constant(np.float32(400.0)), name="scale_up")
    square = ops.multiply(scaled, scaled, name="square")
    mean = ops.reduce_mean(square, ops.constant(np.array([-1], dtype=np.int64)), True, name="mean_square")
    rms = ops.sqrt(mean, name="rms")
    normalised = ops.divide(scaled, rms, name="normalised")
    y = ops.matmul(normalised, ops.constant((rng.standard_normal((8, 32)) * 0.3).astype(np.float32)), False, True,
                   name="head")
    y.output(0).set_names({"y"})
    return ov.Model([ops.result(y, name="y_result")], [x], "overflow")


def mlp_model(rng):
    import openvino as ov
    import openvino.opset13 as ops

    x = ops.parameter([4, 64], np.float32, name="x")
    hidden = ops.matmul(x, ops.constant((rng.standard_normal((128, 64)) * 0.1).astype(np.float32)), False, True,
                        name="up")
    # MVN keeps the plugin from fusing the block into one Snippets subgraph, which computes in bf16 whatever
    # the layers' rt_info says (measured with 2026.4.1); separate FullyConnected and MVN nodes honour it
    act = ops.mvn(hidden, ops.constant(np.array([1], dtype=np.int64)), True, 1e-6, "inside_sqrt", name="act")
    y = ops.matmul(act, ops.constant((rng.standard_normal((16, 128)) * 0.1).astype(np.float32)), False, True,
                   name="down")
    y.output(0).set_names({"y"})
    return ov.Model([ops.result(y, name="y_result")], [x], "mlp")


def run_cpu(xml: Path, x: np.ndarray, precision: str) -> np.ndarray:
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU",
                                  {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": 1})
    return np.array(compiled({0: x})[0])


def main(argv=None) -> int:
    import openvino as ov

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "tests" / "data" / "precision"))
    root = Path(parser.parse_args(argv).out)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    ov.save_model(overflow_model(rng), root / "overflow.xml", compress_to_fp16=False)
    x = rng.standard_normal((2, 32)).astype(np.float32)
    np.savez_compressed(root / "overflow.npz", x=x, y=run_cpu(root / "overflow.xml", x, "f32"))
    ov.save_model(mlp_model(rng), root / "mlp.xml", compress_to_fp16=False)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    np.savez_compressed(root / "mlp.npz", x=x, y=run_cpu(root / "mlp.xml", x, "f32"),
                        y_bf16=run_cpu(root / "mlp.xml", x, "bf16"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
