"""Every convolution layer of a zoo model, timed alone: irrun's kernel vs torch's, one thread.

Run by hand (never part of the test suite):

    python benchmarks/conv_layers.py MODEL [MODEL ...] [--zoo DIR] [--repeat 7] [--layers]

For each Convolution / GroupConvolution step of the model's plan (on its stored inputs), irrun's kernel
runs on random data of the planned shapes and torch.nn.functional.conv2d/conv3d on the same arrays (pads
applied with F.pad when they are uneven). Prints, per model, the summed medians of CPU time (time.thread_time)
per layer kind (pointwise 1x1, depthwise, other) and, with --layers, every layer. Which irrun runs is the
one on PYTHONPATH: run it once per checkout to compare versions (ratios against torch from the same run).
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import pathlib  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import irrun  # noqa: E402
from irrun.ops.convolution import forward_geometry, _auto_pad  # noqa: E402

ZOO = pathlib.Path.home() / ".cache" / "irrun-zoo"


def median_ms(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        fn()
        times.append(time.thread_time() - start)
    return statistics.median(times) * 1e3


def kind_of(op_type, x_shape, w_shape):
    spatial = len(x_shape) - 2
    if op_type == "GroupConvolution" and w_shape[2] == 1:
        return "depthwise"
    if all(k == 1 for k in w_shape[-spatial:]):
        return "pointwise"
    return "other"


def torch_conv(op, x, w, groups):
    spatial = x.ndim - 2
    pb, pe = op.pads_begin or (0,) * spatial, op.pads_end or (0,) * spatial
    _, begins, ends = forward_geometry(x.shape[2:], w.shape[-spatial:], op.strides, op.dilations, pb, pe,
                                       _auto_pad(op.auto_pad))
    tx = torch.from_numpy(x)
    tw = torch.from_numpy(w.reshape(-1, *w.shape[-spatial - 1:]))
    conv = torch.nn.functional.conv2d if spatial == 2 else torch.nn.functional.conv3d
    if list(begins) == list(ends) and min(begins) >= 0:
        return lambda: conv(tx, tw, stride=op.strides, padding=tuple(begins), dilation=op.dilations, groups=groups)
    pad = [p for b, e in zip(reversed(begins), reversed(ends)) for p in (b, e)]
    return lambda: conv(torch.nn.functional.pad(tx, pad), tw, stride=op.strides, dilation=op.dilations,
                        groups=groups)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--zoo", type=pathlib.Path, default=ZOO)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--layers", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    print("| model | kind | layers | irrun ms | torch ms | irrun/torch |")
    print("|:---|:---|---:|---:|---:|---:|")
    for name in args.models:
        folder = args.zoo / name
        model = irrun.load(folder / "model.xml")
        feeds = np.load(folder / "inputs.npz")
        plan = model.plan([feeds[k].shape for k in feeds.files])
        totals = {}
        for step in plan.kernels:
            op_type = step.node.ref.type
            if op_type not in ("Convolution", "GroupConvolution") or len(step.in_infos[0].shape) not in (4, 5):
                continue
            x_shape, w_shape = step.in_infos[0].shape, step.in_infos[1].shape
            x = rng.standard_normal(x_shape).astype(np.float32)
            w = (rng.standard_normal(w_shape) * 0.1).astype(np.float32)
            groups = w_shape[0] if op_type == "GroupConvolution" else 1
            ours = median_ms(lambda step=step, x=x, w=w: step.kernel([x, w], step.in_infos, step.out_infos), args.repeat)
            theirs = median_ms(torch_conv(step.node.op, x, w, groups), args.repeat)
            kind = kind_of(op_type, x_shape, w_shape)
            count, a, b = totals.get(kind, (0, 0.0, 0.0))
            totals[kind] = (count + 1, a + ours, b + theirs)
            if args.layers:
                print(f"| {name} {step.node.ref.name[:40]} x{list(x_shape)} w{list(w_shape)} "
                      f"s{list(step.node.op.strides)} | {kind} | 1 | {ours:.2f} | {theirs:.2f} | "
                      f"{ours / theirs:.2f}x |", flush=True)
        for kind, (count, a, b) in sorted(totals.items()):
            print(f"| {name} | {kind} | {count} | {a:.2f} | {b:.2f} | {a / b:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
