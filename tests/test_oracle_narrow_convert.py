"""Convert to and from the narrow element types (f8e4m3, f8e5m2, f8e8m0, f4e2m1, nf4, i4, u1-u6, bf16)
against OpenVINO, for every pair of a wide type (f32 f16 bf16 f64, every integer, boolean) and a narrow
type, both ways, every pair of narrow types, and f64 -> f16.

Inputs: every f16 and bf16 bit pattern; for f32/f64 every narrow code value, the exact midpoints between
neighbouring codes (ties) and the float32 values either side, overflow and underflow edges, signed zeros,
infinities, NaN, float32 subnormals, random bit patterns and random values at many scales; integers
across their ranges and at powers of two; every code of each narrow type. OpenVINO's tensors of narrow
types are fed and read as packed bytes; irrun's widened values are decoded from the same bytes.

Oracle: OpenVINO's reference Convert (Node.evaluate) wherever the package has one; the CPU plugin
(f32 hint) for the pairs the reference lacks (f32/bf16 -> nf4, ...); NO_ORACLE lists the pairs neither
can run (irrun converts them through float32 like the rest: see docs/semantics.md). Exact comparison
(bit for bit, any NaN equals any NaN).
"""
from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset1

import oracle as O
from narrow_values import (NARROW, NARROW_FLOAT, NP, WIDE, evaluate_convert, from_tensor, narrow_codes, pack,
                           raw_tensor, to_tensor, wide_inputs)
from irrun.ir.narrow_floats import _NF4_THRESHOLDS
from irrun.ir.types import ELEMENT_TYPES
from irrun.ir.weights import decode
from irrun.ops.conversion import convert_array

# Every wide type <-> every narrow type and bf16, narrow <-> narrow, and f64 -> f16 (through ov::float16).
TARGETS = {s: NARROW + (["bf16"] if s != "bf16" else [w for w in WIDE if w != "bf16"]) for s in WIDE}
TARGETS["f64"] = TARGETS["f64"] + ["f16"]
TARGETS.update({s: WIDE + NARROW for s in NARROW})
PAIRS = [(s, d) for s, targets in TARGETS.items() for d in targets]

# Pairs neither OpenVINO's reference nor its CPU plugin converts (2026.4.1): into f8e8m0, f4e2m1 and nf4
# only from f32, f16 and bf16; out of f8e8m0 only to floats; out of f4e2m1 and nf4 only to floats and to
# i8, u8, i4 and u4.
_FROM_FLOATS_ONLY = {"f8e8m0", "f4e2m1", "nf4"}
_TARGETS = {"f8e8m0": {"f32", "f16", "bf16", "f64"},
            "f4e2m1": {"f32", "f16", "bf16", "f64", "i8", "u8", "i4", "u4"}}
_TARGETS["nf4"] = _TARGETS["f4e2m1"]
NO_ORACLE = {(s, d) for s, d in PAIRS if s != d and (
    (d in _FROM_FLOATS_ONLY and s not in ("f32", "f16", "bf16")) or (s in _TARGETS and d not in _TARGETS[s]))}


def inputs(src: str, seed: int):
    """(OpenVINO tensor, irrun's widened array) for the test inputs of type `src`."""
    if src in NARROW:
        codes = narrow_codes(src)
        raw = pack(codes, src)
        return raw_tensor(src, codes.size, raw), decode(memoryview(raw), ELEMENT_TYPES[src], codes.size)
    values = wide_inputs(src, np.random.default_rng(seed))
    return to_tensor(values, src), values


def cpu_convert(tensor: ov.Tensor, src: str, dst: str, count: int) -> np.ndarray | None:
    """The CPU plugin's Convert; narrow and bf16 results come back through a second Convert to f32."""
    param = opset1.parameter([count], getattr(ov.Type, src))
    node = opset1.convert(param, getattr(ov.Type, dst))
    if dst not in NP:
        node = opset1.convert(node, ov.Type.f32)
    try:
        compiled = O.core().compile_model(ov.Model([node], [param]), "CPU", O.cpu_config())
    except RuntimeError:
        return None
    return np.array(compiled.create_infer_request().infer([tensor])[0], copy=True)


def nf4_threshold_distance(values: np.ndarray) -> np.ndarray:
    """Distance in float32 ulps from each value to the nearest nf4 decision threshold."""
    ordered = lambda v: np.where(v < 0, -(v.view(np.int32) & 0x7FFFFFFF), v.view(np.int32)).astype(np.int64)
    x = ordered(np.asarray(values, np.float32).reshape(-1))
    t = ordered(_NF4_THRESHOLDS)
    return np.abs(x[:, None] - t[None, :]).min(axis=1)


def irrun_convert(values: np.ndarray, src: str, dst: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        return convert_array(values, ELEMENT_TYPES[src], ELEMENT_TYPES[dst])


def check_pair(src, dst, tensor, values) -> str | None:
    """None when irrun's conversion equals OpenVINO's, else a description."""
    got = irrun_convert(values, src, dst)
    out = evaluate_convert(tensor, src, dst)
    if out is not None:
        assert (src, dst) not in NO_ORACLE
        expected = from_tensor(out, dst, values.size)
    elif (src, dst) in NO_ORACLE:  # measured once: the CPU plugin cannot compile these either
        return None
    else:
        expected = cpu_convert(tensor, src, dst, values.size)
        assert expected is not None, f"{src}->{dst}: no OpenVINO oracle; add it to NO_ORACLE and document it"
        if dst not in NP:
            got = got.astype(np.float32)
        if dst in ("i4", "u4"):  # the CPU plugin's Convert pair skips the 4-bit wrap: compare modulo 16
            expected = convert_array(expected.astype(np.int64), ELEMENT_TYPES["i64"], ELEMENT_TYPES[dst])
            expected = expected.astype(np.float32)
        if dst == "nf4":  # the CPU plugin's thresholds differ from the reference's by an ulp or two
            keep = nf4_threshold_distance(values) > 2
            got, expected, values = got[keep], expected[keep], values[keep]
    message = O.compare_outputs(got, expected)
    if not message:
        return None
    bad = ~((got == expected) | (np.isnan(got.astype(np.float64)) & np.isnan(expected.astype(np.float64))))
    examples = [f"{values[i]!r} -> OpenVINO {expected[i]!r}, irrun {got[i]!r}" for i in np.flatnonzero(bad)[:4]]
    return f"{src} -> {dst}: {message.splitlines()[0]}; " + "; ".join(examples)


@pytest.mark.parametrize("src", WIDE + NARROW)
def test_convert_pairs(src):
    """Every pair with this source type (wide -> narrow; narrow -> wide and narrow)."""
    tensor, values = inputs(src, seed=len(src) * 31)
    targets = TARGETS[src]
    problems = [p for p in (check_pair(src, dst, tensor, values) for dst in targets) if p]
    assert not problems, "\n".join(problems)


# Hand-checked corners (the examples and each type's overflow and NaN rule), independent of OpenVINO.
CORNERS = {
    "f8e4m3": ([1e6, 0.478925, 448, 464, 465, 480, np.inf, np.nan, -0.0, 0.0009765625, 0.0009765626, 2 ** -9],
               [np.nan, 0.46875, 448, 448, np.nan, np.nan, np.nan, np.nan, -0.0, 0.0, 0.0, 2 ** -9]),
    # 61439 rounds to float16 61440 first, a tie that rounds to infinity: two roundings
    "f8e5m2": ([1e6, 57344, 61423, 61439, 61440, 65504, 65520, -np.inf, 2 ** -17, 2 ** -16, 0.3],
               [np.inf, 57344, 57344, np.inf, np.inf, np.inf, np.inf, -np.inf, 0.0, 2 ** -16, 0.3125]),
    # ties (1.5 * 2**e) go to the even exponent: 1.5 -> 2, 3 -> 2, 6 -> 8
    "f8e8m0": ([1.0, 1.5, 3.0, 6.0, 1.6, -4.0, -0.0, 0.0, np.inf, np.nan, 2.0 ** 127 * 1.9, 2 ** -130],
               [1.0, 2.0, 2.0, 8.0, 2.0, 2 ** -127, 2 ** -127, 2 ** -127, 2.0 ** 127, np.nan, 2.0 ** 127,
                2 ** -127]),
    "f4e2m1": ([0.25, 0.26, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 5.01, 100, -np.inf, np.nan, -0.1],
               [0.0, 0.5, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, 6.0, -6.0, 6.0, -0.0]),
    "nf4": ([np.nan, 2.0, -2.0, 0.03979014977812767, 0.0398, 0.0],
            [-1.0, 1.0, -1.0, 0.0, 0.07958029955625534, 0.0]),
}


@pytest.mark.parametrize("name", sorted(CORNERS))
def test_hand_checked_corners(name):
    x, expected = (np.array(v, dtype=np.float64) for v in CORNERS[name])
    got = irrun_convert(x.astype(np.float32), "f32", name)
    assert O.compare_outputs(got, expected.astype(np.float32)) is None, (got, expected)


def test_no_oracle_pairs_still_go_through_float32():
    """f64 / integers -> f8e8m0, f4e2m1 and nf4 have no OpenVINO kernel: irrun converts through float32."""
    x = np.array([3, 7, -9, 1 << 40], dtype=np.int64)
    assert irrun_convert(x, "i64", "f4e2m1").tolist() == [3.0, 6.0, -6.0, 6.0]
    assert irrun_convert(x, "i64", "f8e8m0").tolist() == [2.0, 8.0, 2.0 ** -127, 2.0 ** 40]
    assert irrun_convert(np.array([0.3, -1e300]), "f64", "nf4").tolist() == [np.float32(0.33791524171829224), -1.0]


@pytest.mark.parametrize("dst", NARROW_FLOAT)
def test_convert_layer_end_to_end(tmp_path, dst):
    """A model Parameter f32 -> Convert(dst) -> Convert(f32), run by irrun and by OpenVINO (reference where
    it has a kernel for both converts, else the CPU plugin)."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((3, 40)) * 10.0 ** rng.integers(-4, 5, (3, 40))).astype(np.float32)
    x.flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 1e6, 0.478925]
    built = O.build(lambda p: opset1.convert(opset1.convert(p["x"], getattr(ov.Type, dst)), ov.Type.f32),
                    {"x": x}, tmp_path)
    try:
        expected = O.run_reference(built)
    except O.OracleUnsupported:
        expected = O.run_cpu(built)[1]
    O.assert_same(O.run_irrun(built), expected, built.output_names, context=dst)


def test_cpu_plugin_nf4_thresholds_differ_from_the_reference():
    """OpenVINO's reference nf4 quantiser (ConvertNF4::quantize) compares x > t with float32 thresholds; the
    CPU plugin puts some boundaries an ulp or two away. irrun follows the reference."""
    t = _NF4_THRESHOLDS[12]  # between 0.44070983 and 0.562617
    x = np.array([t, np.nextafter(t, np.float32(1))], dtype=np.float32)
    assert irrun_convert(x, "f32", "nf4").tolist() == [np.float32(0.44070982933044434), np.float32(0.5626170039176941)]
    cpu = cpu_convert(ov.Tensor(x), "f32", "nf4", 2)
    assert cpu.tolist() == [np.float32(0.5626170039176941)] * 2


def test_no_oracle_pairs_really_have_none():
    """A sample of NO_ORACLE: neither OpenVINO's reference nor its CPU plugin converts these."""
    for src, dst in [("f64", "f8e8m0"), ("i32", "f4e2m1"), ("f8e8m0", "i8"), ("nf4", "f8e4m3"), ("u4", "nf4")]:
        assert (src, dst) in NO_ORACLE
        tensor, values = inputs(src, seed=1)
        assert evaluate_convert(tensor, src, dst) is None
        assert cpu_convert(tensor, src, dst, values.size) is None
