"""Plain records for what an IR file says, before any interpretation."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Port:
    id: int
    precision: str | None
    names: tuple[str, ...]
    dims: tuple[str, ...]  # as written: "3", "-1", "1..8"


@dataclass
class Layer:
    id: str
    name: str
    type: str
    opset: str
    attrs: dict[str, str]
    inputs: list[Port]
    outputs: list[Port]
    extra: dict[str, str] = field(default_factory=dict)  # other <layer> attributes, e.g. Result's output_names
    line: int | None = None


@dataclass(frozen=True)
class Edge:
    from_layer: str
    from_port: int
    to_layer: str
    to_port: int


@dataclass
class IRDocument:
    xml_path: str
    bin_path: str
    ir_version: int
    name: str
    layers: list[Layer]
    edges: list[Edge]
