"""Debugging commands and `run` options: `irrun compare`, `irrun info`, and `run --dump-layers/--dump-filter/
--profile/--random-input/--seed/--shape`. The logic is in irrun/tools/ (dumps, compare, profile, info, inputs); this module parses options
and prints.

irrun/cli/main.py imports this module at its top; it imports only the tools and cli/errors.py, never main."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..tools import profile as profiling
from ..tools.compare import compare_with_dump, compare_with_outputs
from ..tools.compare_openvino import compare_with_openvino
from ..tools.dumps import LayerDumper, chain
from ..tools.info import format_info, format_supported_ops, model_info, supported_ops_records
from ..tools.inputs import fill_inputs, parse_shape_overrides
from .options import memory_size
from ..errors import InputError, IRError
from ..ops.coverage import format_missing_ops, missing_ops
from .errors import errors_reported


def _shape_option(ctx, param, values):
    try:
        return parse_shape_overrides(values)
    except InputError as exc:
        raise click.BadParameter(exc.message) from None


_INPUT_TOOL_OPTIONS = [
    click.option("--random-input", is_flag=True,
                 help="Fill every input not given with -i with random values: floats standard normal, integers "
                      "in [0, 10), booleans 0/1. Dynamic dims take their lower bound (at least 1) unless --shape "
                      "says otherwise."),
    click.option("--seed", type=int, default=None, metavar="N", help="Seed for --random-input (default: random)."),
    click.option("--shape", "shapes", multiple=True, callback=_shape_option, metavar="NAME[dims]",
                 help="Input shape for --random-input, benchmark_app syntax: input[1,3,224,224], a[1,3],b[2] or "
                      "[1,3,8,8] (every input). Must fit the declared shape ('?' and ranges like 1..4). "
                      "Repeatable."),
]

_RUN_TOOL_OPTIONS = [
    click.option("--dump-layers", type=click.Path(file_okay=False), metavar="DIR",
                 help="Save every output of every layer as DIR/NNNNN_<layer>_<port>.npy, listed in DIR/index.json."),
    click.option("--dump-filter", metavar="PATTERN",
                 help="With --dump-layers: only layers whose name or type (Type or Type-version) matches this "
                      "glob, e.g. '*conv*' or 'Convolution'."),
    click.option("--profile", is_flag=True,
                 help="Print per-layer times, the slowest layers and time by op type after the run."),
    *_INPUT_TOOL_OPTIONS,
]


def _apply(options):
    def decorate(function):
        for option in reversed(options):
            function = option(function)
        return function
    return decorate


run_tool_options = _apply(_RUN_TOOL_OPTIONS)


def _note(text: str) -> None:
    click.echo(f"irrun: note: {text}", err=True)


class RunTools:
    """What `run`'s debugging options do around `Model.run`."""

    def __init__(self, dump_layers=None, dump_filter=None, profile=False, random_input=False, seed=None,
                 shapes=None):
        if dump_filter is not None and dump_layers is None:
            raise click.UsageError("--dump-filter needs --dump-layers DIR")
        self.dump_layers, self.dump_filter = dump_layers, dump_filter
        self.profile, self.random_input, self.seed, self.shapes = profile, random_input, seed, shapes or {}
        self.profiler = None

    def complete_inputs(self, model, feeds: dict) -> dict:
        """Add random inputs (--random-input) and check --shape against the given ones."""
        if not self.random_input and not self.shapes:
            return feeds
        feeds, notes = fill_inputs(model, feeds, random=self.random_input, overrides=self.shapes,
                                         seed=self.seed)
        for text in notes:
            _note(text)
        return feeds

    def run(self, model, feeds: dict) -> dict:
        dumper = LayerDumper(self.dump_layers, self.dump_filter) if self.dump_layers else None
        self.profiler = profiling.Profiler(model) if self.profile else None
        progress = profiling.Progress(model) if profiling.on_terminal() else None
        try:
            return model.run(feeds, observer=chain(dumper, self.profiler, progress))
        finally:
            if progress is not None:
                progress.close()
            if dumper is not None:
                dumper.finish()

    def report(self) -> None:
        if self.profiler is not None:
            click.echo("")
            click.echo(self.profiler.report())


# ---------------------------------------------------------------- compare

@click.command("compare")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-i", "--input", "input_specs", multiple=True, metavar="[NAME=]PATH",
              help="An input, as for `irrun run`. Repeatable.")
@click.option("--against", required=True, metavar="openvino|FILE.npz|DIR",
              help="openvino: OpenVINO's CPU plugin, every layer output (needs the openvino package); FILE.npz: "
                   "final outputs saved by `irrun run -o`; DIR: a `run --dump-layers` directory, layer by layer.")
@click.option("--rtol", type=float, default=1e-4, show_default=True, help="Relative tolerance.")
@click.option("--atol", type=float, default=1e-4, show_default=True, help="Absolute tolerance.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="OpenVINO inference threads (--against openvino).")
@click.option("--report", type=click.Path(dir_okay=False), metavar="REPORT.html",
              help="Also write a self-contained HTML report: error per tensor on a plot, a sortable layer table, "
                   "histograms and error maps, the graph around the first divergence (needs irrun[report]).")
@_apply(_INPUT_TOOL_OPTIONS)
@click.option("--max-memory", callback=memory_size, metavar="SIZE", help="Memory budget, as for `irrun run`.")
@click.option("--debug", "show_traceback", is_flag=True, help="Show a traceback on errors.")
def compare_command(model, input_specs, against, rtol, atol, output_format, threads, report, random_input, seed,
                    shapes, max_memory, show_traceback):
    """Run MODEL and compare it with a reference, layer by layer where the reference has layers.

    An element differs when |irrun - reference| > atol + rtol * |reference|. Prints per tensor the max
    absolute and relative error, the mismatch count and NaN/Inf counts, and names the first layer in
    execution order that exceeds the tolerance. Exit 0 when every final output matches, 1 otherwise."""
    from ..engine.loader import load
    from ..tools.arrays import bind_inputs

    if rtol < 0 or atol < 0:
        raise click.UsageError("--rtol and --atol must be non-negative")
    with errors_reported(show_traceback):
        target = _reference_kind(against)
        loaded = load(model, max_memory=max_memory)
        tools = RunTools(random_input=random_input, seed=seed, shapes=shapes)
        try:
            feeds = bind_inputs(loaded, input_specs, allow_missing=random_input)
            feeds = tools.complete_inputs(loaded, feeds)
        except IRError as exc:
            raise exc.located(file=model) from None
        samples = None
        if report:
            from ..tools.report import TensorSamples, _plotly

            _plotly()  # fail before the run when plotly is missing
            samples = TensorSamples(rtol, atol)
        progress = profiling.Progress(loaded, label="comparing") if profiling.on_terminal() else None
        try:
            if target == "openvino":
                comparison = compare_with_openvino(loaded, feeds, rtol, atol, progress, threads, sampler=samples)
            elif target == "dump":
                comparison = compare_with_dump(loaded, feeds, against, rtol, atol, progress, sampler=samples)
            else:
                comparison = compare_with_outputs(loaded, feeds, against, rtol, atol, progress, sampler=samples)
        finally:
            if progress is not None:
                progress.close()
        if output_format == "json":
            click.echo(json.dumps(comparison.to_dict(), indent=1))
        else:
            click.echo(comparison.text())
        if report:
            from ..tools.report import write_compare_report

            write_compare_report(report, comparison, loaded, samples)
    sys.exit(0 if comparison.passed else 1)


def _reference_kind(against: str) -> str:
    if against.lower() == "openvino":
        return "openvino"
    path = Path(against)
    if path.is_dir():
        return "dump"
    if path.suffix.lower() == ".npz" or path.is_file():
        return "npz"
    raise InputError(f"--against {against}: no such file or directory (expected openvino, a .npz or a dump "
                     f"directory)")


# ---------------------------------------------------------------- info

@click.command("info")
@click.argument("model", type=click.Path(dir_okay=False), required=False)
@click.option("--ops", is_flag=True, help="List every op irrun implements, by type and version.")
@click.option("--missing", is_flag=True,
              help="With --ops: list instead the op versions of OpenVINO's opsets that irrun does not implement, "
                   "with the reason (nothing when it implements them all).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--debug", "show_traceback", is_flag=True, help="Show a traceback on errors.")
def info_command(model, ops, missing, output_format, show_traceback):
    """Describe MODEL: IR version, inputs and outputs, op histogram by Type-version, opsets, weights and
    the checker's findings. With --ops (MODEL optional): the ops irrun implements."""
    if model is None and not ops:
        raise click.UsageError("give a MODEL, or --ops to list the ops irrun implements")
    if missing:
        if not ops or model is not None:
            raise click.UsageError("--missing goes with --ops alone")
        if output_format == "json":
            click.echo(json.dumps([{"type": t, "version": v, "opsets": o, "reason": r}
                                   for t, v, o, r in missing_ops()], indent=1))
        else:
            listing = format_missing_ops()
            if listing:
                click.echo(listing)
        return
    with errors_reported(show_traceback):
        document = {}
        if model is not None:
            document = model_info(model)
        if output_format == "json":
            if ops:
                document = dict(document, supported_ops=supported_ops_records())
            click.echo(json.dumps(document, indent=1))
            return
        if model is not None:
            click.echo(format_info(document))
        if ops:
            if model is not None:
                click.echo("")
            click.echo(format_supported_ops())
