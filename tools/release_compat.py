"""Regenerate irrun/tools/release_table.py: which OpenVINO release first reads each op version, element type and
attribute value, measured on the releases themselves.

Each release's `openvino` wheel is installed in a throwaway venv (under --venvs, /tmp by default); a probe run
with that venv's Python reads one small IR per feature with `Core.read_model` and says which it refuses:

- every (op type, op version) irrun's opset table knows, written as OpenVINO 2026.4's serializer writes it
  (the first opset that holds it): Parameter -> op -> Result. A release reads the op version unless its
  reader cannot create the layer ("Cannot create ... from unsupported opset", "doesn't contain the
  operation"); any other refusal (the probe has no attributes) means the op exists;
- every element type, as a Parameter and as a Const (read if both load);
- the attribute values in ATTRIBUTE_PROBES (a complete, valid layer each);
- small models using newer features, saved by the current release into tests/data/release_compat/, with
  every release's verdict in expected.json there (tests/test_check_target.py checks --target against it);
- one layer of every op version found in the repository's IRs (tools/release_attributes.py): which of its
  attributes each release keeps after reading it (a release that does not know an attribute reads the file
  and silently drops it); dropped.json there records them for the keep probes of KEEP_FEATURES.

    python tools/release_compat.py                       # all RELEASES, writes irrun/tools/release_table.py
    python tools/release_compat.py --find-links /tmp/ovwheels --releases 2024.0.0 2025.0.0
    python tools/release_compat.py --reuse-verdicts old.json --verdicts new.json  # probe only the new probes
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
from irrun.ir.opsets import opset_op_versions  # noqa: E402
from irrun.ir.types import ELEMENT_TYPES  # noqa: E402
from release_attributes import (KEEP_FEATURES, dropped_attributes, keep_probes, kept_since,  # noqa: E402
                                save_keep_features)

RELEASES = ["2023.0.0", "2023.1.0", "2023.2.0", "2023.3.0", "2024.0.0", "2024.1.0", "2024.2.0", "2024.3.0", "2024.4.0",
            "2024.5.0", "2024.6.0", "2025.0.0", "2025.1.0", "2025.2.0", "2025.3.0", "2025.4.0", "2026.0.0", "2026.1.0",
            "2026.2.0", "2026.3.0"]
CURRENT = "2026.4"  # the installed oracle: reads everything irrun's tables name
TARGET = ROOT / "irrun" / "tools" / "release_table.py"
PRECISIONS = {"f32": "FP32", "f16": "FP16", "f64": "FP64", "bf16": "BF16", "boolean": "BOOL"}  # as serialized
PROBE_TIMEOUT = 120  # seconds for one run of the probe script (a reader that hangs on a probe is stopped)
NOT_CREATED = ("unsupported opset", "doesn't contain the operation", "Unknown opset")

_PORT = '<port id="{id}" precision="{precision}"><dim>2</dim><dim>2</dim></port>'
_NET = '''<?xml version="1.0"?>
<net name="probe" version="11"><layers>
<layer id="0" name="in" type="Parameter" version="opset1"><data shape="2,2" element_type="{et}"/>
<output>{out0}</output></layer>
<layer id="1" name="x" type="{type}" version="{opset}">{data}<input>{in1}</input><output>{out1}</output></layer>
<layer id="2" name="out" type="Result" version="opset1"><input>{in2}</input></layer>
</layers><edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
<edge from-layer="1" from-port="1" to-layer="2" to-port="0"/></edges></net>'''
_PARAM_NET = '''<?xml version="1.0"?>
<net name="probe" version="11"><layers>
<layer id="0" name="p" type="Parameter" version="opset1"><data shape="2,2" element_type="{et}"/>
<output><port id="0" precision="{precision}"><dim>2</dim><dim>2</dim></port></output></layer>
<layer id="1" name="out" type="Result" version="opset1"><input>
<port id="0" precision="{precision}"><dim>2</dim><dim>2</dim></port></input></layer>
</layers><edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/></edges></net>'''
_CONST_NET = '''<?xml version="1.0"?>
<net name="probe" version="11"><layers>
<layer id="0" name="c" type="Const" version="opset1"><data element_type="{et}" shape="2,2" offset="0" size="{size}"/>
<output><port id="0" precision="{precision}"><dim>2</dim><dim>2</dim></port></output></layer>
<layer id="1" name="out" type="Result" version="opset1"><input>
<port id="0" precision="{precision}"><dim>2</dim><dim>2</dim></port></input></layer>
</layers><edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/></edges></net>'''

# (op type, spec version, attribute, value): a valid 2x2 -> ... layer using the value (f32 data [2,2] as NCW).
ATTRIBUTE_PROBES = {
    ("MaxPool", 14, "rounding_type", "ceil_torch"): (
        "opset14", '<data strides="1" dilations="1" pads_begin="0" pads_end="0" kernel="1" rounding_type="ceil_torch" '
                   'auto_pad="explicit" index_element_type="i64" axis="0"/>', 2),
    ("AvgPool", 14, "rounding_type", "ceil_torch"): (
        "opset14", '<data strides="1" pads_begin="0" pads_end="0" kernel="1" exclude-pad="false" '
                   'rounding_type="ceil_torch" auto_pad="explicit"/>', 1),
}


def layer_ir(op_type, opset, data="", et="f32", outputs=1) -> str:
    precision = "FP32" if et == "f32" else et.upper()
    port = lambda i: _PORT.format(id=i, precision=precision)  # noqa: E731
    out1 = port(1) + (_PORT.format(id=2, precision="I64") if outputs == 2 else "")
    return _NET.format(et=et, out0=port(0), type=op_type, opset=opset, data=data, in1=port(0), out1=out1,
                       in2=port(0))


def probes() -> dict[str, str]:
    """Probe key -> IR text. Keys: op:Type:version, param:et, const:et, attr:Type:version:name:value."""
    found = {}
    for (op_type, version), opsets in sorted(opset_op_versions().items()):
        found[f"op:{op_type}:{version}"] = layer_ir(op_type, opsets[0])
    for et, t in ELEMENT_TYPES.items():
        if et in ("dynamic", "undefined"):
            continue
        precision = PRECISIONS.get(et, et.upper())
        found[f"param:{et}"] = _PARAM_NET.format(et=et, precision=precision)
        if et != "string":  # a string Const needs real strings in the .bin; the Parameter stands for the type
            found[f"const:{et}"] = _CONST_NET.format(et=et, size=max(1, t.nbytes(4)), precision=precision)
    found.update(keep_probes())
    for (op_type, version, name, value), (opset, data, outputs) in ATTRIBUTE_PROBES.items():
        ir = layer_ir(op_type, opset, data, outputs=outputs).replace("<dim>2</dim><dim>2</dim>",
                                                                     "<dim>1</dim><dim>2</dim><dim>2</dim>")
        found[f"attr:{op_type}:{version}:{name}:{value}"] = ir.replace('shape="2,2"', 'shape="1,2,2"')
    # Releases up to 2024.4 do not recognise an IR text shorter than about 512 bytes as IR.
    return {key: text.replace("<layers>", "<layers>" + " " * max(0, 1024 - len(text)), 1)
            for key, text in found.items()}


# Imports OpenVINO once, then reads each probe in a forked child, so that a reader crash (some releases
# crash validating a layer without its inputs) costs one probe, not a restart.
PROBE_SCRIPT = r'''
import json, os, signal, sys
try:
    from openvino import Core, Tensor
except ImportError:
    from openvino.runtime import Core, Tensor
import numpy as np
core = Core()
weights = Tensor(np.zeros(64, np.uint8))
out = {}
for key, xml in json.load(sys.stdin).items():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        signal.alarm(30)
        try:
            model = core.read_model(xml[5:]) if xml.startswith("file:") else core.read_model(xml, weights)
            model.validate_nodes_and_infer_types()
            message = None
            if key.startswith("keep:"):  # which attributes of layer "x" the release kept
                x = next(n for n in model.get_ops() if n.get_friendly_name() == "x")
                message = {"kept": sorted(x.get_attributes())}
        except Exception as exc:
            message = " ".join(str(exc).split())[-400:]
        os.write(write, json.dumps(message).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    _, status = os.waitpid(pid, 0)
    out[key] = json.loads(text) if text else f"the reader crashed (status {status})"
print(json.dumps(out))
'''


def run_probes(python: Path, items: dict[str, str]) -> dict[str, str | None]:
    """Each probe's refusal message (None: read); a probe that crashes the reader counts as refused, except
    for op probes (readable() below)."""
    done = subprocess.run([str(python), "-c", PROBE_SCRIPT], input=json.dumps(items), capture_output=True,
                          text=True, timeout=PROBE_TIMEOUT * 10, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def readable(key: str, message: str | dict | None) -> bool:
    if message is None or isinstance(message, dict):
        return True
    if key.startswith("op:"):  # created, then refused (the probe has no attributes) or crashed validating it
        return not any(text in message for text in NOT_CREATED)
    return False


def feature_irs(directory: Path) -> dict[str, Path]:
    """Small models using newer features, saved by the installed (current) OpenVINO: the test data of
    tests/test_check_target.py, with every tested release's verdict on them."""
    import numpy as np
    import openvino as ov
    from openvino import opset1, opset13, opset14, opset15

    def param(shape, et=ov.Type.f32):
        return opset1.parameter(shape, et, name="x")

    builders = {}
    x = param([1, 2, 1, 4])
    builders["opset1_only"] = ([opset1.relu(x)], [x])
    x = param([1, 2, 1, 4])
    builders["squeeze15"] = ([opset15.squeeze(x, opset1.constant(np.array([2], np.int64)), allow_axis_skip=False)],
                             [x])
    x = param([1, 2, 4, 4])
    builders["maxpool14_ceil_torch"] = (opset14.max_pool(x, [2, 2], [1, 1], [0, 0], [0, 0], [3, 3],
                                                         "ceil_torch").outputs()[:1], [x])
    q = param([1, 2, 4, 8])
    builders["sdpa13"] = ([opset13.scaled_dot_product_attention(q, q, q, causal=True)], [q])
    x = param([4, 8])
    weights = ov.op.Constant(ov.Type.f4e2m1, ov.Shape([4, 8]), [0.5] * 32)
    builders["f4e2m1_const"] = ([opset1.add(x, opset1.convert(weights, ov.Type.f32))], [x])
    s = param([2], ov.Type.string)
    builders["string_parameter"] = ([opset1.result(s)], [s])
    paths = {}
    for name, (outputs, params) in builders.items():
        path = directory / name / "model.xml"
        path.parent.mkdir(parents=True, exist_ok=True)
        ov.save_model(ov.Model(outputs, params, name), str(path), compress_to_fp16=False)
        paths[f"file:{name}"] = path
    return paths


def ensure_venv(release: str, venvs: Path, find_links: str | None) -> Path:
    python = venvs / f"openvino-{release}" / "bin" / "python"
    if not python.exists():
        venv.create(python.parents[1], with_pip=True)
        extra = ["--find-links", find_links] if find_links else []
        subprocess.run([str(python), "-m", "pip", "install", "-q", *extra, f"openvino=={release}", "numpy<2"],
                       check=True)
    return python


def first_releases(verdicts: dict[str, dict[str, str | None]], releases: list[str]) -> dict[str, str]:
    """Key -> the first release (major.minor) from which every later tested release reads it; CURRENT when
    none of the tested ones does. Keys every tested release reads are left out."""
    first = {}
    for key in verdicts[releases[0]]:
        since = CURRENT
        for release in reversed(releases):
            if not readable(key, verdicts[release].get(key)):
                break
            since = release
        if since != releases[0]:
            first[key] = ".".join(since.split(".")[:2])
    return first


def write_table(first: dict[str, str], releases: list[str]) -> None:
    short = [".".join(r.split(".")[:2]) for r in releases]
    sections = {"op": "OP_VERSIONS", "param": "ELEMENT_TYPES_PARAMETER", "const": "ELEMENT_TYPES_CONST",
                "attr": "ATTRIBUTE_VALUES", "kept": "ATTRIBUTES_KEPT"}
    lines = ['"""The first OpenVINO release that reads each IR feature, generated by tools/release_compat.py from the',
             f'releases {", ".join(short)} and {CURRENT} themselves. Do not edit by hand.',
             "", "Features every tested release reads are not listed; a feature listed with",
             f'"{CURRENT}" is read by none of the tested older releases."""', "",
             f"RELEASES = {short + [CURRENT]!r}", ""]
    for prefix, name in sections.items():
        entries = {tuple(int(p) if p.isdigit() else p for p in key.split(":")[1:]): release
                   for key, release in sorted(first.items()) if key.startswith(prefix + ":")}
        lines.append(f"{name} = {{")
        lines += [f"    {key[0]!r}: {release!r}," if len(key) == 1 else f"    {key!r}: {release!r},"
                  for key, release in entries.items()]
        lines.append("}")
        lines.append("")
    TARGET.write_text("\n".join(lines))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--releases", nargs="*", default=RELEASES)
    parser.add_argument("--venvs", type=Path, default=Path("/tmp/irrun-openvino-venvs"))
    parser.add_argument("--find-links", help="a folder of already downloaded wheels for pip")
    parser.add_argument("--verdicts", type=Path, help="also write every release's raw verdicts (JSON) here")
    parser.add_argument("--reuse-verdicts", type=Path, metavar="JSON",
                        help="an earlier run's --verdicts: probe only what it lacks (same releases, same probes)")
    args = parser.parse_args(argv)
    items = probes()
    features_dir = ROOT / "tests" / "data" / "release_compat"
    features = feature_irs(features_dir)
    items.update({key: f"file:{path}" for key, path in features.items()})
    current = run_probes(Path(sys.executable), items)
    broken = sorted(key for key, message in current.items() if not readable(key, message))
    if broken:  # a probe the current release refuses tests nothing: leave it out
        print(f"{CURRENT} refuses {len(broken)} probes, left out: {', '.join(broken)}")
        items = {key: xml for key, xml in items.items() if key not in broken}
    earlier = json.loads(args.reuse_verdicts.read_text()) if args.reuse_verdicts else {}
    verdicts = {}
    for release in args.releases:
        python = ensure_venv(release, args.venvs, args.find_links)
        known = {key: message for key, message in earlier.get(release, {}).items() if key in items}
        verdicts[release] = {**known, **run_probes(python, {k: v for k, v in items.items() if k not in known})}
        refused = sum(not readable(k, m) for k, m in verdicts[release].items())
        print(f"{release}: refuses {refused} of {len(items)} probes", flush=True)
    if args.verdicts:
        args.verdicts.write_text(json.dumps(verdicts, indent=1))
    expected = {key[5:]: {".".join(r.split(".")[:2]): not readable(key, verdicts[r][key]) for r in args.releases}
                for key in features}
    (features_dir / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    table = {key: release for key, release in first_releases(verdicts, args.releases).items()
             if not key.startswith(("file:", "keep:"))}
    table.update(kept_since(current, verdicts, args.releases, CURRENT))
    save_keep_features(items, features_dir)
    dropped = {folder: {".".join(r.split(".")[:2]): dropped_attributes(current[key], verdicts[r].get(key))
                        for r in args.releases} for key, folder in KEEP_FEATURES.items()}
    (features_dir / "dropped.json").write_text(json.dumps(dropped, indent=1) + "\n")
    write_table(table, args.releases)
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
