"""Scale-out: files checked per second and inputs run per second, serial vs a local process pool vs Dask.

Run by hand (never part of the test suite); needs the `dask` extra (pip install 'irrun[dask]'):

    python benchmarks/scale.py [--inputs 200] [--files 400] [--jobs 2]

Two workloads, each run with --jobs 1, --jobs N and --dask local (a LocalCluster of N worker processes
started for the run, its start-up included in the time, as a user of `--dask local` pays it):
  check  `irrun.check_many` over a corpus of small IRs: the shipped models' XML and --files mutations
         of them (tools/fuzz.py), so about half are broken in some way
  run    `irrun.run_batch` of a ResNet over --inputs random .npy files: torchvision's resnet18 (random
         weights, converted by openvino.convert_model, 1x3x224x224; needs torch, torchvision and openvino),
         or --model MODEL.xml (one input, static shape), e.g. models/torch_resnet/model.xml
Every library is held to one thread per process (OMP/MKL/OpenBLAS set before NumPy is imported), so
--jobs N uses N cores and nothing else. The results of each parallel mode are checked equal to the
serial ones before the figures are printed.
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import irrun  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import fuzz  # noqa: E402



def resnet18(directory: Path) -> Path:
    import openvino as ov
    import torch
    import torchvision

    torch.manual_seed(0)
    module = torchvision.models.resnet18(weights=None).eval()
    model = ov.convert_model(module, example_input=torch.zeros(1, 3, 224, 224), input=[1, 3, 224, 224])
    path = directory / "resnet18.xml"
    ov.save_model(model, path)
    return path


def make_corpus(directory: Path, count: int) -> list[Path]:
    seeds = fuzz.load_seeds([ROOT / "models"])
    rng = random.Random(3)
    paths = sorted((ROOT / "models").glob("*/model.xml"))
    for index in range(count):
        xml_bytes, bin_bytes, _ = fuzz.mutate(rng.choice(seeds), rng)
        (directory / f"m{index:04}.xml").write_bytes(xml_bytes)
        (directory / f"m{index:04}.bin").write_bytes(bin_bytes)
        paths.append(directory / f"m{index:04}.xml")
    return paths


def make_inputs(model: Path, directory: Path, count: int) -> list[Path]:
    (desc,) = irrun.load(model).inputs
    rng = np.random.default_rng(0)
    for index in range(count):
        np.save(directory / f"x{index:04}.npy", rng.standard_normal(desc.shape).astype(np.float32))
    return irrun.input_files(directory)


def timed(function):
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def outputs_of(directory: Path) -> dict:
    return {p.name: {k: v.tobytes() for k, v in np.load(p).items()} for p in sorted(directory.glob("*.npz"))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=200)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--model", type=Path, help="a model.xml with one statically shaped input")
    args = parser.parse_args()
    modes = {"--jobs 1": {"jobs": 1}, f"--jobs {args.jobs}": {"jobs": args.jobs},
             "--dask local": {"jobs": args.jobs, "dask": "local"}}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        (scratch / "corpus").mkdir()
        (scratch / "inputs").mkdir()
        model = args.model or resnet18(scratch)
        corpus = make_corpus(scratch / "corpus", args.files)
        inputs = make_inputs(model, scratch / "inputs", args.inputs)
        print(f"cores: {os.cpu_count()}; {len(corpus)} IRs to check, {args.inputs} inputs through {model.name}")
        rows, serial_reports, serial_outputs = [], None, None
        for mode, options in modes.items():
            reports, check_seconds = timed(lambda: irrun.check_many(corpus, **options))
            out = scratch / f"out{len(rows)}"
            batch, run_seconds = timed(lambda: irrun.run_batch(model, inputs, out, **options))
            assert not batch.failed, batch.failed[0].error
            outputs = outputs_of(out)
            if serial_reports is None:
                serial_reports, serial_outputs = reports, outputs
            assert reports == serial_reports, f"{mode}: reports differ from the serial run"
            assert outputs == serial_outputs, f"{mode}: outputs differ from the serial run"
            rows.append((mode, len(corpus) / check_seconds, len(inputs) / run_seconds))
    base_check, base_run = rows[0][1], rows[0][2]
    pool_run = rows[1][2]
    print(f"{'mode':<14}{'files/s':>10}{'x serial':>10}{'inputs/s':>10}{'x serial':>10}")
    for mode, files_per_s, inputs_per_s in rows:
        print(f"{mode:<14}{files_per_s:>10.1f}{files_per_s / base_check:>9.2f}x{inputs_per_s:>10.1f}"
              f"{inputs_per_s / base_run:>9.2f}x")
    print(f"run batch: --dask local at {rows[2][2] / pool_run:.2f}x the process pool's throughput")


if __name__ == "__main__":
    main()
