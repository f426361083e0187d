"""Differential probe of the ops whose shape inference reads input values, against OpenVINO's reader.

Each probe is one op on Parameters with constant side inputs (axes, pads, sizes, repeats, ...), written by
OpenVINO valid; each trial overwrites some of those constants in model.bin with other values (negative, zero,
out of range, large) and asks OpenVINO (`read_model` + `validate_nodes_and_infer_types`) and `irrun.check`.
Printed: every trial where they disagree, OpenVINO's refusal against irrun's errors of the OpenVINO class
(docs/rules.md): `missed` (OpenVINO refuses, irrun does not) or `stricter` (irrun refuses with a rule
classed as OpenVINO's, OpenVINO reads the file).

    python tools/probe_values.py --trials 25 --seed 1
    python tools/probe_values.py Tile Pad --trials 100
"""
from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import irrun  # noqa: E402
from irrun.tools.rule_classes import OPENVINO, rule_class  # noqa: E402

VALUES = [-9, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 9, 100]
DTYPES = {"i64": np.int64, "i32": np.int32, "f32": np.float32}


def probes(ov):
    """{name: build()}; build() gives (outputs, parameters, {Const name: element count, 0 for a scalar})."""
    from openvino import opset1 as o1, opset3 as o3, opset6 as o6, opset7 as o7, opset8 as o8
    from openvino import opset9 as o9, opset10 as o10, opset11 as o11, opset12 as o12, opset15 as o15
    from openvino import opset16 as o16

    params = []

    def p(shape, dtype=np.float32):
        params.append(o1.parameter(shape, dtype))
        return params[-1]

    def c(value, name, dtype=np.int64):
        node = o1.constant(np.array(value, dtype=dtype))
        node.set_friendly_name(name)
        return node

    x = lambda: p([-1, 4, 6])  # noqa: E731
    image = lambda: p([2, 3, 8, 8])  # noqa: E731
    table = {
        "Tile": lambda: ([o1.tile(x(), c([1, 2, 1], "r"))], {"r": 3}),
        "Pad": lambda: ([o12.pad(x(), c([0, 1, 0], "pb"), c([0, 1, 0], "pe"), "constant")], {"pb": 3, "pe": 3}),
        "TopK": lambda: ([o11.topk(x(), c(2, "k"), 1, "max", "value").output(0)], {"k": 0}),
        "VariadicSplit": lambda: (list(o1.variadic_split(x(), c(1, "ax"), c([1, 3], "l")).outputs()),
                                  {"ax": 0, "l": 2}),
        "Split": lambda: (list(o1.split(x(), c(1, "ax"), 2).outputs()), {"ax": 0}),
        "Roll": lambda: ([o7.roll(x(), c([1, 2], "s"), c([1, 2], "ax"))], {"s": 2, "ax": 2}),
        "Gather": lambda: ([o8.gather(x(), c([0, 1], "i"), c(1, "ax"))], {"i": 2, "ax": 0}),
        "Unsqueeze": lambda: ([o1.unsqueeze(x(), c([0, 2], "ax"))], {"ax": 2}),
        "Squeeze": lambda: ([o1.squeeze(p([-1, 1, 6]), c([1], "ax"))], {"ax": 1}),
        "Transpose": lambda: ([o1.transpose(x(), c([0, 2, 1], "o"))], {"o": 3}),
        "CumSum": lambda: ([o3.cumsum(x(), c(1, "ax"))], {"ax": 0}),
        "ReduceMean": lambda: ([o1.reduce_mean(x(), c([1, 2], "ax"), True)], {"ax": 2}),
        "Reshape": lambda: ([o1.reshape(x(), c([0, 6, 4], "t"), True)], {"t": 3}),
        "Broadcast": lambda: ([o3.broadcast(p([-1, 1, 6]), c([2, 4, 6], "t"))], {"t": 3}),
        "Interpolate": lambda: ([o11.interpolate(p([1, 3, -1, 6]), c([4, 8], "sz"), "nearest", "sizes",
                                                 axes=c([2, 3], "ax"))], {"sz": 2, "ax": 2}),
        "GatherND": lambda: ([o8.gather_nd(p([2, 4, 6]), c([[0, 1]], "i"))], {"i": 2}),
        "Slice": lambda: ([o8.slice(x(), c([0, 1], "b"), c([2, 5], "e"), c([1, 1], "st"), c([1, 2], "ax"))],
                          {"b": 2, "e": 2, "st": 2, "ax": 2}),
        "StridedSlice": lambda: ([o1.strided_slice(x(), c([0, 1, 0], "b"), c([1, 3, 5], "e"), c([1, 1, 1], "st"),
                                                   [1, 0, 0], [1, 0, 0])], {"b": 3, "e": 3, "st": 3}),
        "SpaceToBatch": lambda: ([o3.space_to_batch(p([2, 4, 6]), c([1, 2, 2], "bs"), c([0, 0, 0], "pb"),
                                                    c([0, 0, 0], "pe"))], {"bs": 3, "pb": 3, "pe": 3}),
        "BatchToSpace": lambda: ([o3.batch_to_space(p([8, 4, 6]), c([1, 2, 2], "bs"), c([0, 0, 0], "cb"),
                                                    c([0, 0, 0], "ce"))], {"bs": 3, "cb": 3, "ce": 3}),
        "Range": lambda: ([o12.range(c(0, "a"), p([], np.int64), c(1, "s"), "i64")], {"a": 0, "s": 0}),  # Range-4
        "AdaptiveAvgPool": lambda: ([o8.adaptive_avg_pool(image(), c([4, 4], "os"))], {"os": 2}),
        "MVN": lambda: ([o6.mvn(image(), c([2, 3], "ax"), True, 1e-5, "inside_sqrt")], {"ax": 2}),
        "NormalizeL2": lambda: ([o1.normalize_l2(image(), c([1], "ax"), 1e-5, "add")], {"ax": 1}),
        "LRN": lambda: ([o1.lrn(image(), c([1], "ax"))], {"ax": 1}),
        "Unique": lambda: ([o10.unique(x(), c(1, "ax")).output(0)], {"ax": 0}),
        "DFT": lambda: ([o7.dft(p([2, 8, 8, 2]), c([1, 2], "ax"), c([8, 8], "ss"))], {"ax": 2, "ss": 2}),
        "Eye": lambda: ([o9.eye(c(3, "r"), c(4, "c"), c(0, "d"), "f32")], {"r": 0, "c": 0, "d": 0}),
        "Col2Im": lambda: ([o15.col2im(p([1, 12, 9]), c([4, 4], "os"), c([2, 2], "ks"))], {"os": 2, "ks": 2}),
        "SegmentMax": lambda: ([o16.segment_max(p([4, 3]), c([0, 0, 1, 2], "ids"), c(3, "ns"), "zero")],
                               {"ids": 4, "ns": 0}),
        "SliceScatter": lambda: ([o15.slice_scatter(x(), p([-1, 2, 6]), c([0], "b"), c([2], "e"), c([1], "st"),
                                                    c([1], "ax"))], {"b": 1, "e": 1, "st": 1, "ax": 1}),
        "EmbeddingSegmentsSum": lambda: ([o3.embedding_segments_sum(p([10, 4]), c([0, 1, 2], "i"),
                                                                     c([0, 0, 1], "si"), c(2, "ns"))],
                                         {"i": 3, "si": 3, "ns": 0}),
    }

    def built(make):
        def build():
            params.clear()
            outputs, consts = make()
            return outputs, list(params), consts
        return build
    return {name: built(make) for name, make in table.items()}


def patch_const(xml: Path, name: str, value) -> None:
    text = xml.read_text()
    match = re.search(rf'<layer id="\d+" name="{re.escape(name)}" type="Const"[^>]*>\s*<data ([^>]*)/>', text)
    attrs = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1)))
    data = np.asarray(value, DTYPES[attrs["element_type"]]).tobytes()
    blob = bytearray(xml.with_suffix(".bin").read_bytes())
    blob[int(attrs["offset"]):int(attrs["offset"]) + len(data)] = data
    xml.with_suffix(".bin").write_bytes(bytes(blob))


def openvino_refusal(ov, xml: Path) -> str | None:
    try:
        ov.Core().read_model(str(xml)).validate_nodes_and_infer_types()
    except Exception as exc:  # noqa: BLE001 - any refusal is the verdict
        return [line for line in str(exc).splitlines() if line.strip()][-1][:120]
    return None


def probe(ov, name, build, trials, rng, directory: Path) -> int:
    outputs, parameters, consts = build()
    xml = directory / name / "model.xml"
    xml.parent.mkdir(parents=True)
    ov.save_model(ov.Model(outputs, parameters), str(xml), compress_to_fp16=False)
    original = xml.read_bytes(), xml.with_suffix(".bin").read_bytes()
    disagreements = 0
    for _ in range(trials):
        xml.write_bytes(original[0])
        xml.with_suffix(".bin").write_bytes(original[1])
        changed = {const: [rng.choice(VALUES) for _ in range(n)] if n else rng.choice(VALUES)
                   for const, n in consts.items() if rng.random() < 0.5}
        for const, value in changed.items():
            patch_const(xml, const, value)
        if not changed:
            continue
        disagreements += disagrees(openvino_refusal(ov, xml), xml, f"{name} {changed}")
    return disagreements


def disagrees(refusal: str | None, xml: Path, trial: str) -> bool:
    """Whether OpenVINO's verdict on the file (its refusal, None when it reads it) and irrun's errors of the
    OpenVINO class disagree; printed if so."""
    errors = [d for d in irrun.check(xml).errors if rule_class(d.rule).kind == OPENVINO]
    if bool(refusal) == bool(errors):
        return False
    irrun_says = "; ".join(f"{d.rule}: {d.message[:90]}" for d in errors[:2]) or "nothing"
    print(f"{trial}: {'missed' if refusal else 'stricter'}: OpenVINO {refusal or 'reads it'} | irrun {irrun_says}",
          flush=True)
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ops", nargs="*", help="probe names (default: all)")
    parser.add_argument("--trials", type=int, default=25)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    import openvino as ov

    table = probes(ov)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as directory:
        total = sum(probe(ov, name, build, args.trials, rng, Path(directory))
                    for name, build in table.items() if not args.ops or name in args.ops)
    print(f"{total} disagreements")
    return 0


if __name__ == "__main__":
    sys.exit(main())
