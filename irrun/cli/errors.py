"""Every command's error handling: a failure is one line on stderr and a non-zero exit, never a traceback."""
from __future__ import annotations

import sys
import traceback

import click

from ..errors import IRError

EXIT_MODEL_ERROR = 1


class errors_reported:
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
