"""click option callbacks shared by the commands."""
from __future__ import annotations

import click

from ..ops.budget import parse_size


def memory_size(ctx, param, value):
    """--max-memory: '512M', '2G', ... -> bytes."""
    if value is None:
        return None
    try:
        return parse_size(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a size like 512M or 4G") from None
