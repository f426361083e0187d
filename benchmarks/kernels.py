"""Per-kernel microbenchmarks: one op's `run` on one input, irrun now vs an earlier irrun checkout.

Run by hand (never part of the test suite), one thread:

    python benchmarks/kernels.py [--before DIR] [--only NAME ...] [--repeat 15] [--torch]

--before DIR  a checkout (or `git archive` export) of an earlier irrun: its kernels run interleaved
              with the current ones, on the same inputs, so that load from other processes on the
              machine falls on both alike (e.g. `git archive aab212b | tar -x -C /tmp/irrun-before`)
--torch       also time the PyTorch equivalent, when there is one

Times are the median of --repeat runs of CPU time of this thread (time.thread_time: on a shared
machine, waiting for the CPU is not counted), in milliseconds, for each kernel in turn.
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import pathlib  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def load_irrun(folder: pathlib.Path, name: str):
    """The irrun package in `folder`, imported under `name` (its imports are relative)."""
    init = folder / "irrun" / "__init__.py"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    importlib.import_module(f"{name}.ops")
    return module


def rng_data(shape, scale=1.0, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def conv_case(name, channels_in, channels_out, groups, size, kernel, stride=1):
    """A 2D convolution case on a 1 x channels_in x size x size input, padded by kernel // 2 on each side: a
    GroupConvolution (weights [groups, out/groups, in/groups, k, k]) when groups > 1, else a Convolution."""
    pad = kernel // 2
    attributes = {"strides": (stride, stride), "dilations": (1, 1), "pads_begin": (pad, pad), "pads_end": (pad, pad),
                  "auto_pad": "explicit"}
    per_group = (channels_out // groups, channels_in // groups, kernel, kernel)
    weight_shape = (groups, *per_group) if groups > 1 else per_group
    torch_weights = (channels_out, channels_in // groups, kernel, kernel)
    return {name: ("GroupConvolution" if groups > 1 else "Convolution", 1, attributes,
                   [rng_data((1, channels_in, size, size)), rng_data(weight_shape, 0.1)],
                   lambda t: lambda x, w: t.nn.functional.conv2d(x, w.reshape(torch_weights), stride=stride,
                                                                 padding=pad, groups=groups))}


# name: (op type, version, attributes, inputs (arrays; a second element that is an int array is a
#        constant the op reads at inference), torch equivalent or None)
def cases():
    import math
    act = rng_data((1, 256, 112, 112), 2.0)
    small = rng_data((1, 96, 112, 112), 4.0)
    scores = rng_data((1, 12, 197, 197), 3.0)
    return {
        "Gelu-7 erf 1x256x112x112": ("Gelu", 7, {"approximation_mode": "erf"}, [act],
                                     lambda t: t.nn.functional.gelu),
        "Gelu-7 erf 1x256x112x112 N(0, 0.7)": ("Gelu", 7, {"approximation_mode": "erf"}, [act * np.float32(0.35)],
                                               lambda t: t.nn.functional.gelu),
        "Gelu-7 tanh 1x256x112x112": ("Gelu", 7, {"approximation_mode": "tanh"}, [act],
                                      lambda t: lambda x: t.nn.functional.gelu(x, approximate="tanh")),
        "Erf-1 1x256x112x112": ("Erf", 1, {}, [act / math.sqrt(2)], lambda t: t.erf),
        "Clamp 0..6 1x96x112x112": ("Clamp", 1, {"min": 0.0, "max": 6.0}, [small],
                                    lambda t: t.nn.functional.relu6),
        "HSwish-4 1x96x112x112": ("HSwish", 4, {}, [small], lambda t: t.nn.functional.hardswish),
        "HSigmoid-5 1x96x112x112": ("HSigmoid", 5, {}, [small], lambda t: t.nn.functional.hardsigmoid),
        "Swish-4 1x96x112x112": ("Swish", 4, {}, [small], lambda t: t.nn.functional.silu),
        "Sigmoid-1 1x96x112x112": ("Sigmoid", 1, {}, [small], lambda t: t.sigmoid),
        "Relu-1 1x96x112x112": ("Relu", 1, {}, [small], lambda t: t.relu),
        "Exp-1 1x96x112x112": ("Exp", 1, {}, [small], lambda t: t.exp),
        "Mish-4 1x96x112x112": ("Mish", 4, {}, [small], lambda t: t.nn.functional.mish),
        "Softmax-8 1x12x197x197": ("Softmax", 8, {"axis": -1}, [scores],
                                   lambda t: lambda x: t.softmax(x, -1)),
        "LogSoftmax-5 1x12x197x197": ("LogSoftmax", 5, {"axis": -1}, [scores],
                                      lambda t: lambda x: t.log_softmax(x, -1)),
        "Interpolate-11 linear_onnx 1x21x28x28->224": (
            "Interpolate", 11, {"mode": "linear_onnx", "shape_calculation_mode": "sizes",
                                "coordinate_transformation_mode": "pytorch_half_pixel"},
            [rng_data((1, 21, 28, 28)), np.array([224, 224], np.int64), np.array([2, 3], np.int64)],
            lambda t: lambda x, *_: t.nn.functional.interpolate(x, size=(224, 224), mode="bilinear")),
        **conv_case("GroupConvolution depthwise 7x7 C=384 56x56", 384, 384, 384, 56, 7),
        **conv_case("GroupConvolution depthwise 3x3 C=96 112x112", 96, 96, 96, 112, 3),
        **conv_case("GroupConvolution depthwise 3x3 stride 2 C=144 112x112", 144, 144, 144, 112, 3, stride=2),
        **conv_case("GroupConvolution depthwise 5x5 C=1152 7x7", 1152, 1152, 1152, 7, 5),
        **conv_case("GroupConvolution depthwise 5x5 stride 2 C=72 56x56", 72, 72, 72, 56, 5, stride=2),
        **conv_case("GroupConvolution 8 channels/group 3x3 C=104 28x28", 104, 104, 13, 28, 3),
        **conv_case("Convolution 1x1 16->96 112x112", 16, 96, 1, 112, 1),
        **conv_case("Convolution 1x1 40->160 56x56", 40, 160, 1, 56, 1),
        **conv_case("Convolution 3x3 64->64 56x56", 64, 64, 1, 56, 3),
        **conv_case("Convolution 3x3 stride 2 3->32 224x224", 3, 32, 1, 224, 3, stride=2),
        "MVN-6 (LayerNorm) 1x3136x96": (
            "MVN", 6, {"normalize_variance": True, "eps": 1e-6, "eps_mode": "inside_sqrt"},
            [rng_data((1, 3136, 96)), np.array([-1], np.int64)],
            lambda t: lambda x, _: t.nn.functional.layer_norm(x, (96,), eps=1e-6)),
        "ScaledDotProductAttention 1x8x1500x64": (
            "ScaledDotProductAttention", 13, {"causal": False},
            [rng_data((1, 8, 1500, 64)), rng_data((1, 8, 1500, 64)), rng_data((1, 8, 1500, 64))],
            lambda t: t.nn.functional.scaled_dot_product_attention),
    }


def make_op(irrun, op_type, version, attrs, inputs):
    from_registry = irrun.ops.registry
    cls = from_registry.REGISTRY[(op_type, version)]
    values = {name: attr.default for name, attr in cls.attributes.items()}
    values.update(attrs)
    op = cls(values, from_registry.Context())
    f32 = irrun.ir.types.ELEMENT_TYPES["f32"]
    # the first input is data; int64 inputs are constants the op reads at inference (sizes, axes)
    infos = [from_registry.TensorInfo(tuple(a.shape), f32 if a.dtype == np.float32 else
                                      irrun.ir.types.ELEMENT_TYPES["i64"], a if a.dtype != np.float32 else None)
             for a in inputs]
    if op_type == "ScaledDotProductAttention":
        infos = [from_registry.TensorInfo(i.shape, i.type) for i in infos]
    out_infos = op.infer(infos)
    return lambda: op.run(inputs, infos, out_infos)


def median_ms(fns: dict, repeat: int) -> dict:
    times = {key: [] for key in fns}
    for fn in fns.values():
        fn()  # warm-up
    for _ in range(repeat):
        for key, fn in fns.items():
            start = time.thread_time()
            fn()
            times[key].append(time.thread_time() - start)
    return {key: statistics.median(t) * 1e3 for key, t in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=pathlib.Path, help="an earlier irrun checkout to compare with")
    parser.add_argument("--only", action="append", help="run only cases whose name contains this")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--torch", action="store_true")
    args = parser.parse_args(argv)
    now = load_irrun(ROOT, "irrun_now")
    before = load_irrun(args.before, "irrun_before") if args.before else None
    torch = None
    if args.torch:
        import torch
        torch.set_num_threads(1)
    header = ["kernel", "before ms", "now ms", "before/now", "torch ms", "now/torch"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
    for name, (op_type, version, attrs, inputs, torch_fn) in cases().items():
        if args.only and not any(s in name for s in args.only):
            continue
        fns = {"now": make_op(now, op_type, version, attrs, inputs)}
        if before is not None:
            fns["before"] = make_op(before, op_type, version, attrs, inputs)
        if torch is not None and torch_fn is not None:
            fn, tensors = torch_fn(torch), [torch.from_numpy(a) for a in inputs]
            fns["torch"] = lambda fn=fn, tensors=tensors: fn(*tensors)
        with np.errstate(all="ignore"):
            ms = median_ms(fns, args.repeat)
        cell = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        ratio = lambda a, b: "-" if a is None or b is None else f"{a / b:.2f}x"  # noqa: E731
        b, n, t = ms.get("before"), ms["now"], ms.get("torch")
        print(f"| {name} | {cell(b)} | {cell(n)} | {ratio(b, n)} | {cell(t)} | {ratio(n, t)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
