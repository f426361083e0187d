"""The transformer zoo models' GEMM shapes and GELU: NumPy (OpenBLAS) and irrun vs PyTorch, one thread each.

Run by hand (never part of the test suite); needs torch:

    python benchmarks/transformer_kernels.py [--rounds 8]

GEMM: activations (M x K) times a Linear weight stored (N x K), as the IR's MatMul with transpose_b holds it:
NumPy on the transposed view, NumPy on a contiguous K x N copy (what irrun's MatMul runs on a weight computed
at load: irrun/engine/weight_layout.py keeps it in Fortran order), and torch.nn.functional.linear; GFLOPS
from CPU time, medians of rounds taken in turns.
GELU: irrun's float32 erf GELU (ops/fastmath.py) vs torch's, in ns per element, on N(0, sigma)
data (sigma 0.3: every |x| < 1 as in the ConvNeXt models; 0.6: about 10% |x| >= 1 as in ViT and BERT).
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import pathlib  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from irrun.ops.fastmath import gelu_erf_f32  # noqa: E402

SHAPES = [(197, 768, 768), (197, 768, 3072), (197, 3072, 768),  # vit_b_16
          (128, 768, 768), (128, 768, 3072), (128, 3072, 768),  # bert_base_encoder
          (1500, 512, 2048), (1500, 2048, 512),  # whisper_base_encoder
          (3136, 96, 384), (3136, 384, 96)]  # convnext_tiny, stage 1


def cpu_seconds(fn, count):
    start = time.process_time()
    for _ in range(count):
        fn()
    return (time.process_time() - start) / count


def in_turns(variants: dict, rounds: int, count: int) -> dict:
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            fn()
            times[name].append(cpu_seconds(fn, count))
    return {name: statistics.median(t) for name, t in times.items()}


def gemm_variants(m, k, n, rng) -> dict:
    a, w = rng.standard_normal((m, k), np.float32), rng.standard_normal((n, k), np.float32)
    w_t, out = np.ascontiguousarray(w.T), np.empty((m, n), np.float32)
    ta, tw = torch.from_numpy(a), torch.from_numpy(w)
    return {"numpy a @ w.T": lambda: np.matmul(a, w.T, out=out),
            "numpy a @ contiguous w.T": lambda: np.matmul(a, w_t, out=out),
            "torch linear": lambda: torch.nn.functional.linear(ta, tw)}


def gelu_variants(x) -> dict:
    out, tx = np.empty_like(x), torch.from_numpy(x)
    return {"irrun": lambda: gelu_erf_f32(x, out), "torch": lambda: torch.nn.functional.gelu(tx)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    print("GEMM M x K x N: GFLOPS (CPU time)")
    for m, k, n in SHAPES:
        seconds = in_turns(gemm_variants(m, k, n, rng), args.rounds, max(2, int(4e8 / (m * k * n))))
        print(f"  {m} x {k} x {n}: " + ", ".join(f"{name} {2 * m * k * n / s / 1e9:.0f}"
                                                  for name, s in seconds.items()))
    print("GELU (erf), ns per element")
    for sigma in (0.3, 0.6, 1.0):
        x = (rng.standard_normal(605184) * sigma).astype(np.float32)
        seconds = in_turns(gelu_variants(x), args.rounds, 5)
        print(f"  sigma {sigma}: " + ", ".join(f"{name} {s / x.size * 1e9:.2f}" for name, s in seconds.items()))


if __name__ == "__main__":
    main()
