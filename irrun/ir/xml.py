"""Reading model.xml with a hardened lxml parser into plain records."""
from __future__ import annotations

import os
import re
from pathlib import Path

from lxml import etree

from ..errors import ParseError
from .model import Body, Edge, IRDocument, Layer, Port, PortMapEntry

MAX_XML_BYTES = 1 << 30
_DOCTYPE = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
SUPPORTED_IR_VERSIONS = (10, 11)


def _parser() -> etree.XMLParser:
    # No DTD, no entity expansion, no network; libxml2's default depth and size limits (no huge_tree).
    return etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
        huge_tree=False, remove_comments=True, remove_pis=True,
    )


def read_xml(path, repair: bool = False) -> IRDocument:
    """repair: read bytes invalid in the file's encoding and repeated attributes as OpenVINO's parser does (the
    checker goes on that way), instead of refusing the file (rules file.xml.encoding, file.xml.attribute)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise ParseError("not a regular file", file=path)
        if size > MAX_XML_BYTES:
            raise ParseError(f"XML file is {size} bytes, over the {MAX_XML_BYTES}-byte limit", file=path)
        data = path.read_bytes()
    except OSError as exc:
        raise ParseError(f"cannot read the model file: {exc.strerror or exc}", file=path) from None
    if not data.strip():
        raise ParseError("the model file is empty", file=path)
    if _DOCTYPE.search(data):
        raise ParseError("a DOCTYPE or ENTITY declaration is not allowed in an IR file (entities are never "
                         "expanded)", file=path, rule="file.doctype")
    try:
        root = _without_bad_declaration(data)
    except etree.XMLSyntaxError as exc:
        rule, repaired = "file.xml.encoding", _well_formed_but_for_encoding(data)
        if repaired is None:
            rule, repaired = "file.xml.attribute", _first_of_repeated_attributes(data)
        if repaired is not None and repair:
            return _document(repaired, path)
        rule = rule if repaired is not None else "file.xml"
        raise ParseError(f"not well-formed XML: {exc}", file=path, rule=rule) from None
    except ValueError as exc:
        raise ParseError(f"not readable as XML: {exc}", file=path, rule="file.xml") from None
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        raise ParseError("a DOCTYPE is not allowed in an IR file (entities are never expanded)",
                         file=path, rule="file.doctype")
    return _document(root, path)


_DECLARATION = re.compile(rb"^\s*<\?xml\b.*?\?>", re.S)


def _without_bad_declaration(data: bytes):
    """The XML's root; OpenVINO's parser (pugixml) skips the <?xml ...?> declaration unread, so a file that is
    well-formed but for its declaration (`version="MaxPool"`) is read without it."""
    try:
        return etree.fromstring(data, _parser())
    except etree.XMLSyntaxError:
        root = _reparsed(_DECLARATION.sub(b"", data, count=1), data)
        if root is None:
            raise
        return root


def _reparsed(repaired: bytes, data: bytes):
    """The root of `repaired` when a repair changed `data` and made it well-formed; else None."""
    if repaired == data:
        return None
    try:
        return etree.fromstring(repaired, _parser())
    except (etree.XMLSyntaxError, ValueError):
        return None


_ENCODING_DECLARATION = re.compile(rb"^(\s*<\?xml[^>]*?)\s+encoding\s*=\s*[\"'][^\"']*[\"']")


def _well_formed_but_for_encoding(data: bytes):
    """The XML's root if it is well-formed once its bytes are read as UTF-8 with invalid ones replaced and its
    encoding declaration dropped (OpenVINO's parser, pugixml, reads such a file, as it checks neither); else None."""
    return _reparsed(_ENCODING_DECLARATION.sub(rb"\1", data).decode("utf-8", errors="replace").encode(), data)


_TAG = re.compile(rb"<([A-Za-z_][\w.:-]*)((?:\s+[\w.:-]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)(\s*/?)>")
_ATTRIBUTE = re.compile(rb"\s+([\w.:-]+)\s*=\s*(?:\"[^\"]*\"|'[^']*')")


def _first_of_repeated_attributes(data: bytes):
    """The XML's root if it is well-formed once each element keeps only the first of attributes repeated in it
    (pugixml reads them all, and OpenVINO takes the first of a name); else None."""
    def first_only(tag: re.Match) -> bytes:
        names, kept = set(), []
        for attribute in _ATTRIBUTE.finditer(tag.group(2)):
            if attribute.group(1) not in names:
                names.add(attribute.group(1))
                kept.append(attribute.group(0))
        return b"<" + tag.group(1) + b"".join(kept) + tag.group(3) + b">"
    return _reparsed(_TAG.sub(first_only, data), data)


def _document(root, path: Path) -> IRDocument:
    if root.tag != "net":
        raise ParseError(f"root element is <{root.tag}>, expected <net>", file=path, rule="file.structure")
    version_text = root.get("version")
    try:
        ir_version = int(version_text)
    except (TypeError, ValueError):
        raise ParseError(f"<net> has no valid IR version (got {version_text!r})", file=path,
                         rule="file.version") from None
    if ir_version not in SUPPORTED_IR_VERSIONS:
        raise ParseError(f"IR version {ir_version} is not supported (OpenVINO reads 10 and 11)",
                         file=path, rule="file.version")
    layers_el = root.find("layers")
    if layers_el is None:
        raise ParseError("<layers> section is missing", file=path, rule="file.structure")
    layers = [_layer(el, path, ir_version) for el in layers_el.iterchildren("layer")]
    edges_el = root.find("edges")
    edges = [] if edges_el is None else [_edge(el, path) for el in edges_el.iterchildren("edge")]
    bin_path = os.path.splitext(str(path))[0] + ".bin"
    return IRDocument(str(path), bin_path, ir_version, root.get("name", ""), layers, edges)


def _required(el, name, path, rule="file.structure") -> str:
    value = el.get(name)
    if value is None:
        raise ParseError(f"line {el.sourceline}: <{el.tag}> has no '{name}' attribute", file=path, rule=rule)
    return value


def _int(el, name, path, rule) -> int:
    text = _required(el, name, path, rule)
    try:
        value = int(text)
    except ValueError:
        raise ParseError(f"line {el.sourceline}: <{el.tag}> {name}={text!r} is not an integer",
                         file=path, rule=rule) from None
    if value < 0:
        raise ParseError(f"line {el.sourceline}: <{el.tag}> {name}={value} is negative", file=path, rule=rule)
    return value


BODIES = {"body": "port_map", "then_body": "then_port_map", "else_body": "else_port_map"}


def _body(layer_el, name: str, path: Path, ir_version: int) -> Body:
    el = layer_el.find(name)
    layers_el = el.find("layers")
    if layers_el is None:
        raise ParseError(f"line {el.sourceline}: <{name}> has no <layers> section", file=path, rule="file.structure")
    layers = [_layer(child, path, ir_version) for child in layers_el.iterchildren("layer")]
    edges_el = el.find("edges")
    edges = [] if edges_el is None else [_edge(child, path) for child in edges_el.iterchildren("edge")]
    doc = IRDocument(str(path), os.path.splitext(str(path))[0] + ".bin", ir_version, layer_el.get("name", ""),
                     layers, edges)
    port_map = layer_el.find(BODIES[name])
    entries = {"input": [], "output": []}
    for kind, found in entries.items():
        for entry in [] if port_map is None else port_map.iterchildren(kind):
            text = _required(entry, "external_port_id", path)
            try:
                external = int(text)
            except ValueError:
                raise ParseError(f"line {entry.sourceline}: <{kind}> external_port_id={text!r} is not an integer",
                                 file=path, rule="file.structure") from None
            attrs = {str(k): str(v) for k, v in entry.attrib.items()
                     if k not in ("external_port_id", "internal_layer_id")}
            found.append(PortMapEntry(external, _required(entry, "internal_layer_id", path), attrs))
    back_el = layer_el.find("back_edges") if name == "body" else None
    back = [(_required(e, "from-layer", path, "edge.ref"), _required(e, "to-layer", path, "edge.ref"))
            for e in ([] if back_el is None else back_el.iterchildren("edge"))]
    return Body(doc, entries["input"], entries["output"], back)


def _layer(el, path: Path, ir_version: int = 11) -> Layer:
    layer_id = _required(el, "id", path, "layer.id")
    children = {}
    for child in el.iterchildren("data", "input", "output", *BODIES):
        children.setdefault(child.tag, child)  # the first of each, as find() gives
    data = children.get("data")
    known = {"id", "name", "type", "version"}
    return Layer(
        id=layer_id,
        name=el.get("name", ""),
        type=_required(el, "type", path, "layer.type"),
        opset=el.get("version", "opset1"),
        attrs={} if data is None else {str(k): str(v) for k, v in data.attrib.items()},
        inputs=_ports(children.get("input"), path),
        outputs=_ports(children.get("output"), path),
        extra={k: v for k, v in el.attrib.items() if k not in known},
        line=el.sourceline,
        bodies={name: _body(el, name, path, ir_version) for name in BODIES if name in children},
    )


def _ports(section, path: Path) -> list[Port]:
    if section is None:
        return []
    ports = []
    for el in section.iterchildren("port"):
        names = tuple(_split_names(el.get("names"))) if el.get("names") else ()
        dims = tuple((d.text or "").strip() for d in el.iterchildren("dim"))
        ports.append(Port(_int(el, "id", path, "port.id"), el.get("precision"), names, dims))
    return ports


def _split_names(text: str) -> list[str]:
    """Split a port's `names` on commas; `\\,` is an escaped comma inside a name."""
    if "\\" not in text:
        return [name for name in (part.strip() for part in text.split(",")) if name]
    names, current, chars = [], [], iter(text)
    for ch in chars:
        if ch == "\\":
            current.append(next(chars, ""))
        elif ch == ",":
            names.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    names.append("".join(current).strip())
    return [n for n in names if n]


def _edge(el, path: Path) -> Edge:
    return Edge(
        from_layer=_required(el, "from-layer", path, "edge.ref"),
        from_port=_int(el, "from-port", path, "edge.ref"),
        to_layer=_required(el, "to-layer", path, "edge.ref"),
        to_port=_int(el, "to-port", path, "edge.ref"),
    )
