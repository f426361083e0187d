"""The memory budget: every Const and every intermediate tensor is checked against it before allocation."""
from __future__ import annotations

import os

from ..errors import MemoryBudgetError

DEFAULT_FRACTION = 0.5


def physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def default_budget() -> int:
    total = physical_memory()
    return int(total * DEFAULT_FRACTION) if total else 4 << 30


class Budget:
    """A byte limit for one allocation and for all tensors alive at once."""

    def __init__(self, limit: int | None = None):
        self.limit = default_budget() if limit is None else int(limit)
        self.live = 0

    def check(self, nbytes: int, what) -> None:
        """`what` names the allocation in the error: a string, or a callable giving one."""
        if nbytes > self.limit or self.live + nbytes > self.limit:
            what = what() if callable(what) else what
            raise MemoryBudgetError(
                f"{what} needs {format_bytes(nbytes)} with {format_bytes(self.live)} already in use, over the "
                f"memory budget of {format_bytes(self.limit)} (--max-memory)")


def format_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def parse_size(text: str) -> int:
    """'512M', '2G', '1.5GiB', '1000000' -> bytes."""
    value = text.strip().lower().removesuffix("ib").removesuffix("b")
    scale = 1
    if value and value[-1] in "kmgt":
        scale = 1024 ** ("kmgt".index(value[-1]) + 1)
        value = value[:-1]
    number = float(value)
    if number <= 0:
        raise ValueError("must be positive")
    return int(number * scale)

