"""Write tiny NNCF-compressed IRs with OpenVINO's outputs to tests/data/compressed/ (for
tests/test_decompression.py, which then needs no nncf).

Each model: y = (x + Gather(E, ids)) @ W^T with E [64, 256] and W [96, 256] random, compressed by
`nncf.compress_weights` in one mode (all layers, embeddings included). Saved: <mode>.xml/.bin and
<mode>.npz holding the inputs and the CPU plugin's output (f32 hints, no dynamic quantization).

    python models/make_compressed_models.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import nncf
import openvino as ov
from nncf import CompressWeightsMode as Mode
from openvino import opset13 as ops

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "compressed"
MODES = {
    "int8_asym": dict(mode=Mode.INT8_ASYM),
    "int8_sym": dict(mode=Mode.INT8_SYM),
    "int4_asym_g64": dict(mode=Mode.INT4_ASYM, group_size=64, ratio=1.0, all_layers=True),
    "int4_sym_channel": dict(mode=Mode.INT4_SYM, group_size=-1, ratio=1.0, all_layers=True),
    "nf4_g32": dict(mode=Mode.NF4, group_size=32, ratio=1.0, all_layers=True),
    "mxfp4": dict(mode=Mode.MXFP4, group_size=32, ratio=1.0, all_layers=True),
    "fp8_e4m3": dict(mode=Mode.FP8_E4M3, group_size=64, ratio=1.0, all_layers=True),
    "cb4": dict(mode=Mode.CB4, group_size=64, ratio=1.0, all_layers=True),
}
CPU = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}


def tiny(rng) -> ov.Model:
    x = ops.parameter([1, 4, 256], ov.Type.f32, name="x")
    ids = ops.parameter([1, 4], ov.Type.i64, name="ids")
    embedding = ops.constant(rng.standard_normal((64, 256)).astype(np.float32))
    weight = ops.constant(rng.standard_normal((96, 256)).astype(np.float32))
    y = ops.matmul(ops.add(x, ops.gather(embedding, ids, 0)), weight, False, True)
    y.output(0).get_tensor().set_names({"y"})
    return ov.Model([y], [x, ids], "tiny")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    core = ov.Core()
    for name, options in MODES.items():
        rng = np.random.default_rng(len(name))
        model = nncf.compress_weights(tiny(rng), **options)
        xml = OUT / f"{name}.xml"
        ov.save_model(model, str(xml), compress_to_fp16=False)
        feeds = {"x": rng.standard_normal((1, 4, 256)).astype(np.float32),
                 "ids": np.array([[0, 63, 5, 17]], np.int64)}
        compiled = core.compile_model(str(xml), "CPU", CPU)
        y = compiled(feeds)[compiled.outputs[0]]
        np.savez(OUT / f"{name}.npz", y=y, **feeds)
        print(name, xml.stat().st_size + xml.with_suffix(".bin").stat().st_size, "bytes")


if __name__ == "__main__":
    main()
