"""irrun vs OpenVINO on pooling ops: seeded random sweeps and corner cases.

Oracles (see tests/oracle.py):
  * MaxPool-1/8/14: OpenVINO's core reference kernel (Node.evaluate) is the truth;
    the CPU plugin must agree with it wherever the plugin is known to be exact
    (not on i64/u32/u64 data, not on MaxPool-1 i32 data beyond 2**24). MaxPool-1 has
    no reference kernel for i8/u8: there the CPU plugin is the truth and must agree
    with the MaxPool-8 reference kernel of the same configuration.
  * AdaptiveMaxPool-8, ROIPooling-2: OpenVINO ships no reference evaluate() for these,
    so the CPU plugin is the truth (AdaptiveMaxPool with i64 indices runs as an
    i32-index twin, widened; the element type checked is still the model's i64).

Every case saves an IR file, and OpenVINO reads that same file back, so both sides
execute identical XML. Failures name the sweep, seed, case number and parameters.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from openvino import opset1, opset2, opset8, opset14

import oracle as O
from oracle import OracleUnsupported, assert_same, build, patch_layer, run_cpu, run_cpu_many, run_reference

F32_LOWEST = np.float32(np.finfo(np.float32).min)  # -3.4028235e38

# --------------------------------------------------------------------------- irrun


def _irrun():
    # Deliberately not pytest.importorskip: comparisons against the oracle must fail,
    # not skip, while irrun is missing.
    import irrun

    return irrun


def run_irrun(built: O.Built, *, as_list: bool = False, context: str = "") -> dict:
    irrun = _irrun()
    model = irrun.load(str(built.xml))
    in_names = [t.name for t in model.inputs]
    assert in_names == built.input_names, f"{context}\ninputs {in_names} != {built.input_names}"
    in_types = [t.element_type for t in model.inputs]
    exp_in_types = [O.type_name(i.get_element_type()) for i in built.model.inputs]
    assert in_types == exp_in_types, f"{context}\ninput types {in_types} != {exp_in_types}"
    out_names = [t.name for t in model.outputs]
    assert out_names == built.output_names, f"{context}\noutputs {out_names} != {built.output_names}"
    out_types = [t.element_type for t in model.outputs]
    assert out_types == built.output_types, f"{context}\noutput types {out_types} != {built.output_types}"
    feeds = list(built.feeds) if as_list else built.feed_dict
    return model.run(feeds)


def check_irrun(built, expected, names, *, context, atol=None, f16_ulp=False, zero_sign=True, as_list=False):
    got = run_irrun(built, as_list=as_list, context=context)
    assert_same(got, expected, names, atol=atol, f16_ulp=f16_ulp, zero_sign=zero_sign, context=context)


def describe(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())


# --------------------------------------------------------------------------- data

FLOAT_TYPES = (np.float32, np.float16)


def gen_data(rng: np.random.Generator, shape, dtype, mode: str) -> np.ndarray:
    """mode: 'ties' (few distinct small values), 'cont' (continuous / full range),
    'special' (extremes: +-inf, NaN, lowest; integer min/max)."""
    dtype = np.dtype(dtype)
    shape = tuple(int(s) for s in shape)
    if dtype.kind == "f":
        if mode == "ties":
            a = rng.integers(-2, 3, shape).astype(dtype)
            # signed zeros make ties observable bit-for-bit
            a[(a == 0) & (rng.random(shape) < 0.5)] = -0.0
            return a
        a = (rng.standard_normal(shape) * 10).astype(dtype)
        if mode == "special":
            pool = np.array([-np.inf, np.inf, np.nan, np.finfo(dtype).min, np.finfo(dtype).max, -0.0, 0.0], dtype)
            m = rng.random(shape) < 0.35
            a[m] = rng.choice(pool, size=int(m.sum()))
        return a
    info = np.iinfo(dtype)
    if mode == "ties":
        lo = 0 if info.min == 0 else -2
        return rng.integers(lo, lo + 4, shape).astype(dtype)
    a = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if mode == "special":
        m = rng.random(shape) < 0.4
        a[m] = rng.choice(np.array([info.min, info.max, info.min, 0, 1], dtype), size=int(m.sum()))
    return a


# =========================================================================== MaxPool

AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower")
ROUNDINGS = {1: ("floor", "ceil"), 8: ("floor", "ceil"), 14: ("floor", "ceil", "ceil_torch")}
MP_TYPES = (np.float32, np.float16, np.int32, np.int8, np.uint8, np.int64)
MODES = ("ties", "cont", "special")
MP_SWEEP = {1: (6, 40), 8: (8, 40), 14: (8, 40)}  # version -> (batches, cases per batch)


def maxpool_node(version, x, cfg):
    ap = None if cfg["auto_pad"] == "explicit" else cfg["auto_pad"]
    if version == 1:
        return opset1.max_pool(x, cfg["strides"], cfg["pads_begin"], cfg["pads_end"], cfg["kernel"],
                               cfg["rounding_type"], ap)
    fac = opset8.max_pool if version == 8 else opset14.max_pool
    return fac(x, cfg["strides"], cfg["dilations"], cfg["pads_begin"], cfg["pads_end"], cfg["kernel"],
               cfg["rounding_type"], ap, cfg["index_element_type"], cfg["axis"])


def gen_maxpool_cfg(rng, version, i):
    combos = list(itertools.product(AUTO_PADS, ROUNDINGS[version]))
    auto_pad, rounding = combos[i % len(combos)]
    dtype = np.dtype(MP_TYPES[(i // len(combos) + int(rng.integers(0, len(MP_TYPES)))) % len(MP_TYPES)])
    mode = MODES[int(rng.integers(0, len(MODES)))]
    rank = int(rng.integers(3, 6))
    nsp = rank - 2
    maxd = {1: 12, 2: 7, 3: 5}[nsp]
    spatial = [int(v) for v in rng.integers(1, maxd + 1, nsp)]
    kernel = [int(v) for v in rng.integers(1, 4, nsp)]
    strides = [int(v) for v in rng.integers(1, 4, nsp)]
    dil = [1] * nsp if version == 1 else [int(v) for v in rng.choice([1, 1, 2, 3], nsp)]
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    # pads may reach/exceed the kernel: windows lying wholly in the padding
    pads_begin = [int(rng.integers(0, e + 1)) for e in eff]
    pads_end = [int(rng.integers(0, e + 2)) for e in eff]
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 4))] + spatial
    cfg = dict(
        version=version, shape=shape, dtype=dtype.name, mode=mode, kernel=kernel, strides=strides,
        dilations=dil, pads_begin=pads_begin, pads_end=pads_end, auto_pad=auto_pad,
        rounding_type=rounding,
    )
    if version != 1:
        cfg["index_element_type"] = ("i32", "i64")[int(rng.integers(0, 2))]
        cfg["axis"] = int(rng.integers(-rank, rank))
    # XML-level variations OpenVINO accepts (the oracle reads the same patched file)
    patch = {}
    if version != 1 and cfg["axis"] < 0:
        patch["axis"] = str(cfg["axis"])  # the serializer writes it normalised
    if auto_pad != "explicit" and rng.random() < 0.5:
        # the serializer writes zero pads here; real files may carry stale pads
        patch["pads_begin"] = ", ".join(str(int(v)) for v in rng.integers(0, 3, nsp))
        patch["pads_end"] = ", ".join(str(int(v)) for v in rng.integers(0, 3, nsp))
    r = rng.random()
    if r < 0.1:
        if rounding == "floor":
            patch["rounding_type"] = None
        if auto_pad == "explicit":
            patch["auto_pad"] = None
        if version != 1 and cfg["axis"] == 0:
            patch["axis"] = None
        if version != 1 and cfg["index_element_type"] == "i64":
            patch["index_element_type"] = None
    elif r < 0.2:
        patch["rounding_type"] = rounding.upper()
        patch["auto_pad"] = auto_pad.upper()
    if patch:
        cfg["xml_patch"] = patch
    return cfg


def maxpool_cpu_use(cfg, x, cross_check=True):
    """What the CPU plugin is for in a case: "truth" (no reference kernel for the type), "check" (it must agree
    with the reference where it is known to be exact, with ``cross_check``) or None."""
    version, tname = cfg["version"], O.type_name(np.dtype(cfg["dtype"]))
    if tname not in O.REFERENCE_TYPES[f"MaxPool-{version}"]:
        return "truth"
    cpu_exact = tname not in ("i64", "u64", "u32") and not (
        version == 1 and tname == "i32" and np.abs(x.astype(np.int64)).max(initial=0) > 2**24
    )
    return "check" if cpu_exact and cross_check else None


def maxpool_truth(built, cfg, x, cpu):
    """Returns (expected outputs, names, source), given the CPU plugin's (names, outputs) where
    ``maxpool_cpu_use`` asks for them."""
    use = maxpool_cpu_use(cfg, x, cross_check=cpu is not None)
    if use != "truth":
        expected = run_reference(built)
        names = built.output_names
        if use == "check":
            cnames, cpu_out = cpu
            assert cnames == names
            assert_same(cpu_out, expected, names, context="ORACLE SELF-CHECK " + describe(cfg), who="CPU plugin")
        return expected, names, "reference"
    # MaxPool-1 on i8/u8: CPU is the truth; it must agree with MaxPool-8's reference
    names, expected = cpu
    twin = maxpool_node(8, opset1.parameter(list(x.shape), O.ov_type(np.dtype(cfg["dtype"]))),
                        dict(cfg, dilations=[1] * (x.ndim - 2), index_element_type="i64", axis=0))
    twin_vals = O.evaluate_node(twin, [x])[0]
    assert_same([expected[0]], [twin_vals], context="ORACLE SELF-CHECK (v1 CPU vs v8 ref) " + describe(cfg),
                who="CPU plugin MaxPool-1")
    return expected, names, "cpu"


def make_maxpool_case(tmp: Path, seed: int, version: int, i: int, rng):
    for _attempt in range(50):
        cfg = gen_maxpool_cfg(rng, version, i)
        x = gen_data(rng, cfg["shape"], cfg["dtype"], cfg["mode"])
        patch = cfg.get("xml_patch")
        try:
            built = build(
                lambda p: maxpool_node(version, p["x"], cfg), {"x": x}, tmp / f"c{i}",
                patch=(lambda s: patch_layer(s, "MaxPool", patch)) if patch else None,
                output_names=(["pooled", "indices"][: 1 if version == 1 else 2] if i % 5 == 0 else None),
            )
        except Exception:  # invalid configuration (e.g. dilated kernel > padded input)
            continue
        cfg = dict(seed=seed, case=i, **cfg)
        return cfg, x, built
    raise AssertionError(f"could not draw a valid MaxPool-{version} config (seed {seed}, case {i})")


MAXPOOL_PARAMS = [
    pytest.param(v, b, id=f"MaxPool{v}-batch{b}") for v, (nb, _) in MP_SWEEP.items() for b in range(nb)
]


@pytest.mark.parametrize("version,batch", MAXPOOL_PARAMS)
def test_maxpool_sweep(tmp_path, version, batch):
    seed = 1000 * version + batch
    rng = np.random.default_rng(seed)
    n = MP_SWEEP[version][1]
    failures = []
    cases = [make_maxpool_case(tmp_path, seed, version, i, rng) for i in range(n)]
    # CPU cross-check on every other case keeps the file fast (compiles dominate)
    on_cpu = [i for i, (cfg, x, _) in enumerate(cases) if maxpool_cpu_use(cfg, x, cross_check=(i % 2 == 0))]
    cpu = dict(zip(on_cpu, run_cpu_many([cases[i][2] for i in on_cpu])))
    for i, (cfg, x, built) in enumerate(cases):
        expected, names, source = maxpool_truth(built, cfg, x, cpu.get(i))
        ctx = f"MaxPool-{version} sweep [{source} oracle] " + describe(cfg)
        try:
            check_irrun(built, expected, names, context=ctx, as_list=(i % 4 in (1, 2)))
        except AssertionError as e:
            failures.append(str(e))
        except Exception as e:  # noqa: BLE001 - irrun crashed: report with the case
            failures.append(f"{ctx}\nirrun raised {type(e).__name__}: {e}")
    assert not failures, f"{len(failures)}/{n} cases failed:\n\n" + "\n\n".join(failures[:8])


# ------------------------------------------------------------ MaxPool corner cases


def _pool_cfg(kernel, strides, pads_begin, pads_end, rounding="floor", axis=0, idx="i64"):
    """Explicit-padding MaxPool attributes for the corner-case tests."""
    return dict(kernel=kernel, strides=strides, dilations=[1] * len(kernel), pads_begin=pads_begin,
               pads_end=pads_end, auto_pad="explicit", rounding_type=rounding, index_element_type=idx,
               axis=axis)


def _corner(tmp_path, x, cfg, version=8, name="c"):
    built = build(lambda p: maxpool_node(version, p["x"], cfg), {"x": x}, tmp_path / name)
    ref = run_reference(built)
    return built, ref


def test_maxpool_only_neg_inf_window(tmp_path):
    # 2nd window holds only -inf: the reference gives the type's lowest finite value
    # (not -inf) and the index of the channel's first element.
    x = np.array([[[1, 2, -np.inf, -np.inf], [-np.inf] * 4]], np.float32)
    built, ref = _corner(tmp_path, x, _pool_cfg([2], [2], [0], [0]))
    np.testing.assert_array_equal(ref[0], np.array([[[2, F32_LOWEST], [F32_LOWEST, F32_LOWEST]]], np.float32))
    np.testing.assert_array_equal(ref[1], np.array([[[1, 0], [4, 4]]]))
    names, cpu = run_cpu(built)
    assert_same(cpu, ref, names, who="CPU plugin")  # the CPU plugin agrees
    check_irrun(built, ref, built.output_names, context="MaxPool-8 f32 window of -inf only")


def test_maxpool_only_nan_window(tmp_path):
    # NaN is never selected (strict '>' against an accumulator starting at lowest):
    # an all-NaN window gives lowest and the channel-start index, and NaNs in a mixed
    # window are skipped.
    nan = np.nan
    x = np.array([[[nan, nan, 1, nan, nan, 3, nan, nan, nan]]], np.float32)
    built, ref = _corner(tmp_path, x, _pool_cfg([3], [3], [0], [0]))
    np.testing.assert_array_equal(ref[0], np.array([[[1, 3, F32_LOWEST]]], np.float32))
    np.testing.assert_array_equal(ref[1], np.array([[[2, 5, 0]]]))
    names, cpu = run_cpu(built)
    assert_same(cpu, ref, names, who="CPU plugin")
    check_irrun(built, ref, built.output_names, context="MaxPool-8 f32 NaN windows")


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_maxpool_padding_only_window(tmp_path, axis):
    # ceil overhang: the last window lies wholly in pads_end. Value = lowest,
    # index = flat index of (n, c, 0) reduced modulo the dims from `axis` on.
    x = np.arange(1, 21, dtype=np.float32).reshape(2, 2, 5)
    built, ref = _corner(tmp_path, x, _pool_cfg([2], [3], [0], [2], "ceil", axis=axis), name=f"a{axis}")
    vals = ref[0][..., -1]
    assert (vals == F32_LOWEST).all()
    mod = int(np.prod(x.shape[axis % 3:]))
    start = (np.arange(4) * 5 % mod).reshape(2, 2)
    np.testing.assert_array_equal(ref[1][..., -1], start)
    names, cpu = run_cpu(built)
    assert_same(cpu, ref, names, who="CPU plugin")
    check_irrun(built, ref, built.output_names, context=f"MaxPool-8 padding-only window axis={axis}")


def test_maxpool_f16_empty_window_is_neg_inf(tmp_path):
    # f16 is evaluated through f32 and converted back, so "lowest" becomes -inf in f16
    # (not -65504). Same for all -inf / all NaN windows.
    x = np.array([[[1, 2, -np.inf, -np.inf, np.nan, np.nan, -65504, -65504, 7]]], np.float16)
    built, ref = _corner(tmp_path, x, _pool_cfg([2], [2], [0], [1], "ceil"))
    np.testing.assert_array_equal(ref[0], np.array([[[2, -np.inf, -np.inf, -65504, 7]]], np.float16))
    np.testing.assert_array_equal(ref[1], np.array([[[1, 0, 0, 6, 8]]]))
    names, cpu = run_cpu(built)
    assert_same(cpu, ref, names, who="CPU plugin")
    check_irrun(built, ref, built.output_names, context="MaxPool-8 f16 empty windows")


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64])
def test_maxpool_integer_min_windows(tmp_path, dtype):
    # A window whose elements all equal the type's minimum never beats the
    # accumulator (which starts at that minimum): value = min, index = the channel's
    # first element, not the window's. For u8 this is every all-zero window.
    mn = np.iinfo(dtype).min
    x = np.array([[[5, mn, mn, mn, mn, 7], [mn] * 6]], dtype)
    built, ref = _corner(tmp_path, x, _pool_cfg([2], [2], [0], [2], "ceil"))
    np.testing.assert_array_equal(ref[0], np.array([[[5, mn, 7, mn], [mn, mn, mn, mn]]], dtype))
    np.testing.assert_array_equal(ref[1], np.array([[[0, 0, 5, 0], [6, 6, 6, 6]]]))
    names, cpu = run_cpu(built)
    if dtype is np.int64:
        # the CPU plugin narrows i64 to i32 (INT64_MIN -> 0): it disagrees here
        assert compare_cpu_differs(cpu, ref)
    else:
        assert_same(cpu, ref, names, who="CPU plugin")
    check_irrun(built, ref, built.output_names, context=f"MaxPool-8 {np.dtype(dtype).name} min windows")


def compare_cpu_differs(cpu, ref) -> bool:
    return any(O.compare_outputs(c, r) is not None for c, r in zip(cpu, ref))


@pytest.mark.parametrize("version", [1, 14])
def test_maxpool_special_values_other_versions(tmp_path, version):
    x = np.array([[[np.nan, -np.inf, 2, np.nan, -np.inf, -np.inf, np.inf, 1]]], np.float32)
    cfg = _pool_cfg([2], [2], [1], [2], "ceil")
    built, ref = _corner(tmp_path, x, cfg, version=version)
    # windows: [pad, nan] [-inf, 2] [nan, -inf] [-inf, inf] [1, pad] [pad, pad]
    np.testing.assert_array_equal(ref[0], np.array([[[F32_LOWEST, 2, F32_LOWEST, np.inf, 1, F32_LOWEST]]],
                                                   np.float32))
    if version != 1:
        np.testing.assert_array_equal(ref[1], np.array([[[0, 2, 0, 6, 7, 0]]]))
    names, cpu = run_cpu(built)
    assert_same(cpu, ref, names, who="CPU plugin")
    check_irrun(built, ref, built.output_names, context=f"MaxPool-{version} special values")


def test_maxpool14_ceil_torch_drops_last_window(tmp_path):
    x = np.arange(10, dtype=np.float32).reshape(1, 1, 10)
    outs = {}
    for rt in ("ceil", "ceil_torch"):
        built, ref = _corner(tmp_path, x, _pool_cfg([2], [3], [0], [2], rt), version=14, name=rt)
        outs[rt] = ref
        check_irrun(built, ref, built.output_names, context=f"MaxPool-14 {rt}")
    assert outs["ceil"][0].shape[-1] == 5 and outs["ceil_torch"][0].shape[-1] == 4


# -------------------------------------------------- MaxPool-8 spec worked examples

_E = np.array([[[[-1, 2, 3], [4, 5, -6], [-7, 8, 9]]]], np.float32)
SPEC_EXAMPLES = [
    # (name, input, cfg, values, indices); Example 1 as corrected in SEMANTICS.md
    ("ex1", _E, dict(kernel=[2, 2], strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], auto_pad="explicit",
                     rounding_type="floor"),
     [[[[-1, 2, 3, 3], [4, 5, 5, 3], [4, 8, 9, 9], [-7, 8, 9, 9]]]],
     [[[[0, 1, 2, 2], [3, 4, 4, 2], [3, 7, 8, 8], [6, 7, 8, 8]]]]),
    ("ex2", np.array([[[-1, 2, 3, 5, -7, 9, 1]]], np.float32),
     dict(kernel=[3], strides=[1], pads_begin=[0], pads_end=[0], auto_pad="valid", rounding_type="floor"),
     [[[3, 5, 5, 9, 9]]], [[[2, 3, 3, 5, 5]]]),
    ("ex3", _E, dict(kernel=[2, 2], strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], auto_pad="same_lower",
                     rounding_type="floor"),
     [[[[-1, 2, 3], [4, 5, 5], [4, 8, 9]]]], [[[[0, 1, 2], [3, 4, 4], [3, 7, 8]]]]),
    ("ex4", np.array([[[[-1, 2, 3], [4, 5, -6], [-7, 8, 9]], [[2, -1, 5], [6, -7, 1], [8, 2, -3]]]], np.float32),
     dict(kernel=[2, 2], strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], auto_pad="same_upper",
          rounding_type="floor"),
     [[[[5, 5, 3], [8, 9, 9], [8, 9, 9]], [[6, 5, 5], [8, 2, 1], [8, 2, -3]]]],
     [[[[4, 4, 2], [7, 8, 8], [7, 8, 8]], [[12, 11, 11], [15, 16, 14], [15, 16, 17]]]]),
    ("ex5", _E, dict(kernel=[2, 2], strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0], auto_pad="valid",
                     rounding_type="ceil"),
     [[[[5, 3], [8, 9]]]], [[[[4, 2], [7, 8]]]]),
    ("ex6", np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3),
     dict(kernel=[2, 2], strides=[1, 1], dilations=[2, 2], pads_begin=[1, 1], pads_end=[1, 1],
          auto_pad="explicit", rounding_type="floor"),
     [[[[5, 6, 5], [8, 9, 8], [5, 6, 5]]]], [[[[4, 5, 4], [7, 8, 7], [4, 5, 4]]]]),
    ("ex7", np.arange(1, 19, dtype=np.float32).reshape(1, 2, 3, 3),
     dict(kernel=[2, 2], strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], auto_pad="explicit",
          rounding_type="floor", axis=2),
     [[[[5, 6], [8, 9]], [[14, 15], [17, 18]]]], [[[[4, 5], [7, 8]], [[4, 5], [7, 8]]]]),
]


@pytest.mark.parametrize("name,x,cfg,values,indices", SPEC_EXAMPLES, ids=[e[0] for e in SPEC_EXAMPLES])
def test_maxpool8_spec_examples(tmp_path, name, x, cfg, values, indices):
    cfg = dict(dict(dilations=[1] * (x.ndim - 2), index_element_type="i64", axis=0), **cfg)
    built = build(lambda p: maxpool_node(8, p["x"], cfg), {"x": x}, tmp_path)
    ref = run_reference(built)
    # the oracle reproduces the (corrected) worked example
    np.testing.assert_array_equal(ref[0], np.array(values, np.float32))
    np.testing.assert_array_equal(ref[1], np.array(indices, np.int64))
    check_irrun(built, ref, built.output_names, context=f"MaxPool-8 spec {name}")


# ================================================================ AdaptiveMaxPool-8

AMP_SWEEP = (6, 40)


def gen_amp_cfg(rng, i):
    rank = int(rng.integers(3, 6))
    nsp = rank - 2
    maxd = {1: 10, 2: 7, 3: 5}[nsp]
    spatial = [int(v) for v in rng.integers(1, maxd + 1, nsp)]
    out = []
    for d in spatial:
        kind = int(rng.integers(0, 3))
        out.append(int(rng.integers(1, d + 1)) if kind == 0 else d if kind == 1 else int(rng.integers(d + 1, 2 * d + 3)))
    return dict(
        shape=[int(rng.integers(1, 3)), int(rng.integers(1, 4))] + spatial,
        output_size=out,
        dtype=("float32", "float16")[int(rng.integers(0, 2))],
        mode=("ties", "cont", "special_noNaN")[int(rng.integers(0, 3))],
        index_element_type=("i32", "i64")[i % 2],
        size_dtype=("int32", "int64")[(i // 2) % 2],
        size_input=("Constant", "Parameter")[(i // 4) % 2],
    )


def amp_data(rng, cfg):
    mode = cfg["mode"]
    x = gen_data(rng, cfg["shape"], cfg["dtype"], "special" if mode == "special_noNaN" else mode)
    if mode == "special_noNaN":
        # NaN handling differs between OpenVINO's reference source and its CPU plugin;
        # covered separately in test_adaptive_max_pool_nan.
        x[np.isnan(x)] = -np.inf
    return x


def build_amp(tmp, cfg, x, output_names=None):
    size = np.array(cfg["output_size"], cfg["size_dtype"])
    if cfg["size_input"] == "Constant":
        return build(lambda p: opset8.adaptive_max_pool(p["x"], O.constant(size), cfg["index_element_type"]),
                     {"x": x}, tmp, output_names=output_names)
    return build(lambda p: opset8.adaptive_max_pool(p["x"], p["output_size"], cfg["index_element_type"]),
                 {"x": x, "output_size": size}, tmp, output_names=output_names)


@pytest.mark.parametrize("batch", range(AMP_SWEEP[0]), ids=lambda b: f"batch{b}")
def test_adaptive_max_pool_sweep(tmp_path, batch):
    seed = 8000 + batch
    rng = np.random.default_rng(seed)
    failures, cases = [], []
    for i in range(AMP_SWEEP[1]):
        cfg = gen_amp_cfg(rng, i)
        x = amp_data(rng, cfg)
        cases.append((cfg, build_amp(tmp_path / f"c{i}", cfg, x, output_names=(["out", "argmax"] if i % 5 == 0 else None))))
    # no reference evaluate() exists for AdaptiveMaxPool
    for i, ((cfg, built), (names, expected)) in enumerate(zip(cases, run_cpu_many([b for _, b in cases]))):
        assert [a.dtype for a in expected] == [O.np_dtype(t) for t in built.output_types]
        ctx = "AdaptiveMaxPool-8 sweep [CPU oracle] " + describe(dict(seed=seed, case=i, **cfg))
        try:
            check_irrun(built, expected, names, context=ctx, as_list=(i % 3 == 1))
        except AssertionError as e:
            failures.append(str(e))
        except Exception as e:  # noqa: BLE001
            failures.append(f"{ctx}\nirrun raised {type(e).__name__}: {e}")
    assert not failures, f"{len(failures)}/{AMP_SWEEP[1]} cases failed:\n\n" + "\n\n".join(failures[:8])


def test_adaptive_max_pool_no_reference_and_cpu_i64_limit(tmp_path):
    """Documents the oracle situation: no core evaluate(); CPU refuses i64 indices."""
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 12)
    cfg = dict(output_size=[5], size_dtype="int64", size_input="Constant", index_element_type="i64")
    built = build_amp(tmp_path, cfg, x)
    with pytest.raises(OracleUnsupported):
        run_reference(built)
    with pytest.raises(OracleUnsupported, match="i64"):
        run_cpu(built, i64_index_twin=False)
    names, out = run_cpu(built)
    assert out[1].dtype == np.int64
    np.testing.assert_array_equal(out[0], [[[2, 4, 7, 9, 11]]])  # windows [0,3) [2,5) [4,8) [7,10) [9,12)
    np.testing.assert_array_equal(out[1], [[[2, 4, 7, 9, 11]]])
    check_irrun(built, out, names, context="AdaptiveMaxPool-8 i64 indices")


def test_adaptive_max_pool_nan(tmp_path):
    # CPU plugin (flat scan, accumulator = window's first element, '<'): a NaN at the
    # window's first element wins (value NaN, index of that element); NaN elsewhere is
    # skipped. OpenVINO's reference source (row-wise std::max_element) agrees on these
    # cases; it would differ for a NaN starting a later row, e.g. [[1,2],[nan,5]]
    # (reference source: 2, CPU: 5), which is therefore not asserted here.
    nan = np.nan
    x = np.array([[[[nan, 1], [2, 3]],
                   [[1, nan], [2, 3]],
                   [[1, 2], [3, nan]],
                   [[nan, nan], [nan, nan]],
                   [[-np.inf, nan], [-np.inf, -np.inf]]]], np.float32)
    cfg = dict(output_size=[1, 1], size_dtype="int32", size_input="Constant", index_element_type="i32")
    built = build_amp(tmp_path, cfg, x)
    names, out = run_cpu(built)
    np.testing.assert_array_equal(out[0].ravel(), [nan, 3, 3, nan, -np.inf])
    np.testing.assert_array_equal(out[1].ravel(), [0, 3, 2, 0, 0])
    check_irrun(built, out, names, context="AdaptiveMaxPool-8 NaN windows")


# ===================================================================== ROIPooling-2

ROI_SWEEP = (6, 40)
SCALES = (1.0, 0.5, 0.25, 0.0625, 2.0, 1.0 / 3.0, 0.6)


def gen_roi_cfg(rng, i):
    method = ("max", "bilinear")[i % 2]
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 5))
    h, w = int(rng.integers(1, 11)), int(rng.integers(1, 11))
    if method == "bilinear":
        h, w = max(h, 2), max(w, 2)  # H-1 / W-1 scale the normalised coordinates
    return dict(
        method=method, shape=[n, c, h, w],
        pooled=[int(rng.integers(1, 5)), int(rng.integers(1, 5))],
        num_rois=int(rng.integers(1, 6)),
        spatial_scale=float(SCALES[int(rng.integers(0, len(SCALES)))]),
        dtype=("float32", "float16")[int(rng.integers(0, 2))],
        mode=("ties", "cont")[int(rng.integers(0, 2))],
        rois_input=("Constant", "Parameter")[(i // 2) % 2],
    )


def gen_rois(rng, cfg):
    n, _, h, w = cfg["shape"]
    rois = np.zeros((cfg["num_rois"], 5), np.float64)
    rois[:, 0] = rng.integers(0, n, cfg["num_rois"])
    for r in range(cfg["num_rois"]):
        if cfg["method"] == "max":
            s = cfg["spatial_scale"]
            # coordinates in input-image units; quarter steps hit exact .5 roundings
            xs = rng.integers(-12, 4 * w + 12, 2) / 4.0 / s
            ys = rng.integers(-12, 4 * h + 12, 2) / 4.0 / s
            if rng.random() < 0.3:
                xs = rng.uniform(-3, w + 3, 2) / s
                ys = rng.uniform(-3, h + 3, 2) / s
        else:
            xs = rng.integers(-3, 12, 2) / 8.0
            ys = rng.integers(-3, 12, 2) / 8.0
            if rng.random() < 0.4:
                xs, ys = rng.uniform(-0.25, 1.25, 2), rng.uniform(-0.25, 1.25, 2)
        if rng.random() < 0.75:  # mostly ordered corners, sometimes reversed
            xs, ys = np.sort(xs), np.sort(ys)
        rois[r, 1:] = xs[0], ys[0], xs[1], ys[1]
    return rois.astype(cfg["dtype"])


def build_roi(tmp, cfg, x, rois):
    kw = dict(output_roi=cfg["pooled"], spatial_scale=cfg["spatial_scale"], method=cfg["method"])
    if cfg["rois_input"] == "Constant":
        return build(lambda p: opset2.roi_pooling(p["x"], O.constant(rois), **kw), {"x": x}, tmp)
    return build(lambda p: opset2.roi_pooling(p["x"], p["rois"], **kw), {"x": x, "rois": rois}, tmp)


@pytest.mark.parametrize("batch", range(ROI_SWEEP[0]), ids=lambda b: f"batch{b}")
def test_roi_pooling_sweep(tmp_path, batch):
    seed = 2000 + batch
    rng = np.random.default_rng(seed)
    failures, cases = [], []
    for i in range(ROI_SWEEP[1]):
        cfg = gen_roi_cfg(rng, i)
        x = gen_data(rng, cfg["shape"], cfg["dtype"], cfg["mode"])
        rois = gen_rois(rng, cfg)
        cases.append((cfg, rois, build_roi(tmp_path / f"c{i}", cfg, x, rois)))
    # no reference evaluate() exists for ROIPooling
    oracle = run_cpu_many([built for _, _, built in cases])
    for i, ((cfg, rois, built), (names, expected)) in enumerate(zip(cases, oracle)):
        assert expected[0].dtype == np.dtype(cfg["dtype"])
        bilinear = cfg["method"] == "bilinear"
        ctx = "ROIPooling-2 sweep [CPU oracle] " + describe(dict(seed=seed, case=i, **cfg)) + \
            "\nrois=" + np.array2string(rois.astype(np.float64), precision=6, separator=",")
        try:
            # max: bit-exact except the sign of a zero maximum. OpenVINO's CPU plugin keeps
            # the first of equal values, its reference source (std::max) the last; only
            # +0.0 vs -0.0 can tell them apart. bilinear: atol 1e-5 (+1 ulp for f16).
            check_irrun(built, expected, names, context=ctx, as_list=(i % 3 == 2),
                        atol=1e-5 if bilinear else None, f16_ulp=bilinear and cfg["dtype"] == "float16",
                        zero_sign=False)
        except AssertionError as e:
            failures.append(str(e))
        except Exception as e:  # noqa: BLE001
            failures.append(f"{ctx}\nirrun raised {type(e).__name__}: {e}")
    assert not failures, f"{len(failures)}/{ROI_SWEEP[1]} cases failed:\n\n" + "\n\n".join(failures[:8])


def test_roi_pooling_no_reference(tmp_path):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    rois = np.array([[0, 0, 0, 3, 3]], np.float32)
    cfg = dict(pooled=[2, 2], spatial_scale=1.0, method="max", rois_input="Constant")
    built = build_roi(tmp_path, cfg, x, rois)
    with pytest.raises(OracleUnsupported):
        run_reference(built)
    names, out = run_cpu(built)
    np.testing.assert_array_equal(out[0].ravel(), [5, 7, 13, 15])
    check_irrun(built, out, names, context="ROIPooling-2 max 4x4 -> 2x2")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_roi_pooling_max_special_values(tmp_path, dtype):
    # Only windows on which OpenVINO's CPU plugin (accumulator = first element,
    # take x when acc < x) and its reference source (accumulator = lowest,
    # acc = std::max(x, acc)) agree. They disagree on e.g. [-inf,-inf,-inf]
    # (CPU -inf, reference source lowest) and [nan,-inf,3] (CPU nan, reference 3);
    # those are not asserted since only the CPU plugin can be executed.
    nan, inf = np.nan, np.inf
    rows = [[1, nan, 2], [nan, 1, nan], [nan, nan, nan], [-inf, nan, -inf], [2, -inf, 1]]
    x = np.array(rows, dtype).reshape(1, len(rows), 1, 3)
    rois = np.array([[0, 0, 0, 2, 0]], dtype)
    cfg = dict(pooled=[1, 1], spatial_scale=1.0, method="max", rois_input="Constant")
    built = build_roi(tmp_path, cfg, x, rois)
    names, out = run_cpu(built)
    np.testing.assert_array_equal(out[0].ravel(), np.array([2, nan, nan, -inf, 2], dtype))
    check_irrun(built, out, names, context=f"ROIPooling-2 max special values {np.dtype(dtype).name}")


# ======================================================================= harness


def test_harness_cpu_matches_reference_on_maxpool(tmp_path):
    """Oracle self-check that needs no irrun: CPU plugin == reference evaluate()."""
    rng = np.random.default_rng(7)
    cases = [make_maxpool_case(tmp_path, 7, (8, 14)[i % 2], i, rng) for i in range(24)]
    cases = [case for case in cases if O.type_name(case[1].dtype) != "i64"]
    for (cfg, x, built), (names, cpu) in zip(cases, run_cpu_many([built for _, _, built in cases])):
        assert names == built.output_names
        assert_same(cpu, run_reference(built), names, context=describe(cfg), who="CPU plugin")


def test_harness_cases_compiled_together_equal_cases_compiled_alone(tmp_path):
    """run_cpu_many (one model of side-by-side cases) gives run_cpu's names and bits, AdaptiveMaxPool's i64 twin
    included."""
    rng = np.random.default_rng(8)
    builts = [make_maxpool_case(tmp_path / "mp", 8, 8, i, rng)[2] for i in range(4)]
    for i in range(4):
        cfg = gen_amp_cfg(rng, i)
        builts.append(build_amp(tmp_path / f"amp{i}", cfg, amp_data(rng, cfg)))
    for (names, many), built in zip(run_cpu_many(builts), builts):
        alone_names, alone = run_cpu(built)
        assert names == alone_names
        assert_same(many, alone, names)


def test_harness_patch_layer_is_read_by_openvino(tmp_path):
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    cfg = _pool_cfg([2, 2], [1, 1], [0, 0], [0, 0], axis=2)
    built = build(lambda p: maxpool_node(8, p["x"], cfg), {"x": x}, tmp_path,
                  patch=lambda s: patch_layer(s, "MaxPool", {"axis": "-2", "rounding_type": "CEIL"}))
    assert 'axis="-2"' in built.xml.read_text()
    op = [o for o in built.model.get_ordered_ops() if o.get_type_name() == "MaxPool"][0]
    assert op.get_attributes()["axis"] == 2
