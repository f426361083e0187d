"""The `irrun` command: a thin shell over the Python API."""
from __future__ import annotations

import sys
import traceback
import zipfile
from pathlib import Path

import click
import numpy as np

from . import load
from .cli_options import memory_size
from .cli_check import check_command
from .cli_debug import RunTools, compare_command, info_command, run_tool_options
from .cli_generate import generate_command
from .errors import InputError, IRError

EXIT_MODEL_ERROR = 1


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
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
@run_tool_options
def run(model, input_specs, output, max_memory, debug, **tool_options):
    """Run MODEL (a model.xml with its .bin beside it) on the given inputs."""
    with _errors_reported(debug):
        tools = RunTools(**tool_options)
        loaded = load(model, max_memory=max_memory)
        try:
            feeds = bind_inputs(loaded, input_specs, allow_missing=tools.random_input)
            feeds = tools.complete_inputs(loaded, feeds)
        except IRError as exc:
            raise exc.located(file=model) from None
        results = tools.run(loaded, feeds)
        if output:
            _save_outputs(output, results)
        else:
            click.echo(format_summary(results))
        tools.report()


class _errors_reported:
    """Turn every failure into one line on stderr and a non-zero exit."""

    def __init__(self, debug: bool):
        self.debug = debug

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None or isinstance(exc, (click.exceptions.Exit, click.ClickException, SystemExit)):
            return False
        if self.debug:
            traceback.print_exception(kind, exc, tb)
        if isinstance(exc, IRError):
            message = str(exc)
        elif isinstance(exc, KeyboardInterrupt):
            message = "interrupted"
        else:
            message = f"internal error ({type(exc).__name__}: {exc}); please report it with the model"
        click.echo("irrun: error: " + " ".join(message.split()), err=True)
        sys.exit(EXIT_MODEL_ERROR)


def _load_array_file(path: str):
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"input file {path} does not exist") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"cannot read input file {path} as .npy/.npz: {' '.join(str(exc).split())}") from None


def bind_inputs(model, specs, allow_missing: bool = False) -> dict:
    """Resolve -i options to {input name: array} following the model's input order (with `allow_missing`,
    inputs left unbound are left out rather than an error: --random-input fills them)."""
    names = {name: desc.name for desc in model.inputs for name in desc.names}
    feeds: dict[str, np.ndarray] = {}

    def bind(name, array, source):
        if name in feeds:
            raise InputError(f"input {name!r} is given twice (again by {source})")
        feeds[name] = array

    for spec in specs:
        name, path = None, spec
        if "=" in spec:
            left, right = spec.split("=", 1)
            if left in names or not Path(spec).exists():
                name, path = left, right
        loaded = _load_array_file(path)
        if isinstance(loaded, np.lib.npyio.NpzFile):
            with loaded:
                if name is not None:
                    raise InputError(f"{path}: a .npz binds arrays by their keys; drop '{name}='")
                for key in loaded.files:
                    if key not in names:
                        raise InputError(f"{path}: array {key!r} matches no model input "
                                         f"(inputs: {', '.join(d.name for d in model.inputs)})")
                    bind(names[key], loaded[key], path)
            continue
        if name is None:
            free = [d.name for d in model.inputs if d.name not in feeds]
            if not free:
                raise InputError(f"{path}: every model input is already bound")
            name = free[0]
        elif name not in names:
            raise InputError(f"no model input is named {name!r} (inputs: {', '.join(d.name for d in model.inputs)})")
        bind(names[name], loaded, path)
    missing = [d.name for d in model.inputs if d.name not in feeds]
    if missing and not allow_missing:
        raise InputError(f"no value given for input(s) {', '.join(map(repr, missing))}; use -i NAME=file.npy")
    return feeds


def _save_outputs(path: str, results: dict) -> None:
    try:
        with open(path, "wb") as f:
            np.savez(f, **results)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def format_summary(results: dict) -> str:
    rows = [("output", "shape", "dtype", "min", "max", "mean")]
    for name, array in results.items():
        if array.size:
            numeric = array.astype(np.float64) if array.dtype != np.bool_ else array.astype(np.int8)
            stats = [f"{numeric.min():.6g}", f"{numeric.max():.6g}", f"{numeric.mean():.6g}"]
        else:
            stats = ["-", "-", "-"]
        rows.append((name, "x".join(map(str, array.shape)) or "scalar", str(array.dtype), *stats))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


for command in (check_command, compare_command, info_command, generate_command):
    cli.add_command(command)


def main():
    cli(prog_name="irrun")
