"""Pooling speed: irrun vs OpenVINO's CPU plugin vs PyTorch, single thread.

Run by hand (never part of the test suite); needs the `openvino` package, and `torch`
for the torch column:

    python benchmarks/pooling.py [--repeat 30] [--warmup 5]

Cases, on a seeded random f32 input [1, 64, 112, 112]:
  maxpool8   MaxPool-8 with its indices output (i64, axis 0): kernel 3, stride 2, pads 1
             torch: max_pool2d(x, 3, 2, 1, return_indices=True)
  adaptive   AdaptiveMaxPool-8 to 7x7 with indices (i32: the CPU plugin refuses i64)
             torch: adaptive_max_pool2d(x, 7, return_indices=True)

The IRs are built with openvino in a temporary folder. irrun is timed on the whole
model (`model.run`), OpenVINO on a compiled model's infer request, torch on the
functional call. Before timing, irrun's outputs must equal OpenVINO's exactly (values
and indices); torch's are checked too (its indices are per plane, so OpenVINO's are
compared modulo H*W). Each figure is the median of --repeat runs after --warmup runs.
Every library is held to one thread: the OMP/MKL/OpenBLAS variables are set before
NumPy is imported, torch.set_num_threads(1), and OpenVINO gets INFERENCE_NUM_THREADS=1
with INFERENCE_PRECISION_HINT=f32.
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import pathlib  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
from openvino import opset1, opset8  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # torch is optional
    torch = None

SHAPE = (1, 64, 112, 112)
OV_CONFIG = {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"}


# --------------------------------------------------------------------------- models

def _parameter():
    p = opset8.parameter(list(SHAPE), np.float32, name="input")
    p.output(0).get_tensor().set_names({"input"})
    return p


def _model(name, node, p):
    results = []
    for port, out_name in ((0, "values"), (1, "indices")):
        node.output(port).get_tensor().set_names({out_name})
        result = opset8.result(node.output(port))
        result.set_friendly_name(out_name)
        results.append(result)
    return ov.Model(results, [p], name)


def build_maxpool8():
    p = _parameter()
    node = opset8.max_pool(p, strides=[2, 2], dilations=[1, 1], pads_begin=[1, 1],
                           pads_end=[1, 1], kernel_shape=[3, 3], rounding_type="floor",
                           auto_pad=None, index_element_type="i64", axis=0, name="maxpool")
    return _model("maxpool8", node, p)


def build_adaptive():
    p = _parameter()
    size = opset1.constant(np.array([7, 7], dtype=np.int64), name="size")
    node = opset8.adaptive_max_pool(p, size, index_element_type="i32", name="adaptive_maxpool")
    return _model("adaptive_maxpool8", node, p)


CASES = {
    "maxpool8": dict(
        label="MaxPool-8 k3 s2 p1 + indices",
        build=build_maxpool8,
        torch=lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True),
    ),
    "adaptive": dict(
        label="AdaptiveMaxPool-8 7x7 + indices",
        build=build_adaptive,
        torch=lambda t: F.adaptive_max_pool2d(t, 7, return_indices=True),
    ),
}


# --------------------------------------------------------------------------- timing

def median_ms(fn, repeat, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def run_case(key, x, folder, args, irrun):
    case = CASES[key]
    xml = pathlib.Path(folder) / key / "model.xml"
    xml.parent.mkdir()
    ov.save_model(case["build"](), str(xml), compress_to_fp16=False)

    # OpenVINO CPU plugin, reading the same file irrun reads
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", OV_CONFIG)
    request = compiled.create_infer_request()
    names = [o.get_any_name() for o in compiled.outputs]
    assert names == ["values", "indices"], names

    def run_ov():
        request.infer({"input": x}, share_inputs=True, share_outputs=True)

    run_ov()
    ov_out = {n: np.array(request.get_tensor(o).data, copy=True)
              for n, o in zip(names, compiled.outputs)}

    row = dict(case=case["label"], irrun=None, openvino=None, torch=None)

    if irrun is not None:
        model = irrun.load(str(xml))
        got = model.run({"input": x})
        for name in names:
            np.testing.assert_array_equal(
                got[name], ov_out[name], err_msg=f"{key}: irrun {name} differs from OpenVINO")
            assert got[name].dtype == ov_out[name].dtype, (name, got[name].dtype)
        row["irrun"] = median_ms(lambda: model.run({"input": x}), args.repeat, args.warmup)

    row["openvino"] = median_ms(run_ov, args.repeat, args.warmup)

    if torch is not None:
        t = torch.from_numpy(x)
        fn = case["torch"]
        with torch.no_grad():
            values, indices = fn(t)
            np.testing.assert_array_equal(values.numpy(), ov_out["values"])
            plane = x.shape[2] * x.shape[3]
            np.testing.assert_array_equal(indices.numpy(), ov_out["indices"] % plane)
            row["torch"] = median_ms(lambda: fn(t), args.repeat, args.warmup)
    return row


# --------------------------------------------------------------------------- report

def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def ratio(a, b):
    return None if a is None or b is None else a / b


def print_table(rows):
    header = ["case", "irrun ms", "OpenVINO ms", "torch ms", "irrun/torch", "OpenVINO/irrun"]
    body = [[r["case"], fmt(r["irrun"], ".2f"), fmt(r["openvino"], ".2f"), fmt(r["torch"], ".2f"),
             fmt(ratio(r["irrun"], r["torch"]), ".2f") + ("x" if r["irrun"] and r["torch"] else ""),
             fmt(ratio(r["openvino"], r["irrun"]), ".1f") + ("x" if r["irrun"] else "")]
            for r in rows]
    widths = [max(len(line[i]) for line in [header] + body) for i in range(len(header))]
    line = lambda cells: "| " + " | ".join(  # noqa: E731
        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))) + " |"
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for cells in body:
        print(line(cells))


def print_targets(row):
    """The project's goal for MaxPool-8 with indices: <= 1.5x torch, >= 5x faster than OpenVINO."""
    if row is None or row["irrun"] is None:
        return
    print()
    vs_torch = ratio(row["irrun"], row["torch"])
    if vs_torch is not None:
        print(f"target irrun/torch <= 1.5x: {vs_torch:.2f}x "
              f"{'met' if vs_torch <= 1.5 else 'MISSED'}")
    vs_ov = ratio(row["openvino"], row["irrun"])
    print(f"target OpenVINO/irrun >= 5x: {vs_ov:.1f}x {'met' if vs_ov >= 5 else 'MISSED'}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed runs per figure (median)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed runs first")
    parser.add_argument("--case", choices=sorted(CASES), action="append",
                        help="run only this case (repeatable)")
    parser.add_argument("--without-irrun", action="store_true",
                        help="time only OpenVINO and torch (when irrun is not importable)")
    args = parser.parse_args(argv)

    irrun = None
    if not args.without_irrun:
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
        import irrun  # noqa: F811  (the checkout's irrun when not installed)
    if torch is not None:
        torch.set_num_threads(1)

    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    print(f"input f32{list(SHAPE)}, median of {args.repeat} runs after {args.warmup} warm-up, "
          f"1 thread")
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"openvino {ov.__version__.split('-')[0]}, "
          f"torch {torch.__version__ if torch is not None else 'not installed'}, "
          f"{platform.machine()}")
    print()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for key in args.case or list(CASES):
            rows.append(run_case(key, x, folder, args, irrun))
    print_table(rows)
    print_targets(rows[0] if (args.case or ["maxpool8"])[0] == "maxpool8" else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
