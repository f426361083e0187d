"""Tasks for tests/test_parallel.py that worker processes import (spawned workers cannot run test-local code)."""
import os
import time
from pathlib import Path


def square(x):
    return x * x


def die_on(item):
    """(value, marker path or None): a worker running value 3 dies; with a marker, only the first time."""
    value, marker = item
    if value == 3:
        if marker is None:
            os._exit(17)
        if not Path(marker).exists():
            Path(marker).write_text("died once")
            os._exit(17)
    return value * 10


def raise_on(value):
    if value == 2:
        raise RuntimeError("task bug")
    return value


def slow(value):
    time.sleep(1)
    return value
