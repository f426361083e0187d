"""Which op versions OpenVINO's opsets name that irrun does not implement, and why."""
from __future__ import annotations

from ..ir.opsets import opset_op_versions
from .registry import REGISTRY

# (type, spec version) -> why irrun does not implement it; `irrun info --ops --missing` prints these.
NOT_IMPLEMENTED: dict[tuple[str, int], str] = {}


def missing_ops() -> list[tuple[str, int, list[str], str | None]]:
    """(type, version, the opsets holding it, the documented reason or None) for every op version in
    OpenVINO's opsets that irrun lacks."""
    return [(op_type, version, opsets, NOT_IMPLEMENTED.get((op_type, version)))
            for (op_type, version), opsets in sorted(opset_op_versions().items())
            if (op_type, version) not in REGISTRY]


def format_missing_ops() -> str:
    """One line per missing op version; empty when irrun implements every op version of the opsets."""
    return "\n".join(f"{op_type}-{version} ({opsets[0]}{'..' + opsets[-1] if len(opsets) > 1 else ''}): "
                     f"{reason or 'not implemented'}" for op_type, version, opsets, reason in missing_ops())
