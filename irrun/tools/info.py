"""Model information (IR version, inputs and outputs, op histogram, opsets, weights, the checker's
findings) and the table of the ops irrun implements."""
from __future__ import annotations

import os
import re
from collections import Counter


from ..engine import names as naming
from ..errors import IRError
from ..engine.graph import layer_ref
from ..ir.opsets import CLASS_VERSIONS, openvino_class_note
from ..ops.registry import EXTENSION_REGISTRY, supported_ops
from ..ops.shapes import shape_str
from .inputs import declared_shape
from .tables import text_table


def model_info(path, with_checker: bool = True) -> dict:
    """What a model file holds: IR version, inputs and outputs, op histogram by Type-version, opsets,
    weights and, when irrun.check is available, the checker's diagnostics. Works on models irrun cannot
    run (inputs/outputs then come from the declared ports and `load_error` says why)."""
    from ..engine.loader import load
    from ..ir.xml import read_xml
    from .target import oldest_release

    doc = read_xml(path)
    info: dict = {"file": str(path), "name": doc.name, "ir_version": doc.ir_version}
    try:
        model = load(path)
    except IRError as exc:
        model, info["load_error"] = None, str(exc)
    if model is not None:
        info["inputs"] = [{"name": d.name, "names": list(d.names), "shape": declared_shape(model, lid)[1],
                           "element_type": d.element_type} for d, lid in zip(model.inputs, model.graph.parameters)]
        info["outputs"] = [{"name": d.name, "names": list(d.names), "shape": shape_str(d.shape),
                            "element_type": d.element_type} for d in model.outputs]
    else:
        info["inputs"], info["outputs"] = _declared_ports(doc)
    histogram = Counter()
    for layer in doc.layers:
        ref = layer_ref(layer)
        histogram[f"{ref.type}-{ref.version}" if ref.version is not None else f"{layer.type} ({layer.opset})"] += 1
    info["layers"] = len(doc.layers)
    info["ops"] = dict(sorted(histogram.items()))
    info["opsets"] = sorted({layer.opset for layer in doc.layers}, key=_opset_key)
    info["oldest_openvino"] = oldest_release(doc)
    implemented = set(supported_ops())
    info["unsupported_ops"] = sorted({_op_label(layer) for layer in doc.layers if not _implemented(layer, implemented)})
    by_type: Counter = Counter()
    constants, regions = 0, set()
    for layer in doc.layers:
        if layer_ref(layer).type == "Constant":
            constants += 1
            try:
                region = (int(layer.attrs.get("offset", 0)), int(layer.attrs.get("size", 0)))
            except ValueError:
                continue
            if region not in regions:  # constants may share their bytes in the .bin: count them once
                regions.add(region)
                by_type[layer.attrs.get("element_type", "?")] += region[1]
    try:
        bin_bytes = os.path.getsize(doc.bin_path)
    except OSError:
        bin_bytes = None
    info["weights"] = {"bin_file": os.path.basename(doc.bin_path), "bin_bytes": bin_bytes, "constants": constants,
                       "const_bytes": sum(by_type.values()), "const_bytes_by_type": dict(sorted(by_type.items()))}
    info["checker"] = _checker_section(path) if with_checker else None
    return info


def _declared_ports(doc) -> tuple[list, list]:
    """Inputs and outputs of a model irrun cannot load, from the declared ports, named as `run` names them."""
    from ..ir.types import element_type

    def type_name(text):
        et = element_type(text) if text else None
        return et.name if et is not None else text

    parameters = [layer for layer in doc.layers if layer_ref(layer).type == "Parameter"]
    results = [layer for layer in doc.layers if layer_ref(layer).type == "Result"]
    inputs = []
    for layer in parameters:
        name, all_names = naming.input_name(doc, layer)
        inputs.append({"name": name, "names": list(all_names), "shape": "[" + layer.attrs.get("shape", "") + "]",
                       "element_type": type_name(layer.attrs.get("element_type"))})
    outputs = []
    for (name, all_names), layer in zip(naming.output_names(doc, results, naming.result_sources(doc, results)),
                                        results):
        port = layer.inputs[0] if layer.inputs else None
        outputs.append({"name": name, "names": list(all_names),
                        "shape": "[" + ",".join("?" if d.strip() in ("-1", "?") else d.strip()
                                                for d in port.dims) + "]" if port else "[]",
                        "element_type": type_name(port.precision) if port else None})
    return inputs, outputs


def _opset_key(name: str):
    match = re.match(r"^opset(\d+)$", name)
    return (0, int(match.group(1)), "") if match else (1, 0, name)


def _checker_section(path) -> dict | None:
    try:
        from .check import check
    except ImportError:
        return None
    report = check(path)
    return {"conformant": report.passes(), "errors": len(report.errors), "warnings": len(report.warnings),
            "diagnostics": [d.text(report.file) for d in report.diagnostics]}


def format_info(info: dict) -> str:
    lines = [f"{info['file']}: model {info['name']!r}, IR v{info['ir_version']}, {info['layers']} layers"]
    if "load_error" in info:
        lines.append(f"cannot be run: {info['load_error']}")
    for section in ("inputs", "outputs"):
        lines.append(f"{section.capitalize()}:")
        lines += text_table([("name", "shape", "type", "other names")] + [
            (d["name"], d["shape"], str(d["element_type"]), ", ".join(n for n in d["names"] if n != d["name"]))
            for d in info[section]])
    lines.append("Ops (Type-version x count):")
    lines += _wrap([f"{op} x{n}" if n > 1 else op for op, n in info["ops"].items()])
    if info["unsupported_ops"]:
        lines.append(f"Not implemented by irrun: {', '.join(info['unsupported_ops'])}")
    lines.append(f"Opsets: {', '.join(info['opsets'])}")
    lines.append(f"Oldest OpenVINO release that reads it: {info['oldest_openvino']} (of the releases tested, "
                 f"irrun/tools/release_table.py)")
    w = info["weights"]
    by_type = ", ".join(f"{t} {_size(n)}" for t, n in w["const_bytes_by_type"].items())
    bin_size = "missing" if w["bin_bytes"] is None else _size(w["bin_bytes"])
    lines.append(f"Weights: {w['bin_file']} {bin_size}; {w['constants']} constants, {_size(w['const_bytes'])}"
                 + (f" ({by_type})" if by_type else ""))
    checker = info.get("checker")
    if checker is not None:
        verdict = "conformant" if checker["conformant"] else "not conformant"
        lines.append(f"Checker: {verdict}; {checker['errors']} errors, {checker['warnings']} warnings")
        lines += ["  " + d for d in checker["diagnostics"]]
    return "\n".join(lines)


def _wrap(items: list[str], width: int = 100) -> list[str]:
    lines, current = [], "  "
    for item in items:
        piece = item + ", "
        if len(current) + len(piece) > width and current.strip():
            lines.append(current.rstrip(", "))
            current = "  "
        current += piece
    if current.strip():
        lines.append(current.rstrip(", "))
    return lines


def _size(nbytes: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if nbytes < 1024 or unit == "GB":
            return f"{nbytes} B" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{nbytes} B"


def supported_ops_table() -> dict[str, list[int]]:
    """Every op irrun implements: type -> its versions."""
    table: dict[str, list[int]] = {}
    for op_type, version in supported_ops():
        table.setdefault(op_type, []).append(version)
    return table


def supported_ops_records() -> list[dict]:
    """`info --ops` as JSON: type, versions, and OpenVINO's class version where it differs from the op version."""
    records = []
    for op_type, versions in supported_ops_table().items():
        record = {"type": op_type, "versions": versions}
        classes = {str(v): CLASS_VERSIONS[(op_type, v)] for v in versions if (op_type, v) in CLASS_VERSIONS}
        if classes:
            record["openvino_class_versions"] = classes
        records.append(record)
    return records


def _implemented(layer, implemented) -> bool:
    if layer.opset.strip() == "extension" and layer.type in EXTENSION_REGISTRY:
        return True
    return (layer_ref(layer).type, layer_ref(layer).version) in implemented


def _op_label(layer) -> str:
    ref = layer_ref(layer)
    return f"{ref.type}-{ref.version}" if ref.version is not None else f"{layer.type} ({layer.opset})"


def _version_label(op_type: str, version: int) -> str:
    note = openvino_class_note(op_type, version)
    return f"{version} ({note})" if note else str(version)


def format_supported_ops() -> str:
    table = supported_ops_table()
    rows = [("type", "versions")] + [(t, ", ".join(_version_label(t, v) for v in vs)) for t, vs in table.items()]
    count = sum(len(v) for v in table.values())
    extension = f"extension ops (version=\"extension\", openvino-tokenizers): {', '.join(sorted(EXTENSION_REGISTRY))}"
    return "\n".join(text_table(rows) + [f"{count} op versions of {len(table)} types", extension])
