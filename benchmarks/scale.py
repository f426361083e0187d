"""Scale-out: files checked per second and inputs run per second, serial vs a local process pool vs Dask.

Run by hand (never part of the test suite); needs the `dask` extra (pip install 'irrun[dask]'):

    python benchmarks/scale.py [--inputs 200] [--files 2000] [--jobs 2]

Two workloads, each run with --jobs 1, --jobs N, --dask local and --dask ADDRESS:
  --dask local    a LocalCluster of N worker processes started for the run, as a user of `--dask local` gets
                  it; its start-up is in the time, and is also timed alone (start and close, nothing run, in
                  a fresh process that imported Dask before) and printed, with the throughput less that
                  start-up
  --dask ADDRESS  a warm cluster, as a user with a running one has: a plain distributed.LocalCluster of N
                  single-threaded workers (Dask's default worker settings) in a process of its own, started
                  before the timing (and stopped after it: idle, it takes a tenth of a core the other modes
                  should not pay), irrun imported on its workers, its address passed; the workers load the
                  model on their first task
  check  `irrun.check_many` over a corpus of small IRs: the shipped models' XML and --files mutations
         of them (tools/fuzz.py), so about half are broken in some way. 2,000 by default: about 12 s of work
         for two workers, so files/s measures checking rather than Dask's fixed costs (its import in the client,
         0.3-0.5 s, and for --dask local the cluster's start, printed apart); --files 400 shows those costs
  run    `irrun.run_batch` of a ResNet over --inputs random .npy files: torchvision's resnet18 (random
         weights, converted by openvino.convert_model, 1x3x224x224; needs torch, torchvision and openvino),
         or --model MODEL.xml (one input; a dynamic dimension is given 1), e.g. models/torch_resnet/model.xml
Each timed run is a fresh Python process, as a command would be.
With --repeat R every mode runs R times, in turns, and the median time is used (the machine may be shared).
Every library is held to one thread per process (OMP/MKL/OpenBLAS set before NumPy is imported), so
--jobs N uses N cores and nothing else. The results of each parallel mode are checked equal to the
serial ones before the figures are printed.
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import multiprocessing  # noqa: E402
import subprocess  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from contextlib import contextmanager, nullcontext  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))  # the clusters
sys.path.insert(0, str(ROOT / "tools"))
import irrun  # noqa: E402
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
    shape = [1 if dim is None else dim for dim in desc.shape]  # a dynamic dimension gets 1
    rng = np.random.default_rng(0)
    for index in range(count):
        np.save(directory / f"x{index:04}.npy", rng.standard_normal(shape).astype(np.float32))
    return irrun.input_files(directory)


def timed(function):
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def outputs_of(directory: Path) -> dict:
    return {p.name: {k: v.tobytes() for k, v in np.load(p).items()} for p in sorted(directory.glob("*.npz"))}


WARM_CLUSTER = """
import importlib, sys, distributed
with distributed.LocalCluster(n_workers=int(sys.argv[1]), threads_per_worker=1, dashboard_address=":0") as cluster:
    with distributed.Client(cluster) as client:
        client.run(importlib.import_module, "irrun")  # as after an earlier command
    print(cluster.scheduler_address, flush=True)
    sys.stdin.read()
"""
WARM = "a warm cluster's address"


@contextmanager
def warm_cluster(jobs: int):
    """The address of a plain LocalCluster running in a process of its own, for the `with` block only: an idle
    Dask cluster takes about a tenth of a core, which the other modes' runs should not pay."""
    warm = subprocess.Popen([sys.executable, "-c", WARM_CLUSTER, str(jobs)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        yield warm.stdout.readline().strip()
    finally:
        warm.stdin.close()
        warm.wait()


def local_cluster_startup(jobs: int) -> float:
    """Seconds to start and close the LocalCluster `--dask local` uses, with nothing run on it (in a process
    that has imported Dask before: its client imports Dask whatever the cluster, while the cluster starts)."""
    import distributed  # noqa: F401

    from irrun.scale.dask_local import LocalDaskCluster

    started = time.perf_counter()
    with LocalDaskCluster(jobs) as cluster:
        cluster.address()
    return time.perf_counter() - started


def measure(corpus, model, inputs, out, options) -> tuple:
    """In a fresh process: (check reports, their seconds, outputs, run seconds)."""
    reports, check_seconds = timed(lambda: irrun.check_many(corpus, **options))
    batch, run_seconds = timed(lambda: irrun.run_batch(model, inputs, out, **options))
    assert not batch.failed, batch.failed[0].error
    return reports, check_seconds, outputs_of(out), run_seconds


def in_fresh_process(function, *args):
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as process:
        return process.submit(function, *args).result()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=200)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--model", type=Path, help="a model.xml with one input")
    args = parser.parse_args()
    modes = {"--jobs 1": {"jobs": 1}, f"--jobs {args.jobs}": {"jobs": args.jobs},
             "--dask local": {"jobs": args.jobs, "dask": "local"}, "--dask ADDRESS": {"dask": WARM}}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        (scratch / "corpus").mkdir()
        (scratch / "inputs").mkdir()
        model = args.model or resnet18(scratch)
        corpus = make_corpus(scratch / "corpus", args.files)
        inputs = make_inputs(model, scratch / "inputs", args.inputs)
        print(f"cores: {os.cpu_count()}; {len(corpus)} IRs to check, {args.inputs} inputs through {model.name}")
        times = {mode: ([], []) for mode in modes}
        startups = []
        serial = None
        for turn in range(args.repeat):
            for index, (mode, options) in enumerate(modes.items()):
                out = scratch / f"out-{turn}-{index}"
                dask = options.get("dask")
                with warm_cluster(args.jobs) if dask == WARM else nullcontext(dask) as dask:
                    reports, check_seconds, outputs, run_seconds = in_fresh_process(
                        measure, corpus, model, inputs, out, dict(options, dask=dask))
                serial = serial or (reports, outputs)
                assert reports == serial[0], f"{mode}: reports differ from the serial run"
                assert outputs == serial[1], f"{mode}: outputs differ from the serial run"
                times[mode][0].append(check_seconds)
                times[mode][1].append(run_seconds)
            startups.append(in_fresh_process(local_cluster_startup, args.jobs))
    startup = float(np.median(startups))
    rows = [(mode, float(np.median(check)), float(np.median(run))) for mode, (check, run) in times.items()]
    rows.insert(3, ("  less start-up", rows[2][1] - startup, rows[2][2] - startup))
    (_, base_check, base_run), (_, pool_check, pool_run) = rows[0], rows[1]
    print(f"LocalCluster start-up and close ({args.jobs} workers): {startup:.2f} s (median of {len(startups)})")
    print(f"{'mode':<16}{'files/s':>10}{'x serial':>10}{'x pool':>8}{'inputs/s':>10}{'x serial':>10}{'x pool':>8}")
    for mode, check_seconds, run_seconds in rows:
        print(f"{mode:<16}{len(corpus) / check_seconds:>10.1f}{base_check / check_seconds:>9.2f}x"
              f"{pool_check / check_seconds:>7.2f}x{len(inputs) / run_seconds:>10.1f}"
              f"{base_run / run_seconds:>9.2f}x{pool_run / run_seconds:>7.2f}x")
    print("each run's seconds, in turn order (check; run):")
    for mode, (check, run) in times.items():
        print(f"  {mode:<16}{' '.join(f'{t:.2f}' for t in check)};  {' '.join(f'{t:.2f}' for t in run)}")


if __name__ == "__main__":
    main()
