"""Per-layer overhead of irrun's run loop, outside the kernels, single thread.

Run by hand (never part of the test suite); needs the `openvino` package to build the model:

    python benchmarks/overhead.py [--layers 2000] [--repeat 20]

The model is a chain of --layers cheap elementwise layers (Relu, Negative, Abs in turn) on a
tiny f32 tensor [1, 4], built with openvino and saved to a temporary folder. Two figures per
layer, each the median of --repeat runs:

  run      `model.run` time divided by the number of layers
  kernels  the same kernels called directly one after the other (op.run with the layer's infos),
           divided by the number of layers
  overhead run - kernels: what the run loop itself costs per executed layer

A second model of the same chain with a dynamic batch dimension shows the cost when the plan
must first be built for a new input shape (the first run at each shape) and when it is cached.
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import pathlib  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
from openvino import opset1  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import irrun  # noqa: E402
from irrun.ops import TensorInfo  # noqa: E402


def chain(layers: int, shape) -> ov.Model:
    p = opset1.parameter(shape, np.float32, name="x")
    node = p
    for i in range(layers):
        node = (opset1.relu, opset1.negative, opset1.absolute)[i % 3](node)
    return ov.Model([opset1.result(node)], [p], "chain")


def median_time(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def kernels_only(model, x):
    """Every non-input, non-Result layer's kernel called directly, in order, on static infos."""
    calls = []
    info = TensorInfo(x.shape, model.infos[(model.graph.parameters[0], 0)].type)
    for layer_id in model.graph.order:
        node = model.graph.nodes[layer_id]
        if node.ref.type not in ("Parameter", "Result"):
            calls.append(node.op.run)

    def run():
        value = x
        for kernel in calls:
            value = kernel([value], [info], [info])[0]
        return value

    return run, len(calls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal((1, 4)).astype(np.float32)
    with tempfile.TemporaryDirectory() as folder:
        static_path = pathlib.Path(folder) / "static.xml"
        dynamic_path = pathlib.Path(folder) / "dynamic.xml"
        ov.save_model(chain(args.layers, [1, 4]), static_path, compress_to_fp16=False)
        ov.save_model(chain(args.layers, [-1, 4]), dynamic_path, compress_to_fp16=False)
        model = irrun.load(static_path)
        kernels, count = kernels_only(model, x)
        run = median_time(lambda: model.run([x]), args.repeat) / count * 1e6
        kern = median_time(kernels, args.repeat) / count * 1e6
        print(f"chain of {count} elementwise layers on f32[1, 4], median of {args.repeat} runs, us per layer")
        print(f"  static model:  run {run:6.2f}   kernels {kern:6.2f}   overhead {run - kern:6.2f}")
        dynamic = irrun.load(dynamic_path)
        cached = median_time(lambda: dynamic.run([x]), args.repeat) / count * 1e6
        batches = iter(range(2, 10 ** 9))
        new_shape = median_time(lambda: dynamic.run([np.repeat(x, next(batches), 0)]), max(3, args.repeat // 4))
        new_shape = new_shape / count * 1e6
        print(f"  dynamic model: run {cached:6.2f} (same shape each run)   "
              f"{new_shape:6.2f} (a new shape each run)")


if __name__ == "__main__":
    main()
