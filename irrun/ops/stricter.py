"""Stricter-class errors (rules ending in `.spec`) that need not stop shape inference.

OpenVINO's reader takes such a file and infers the op's outputs from what it reads (a negative stride as a huge
unsigned one, a missing attribute as its default). The runtime refuses the layer at once; the checker, which
reports every problem, wants to go on with OpenVINO's outputs, so that a refusal further down the graph is still
found in `--openvino-compatible` mode. An op calls `refuse(error)` where it would raise, and then infers what
OpenVINO infers; `collected()` (the checker) turns those calls into records instead of raises.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

from ..errors import IRError

_COLLECTED: ContextVar[list | None] = ContextVar("stricter_errors", default=None)


def refuse(error: IRError) -> None:
    """Raise `error`; while the checker collects, an error of the stricter class (a `.spec` rule) is recorded
    instead and the op goes on to infer what OpenVINO infers."""
    errors = _COLLECTED.get()
    if errors is None or not error.rule.endswith(".spec"):
        raise error
    errors.append(error)


@contextmanager
def collected():
    """Within: `refuse` records its errors in the list yielded, in order, instead of raising them."""
    errors: list[IRError] = []
    token = _COLLECTED.set(errors)
    try:
        yield errors
    finally:
        _COLLECTED.reset(token)


UNSIGNED = 1 << 64


def unsigned(values) -> list[int]:
    """Strides or dilations as OpenVINO reads them (size_t): a negative value wraps to a huge one."""
    return [v % UNSIGNED for v in values]
