"""IRError and its kinds. Every message names the file, and the layer and port where there is one."""
from __future__ import annotations

from dataclasses import dataclass

from .ir.opsets import openvino_class_note


@dataclass(frozen=True)
class LayerRef:
    """How a message names a layer: XML id, name, type and op version."""

    id: str
    name: str
    type: str
    version: int | None = None

    def __str__(self) -> str:
        versioned = f"{self.type}-{self.version}" if self.version is not None else self.type
        note = openvino_class_note(self.type, self.version)
        return f"layer {self.id} ({self.name}, {versioned}{', ' + note if note else ''})"


class IRError(Exception):
    """Anything wrong with a model, its weights or its inputs. `rule` is a stable id for the checker."""

    kind = "error"
    default_rule = "model"

    def __init__(self, message: str, *, file=None, layer: LayerRef | None = None, port=None, rule=None):
        message = " ".join(str(message).split())  # always one line
        super().__init__(message)
        self.message = message
        self.file = str(file) if file is not None else None
        self.layer = layer
        self.port = port
        self.rule = rule or self.default_rule

    def located(self, *, file=None, layer=None, port=None) -> "IRError":
        """Fill in whatever location this error does not carry yet; returns self."""
        if self.file is None and file is not None:
            self.file = str(file)
        if self.layer is None and layer is not None:
            self.layer = layer
        if self.port is None and port is not None:
            self.port = port
        return self

    def __str__(self) -> str:
        location = " ".join(
            part for part in (str(self.layer) if self.layer else "", f"port {self.port}" if self.port is not None else "") if part
        )
        return ": ".join(part for part in (self.file, location, self.message) if part)


class ParseError(IRError):
    kind = "parse"
    default_rule = "file.xml"


class WeightsError(IRError):
    kind = "weights"
    default_rule = "const.weights"


class UnsupportedOpError(IRError):
    kind = "unsupported op"
    default_rule = "layer.unsupported"


class InvalidAttributeError(IRError):
    kind = "invalid attribute"
    default_rule = "attr.value"


class ShapeError(IRError):
    kind = "shape"
    default_rule = "shape.infer"


class GraphError(IRError):
    kind = "graph"
    default_rule = "graph.edges"


class InputError(IRError):
    kind = "input"
    default_rule = "input"


class MemoryBudgetError(IRError):
    kind = "memory"
    default_rule = "memory.budget"


class ExecutionError(IRError):
    kind = "execution"
    default_rule = "runtime"
