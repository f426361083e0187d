"""`irrun precision`: which layers must stay in f32 on a device computing in f16 or bf16 (logic in
irrun/tools/precision.py)."""
from __future__ import annotations

import json
import sys

import click

from ..errors import IRError
from .debug import _INPUT_TOOL_OPTIONS, RunTools, _apply
from .errors import errors_reported
from .options import memory_size


@click.command("precision")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-i", "--input", "input_specs", multiple=True, metavar="[NAME=]PATH",
              help="An input, as for `irrun run`. Repeatable.")
@click.option("--type", "kind", type=click.Choice(["f16", "bf16"]), required=True,
              help="The type the device computes in: f16 (GPUs; overflows beyond 65504) or bf16 (CPUs with "
                   "AVX512-BF16 or AMX).")
@click.option("--tolerance", type=click.FloatRange(min=0), default=1e-2, show_default=True,
              help="Largest acceptable output error, max |y - y_f32| / max |y_f32| over the outputs.")
@click.option("--max-runs", type=click.IntRange(min=3), default=200, show_default=True,
              help="Budget of model runs for the ranking (groups are left unsplit when it is reached); the "
                   "smallest set takes about log2(layers) more.")
@click.option("--output", type=click.Path(dir_okay=False), metavar="MARKED.xml",
              help="Write a copy of the IR (and its .bin) with the layers to keep in f32 marked for OpenVINO "
                   "(rt_info DisablePrecisionConversion).")
@click.option("--report", type=click.Path(dir_okay=False), metavar="REPORT.html",
              help="Also write the analysis as a self-contained HTML page (needs irrun[report]).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_apply(_INPUT_TOOL_OPTIONS)
@click.option("--max-memory", callback=memory_size, metavar="SIZE", help="Memory budget, as for `irrun run`.")
@click.option("--debug", "show_traceback", is_flag=True, help="Show a traceback on errors.")
def precision_command(model, input_specs, kind, tolerance, max_runs, output, report, output_format, random_input,
                      seed, shapes, max_memory, show_traceback):
    """Emulate MODEL computing in f16 or bf16 (weights and every layer output rounded), rank its layers by the
    output error each causes in that type, and print the smallest set to keep in f32 for an output error
    under --tolerance. Exit 0 when such a set was found (or none is needed), 1 otherwise."""
    from ..engine.loader import load
    from ..tools import precision
    from ..tools.arrays import bind_inputs

    with errors_reported(show_traceback):
        if report:
            from ..tools.report import _plotly

            _plotly()
        loaded = load(model, max_memory=max_memory)
        try:
            feeds = bind_inputs(loaded, input_specs, allow_missing=random_input)
            feeds = RunTools(random_input=random_input, seed=seed, shapes=shapes).complete_inputs(loaded, feeds)
        except IRError as exc:
            raise exc.located(file=model) from None
        analysis = precision.analyse(loaded, feeds, kind, tolerance, max_runs)
        marked = None
        if output and analysis.keep:
            marked = precision.mark_ir(loaded, analysis.keep_layers, output)
        if output_format == "json":
            document = analysis.to_dict()
            document["marked_ir"] = None if marked is None else str(marked)
            click.echo(json.dumps(document, indent=1))
        else:
            click.echo(analysis.text())
            if marked is not None:
                click.echo(f"wrote {marked} (and its .bin): those layers marked to stay in f32")
            elif output:
                click.echo(f"{output} not written: no layer needs to stay in f32" if analysis.error_all <= tolerance
                           else f"{output} not written: no set was found")
        if report:
            from ..tools.report import write_precision_report

            write_precision_report(report, analysis)
    found = analysis.error_all <= tolerance or (analysis.error_kept is not None and analysis.error_kept <= tolerance)
    sys.exit(0 if found else 1)
