"""The irrun side of a benchmarks/models.py --zoo row, in its own process (numpy and irrun only, so that
its peak RSS is irrun's): python benchmarks/zoo_worker.py MODEL_FOLDER IRRUN_ROOT

Loads MODEL_FOLDER/model.xml with the irrun package found in IRRUN_ROOT, runs it once on inputs.npz and
writes the outputs to MODEL_FOLDER/irrun_out.npz, then answers on stdin/stdout (pickles): 'run N' with
N CPU times (time.process_time) of model.run, 'quit' with the peak RSS in bytes."""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import pathlib  # noqa: E402
import pickle  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def peak_rss() -> int:
    """VmHWM: the peak RSS of this process image (getrusage's ru_maxrss survives exec, so it would
    include the parent's peak)."""
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(folder, root):
    sys.path.insert(0, root)
    import irrun
    folder = pathlib.Path(folder)
    inputs = dict(np.load(folder / "inputs.npz"))
    out = sys.stdout.buffer
    try:
        model = irrun.load(folder / "model.xml")
        got = model.run(inputs)
        np.savez(folder / "irrun_out.npz", *got.values())
        reply = ("ok", None)
    except Exception as exc:  # noqa: BLE001  (reported in the table)
        text = str(exc).strip().splitlines()
        reply = ("error", f"{type(exc).__name__}: {text[0][:200] if text else ''}")
    pickle.dump(reply, out)
    out.flush()
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "run":
            times = []
            for _ in range(int(arg)):
                start = time.process_time()
                model.run(inputs)
                times.append(time.process_time() - start)
            pickle.dump(times, out)
            out.flush()
        else:
            break
    pickle.dump(peak_rss(), out)
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
