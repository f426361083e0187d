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
    # Nested graphs of TensorIterator/Loop ("body") and If ("then_body", "else_body"), with their port maps.
    bodies: dict[str, "Body"] = field(default_factory=dict)


@dataclass(frozen=True)
class Edge:
    from_layer: str
    from_port: int
    to_layer: str
    to_port: int


@dataclass(frozen=True)
class PortMapEntry:
    """One <input>/<output> of a body's port map: the outer port, the body Parameter/Result layer, and the
    slicing attributes (axis, start, end, stride, part_size) or Loop's `purpose`, as written."""

    external_port_id: int  # -1: not connected outside (Loop's special ports)
    internal_layer_id: str
    attrs: dict[str, str]


@dataclass
class Body:
    """A nested graph: its layers and edges, its port map, and back edges (body Result -> body Parameter)."""

    doc: "IRDocument"
    inputs: list[PortMapEntry]
    outputs: list[PortMapEntry]
    back_edges: list[tuple[str, str]]  # (from Result layer id, to Parameter layer id)


@dataclass
class IRDocument:
    xml_path: str
    bin_path: str
    ir_version: int
    name: str
    layers: list[Layer]
    edges: list[Edge]
