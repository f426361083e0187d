"""Batch and parallel options: `run --inputs-dir/--outputs-dir`, and `--jobs/--dask` for `run` and `check`."""
from __future__ import annotations

import sys
from contextlib import contextmanager

import click

from ..scale.batch import input_files, run_batch


def _dask_address(ctx, param, value):
    if value is not None and not value.strip():
        raise click.BadParameter("give a scheduler address (tcp://host:8786) or 'local'")
    return value


def parallel_options(what: str):
    """--jobs and --dask, worded for what is spread over the workers."""
    def decorate(function):
        function = click.option(
            "--dask", metavar="ADDRESS", callback=_dask_address,
            help=f"Send the {what} to a dask.distributed scheduler at ADDRESS, or 'local' for a LocalCluster of "
                 f"--jobs worker processes here. Workers read the files themselves: they must be on storage the "
                 f"workers share (needs pip install 'irrun[dask]').")(function)
        return click.option(
            "-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
            help=f"Worker processes for the {what} (results and their order are the same as with 1).")(function)
    return decorate


@contextmanager
def progress_bar(length: int, label: str, show: bool):
    """A callback for each finished item: a click progress bar on stderr when `show`, else None."""
    if not show:
        yield None
        return
    with click.progressbar(length=length, label=label, file=sys.stderr, show_pos=True) as bar:
        yield lambda index, result: bar.update(1)


def run_inputs_dir(model: str, inputs_dir: str, outputs_dir: str, jobs: int, dask: str | None,
                   max_memory: int | None) -> int:
    """`irrun run MODEL --inputs-dir DIR --outputs-dir OUT`: one line per failed input, a summary; the exit
    status (1 if any input failed)."""
    files = input_files(inputs_dir)
    with progress_bar(len(files), "running", show=sys.stderr.isatty()) as on_result:
        report = run_batch(model, files, outputs_dir, jobs=jobs, dask=dask, max_memory=max_memory,
                           on_result=on_result)
    for item in report.failed:
        click.echo("irrun: error: " + " ".join(item.error.split()), err=True)
    click.echo(report.summary())
    return 1 if report.failed else 0

