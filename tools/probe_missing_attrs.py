"""What OpenVINO's reader reads for a required attribute a file leaves out (irrun/ops/missing_attrs.py, issue 22).

For every probe of tools/probe_shapes.py and every attribute of its op that the table lists without a value
(None), the attribute is dropped from the saved IR, the file is read with `Core.read_model`, and the value
`node.get_attributes()` gives is printed. A scalar, boolean or word value is then tried as the table's text:
`irrun check` must report the layer with attr.value.spec and, in compatible mode, find no error on the probe
(which OpenVINO reads). Printed: the table lines to write, and the values that fail that check.

    python tools/probe_missing_attrs.py
"""
from __future__ import annotations

import ast
import re
import sys
import tempfile
from pathlib import Path

import openvino as ov

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import irrun  # noqa: E402
from irrun.ir.opsets import resolve  # noqa: E402
from irrun.ops import missing_attrs  # noqa: E402
from probe_shapes import probes  # noqa: E402

LAYER = re.compile(r'<layer id="\d+" name="([^"]*)" type="([^"]*)" version="([^"]*)">\s*<data ([^>]*?)\s*/>')


def dropped_attributes(xml: Path):
    """(key, layer name, text without the attribute) for every unrecorded attribute of every probe."""
    wanted = {key for key, value in missing_attrs.OPENVINO_READS_MISSING.items() if value is None}
    for build in probes(ov).values():
        try:
            outputs, parameters = build()
            model = outputs if isinstance(outputs, ov.Model) else ov.Model(outputs, parameters)
            ov.save_model(model, str(xml), compress_to_fp16=False)
        except Exception:  # noqa: BLE001 - a probe OpenVINO's factories refuse has nothing to measure
            continue
        text = xml.read_text()
        for layer in LAYER.finditer(text):
            name, type_name, opset, data = layer.groups()
            try:
                key_type, version = resolve(type_name, opset)
            except Exception:  # noqa: BLE001 - not an op irrun knows
                continue
            for attr in re.finditer(r'(\w+)="[^"]*"', data):
                key = (key_type, version, attr.group(1))
                if key in wanted:
                    wanted.discard(key)
                    yield key, name, text[:layer.start(4) + attr.start()] + text[layer.start(4) + attr.end():]


def as_text(value) -> str | None:
    """The attribute text for a value get_attributes() gives; None for lists and the type `dynamic`."""
    value = ast.literal_eval(repr(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return value if isinstance(value, str) and value != "dynamic" else None


def main() -> int:
    core, xml = ov.Core(), Path(tempfile.mkdtemp()) / "model.xml"
    for key, layer_name, text in dropped_attributes(xml):
        xml.write_text(text)
        try:
            node = next(n for n in core.read_model(str(xml)).get_ops() if n.get_friendly_name() == layer_name)
        except Exception as exc:  # noqa: BLE001 - OpenVINO refuses the file: not a table entry
            print(f"# {key}: OpenVINO refuses it: {str(exc).splitlines()[-1][:100]}")
            continue
        read = node.get_attributes().get(key[2])
        text_value = as_text(read)
        if text_value is None:
            print(f"# {key}: OpenVINO reads {read!r}, not written as one text")
            continue
        missing_attrs.OPENVINO_READS_MISSING[key] = text_value
        compatible, default = irrun.check(xml, openvino_compatible=True), irrun.check(xml)
        if compatible.errors or "attr.value.spec" not in {d.rule for d in default.errors}:
            print(f"# {key}: OpenVINO reads {read!r}; irrun with it: {(compatible.lines() or default.lines())[:1]}")
            missing_attrs.OPENVINO_READS_MISSING[key] = None
            continue
        print(f"    {key!r}: {text_value!r},")
    return 0


if __name__ == "__main__":
    sys.exit(main())
