"""Attributes an old OpenVINO release reads past: the keep probes of tools/release_compat.py.

A release that does not know an attribute of an op version (RandomUniform-8's `alignment` before it was added)
still reads the file: its reader skips what it does not visit, and the model computes as if the attribute had
its old meaning. To find these from the releases themselves, every op version found in the repository's IRs
becomes one probe: that layer (named "x") with its <data> as written by OpenVINO 2026.4's serializer (every
attribute it visits), its inputs as Parameters of the declared types and dims, a Result per output. Each
release reads it and lists the attributes the node kept (`Node.get_attributes()`, the same visitor the
serializer uses); an attribute the current release keeps and an older one lacks was dropped by that one.
"""
from __future__ import annotations

import copy
from pathlib import Path

from lxml import etree

from irrun.ir.opsets import resolve
from irrun.ir.types import element_type

ROOT = Path(__file__).resolve().parents[1]
SKIPPED_TYPES = {"Parameter", "Result", "Const", "Constant", "TensorIterator", "Loop", "If"}
CORPUS_SKIPPED = ("tests/data/release_compat", "tests/data/sarif", "tests/data/fuzz")

# Op versions with an attribute newer than the op version that no IR in the repository uses: a valid layer each.
EXTRA_LAYERS = {
    ("RandomUniform", 8): '''<layer id="1" name="x" type="RandomUniform" version="opset8">
<data output_type="f32" global_seed="1" op_seed="2" alignment="pytorch"/>
<input><port id="0" precision="I64"><dim>2</dim></port><port id="1" precision="FP32"/><port id="2" precision="FP32"/>
</input><output><port id="3" precision="FP32"><dim>-1</dim><dim>-1</dim></port></output></layer>''',
}
# Keep probes also saved as test data (tests/test_check_target.py): probe key -> folder under release_compat/.
KEEP_FEATURES = {"keep:RandomUniform:8": "random_uniform_pytorch"}


def corpus_layers() -> dict[tuple[str, int], etree._Element]:
    """The first layer of each (op type, version) with attributes in the repository's IRs, subgraphs left out."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    found: dict[tuple[str, int], etree._Element] = {}
    paths = sorted((ROOT / "models").rglob("*.xml")) + sorted((ROOT / "tests" / "data").rglob("*.xml"))
    for path in paths:
        if str(path.relative_to(ROOT)).startswith(CORPUS_SKIPPED):
            continue
        try:
            root = etree.parse(str(path), parser).getroot()
        except etree.XMLSyntaxError:
            continue
        for layer in root.iterfind("layers/layer"):
            opset, data = layer.get("version") or "", layer.find("data")
            if (not opset.startswith("opset") or layer.get("type") in SKIPPED_TYPES or data is None
                    or not data.attrib or layer.find("body") is not None):
                continue
            try:
                key = resolve(layer.get("type"), opset)
            except Exception:  # noqa: BLE001 - a layer irrun's tables do not know is no probe
                continue
            found.setdefault(key, layer)
    for key, text in EXTRA_LAYERS.items():
        found.setdefault(key, etree.fromstring(text))
    return found


def _port(port_id, precision: str, dims: list[str]) -> str:
    return f'<port id="{port_id}" precision="{precision}">' + "".join(f"<dim>{d}</dim>" for d in dims) + "</port>"


def layer_probe(layer: etree._Element) -> str:
    """An IR of the layer alone (named "x"): a Parameter per input port, a Result per output port."""
    x = copy.deepcopy(layer)
    x.set("id", "1")
    x.set("name", "x")
    layers, edges = [], []
    for i, port in enumerate(x.findall("input/port")):
        dims = [(d.text or "").strip() for d in port.findall("dim")]
        precision = port.get("precision", "FP32")
        et = element_type(precision)
        shape = ",".join("?" if d.startswith("-") else d for d in dims)
        layers.append(f'<layer id="{100 + i}" name="in{i}" type="Parameter" version="opset1"><data shape="{shape}" '
                      f'element_type="{et.name if et else "f32"}"/><output>{_port(0, precision, dims)}</output>'
                      "</layer>")
        edges.append(f'<edge from-layer="{100 + i}" from-port="0" to-layer="1" to-port="{port.get("id")}"/>')
    layers.append(etree.tostring(x, encoding="unicode"))
    for j, port in enumerate(x.findall("output/port")):
        dims = [(d.text or "").strip() for d in port.findall("dim")]
        layers.append(f'<layer id="{200 + j}" name="out{j}" type="Result" version="opset1"><input>'
                      f'{_port(0, port.get("precision", "FP32"), dims)}</input></layer>')
        edges.append(f'<edge from-layer="1" from-port="{port.get("id")}" to-layer="{200 + j}" to-port="0"/>')
    return ('<?xml version="1.0"?>\n<net name="probe" version="11"><layers>\n' + "\n".join(layers)
            + "\n</layers><edges>\n" + "\n".join(edges) + "\n</edges></net>\n")


def keep_probes() -> dict[str, str]:
    """Probe key keep:Type:version -> IR text."""
    return {f"keep:{op_type}:{version}": layer_probe(layer)
            for (op_type, version), layer in sorted(corpus_layers().items())}


def dropped_attributes(current: str | dict | None, message: str | dict | None) -> list[str] | None:
    """The attributes the current release keeps and this one dropped; None when either did not read it."""
    if not isinstance(current, dict) or not isinstance(message, dict):
        return None
    return sorted(set(current["kept"]) - set(message["kept"]))


def kept_since(current: dict, verdicts: dict[str, dict], releases: list[str], newest: str) -> dict[str, str]:
    """kept:Type:version:attribute -> the release after the last tested one that reads the layer and drops
    the attribute (`newest` when the last tested release drops it)."""
    short = [".".join(r.split(".")[:2]) for r in releases] + [newest]
    first = {}
    for key, message in current.items():
        if not key.startswith("keep:"):
            continue
        for index, release in enumerate(releases):
            for name in dropped_attributes(message, verdicts[release].get(key)) or ():
                first[f"kept{key[4:]}:{name}"] = short[index + 1]
    return first


def save_keep_features(items: dict[str, str], directory: Path) -> None:
    """The probes of KEEP_FEATURES as test data: directory/<folder>/model.xml (no weights needed)."""
    for key, folder in KEEP_FEATURES.items():
        path = directory / folder / "model.xml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(items[key])
