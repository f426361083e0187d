"""Many inputs through one model and many files through the checker, serially, in a local process pool or on
Dask (irrun/scale/parallel.py). Workers load the model themselves, once each, from its path: the core does not
know it is distributed."""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Iterable

from ..tools.arrays import bind_inputs, save_outputs
from ..tools.check import ERROR, Diagnostic, Report, check
from ..errors import InputError, IRError
from .parallel import TaskFailed, map_ordered
from ..engine.loader import load
from ..engine.runtime import Model

INPUT_SUFFIXES = (".npy", ".npz")


@dataclass(frozen=True)
class BatchItem:
    """One input of a batch: where its outputs went, or the one-line error that stopped it."""

    input: str
    output: str | None
    error: str | None
    seconds: float

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class BatchReport:
    items: list[BatchItem]
    seconds: float

    @property
    def failed(self) -> list[BatchItem]:
        return [item for item in self.items if not item.ok]

    def summary(self) -> str:
        count = len(self.items)
        inputs = "1 input" if count == 1 else f"{count} inputs"
        return f"ran {inputs} in {self.seconds:.1f} s: {count - len(self.failed)} done, {len(self.failed)} failed"


def input_files(directory) -> list[Path]:
    """The .npy and .npz files directly in `directory`, sorted by name; two files with one stem would
    write one output file, so that is an error."""
    path = Path(directory)
    if not path.is_dir():
        raise InputError(f"{directory} is not a directory")
    files = sorted(p for p in path.iterdir() if p.suffix.lower() in INPUT_SUFFIXES and p.is_file())
    if not files:
        raise InputError(f"{directory} has no .npy or .npz files")
    stems: dict[str, Path] = {}
    for file in files:
        if file.stem in stems:
            raise InputError(f"{stems[file.stem].name} and {file.name} would both write {file.stem}.npz")
        stems[file.stem] = file
    return files


@dataclass(frozen=True)
class RunJob:
    model: str
    max_memory: int | None
    input: str
    output: str


_WORKER_MODELS: dict = {}  # in each worker process: the one model it has loaded (or its parent did)


def _worker_model(path: str, max_memory: int | None) -> Model:
    key = (path, max_memory)
    if key not in _WORKER_MODELS:
        _WORKER_MODELS.clear()
        _WORKER_MODELS[key] = load(path, max_memory=max_memory)
    return _WORKER_MODELS[key]


def run_one(job: RunJob, model: Model | None = None) -> BatchItem:
    """Run one input file and save its outputs; every failure becomes the item's error line."""
    started = time.perf_counter()
    try:
        model = model or _worker_model(job.model, job.max_memory)
        if job.input.lower().endswith(".npy") and len(model.inputs) != 1:
            raise InputError(f"a .npy file feeds a model with one input; this one has {len(model.inputs)}: "
                             f"use .npz files keyed by input name")
        save_outputs(job.output, model.run(bind_inputs(model, [job.input])))
    except IRError as exc:
        return BatchItem(job.input, None, _about_input(job.input, str(exc)), time.perf_counter() - started)
    except Exception as exc:  # noqa: BLE001 - one input's internal error must not stop the batch
        return BatchItem(job.input, None, f"{job.input}: internal error ({type(exc).__name__}: {exc}); please "
                         f"report it with the model", time.perf_counter() - started)
    return BatchItem(job.input, job.output, None, time.perf_counter() - started)


def _about_input(path: str, message: str) -> str:
    return message if message.startswith(f"{path}:") else f"{path}: {message}"


def run_batch(model, inputs: Iterable, outputs_dir, jobs: int = 1, dask: str | None = None,
              max_memory: int | None = None, on_result: Callable | None = None) -> BatchReport:
    """Run `model` (a loaded Model or a model.xml path) once per input file, writing
    `outputs_dir/<stem>.npz` with the keys `irrun run -o` uses. A failing input is reported in its item and
    does not stop the others. With `jobs` > 1 or `dask`, workers load the model from its path (once each,
    each with the memory budget `max_memory`), so the path must be readable where they run."""
    started = time.perf_counter()
    loaded = model if isinstance(model, Model) else load(model, max_memory=max_memory)
    if max_memory is None and isinstance(model, Model):
        max_memory = model.budget.limit
    out = Path(outputs_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {outputs_dir}: {exc.strerror or exc}") from None
    jobs_list = [RunJob(str(loaded.path), max_memory, str(path), str(out / f"{Path(path).stem}.npz"))
                 for path in inputs]
    serial = jobs == 1 and dask is None
    task = partial(run_one, model=loaded) if serial else run_one
    _WORKER_MODELS[(str(loaded.path), max_memory)] = loaded  # forked workers start with it
    try:
        results = map_ordered(task, jobs_list, jobs=jobs, dask=dask, on_result=on_result)
    finally:
        _WORKER_MODELS.clear()
    items = [result if isinstance(result, BatchItem) else BatchItem(job.input, None, f"{job.input}: {result.message}", 0.0)
             for job, result in zip(jobs_list, results)]
    return BatchReport(items, time.perf_counter() - started)


def _model_run_batch(self: Model, inputs, outputs_dir, jobs: int = 1, dask: str | None = None, on_result=None):
    """Run every input file (.npy/.npz) in `inputs`, saving outputs_dir/<stem>.npz; see irrun.scale.batch.run_batch."""
    return run_batch(self, inputs, outputs_dir, jobs=jobs, dask=dask, on_result=on_result)


Model.run_batch = _model_run_batch  # irrun/__init__.py imports this module, so every loaded Model has it


def check_many(paths: Iterable, jobs: int = 1, dask: str | None = None, on_result: Callable | None = None) -> list[Report]:
    """`[irrun.check(path) for path in paths]`, in `jobs` local processes or on Dask; same reports, same order."""
    files = [str(path) for path in paths]
    results = map_ordered(check, files, jobs=jobs, dask=dask, on_result=on_result)
    return [result if isinstance(result, Report) else _lost_report(file, result) for file, result in zip(files, results)]


def _lost_report(file: str, failure: TaskFailed) -> Report:
    return Report(file, None, [Diagnostic(ERROR, "check.worker", f"not checked: {failure.message}")])  # rule="check.worker"
