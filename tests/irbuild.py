"""Write small IR files by hand (no openvino needed): a layer list, edges and Const data."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

PRECISIONS = {"f32": "FP32", "f16": "FP16", "f64": "FP64", "i32": "I32", "i64": "I64", "i8": "I8", "u8": "U8",
              "i16": "I16", "u16": "U16", "u32": "U32", "u64": "U64", "boolean": "BOOL", "bf16": "BF16"}


@dataclass
class L:
    """One layer: type, opset, <data> attributes, input port dims, output (dims, type) pairs."""

    type: str
    opset: str = "opset1"
    attrs: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list)     # list of (dims, type)
    outputs: list = field(default_factory=list)    # list of (dims, type, names)
    name: str | None = None
    extra: dict = field(default_factory=dict)


class IRBuilder:
    def __init__(self, version: int = 11):
        self.version = version
        self.layers: list[L] = []
        self.edges: list[tuple[int, int, int, int]] = []
        self.blob = bytearray()

    def add(self, layer: L) -> int:
        self.layers.append(layer)
        return len(self.layers) - 1

    def parameter(self, shape, et="f32", name=None, shape_attr=None) -> int:
        dims = list(shape)
        text = shape_attr if shape_attr is not None else ",".join(str(d) for d in dims)
        return self.add(L("Parameter", attrs={"shape": text, "element_type": et},
                          outputs=[(dims, et, name or f"in{len(self.layers)}")], name=name))

    def const(self, array: np.ndarray, et=None, raw: bytes | None = None) -> int:
        array = np.asarray(array)
        et = et or {v: k for k, v in {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64,
                                       "u8": np.uint8, "i8": np.int8, "f64": np.float64}.items()}[array.dtype.type]
        data = raw if raw is not None else array.tobytes()
        offset = len(self.blob)
        self.blob += data
        return self.add(L("Const", attrs={"element_type": et, "shape": ",".join(map(str, array.shape)),
                                          "offset": str(offset), "size": str(len(data))},
                          outputs=[(list(array.shape), et, None)]))

    def op(self, type_, opset, sources, attrs, outputs, name=None) -> int:
        """`sources`: list of (layer index, output index); `outputs`: list of (dims, type)."""
        inputs = [self._out(src) for src in sources]
        index = self.add(L(type_, opset, {k: str(v) for k, v in attrs.items()},
                           [(d, t) for d, t, _ in inputs], [(d, t, None) for d, t in outputs], name))
        for port, (src, out) in enumerate(sources):
            self.edges.append((src, len(self.layers[src].inputs) + out, index, port))
        return index

    def result(self, source, name=None) -> int:
        dims, et, _ = self._out(source)
        index = self.add(L("Result", inputs=[(dims, et)], name=name))
        self.edges.append((source[0], len(self.layers[source[0]].inputs) + source[1], index, 0))
        return index

    def _out(self, source):
        layer, out = source
        return self.layers[layer].outputs[out]

    def xml(self) -> str:
        lines = ['<?xml version="1.0"?>', f'<net name="test" version="{self.version}">', "<layers>"]
        for i, layer in enumerate(self.layers):
            extra = "".join(f" {k}={quoteattr(v)}" for k, v in layer.extra.items())
            lines.append(f'<layer id="{i}" name={quoteattr(layer.name or f"{layer.type}_{i}")} '
                         f'type="{layer.type}" version="{layer.opset}"{extra}>')
            if layer.attrs:
                lines.append("<data " + " ".join(f"{k}={quoteattr(str(v))}" for k, v in layer.attrs.items()) + "/>")
            port = 0
            if layer.inputs:
                lines.append("<input>")
                for dims, et in layer.inputs:
                    lines.append(self._port(port, et, dims, None))
                    port += 1
                lines.append("</input>")
            if layer.outputs:
                lines.append("<output>")
                for dims, et, names in layer.outputs:
                    lines.append(self._port(port, et, dims, names))
                    port += 1
                lines.append("</output>")
            lines.append("</layer>")
        lines.append("</layers><edges>")
        for a, ap, b, bp in self.edges:
            lines.append(f'<edge from-layer="{a}" from-port="{ap}" to-layer="{b}" to-port="{bp}"/>')
        lines.append("</edges></net>")
        return "\n".join(lines)

    @staticmethod
    def _port(port_id, et, dims, names):
        names_attr = f" names={quoteattr(names)}" if names else ""
        body = "".join(f"<dim>{-1 if d is None else d}</dim>" for d in dims)
        return f'<port id="{port_id}" precision="{PRECISIONS.get(et, et.upper())}"{names_attr}>{body}</port>'

    def save(self, directory, name="model") -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        xml_path = directory / f"{name}.xml"
        xml_path.write_text(self.xml())
        (directory / f"{name}.bin").write_bytes(bytes(self.blob))
        return xml_path
