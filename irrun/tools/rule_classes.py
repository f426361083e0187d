"""Which of `irrun check`'s rules OpenVINO's reader shares.

Every rule id is in one of two classes:

- OPENVINO: OpenVINO's reader (`Core.read_model`, which validates every node) refuses such a file too;
- STRICTER: OpenVINO reads the file, but irrun still calls it wrong, for the reason given (a declared dim
  that disagrees with inference, a precision OpenVINO coerces, ...).

Warnings are outside both: OpenVINO reads those files. With `openvino_compatible`, errors of the stricter
class become warnings, so a file fails exactly when OpenVINO's reader would refuse it. The classes were
measured with tools/mutate_corpus.py; docs/rules.md lists them with an example each.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

OPENVINO, STRICTER = "openvino", "stricter"
CLASS_NAMES = {OPENVINO: "OpenVINO refuses this too", STRICTER: "stricter than OpenVINO"}


@dataclass(frozen=True)
class RuleClass:
    kind: str        # OPENVINO or STRICTER
    reason: str = ""  # for STRICTER: why the file is still wrong although OpenVINO reads it


_SHARED = RuleClass(OPENVINO)

RULE_CLASSES: dict[str, RuleClass] = {
    **{rule: _SHARED for rule in (
        "file.xml", "file.doctype", "file.structure", "file.version", "file.bin", "layer.id", "layer.type",
        "layer.opset", "layer.unsupported", "attr.missing", "attr.value", "attr.range", "attr.length", "port.id",
        "port.precision", "port.dims", "port.type", "port.count", "port.rank", "edge.ref", "edge.port", "edge.multiple", "edge.unfed",
        "graph.cycle", "const.type", "const.size", "const.offset", "const.bin", "const.weights", "shape.infer",
        "shape.kernel", "shape.broadcast", "shape.reshape", "shape.split", "shape.empty", "variable.assign",
        "variable.type", "variable.shape", "variable.conflict", "check.worker", "check.internal")},
    "port.dims.declared": RuleClass(STRICTER, "OpenVINO infers output shapes again and ignores the declared dims, so the "
                                     "file says one shape while every reader computes another"),
    "port.type.declared": RuleClass(STRICTER, "OpenVINO infers output types again and ignores the declared precision, so "
                                     "the file says one type while every reader computes another"),
    "edge.dims": RuleClass(STRICTER, "OpenVINO takes an input's shape from its producer and ignores the input "
                                     "port's dims, which contradict the producer"),
    "edge.type": RuleClass(STRICTER, "OpenVINO takes an input's type from its producer and ignores the input "
                                     "port's precision, which contradicts the producer"),
    "graph.results": RuleClass(STRICTER, "OpenVINO reads a model without outputs; it computes nothing"),
    "layer.extra": RuleClass(STRICTER, "an irrun limit, not a fault of the file: OpenVINO with "
                                       "openvino-tokenizers reads it; irrun needs its optional `text` extra"),
    "edge.ref.dangling": RuleClass(STRICTER, "OpenVINO ignores an edge into a layer that does not exist"),
    "layer.id.duplicate": RuleClass(STRICTER, "OpenVINO keeps the last layer of an id and silently drops the "
                                              "earlier ones"),
    "file.xml.encoding": RuleClass(STRICTER, "OpenVINO's XML parser does not check the character encoding; "
                                             "irrun cannot read the file"),
    "file.xml.attribute": RuleClass(STRICTER, "an element repeats an attribute, which XML forbids; OpenVINO's "
                                              "parser reads the first of them"),
    "variable.assign.multiple": RuleClass(STRICTER, "OpenVINO reads the file, its CPU plugin refuses to "
                                                    "compile it"),
}


# `<rule>.spec`: the op specification forbids it, OpenVINO's shape inference does not check it.
SPEC = RuleClass(STRICTER, "the op specification forbids it, but OpenVINO's shape inference does not check it: "
                           "the file loads and the op computes garbage or fails at run time")


def rule_class(rule: str) -> RuleClass:
    """A rule's class; rules irrun raises only while running are shared (OpenVINO fails there too)."""
    if rule.endswith(".spec"):
        return SPEC
    return RULE_CLASSES.get(rule, _SHARED)


def relaxed(diagnostics, error: str, warning: str) -> list:
    """The diagnostics with every stricter-class error turned into a warning."""
    return [dataclasses.replace(d, severity=warning) if d.severity == error and rule_class(d.rule).kind == STRICTER
            else d for d in diagnostics]
