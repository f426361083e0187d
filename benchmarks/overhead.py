"""Per-layer overhead of irrun's run loop, outside the kernels, single thread.

Run by hand (never part of the test suite); needs the `openvino` package to build the models:

    python benchmarks/overhead.py [--layers 2000] [--repeat 20] [--baseline COMMIT]

The models are chains of --layers cheap elementwise layers (Relu, Negative, Abs in turn) on a tiny f32
tensor [1, 4], built with openvino and saved to a temporary folder: one with a static input shape, one with
a dynamic batch. Figures are CPU time of this process (time.process_time, so that other processes on a busy
machine count less) per layer, min and median of --repeat runs, the variants interleaved:

  kernels           the same kernels called directly one after the other (op.run with static infos)
  static / dynamic  `model.run`, the same input shape every run (a cached plan)
  new shape         `model.run` on the dynamic model with a new batch size every run (a plan built each run)

The overhead per executed layer is a run's min minus the kernels' min (medians suffer most from a busy
machine). With --baseline, the irrun package
of that git commit (extracted with `git archive` into a temporary folder and imported under another name)
is timed too, interleaved with the working tree's.
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import importlib  # noqa: E402
import itertools  # noqa: E402
import pathlib  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
from openvino import opset1  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import irrun  # noqa: E402
from irrun.ops import TensorInfo  # noqa: E402


def chain(layers: int, shape) -> ov.Model:
    p = opset1.parameter(shape, np.float32, name="x")
    node = p
    for i in range(layers):
        node = (opset1.relu, opset1.negative, opset1.absolute)[i % 3](node)
    return ov.Model([opset1.result(node)], [p], "chain")


def baseline_package(commit: str, folder: pathlib.Path):
    """The irrun package of `commit`, importable as `irrun_baseline`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "irrun"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / "irrun").rename(folder / "irrun_baseline")
    sys.path.insert(0, str(folder))
    return importlib.import_module("irrun_baseline")


def kernels_only(model, x):
    """Every non-input, non-Result layer's kernel called directly, in order, on static infos."""
    info = TensorInfo(x.shape, model.infos[(model.graph.parameters[0], 0)].type)
    calls = [model.graph.nodes[layer_id].op.run for layer_id in model.graph.order
             if model.graph.nodes[layer_id].ref.type not in ("Parameter", "Result")]

    def run():
        value = x
        for kernel in calls:
            value = kernel([value], [info], [info])[0]

    return run, len(calls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--baseline", help="a git commit whose irrun to time as well")
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal((1, 4)).astype(np.float32)
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        ov.save_model(chain(args.layers, [1, 4]), folder / "static.xml", compress_to_fp16=False)
        ov.save_model(chain(args.layers, [-1, 4]), folder / "dynamic.xml", compress_to_fp16=False)
        packages = {"irrun": irrun}
        if args.baseline:
            packages[f"irrun {args.baseline}"] = baseline_package(args.baseline, folder)
        kernels, count = kernels_only(irrun.load(folder / "static.xml"), x)
        batches = itertools.count(2)
        cases = {"kernels": kernels}
        for label, package in packages.items():
            static, dynamic = package.load(folder / "static.xml"), package.load(folder / "dynamic.xml")
            cases[f"{label}: static"] = lambda m=static: m.run([x])
            cases[f"{label}: dynamic"] = lambda m=dynamic: m.run([x])
            cases[f"{label}: new shape"] = lambda m=dynamic: m.run([np.repeat(x, next(batches), 0)])
        times = {name: [] for name in cases}
        for _ in range(args.repeat + 1):
            for name, fn in cases.items():
                started = time.process_time()
                fn()
                times[name].append(time.process_time() - started)
        kernel_min = min(times["kernels"][1:]) / count * 1e6
        print(f"chain of {count} elementwise layers on f32[1, 4]; CPU time per layer in us over {args.repeat} "
              f"interleaved runs")
        print(f"{'':28s} {'min':>7s} {'median':>7s} {'overhead':>9s}")
        for name, values in times.items():
            values = values[1:]  # the first run of each builds its plan
            low, mid = min(values) / count * 1e6, statistics.median(values) / count * 1e6
            overhead = "" if name == "kernels" else f"{low - kernel_min:9.2f}"
            print(f"{name:28s} {low:7.2f} {mid:7.2f} {overhead}")


if __name__ == "__main__":
    main()
