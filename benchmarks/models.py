"""Whole-model speed on the PyTorch-derived models: irrun vs OpenVINO's CPU plugin vs PyTorch eager.

Run by hand (never part of the test suite); needs `openvino` and `torch` (dev dependencies):

    python benchmarks/models.py [--repeat 40] [--warmup 3] [--model resnet ...] [--batch N]

For every models/torch_<name>/ folder written by models/make_torch_models.py, on its stored
inputs (batch 2; --batch N repeats them along the batch dim to N):
  irrun     irrun.load(model.xml).run(inputs): the whole model, loading not timed; before timing,
            its outputs are compared with OpenVINO's (rtol = atol = 1e-4, as tests/test_models.py)
  OpenVINO  the CPU plugin on the same model.xml, INFERENCE_NUM_THREADS=1,
            INFERENCE_PRECISION_HINT=f32, one infer request
  torch     the PyTorch module rebuilt from the definitions in models/make_torch_models.py (same
            seeded weights, f32, not f16-rounded), eval mode, torch.no_grad(), set_num_threads(1)
Each figure is the median of --repeat runs, in milliseconds; the three take turns in 5 blocks
of back-to-back runs, each block after --warmup untimed runs, so that load from other
processes skews the ratios less. Every library is held
to one thread: the OMP/MKL/OpenBLAS variables are set before NumPy is imported.

--zoo [DIR] times the zoo that benchmarks/make_zoo.py builds (default ~/.cache/irrun-zoo; 25
torchvision, timm and transformers networks with random weights) instead: irrun runs in its own
subprocess (benchmarks/zoo_worker.py: numpy and irrun only, so its peak RSS is irrun's, reported against the size of the weights as irrun holds
them, f32), OpenVINO and torch in this one; times are CPU time (time.process_time; on a shared
machine, waiting for a core is not counted). After --warmup runs of each, the three take turns one run at a
time for --repeat rounds; each time is the median of its runs, and each ratio the median of the rounds'
ratios (irrun's run over torch's run of the same round): this VM's speed drifts by up to 1.5x over minutes,
which moved whole-model ratios by up to 2x between runs of the old design (blocks of runs per library), while
the two runs of a round see the same machine. The table gives the quartiles of the rounds' irrun/torch ratios
beside their median: how far a model's ratio moves within one run (it still moves more between runs on this VM).
The table adds the medians of irrun/torch and irrun/OpenVINO over the models irrun ran. irrun's outputs are
compared with the plugin's; when they differ, again with the plugin running the model with stable="true" in its
TopK-11 layers (the reference kernel's order of tied values, which the plugin's stable=false order departs from:
docs/semantics.md, "Reductions, TopK"), and the note says which comparison passed.

When irrun cannot load or run a model (an op it does not implement yet, say), its row says
"irrun: unsupported (...)", listing every op of the IR irrun's registry lacks, and the
benchmark goes on with the next model.
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import pathlib  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import xml.etree.ElementTree as ET  # noqa: E402

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
import torch  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
OV_CONFIG = {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"}
RTOL = ATOL = 1e-4


def load_definitions():
    """models/make_torch_models.py as a module (NETWORKS, build_module)."""
    spec = importlib.util.spec_from_file_location("make_torch_models", MODELS / "make_torch_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def median_ms(fns: dict, repeat, warmup, rounds=5) -> dict:
    """Median milliseconds per callable. The callables take turns in `rounds` blocks of consecutive
    runs (each block after `warmup` untimed runs): runs stay back to back, so warm caches and an awake
    OpenVINO worker are measured as in steady use, while load from other processes on the machine
    falls on all of them alike."""
    times = {key: [] for key in fns}
    per_round = [repeat // rounds + (i < repeat % rounds) for i in range(rounds)]
    for count in per_round:
        for key, fn in fns.items():
            for _ in range(warmup):
                fn()
            for _ in range(count):
                start = time.perf_counter()
                fn()
                times[key].append(time.perf_counter() - start)
    return {key: statistics.median(t) * 1e3 for key, t in times.items()}


def stored_inputs(folder: pathlib.Path) -> dict:
    if (folder / "inputs.npz").exists():
        return dict(np.load(folder / "inputs.npz"))
    return {"input": np.load(folder / "input.npy")}


def batched(inputs: dict, batch: int | None, batch_dims: dict) -> dict:
    if batch is None:
        return inputs
    out = {}
    for key, arr in inputs.items():
        axis = batch_dims.get(key, 0)
        reps = -(-batch // arr.shape[axis])
        out[key] = np.ascontiguousarray(np.take(np.concatenate([arr] * reps, axis=axis),
                                                range(batch), axis=axis))
    return out


def missing_ops(xml_path) -> list[str]:
    """The op types/versions in the IR that irrun's registry lacks (best effort)."""
    try:
        from irrun.ir.opsets import resolve
        from irrun.ops import lookup
    except ImportError:
        return []
    missing = []
    for layer in ET.parse(xml_path).getroot().iter("layer"):
        op_type, version = resolve(layer.get("type"), layer.get("version", ""))
        label = f"{op_type}-{version if version is not None else '?'}"
        if lookup(op_type, version) is None and label not in missing:
            missing.append(label)
    return missing


def zoo_atol(want: np.ndarray) -> float:
    """1e-3, plus 2e-5 of the output's largest magnitude: a value near 0 computed from values of hundreds
    (RetinaNet's box coordinates, up to 320) carries their rounding, and moves by 4e-3 between the CPU
    plugin's own AVX2 and AVX-512 paths."""
    finite = np.abs(want[np.isfinite(want)]) if want.dtype.kind == "f" else np.abs(want)
    return 1e-3 + 2e-5 * float(finite.max(initial=0))


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def compare(got: dict, want: dict) -> str | None:
    """None when irrun's outputs match OpenVINO's, else a short description of the first mismatch."""
    if list(got) != list(want):
        return f"output names {list(got)} != {list(want)}"
    for name, w in want.items():
        g = got[name]
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"{name}: {g.dtype}{list(g.shape)} != {w.dtype}{list(w.shape)}"
        if not np.allclose(g, w, rtol=RTOL, atol=ATOL):
            return f"{name}: max |diff| {float(np.max(np.abs(g.astype(np.float64) - w))):.2e}"
    return None


def run_model(name, defs, args, irrun):
    folder = MODELS / f"torch_{name}"
    xml = folder / "model.xml"
    spec = defs.NETWORKS[name]
    inputs = batched(stored_inputs(folder), args.batch, spec.get("batch_dims", {}))
    row = dict(model=f"torch_{name}", batch=next(iter(inputs.values())).shape[0],
               irrun=None, openvino=None, torch=None, note="")

    # OpenVINO CPU plugin
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", OV_CONFIG)
    request = compiled.create_infer_request()

    def run_ov():
        request.infer(inputs, share_inputs=True, share_outputs=True)

    run_ov()
    ov_out = {o.get_any_name(): np.array(request.get_tensor(o).data, copy=True) for o in compiled.outputs}
    timed = {"openvino": run_ov}

    # irrun
    if irrun is not None:
        try:
            model = irrun.load(xml)
            got = model.run(inputs)
        except Exception as exc:  # noqa: BLE001  (a benchmark row, not a crash)
            unsupported = isinstance(exc, getattr(irrun.errors, "UnsupportedOpError", ())) or \
                "unsupported" in str(exc).lower()
            missing = missing_ops(xml)
            if unsupported or missing:
                row["note"] = f"irrun: unsupported ({', '.join(missing) or first_line(exc)})"
            else:
                row["note"] = f"irrun: error ({type(exc).__name__}: {first_line(exc)})"
        else:
            mismatch = compare(got, ov_out)
            if mismatch:
                row["note"] = f"irrun: MISMATCH vs OpenVINO ({mismatch})"
            timed["irrun"] = lambda: model.run(inputs)

    # PyTorch eager, rebuilt from the definitions
    module = defs.build_module(name)
    tensors = [torch.from_numpy(v) for v in inputs.values()]
    with torch.no_grad():
        out = module(*tensors)
        out = out if isinstance(out, tuple) else (out,)
        for o, w in zip(out, ov_out.values()):   # f32 vs f16-compressed weights: a loose sanity check
            assert np.allclose(o.numpy(), w, rtol=1e-2, atol=1e-2), f"{name}: torch disagrees with OpenVINO"
        timed["torch"] = lambda: module(*tensors)
        row.update(median_ms(timed, args.repeat, args.warmup))
    return row


# --------------------------------------------------------------------------- zoo

ZOO_DEFAULT = pathlib.Path.home() / ".cache" / "irrun-zoo"


def load_zoo_definitions():
    spec = importlib.util.spec_from_file_location("make_zoo", ROOT / "benchmarks" / "make_zoo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def weight_bytes(xml_path) -> int:
    """Bytes of the model's float weights as irrun holds them: f16/bf16 Consts decompressed to f32."""
    total = 0
    for layer in ET.parse(xml_path).getroot().iter("layer"):
        if layer.get("type") != "Const":
            continue
        data = layer.find("data")
        size = int(data.get("size", 0))
        total += size * 2 if data.get("element_type") in ("f16", "bf16") else size
    return total


def zoo_mismatch(got, want) -> str | None:
    return next((f"output {i}: max |diff| {float(np.max(np.abs(g - w))):.1e}"
                 for i, (g, w) in enumerate(zip(got, want))
                 if g.shape != w.shape or not np.allclose(g, w, rtol=1e-3, atol=zoo_atol(w))), None)


def stable_topk_outputs(core, xml, inputs) -> list:
    """The CPU plugin's outputs for the model with stable="true" written into its TopK-11 layers.

    TopK-11 stable=false leaves the order of tied values open; OpenVINO's reference kernel (and irrun) give
    them in index order, which stable=true asks of the plugin, so this twin differs from the model only where
    the plugin's own tie order does (tests/test_topk_ties.py). Random weights tie every class score of the
    zoo's SSDlite."""
    text = re.sub(r'(<layer\b[^>]*type="TopK"[^>]*>\s*<data\b[^>]*?)stable="false"', r'\1stable="true"',
                  xml.read_text())
    weights = ov.Tensor(np.fromfile(xml.with_suffix(".bin"), dtype=np.uint8))
    compiled = core.compile_model(core.read_model(text, weights), "CPU", OV_CONFIG)
    result = compiled(inputs)
    return [np.array(result[o], copy=True) for o in compiled.outputs]


def run_zoo_model(name, zoo, folder, args):
    import pickle
    import subprocess
    xml = folder / "model.xml"
    inputs = dict(np.load(folder / "inputs.npz"))
    row = dict(model=name, batch=next(iter(inputs.values())).shape[0], irrun=None, openvino=None, torch=None,
               note="", rss=None, weights=weight_bytes(xml))
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", OV_CONFIG)
    request = compiled.create_infer_request()
    request.infer(inputs)
    ov_out = [np.array(request.get_tensor(o).data, copy=True) for o in compiled.outputs]
    module, _ = zoo.build_module(name)
    tensors = [torch.from_numpy(a) for a in inputs.values()]

    def run_ov():
        request.infer(inputs, share_inputs=True, share_outputs=True)

    def run_torch():
        with torch.no_grad():
            module(*tensors)

    worker = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "zoo_worker.py"), str(folder),
                               str(args.irrun_root or ROOT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        status, message = pickle.load(worker.stdout)
    except EOFError:  # the worker died (out of memory, say)
        status, message = "error", f"the irrun process ended with code {worker.wait()}"
    timed = {"openvino": run_ov, "torch": run_torch}
    if status == "ok":
        got = list(np.load(folder / "irrun_out.npz").values())
        mismatch = zoo_mismatch(got, ov_out)
        if mismatch and zoo_mismatch(got, stable_topk_outputs(core, xml, inputs)) is None:
            row["note"] = ("irrun: matches OpenVINO with stable TopKs (the plugin's order of tied TopK-11 "
                           f"stable=false values departs from the reference: docs/semantics.md; as exported: {mismatch})")
        elif mismatch:
            row["note"] = f"irrun: MISMATCH vs OpenVINO ({mismatch})"

        def run_irrun(count):
            worker.stdin.write(f"run {count}\n".encode())
            worker.stdin.flush()
            return pickle.load(worker.stdout)
        timed["irrun"] = run_irrun
    else:
        missing = missing_ops(xml)
        row["note"] = f"irrun: unsupported ({', '.join(missing)})" if missing else f"irrun: error ({message})"
    times = {key: [] for key in timed}
    for key, fn in timed.items():  # warm-up
        fn(args.warmup) if key == "irrun" else [fn() for _ in range(args.warmup)]
    for _ in range(args.repeat):  # rounds: one run of each, back to back
        for key, fn in timed.items():
            if key == "irrun":
                times[key] += fn(1)
                continue
            start = time.process_time()
            fn()
            times[key].append(time.process_time() - start)
    row.update({key: statistics.median(t) * 1e3 for key, t in times.items() if t})
    for other in ("torch", "openvino"):
        if times.get("irrun"):
            ratios = [i / o for i, o in zip(times["irrun"], times[other])]
            row[f"irrun/{other}"] = statistics.median(ratios)
            row[f"irrun/{other} spread"] = quartiles(ratios)
    if status == "ok":
        worker.stdin.write(b"quit\n")
        worker.stdin.flush()
        row["rss"] = pickle.load(worker.stdout)
    worker.kill()
    worker.wait()
    return row


def quartiles(values):
    """(first, third) quartile of `values`; None for fewer than two."""
    if len(values) < 2:
        return None
    first, _, third = statistics.quantiles(values, n=4)
    return first, third


def print_zoo_table(rows):
    print("| model | irrun ms | OpenVINO ms | torch ms | irrun/torch | rounds' quartiles | irrun/OpenVINO "
          "| peak RSS MB | weights MB (f32) | note |")
    print("|:---|---:|---:|---:|---:|---:|---:|---:|---:|:---|")
    for r in rows:
        mb = lambda v: "-" if v is None else f"{v / 2**20:.0f}"  # noqa: E731
        spread = r.get("irrun/torch spread")
        print(f"| {r['model']} | {fmt(r['irrun'])} | {fmt(r['openvino'])} | {fmt(r['torch'])} "
              f"| {fmt(r.get('irrun/torch'), suffix='x')} "
              f"| {'-' if spread is None else f'{spread[0]:.2f}-{spread[1]:.2f}'} "
              f"| {fmt(r.get('irrun/openvino'), '.1f', 'x')} | {mb(r['rss'])} | {mb(r['weights'])} "
              f"| {r['note']} |", flush=True)
    vs_torch = [r["irrun/torch"] for r in rows if r.get("irrun/torch") is not None]
    vs_ov = [r["irrun/openvino"] for r in rows if r.get("irrun/openvino") is not None]
    if vs_torch:
        print(f"\nmedian over {len(vs_torch)} models: irrun/torch {statistics.median(vs_torch):.2f}x, "
              f"irrun/OpenVINO {statistics.median(vs_ov):.1f}x; worst irrun/torch {max(vs_torch):.2f}x")


def main_zoo(args):
    zoo = load_zoo_definitions()
    names = args.only or list(zoo.ZOO)
    rows = []
    print(f"zoo {args.zoo}: {args.repeat} rounds of one run each (CPU time) after {args.warmup} warm-up, 1 thread; "
          f"numpy {np.__version__}, openvino {ov.__version__.split('-')[0]}, torch {torch.__version__}\n")
    for name in names:
        folder = args.zoo / name
        if not (folder / "model.xml").exists():
            print(f"{name}: not built (run benchmarks/make_zoo.py)")
            continue
        rows.append(run_zoo_model(name, zoo, folder, args))
        print(f"  {name}: irrun {fmt(rows[-1]['irrun'])} ms, torch {fmt(rows[-1]['torch'])} ms "
              f"{rows[-1]['note']}", file=sys.stderr, flush=True)
    print_zoo_table(rows)
    return 0


# --------------------------------------------------------------------------- report

def fmt(v, spec=".2f", suffix=""):
    return "-" if v is None else format(v, spec) + suffix


def ratio(a, b):
    return None if a is None or b is None else a / b


def print_table(rows):
    header = ["model", "batch", "irrun ms", "OpenVINO ms", "torch ms", "irrun/torch", "irrun/OpenVINO", "note"]
    body = []
    for r in rows:
        irrun_cell = fmt(r["irrun"]) if r["irrun"] is not None else (r["note"] or "-")
        note = r["note"] if r["irrun"] is not None else ""
        body.append([r["model"], str(r["batch"]), irrun_cell, fmt(r["openvino"]), fmt(r["torch"]),
                     fmt(ratio(r["irrun"], r["torch"]), suffix="x"),
                     fmt(ratio(r["irrun"], r["openvino"]), ".1f", "x"), note])
    if not any(cells[-1] for cells in body):
        header, body = header[:-1], [cells[:-1] for cells in body]
    widths = [max(len(line[i]) for line in [header] + body) for i in range(len(header))]
    left = {0, len(header) - 1} if header[-1] == "note" else {0}

    def line(cells):
        return "| " + " | ".join(c.ljust(w) if i in left else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    print(line(header))
    print("|" + "|".join((":" + "-" * (w + 1)) if i in left else ("-" * (w + 1) + ":")
                         for i, w in enumerate(widths)) + "|")
    for cells in body:
        print(line(cells))


def print_target(rows):
    """The project's goal: the ResNet-style model within 3x of PyTorch eager, single thread."""
    for r in rows:
        if r["model"] == "torch_resnet":
            vs = ratio(r["irrun"], r["torch"])
            print()
            if vs is None:
                print("target torch_resnet irrun/torch <= 3x: not measured (irrun did not run it)")
            else:
                print(f"target torch_resnet irrun/torch <= 3x: {vs:.2f}x {'met' if vs <= 3 else 'MISSED'}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=40, help="timed runs per figure (median)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs before each block of timed runs")
    parser.add_argument("--model", action="append", help="run only this model (repeatable)")
    parser.add_argument("--zoo", nargs="?", const=ZOO_DEFAULT, type=pathlib.Path,
                        help="time the zoo built by benchmarks/make_zoo.py (default ~/.cache/irrun-zoo)")
    parser.add_argument("--irrun-root", type=pathlib.Path,
                        help="--zoo: run the irrun package in this checkout (an earlier version, say)")
    parser.add_argument("--batch", type=int, help="repeat the stored inputs to this batch size")
    parser.add_argument("--without-irrun", action="store_true", help="time only OpenVINO and torch")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.zoo:
        args.only = args.model
        return main_zoo(args)
    defs = load_definitions()
    irrun = None
    if not args.without_irrun:
        sys.path.insert(0, str(ROOT))
        import irrun  # noqa: F811  (the checkout's irrun when not installed)
        import irrun.errors  # noqa: F401
    torch.set_num_threads(1)

    print(f"median of {args.repeat} runs after {args.warmup} warm-up, 1 thread; "
          f"python {platform.python_version()}, numpy {np.__version__}, "
          f"openvino {ov.__version__.split('-')[0]}, torch {torch.__version__}, {platform.machine()}")
    print()
    rows = [run_model(name, defs, args, irrun) for name in args.model or list(defs.NETWORKS)]
    print_table(rows)
    print_target(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
