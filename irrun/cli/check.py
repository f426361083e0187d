"""`irrun check PATH...`: conformance reports for model files and directories of them."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..scale.batch import check_many
from ..tools.check import ERROR, WARNING, Report
from ..tools.rule_classes import relaxed
from .batch import parallel_options, progress_bar
from .errors import errors_reported

EXIT_OK, EXIT_NOT_CONFORMANT = 0, 1


def collect_files(paths) -> tuple[list[Path], bool]:
    """The files to check, in argument order (a directory's *.xml files recursively, sorted), and whether
    any path was a directory."""
    files, directories = [], False
    for text in paths:
        path = Path(text)
        if path.is_dir():
            directories = True
            files += sorted(p for p in path.rglob("*.xml") if p.is_file())
        else:
            files.append(path)
    return list(dict.fromkeys(files)), directories


def check_files(files, progress: bool, jobs: int = 1, dask: str | None = None) -> list[Report]:
    """Check every file (in `jobs` processes or on Dask); a progress bar on stderr when `progress`."""
    with progress_bar(len(files), "checking", show=progress) as on_result:
        return check_many(files, jobs=jobs, dask=dask, on_result=on_result)


def _on_terminal() -> bool:
    return sys.stderr.isatty()


def summary(reports: list[Report], strict: bool) -> str:
    failed = sum(not r.passes(strict) for r in reports)
    errors = sum(len(r.errors) for r in reports)
    warnings = sum(len(r.warnings) for r in reports)
    files = "1 file" if len(reports) == 1 else f"{len(reports)} files"
    verdict = "conformant" if not failed else f"{failed} not conformant"
    strictness = " (strict: warnings fail)" if strict else ""
    return f"checked {files}: {verdict}; {errors} errors, {warnings} warnings{strictness}"


@click.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--format", "output_format", type=click.Choice(["text", "json", "sarif", "junit"]), default="text",
              show_default=True,
              help="text: one line per problem and a summary; json: an object for a single file argument, "
                   "else a list of them; sarif: SARIF 2.1.0 (each result on its layer's line); junit: JUnit XML "
                   "(a test case per file, a failure per error).")
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1).")
@click.option("--openvino-compatible", is_flag=True,
              help="Errors OpenVINO's reader does not share (rules of the 'stricter' class, docs/rules.md) are "
                   "warnings: a file fails exactly when OpenVINO would refuse to read it.")
@click.option("--target", metavar="RELEASE",
              help="Also report, as errors, every op version, element type and attribute value the OpenVINO "
                   "release RELEASE (2023.0 or later, e.g. 2024.6) cannot read, naming the first release that can.")
@parallel_options("files")
def check_command(paths, output_format, strict, openvino_compatible, target, jobs, dask):
    """Check model files (PATH is a model.xml or a directory searched recursively for *.xml) against the
    IR format and the op specification. Exit 0 when every file is conformant, 1 when any is not."""
    if target is not None:
        from ..tools.target import parse_target, target_diagnostics

        try:
            parse_target(target)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--target") from None
    files, directories = collect_files(paths)
    if not files:
        raise click.UsageError(f"no .xml files under {', '.join(paths)}")
    with errors_reported(False):
        reports = check_files(files, progress=directories and _on_terminal(), jobs=jobs, dask=dask)
    for report in reports if target is not None else ():
        report.diagnostics += target_diagnostics(report.file, target)
    if openvino_compatible:
        for report in reports:
            report.diagnostics = relaxed(report.diagnostics, ERROR, WARNING)
    if output_format in ("sarif", "junit"):
        from ..tools.check_formats import junit, sarif

        click.echo(json.dumps(sarif(reports), indent=2) if output_format == "sarif" else junit(reports))
    elif output_format == "json":
        documents = [r.to_dict(strict) for r in reports]
        single = len(paths) == 1 and not directories
        click.echo(json.dumps(documents[0] if single else documents, indent=2))
    else:
        for report in reports:
            for line in report.lines():
                click.echo(line)
        click.echo(summary(reports, strict))
    sys.exit(EXIT_OK if all(r.passes(strict) for r in reports) else EXIT_NOT_CONFORMANT)
