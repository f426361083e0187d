"""The `irrun` command: a thin shell over the Python API."""
from __future__ import annotations

import sys

import click
import numpy as np

from ..engine.loader import load
from ..tools.arrays import bind_inputs, save_outputs
from .batch import parallel_options, run_inputs_dir
from .options import memory_size
from .check import check_command
from .errors import errors_reported
from .debug import RunTools, compare_command, info_command, run_tool_options
from .generate import generate_command
from .precision import precision_command
from ..errors import IRError


class DefaultRunGroup(click.Group):
    """`irrun MODEL.xml ...` means `irrun run MODEL.xml ...`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultRunGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="irrun")
def cli():
    """Read, check and run OpenVINO IR models with NumPy.

    `irrun MODEL.xml [options]` is short for `irrun run MODEL.xml [options]`."""


@cli.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-i", "--input", "input_specs", multiple=True, metavar="[NAME=]PATH",
              help="An input: NAME=x.npy, x.npy (the next unbound input in model order), or x.npz (arrays "
                   "bound by key). Repeatable.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), metavar="OUT.npz",
              help="Save every output, keyed by its tensor name, instead of printing a summary.")
@click.option("--max-memory", callback=memory_size, metavar="SIZE",
              help="Memory budget for weights and tensors, e.g. 2G (default: half of physical memory).")
@click.option("--inputs-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Run once per .npy/.npz file in DIR (sorted; a .npz binds by key, a .npy feeds the single "
                   "input), saving --outputs-dir/<stem>.npz. A failing input is reported and the rest still run.")
@click.option("--outputs-dir", type=click.Path(file_okay=False), metavar="OUT",
              help="Where --inputs-dir writes one .npz per input, keyed as -o keys.")
@parallel_options("inputs of --inputs-dir")
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
@run_tool_options
def run(model, input_specs, output, max_memory, inputs_dir, outputs_dir, jobs, dask, debug, **tool_options):
    """Run MODEL (a model.xml with its .bin beside it) on the given inputs."""
    if inputs_dir or outputs_dir or jobs != 1 or dask:
        _check_batch_options(input_specs, output, inputs_dir, outputs_dir, tool_options)
        with errors_reported(debug):
            status = run_inputs_dir(model, inputs_dir, outputs_dir, jobs, dask, max_memory)
        sys.exit(status)
    with errors_reported(debug):
        tools = RunTools(**tool_options)
        loaded = load(model, max_memory=max_memory)
        try:
            feeds = bind_inputs(loaded, input_specs, allow_missing=tools.random_input)
            feeds = tools.complete_inputs(loaded, feeds)
        except IRError as exc:
            raise exc.located(file=model) from None
        results = tools.run(loaded, feeds)
        if output:
            save_outputs(output, results)
        else:
            click.echo(format_summary(results))
        tools.report()


def _check_batch_options(input_specs, output, inputs_dir, outputs_dir, tool_options) -> None:
    if not inputs_dir or not outputs_dir:
        raise click.UsageError("--inputs-dir and --outputs-dir go together (and --jobs/--dask need them)")
    if input_specs or output:
        raise click.UsageError("--inputs-dir runs its own files: drop -i/-o")
    used = [name for name, value in tool_options.items() if value not in (None, False, {}, ())]
    if used:
        raise click.UsageError(f"--{used[0].replace('_', '-')} works on single runs, not with --inputs-dir")


def format_summary(results: dict) -> str:
    rows = [("output", "shape", "dtype", "min", "max", "mean")]
    for name, array in results.items():
        if array.size and array.dtype != object:
            numeric = array.astype(np.float64) if array.dtype != np.bool_ else array.astype(np.int8)
            stats = [f"{numeric.min():.6g}", f"{numeric.max():.6g}", f"{numeric.mean():.6g}"]
        else:
            stats = ["-", "-", "-"]
        rows.append((name, "x".join(map(str, array.shape)) or "scalar", str(array.dtype), *stats))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


for command in (check_command, compare_command, info_command, generate_command, precision_command):
    cli.add_command(command)


def main():
    cli(prog_name="irrun")
