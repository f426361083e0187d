"""irrun vs OpenVINO: AvgPool-1/14/16, AdaptiveAvgPool-8, ROIAlign-3/9, PSROIPooling-1.

Oracles (tests/oracle.py): OpenVINO 2026.4 ships a reference evaluate() only for ROIAlign-3 here;
the CPU plugin (f32 inference precision) is the executable oracle for the rest, and ROIAlign-3 is
checked against both. Where the CPU plugin departs from OpenVINO's reference kernel (read from
src/core/reference), irrun follows the reference and the test states the difference:

  * AvgPool: a window with nothing to count (wholly in the padding or ceil overhang while exclude-pad
    is true or all pads are zero) is 0 in the reference; the CPU plugin divides 0 by 0 (NaN, and
    INT_MIN after conversion to an integer type).
  * AdaptiveAvgPool on integers: the reference rounds i8/u8 to nearest and truncates wider types; the
    CPU plugin truncates (or rounds, depending on the shape) and saturates i8/u8 sums. Integer sweeps
    therefore use data whose window means are exact, where every rule agrees.

Tolerances: f32 outputs within 1e-5 absolute (data of magnitude ~10, sums of at most ~30 terms or
bilinear weights: a few f32 ulps of reordering); f16 outputs within one f16 ulp plus 1e-3 (the CPU
plugin computes f16 through f32 as irrun does, rounding once); integers exact.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from openvino import opset1, opset3, opset8, opset9, opset14, opset16

import irrun
import oracle as O
from oracle import assert_same, build, patch_layer, run_cpu, run_cpu_many, run_irrun, run_reference


def check(built, expected, names, context, atol=None, f16=False):
    got = run_irrun(built, context)
    assert_same(got, expected, names, atol=atol, f16_ulp=f16, context=context)


def tolerance(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return 1e-5, False
    if dtype == np.float16:
        return 1e-3, True
    return None, False


def describe(cfg):
    return ", ".join(f"{k}={v}" for k, v in cfg.items())


def rejects(xml_path):
    """Both OpenVINO and irrun refuse the file."""
    with pytest.raises(Exception):
        O.core().read_model(str(xml_path))
    with pytest.raises(irrun.IRError):
        irrun.load(str(xml_path))


# =========================================================================== AvgPool

AVG_TYPES = (np.float32, np.float32, np.float16, np.int32, np.int8, np.uint8)
ROUNDINGS = {1: ("floor", "ceil"), 14: ("floor", "ceil", "ceil_torch"), 16: ("floor", "ceil", "ceil_torch")}
AUTO_PADS = (None, None, "valid", "same_upper", "same_lower")


def avgpool_node(version, x, cfg):
    args = (x, cfg["strides"], cfg["pads_begin"], cfg["pads_end"], cfg["kernel"], cfg["exclude_pad"],
            cfg["rounding_type"], cfg["auto_pad"])
    if version == 1:
        return opset1.avg_pool(*args)
    if version == 14:
        return opset14.avg_pool(*args)
    return opset16.avg_pool(*args, cfg["dilations"])


def effective_pads(cfg, spatial):
    """The pads OpenVINO uses (auto_pad resolved), computed here from the spec's formulas."""
    begins, ends = [], []
    for dim, k, s, d, pb, pe in zip(spatial, cfg["kernel"], cfg["strides"], cfg["dilations"],
                                    cfg["pads_begin"], cfg["pads_end"]):
        eff = (k - 1) * d + 1
        if cfg["auto_pad"] == "valid":
            pb = pe = 0
        elif cfg["auto_pad"] in ("same_upper", "same_lower"):
            total = max(0, (math.ceil(dim / s) - 1) * s + eff - dim)
            small, large = total // 2, total - total // 2
            pb, pe = (small, large) if cfg["auto_pad"] == "same_upper" else (large, small)
        begins.append(pb)
        ends.append(pe)
    return begins, ends


def empty_windows(cfg, spatial, out_spatial):
    """Output positions whose window has nothing to count under the reference kernel's divisor rule
    (only possible when exclude-pad is true or no pad is non-zero)."""
    begins, ends = effective_pads(cfg, spatial)
    if not cfg["exclude_pad"] and (any(begins) or any(ends)):
        return np.zeros(out_spatial, bool)
    empty = np.zeros(out_spatial, bool)
    for axis, (dim, o, k, s, d, pb) in enumerate(zip(spatial, out_spatial, cfg["kernel"], cfg["strides"],
                                                     cfg["dilations"], begins)):
        none_inside = np.array([not any(0 <= i * s - pb + j * d < dim for j in range(k)) for i in range(o)])
        shape = [1] * len(out_spatial)
        shape[axis] = o
        empty = empty | none_inside.reshape(shape)
    return empty


def gen_avgpool_cfg(rng, version, i):
    rank = int(rng.integers(3, 6))
    ns = rank - 2
    spatial = [int(v) for v in rng.integers(1, {1: 10, 2: 7, 3: 5}[ns] + 1, ns)]
    kernel = [int(v) for v in rng.integers(1, 4, ns)]
    strides = [int(v) for v in rng.integers(1, 4, ns)]
    dil = [1] * ns if version != 16 else [int(v) for v in rng.choice([1, 1, 2, 3], ns)]
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    exclude = bool(i % 2)
    if rng.random() < 0.25:
        pads_begin, pads_end = [0] * ns, [0] * ns
    else:
        # with exclude-pad OpenVINO requires pads smaller than the dilated kernel
        top = [e - 1 if exclude else e + 1 for e in eff]
        pads_begin = [int(rng.integers(0, t + 1)) for t in top]
        pads_end = [int(rng.integers(0, t + 1)) for t in top]
    dtype = np.dtype(AVG_TYPES[(i // 2 + int(rng.integers(0, len(AVG_TYPES)))) % len(AVG_TYPES)])
    return dict(version=version, shape=[int(rng.integers(1, 3)), int(rng.integers(1, 4))] + spatial,
                dtype=dtype.name, kernel=kernel, strides=strides, dilations=dil, pads_begin=pads_begin,
                pads_end=pads_end, exclude_pad=exclude,
                rounding_type=ROUNDINGS[version][int(rng.integers(0, len(ROUNDINGS[version])))],
                auto_pad=AUTO_PADS[int(rng.integers(0, len(AUTO_PADS)))])


def gen_values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 10).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)


def avgpool_expected(cfg, x, cpu):
    """The CPU plugin's result with the reference's 0 for windows with nothing to count (the CPU plugin
    gives NaN there for floats, INT_MIN or 0 for integers: see test_avgpool_empty_window_is_zero_not_nan)."""
    out = cpu.copy()
    empty = np.broadcast_to(empty_windows(cfg, x.shape[2:], out.shape[2:]), out.shape)
    if empty.any():
        if out.dtype.kind == "f":
            assert (np.isnan(out[empty]) | (out[empty] == 0)).all(), "CPU plugin: unexpected empty AvgPool window"
        out[empty] = 0
    return out


AVG_SWEEP = {1: 3, 14: 3, 16: 4}  # version -> batches of 30 cases


@pytest.mark.parametrize("version,batch", [(v, b) for v, n in AVG_SWEEP.items() for b in range(n)])
def test_avgpool_sweep(tmp_path, version, batch):
    seed = 7000 + 100 * version + batch
    rng = np.random.default_rng(seed)
    failures, done, cases = [], 0, []
    for i in range(30):
        cfg = gen_avgpool_cfg(rng, version, i)
        x = gen_values(rng, cfg["shape"], cfg["dtype"])
        try:
            built = build(lambda p: avgpool_node(version, p["x"], cfg), {"x": x}, tmp_path / f"c{i}")
        except RuntimeError:
            continue  # OpenVINO rejects the configuration (kernel larger than the padded input)
        cases.append((i, cfg, x, built))
    oracle = run_cpu_many([built for *_, built in cases], keep_refusals=True)
    # the CPU plugin compiles some integer AvgPools (rank 5, i32) in no layout: use its f32 result
    # on the same values, rounded half to even as it rounds integer AvgPool elsewhere
    refused = [(i, cfg, x) for (i, cfg, x, _), result in zip(cases, oracle) if isinstance(result, O.OracleUnsupported)]
    twins = iter(run_cpu_many([build(lambda p: avgpool_node(version, p["x"], cfg), {"x": x.astype(np.float32)},
                                     tmp_path / f"t{i}") for i, cfg, x in refused]))
    for (i, cfg, x, built), result in zip(cases, oracle):
        ctx = f"AvgPool-{version} seed={seed} case={i} " + describe(cfg)
        if not isinstance(result, O.OracleUnsupported):
            names, cpu = result
            expected = [avgpool_expected(cfg, x, cpu[0])]
        else:
            assert np.dtype(cfg["dtype"]).kind in "iu", ctx
            names, cpu = next(twins)
            mean = avgpool_expected(cfg, x, cpu[0])
            expected = [np.rint(mean).astype(x.dtype)]
            names = built.output_names
            ctx += " [CPU f32 twin]"
        atol, f16 = tolerance(cfg["dtype"])
        try:
            check(built, expected, names, ctx, atol, f16)
        except AssertionError as e:
            failures.append(str(e))
        done += 1
    assert done >= 20
    assert not failures, f"{len(failures)} cases failed:\n\n" + "\n\n".join(failures[:6])


def test_avgpool_divisor_counts_padding_and_ceil_overhang(tmp_path):
    # exclude-pad false with a non-zero pad: every kernel position counts, including the ceil overhang
    # beyond pads_end (PyTorch would not count the overhang).
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 5)
    built = build(lambda p: opset1.avg_pool(p["x"], [2], [1], [0], [3], False, "ceil"), {"x": x}, tmp_path)
    names, cpu = run_cpu(built)
    # windows: [pad,1,2] [2,3,4] [4,5,overhang] -> sums 3, 9, 9, each divided by 3
    np.testing.assert_allclose(cpu[0].ravel(), [1, 3, 3])
    check(built, cpu, names, "AvgPool-1 divisor with pads and overhang")


def test_avgpool_no_pads_ignores_exclude_pad(tmp_path):
    # all pads zero: exclude-pad false still divides the ceil overhang window by its real elements
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 5)
    built = build(lambda p: opset1.avg_pool(p["x"], [2], [0], [0], [2], False, "ceil"), {"x": x}, tmp_path)
    names, cpu = run_cpu(built)
    np.testing.assert_allclose(cpu[0].ravel(), [1.5, 3.5, 5])
    check(built, cpu, names, "AvgPool-1 no pads, exclude-pad false")


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32])
def test_avgpool_integer_rounds_half_to_even(tmp_path, dtype):
    x = np.array([1, 2, 3, 4, 5, 6, 1, 1, 1, 2], dtype).reshape(1, 1, 10)
    built = build(lambda p: opset1.avg_pool(p["x"], [2], [0], [0], [2], True), {"x": x}, tmp_path)
    names, cpu = run_cpu(built)
    # means 1.5 3.5 5.5 1 1.5 -> 2 4 6 1 2
    np.testing.assert_array_equal(cpu[0].ravel(), [2, 4, 6, 1, 2])
    check(built, cpu, names, f"AvgPool-1 {np.dtype(dtype).name} rounding")


def test_avgpool_empty_window_is_zero_not_nan(tmp_path):
    # ceil overhang windows wholly past the data (exclude-pad true): the reference kernel gives 0 (nothing
    # to count); the CPU plugin divides 0 by 0 here (NaN). irrun follows the reference.
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 1, 4)
    built = build(lambda p: opset1.avg_pool(p["x"], [1, 3], [0, 1], [0, 1], [1, 2], True, "ceil"), {"x": x}, tmp_path)
    names, cpu = run_cpu(built)
    assert np.isnan(cpu[0][0, 0, 0, -1]) or cpu[0][0, 0, 0, -1] == 0
    got = list(run_irrun(built).values())[0]
    np.testing.assert_array_equal(got.ravel(), np.float32([1, 3.5, 0]))
    assert not np.signbit(got).any()


def test_avgpool_exclude_pad_kernel_in_padding_rejected(tmp_path):
    x = np.zeros((1, 1, 5, 5), np.float32)
    built = build(lambda p: opset1.avg_pool(p["x"], [1, 1], [0, 0], [0, 0], [2, 2], True), {"x": x}, tmp_path)
    path = tmp_path / "bad.xml"
    path.write_text(patch_layer(built.xml.read_text(), "AvgPool", {"pads_begin": "2, 0"}))
    (tmp_path / "bad.bin").write_bytes(built.xml.with_suffix(".bin").read_bytes())
    rejects(path)


def test_avgpool_v16_dilated_kernel_validation(tmp_path):
    # AvgPool-16 compares the pads with the dilated kernel: pad 2 with kernel 2 dilation 2 (span 3) is fine
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    built = build(lambda p: opset16.avg_pool(p["x"], [1, 1], [2, 0], [0, 0], [2, 2], True, "floor", None, [2, 1]),
                  {"x": x}, tmp_path)
    names, cpu = run_cpu(built)
    check(built, cpu, names, "AvgPool-16 dilated exclude-pad", 1e-5)


def test_avgpool_xml_attribute_spelling(tmp_path):
    # the attribute is spelled exclude-pad; enums are case-insensitive
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 5)
    built = build(lambda p: opset1.avg_pool(p["x"], [2], [1], [1], [3], False, "floor"), {"x": x}, tmp_path,
                  patch=lambda s: patch_layer(s, "AvgPool", {"exclude-pad": "TRUE", "rounding_type": "CEIL"}))
    assert 'exclude-pad="TRUE"' in built.xml.read_text()
    names, cpu = run_cpu(built)
    np.testing.assert_allclose(cpu[0].ravel(), [1.5, 3, 4.5])  # pads excluded
    check(built, cpu, names, "AvgPool-1 attribute spelling", 1e-6)


# =========================================================================== AdaptiveAvgPool

def _lcm_counts(spatial, out):
    counts = []
    for size_in, size_out in zip(spatial, out):
        i = np.arange(size_out)
        counts.append(-((-(i + 1) * size_in) // size_out) - (i * size_in) // size_out)
    total = 1
    for combo in itertools.product(*counts):
        total = math.lcm(total, int(np.prod(combo)))
    return total


@pytest.mark.parametrize("batch", range(3))
def test_adaptive_avgpool_sweep(tmp_path, batch):
    seed = 8000 + batch
    rng = np.random.default_rng(seed)
    failures, cases = [], []
    for i in range(25):
        rank = int(rng.integers(3, 6))
        ns = rank - 2
        spatial = [int(v) for v in rng.integers(1, 9, ns)]
        out = [int(v) for v in rng.integers(1, 9, ns)]
        dtype = np.dtype([np.float32, np.float16, np.int32, np.int8, np.uint8][i % 5])
        size_type = [np.int64, np.int32][i % 2]
        shape = [int(rng.integers(1, 3)), int(rng.integers(1, 4))] + spatial
        if dtype.kind == "f":
            x = (rng.standard_normal(shape) * 10).astype(dtype)
        else:
            # exact window means: multiples of the lcm of the window sizes (or a constant)
            # (the CPU plugin saturates i8/u8 sums: keep every window sum within range)
            m = _lcm_counts(spatial, out)
            limit = {"int8": 127, "uint8": 255}.get(dtype.name, 10**6)
            largest = max(-(-a // b) + 1 for a, b in zip(spatial, out)) ** ns
            if 8 * m * largest <= limit:
                x = (rng.integers(0, 8, shape) * m).astype(dtype)
            else:
                x = np.full(shape, int(rng.integers(0, limit // largest + 1)), dtype)
        cfg = dict(seed=seed, case=i, shape=shape, out=out, dtype=dtype.name, size_type=np.dtype(size_type).name)
        built = build(lambda p: opset8.adaptive_avg_pool(p["x"], O.constant(np.array(out, size_type))), {"x": x},
                      tmp_path / f"a{i}")
        cases.append((cfg, dtype, built))
    for (cfg, dtype, built), (names, cpu) in zip(cases, run_cpu_many([built for *_, built in cases])):
        atol, f16 = tolerance(dtype)
        try:
            check(built, cpu, names, "AdaptiveAvgPool-8 " + describe(cfg), atol, f16)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, f"{len(failures)} cases failed:\n\n" + "\n\n".join(failures[:6])


def test_adaptive_avgpool_integer_rounding_follows_reference(tmp_path):
    # reference: i8/u8 round to nearest (1.75 -> 2), i32 truncates (1.75 -> 1); the CPU plugin truncates.
    for dtype, want in ((np.int8, 2), (np.uint8, 2), (np.int32, 1)):
        x = np.array([1, 2, 2, 2], dtype).reshape(1, 1, 4)
        built = build(lambda p: opset8.adaptive_avg_pool(p["x"], O.constant(np.array([1], np.int64))), {"x": x},
                      tmp_path / np.dtype(dtype).name)
        assert run_cpu(built)[1][0].ravel()[0] == 1
        assert list(run_irrun(built).values())[0].ravel()[0] == want


# =========================================================================== ROIAlign

def gen_roialign(rng, version, i):
    n, c, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 10)), int(rng.integers(1, 10))
    r = int(rng.integers(1, 6))
    scale = float(rng.choice([1.0, 0.5, 0.25, 2.0, 0.0625]))
    dtype = np.dtype(np.float16 if i % 5 == 4 else np.float32)
    start = rng.uniform(-2, max(h, w) / scale + 2, (r, 2))
    size = rng.uniform(0, max(h, w) / scale, (r, 2))
    if rng.random() < 0.2:
        size[0] = 0  # a degenerate box
    rois = np.concatenate([start, start + size], 1).astype(dtype)
    cfg = dict(version=version, shape=[n, c, h, w], rois=r, pooled_h=int(rng.integers(1, 4)),
               pooled_w=int(rng.integers(1, 4)), sampling_ratio=int(rng.integers(0, 4)), spatial_scale=scale,
               mode=["avg", "max"][i % 2], dtype=dtype.name,
               index_type=["i32", "i64"][int(rng.integers(0, 2))])
    if version == 9:
        cfg["aligned_mode"] = ["asymmetric", "half_pixel_for_nn", "half_pixel"][int(rng.integers(0, 3))]
    x = (rng.standard_normal(cfg["shape"]) * 5).astype(dtype)
    batch_indices = rng.integers(0, n, r).astype(cfg["index_type"].replace("i", "int"))
    return cfg, x, rois, batch_indices


def roialign_node(p, cfg):
    args = (p["x"], p["rois"], p["idx"], cfg["pooled_h"], cfg["pooled_w"], cfg["sampling_ratio"],
            cfg["spatial_scale"], cfg["mode"])
    if cfg["version"] == 3:
        return opset3.roi_align(*args)
    return opset9.roi_align(*args, cfg["aligned_mode"])


@pytest.mark.parametrize("version,batch", [(3, 0), (3, 1), (9, 0), (9, 1), (9, 2)])
def test_roialign_sweep(tmp_path, version, batch):
    seed = 9000 + 10 * version + batch
    rng = np.random.default_rng(seed)
    failures, cases = [], []
    for i in range(25):
        cfg, x, rois, idx = gen_roialign(rng, version, i)
        built = build(lambda p: roialign_node(p, cfg), {"x": x, "rois": rois, "idx": idx}, tmp_path / f"r{i}")
        cases.append((cfg, rois, built))
    for i, ((cfg, rois, built), (names, cpu)) in enumerate(zip(cases, run_cpu_many([b for *_, b in cases]))):
        ctx = f"ROIAlign-{version} seed={seed} case={i} " + describe(cfg)
        f32 = cfg["dtype"] == "float32"
        atol = 1e-5 if f32 else 2e-2  # f16: the reference rounds each step to f16
        if version == 3:
            expected = run_reference(built)
            assert_same(cpu, expected, names, atol=atol, context="ORACLE SELF-CHECK " + ctx, who="CPU plugin")
        else:
            expected = [cpu[0].copy()]
            # A box of zero size with sampling_ratio 0 and an aligned mode has no samples: the reference
            # kernel gives 0, the CPU plugin 0/0 = NaN.
            nan_rois = np.isnan(expected[0]).any(axis=(1, 2, 3))
            if nan_rois.any():
                scaled = rois.astype(np.float64) * cfg["spatial_scale"]
                no_samples = ((scaled[:, 2] - scaled[:, 0] == 0) | (scaled[:, 3] - scaled[:, 1] == 0)) \
                    & (cfg["sampling_ratio"] == 0) & (cfg["aligned_mode"] != "asymmetric")
                assert (no_samples | ~nan_rois).all(), ctx
                expected[0][nan_rois] = 0
        try:
            check(built, expected, names, ctx, atol)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, f"{len(failures)} cases failed:\n\n" + "\n\n".join(failures[:6])


def test_roialign_max_starts_from_zero(tmp_path):
    # max mode takes the max of the bilinear samples and 0: an all-negative map gives 0
    x = -np.ones((1, 1, 4, 4), np.float32)
    rois = np.array([[0, 0, 3, 3]], np.float32)
    built = build(lambda p: opset3.roi_align(p["x"], p["r"], p["b"], 2, 2, 2, 1.0, "max"),
                  {"x": x, "r": rois, "b": np.zeros(1, np.int32)}, tmp_path)
    ref = run_reference(built)
    np.testing.assert_array_equal(ref[0], np.zeros((1, 1, 2, 2), np.float32))
    check(built, ref, built.output_names, "ROIAlign-3 max of negatives")


def test_roialign_attribute_validation(tmp_path):
    # OpenVINO's shape inference does not check sampling_ratio or spatial_scale, and accepts pooled_h 0
    # (an empty output); an unknown mode is refused when the file is read.
    x = np.ones((1, 1, 4, 4), np.float32)
    built = build(lambda p: opset3.roi_align(p["x"], p["r"], p["b"], 2, 2, 2, 1.0, "avg"),
                  {"x": x, "r": np.array([[0, 0, 2, 2]], np.float32), "b": np.zeros(1, np.int32)}, tmp_path)
    for k, attrs in enumerate(({"pooled_h": "0"}, {"spatial_scale": "-1"}, {"mode": "AVG"}, {"mode": "mean"})):
        path = tmp_path / f"v{k}.xml"
        path.write_text(patch_layer(built.xml.read_text(), "ROIAlign", attrs))
        (tmp_path / f"v{k}.bin").write_bytes(built.xml.with_suffix(".bin").read_bytes())
        if attrs.get("mode") == "mean":
            rejects(path)
            continue
        model = O.core().read_model(str(path))
        shape = tuple(model.outputs[0].get_shape())
        got = list(irrun.load(str(path)).run(built.feed_dict).values())[0]
        assert got.shape == shape
        if attrs.get("mode") == "AVG":
            np.testing.assert_allclose(got, np.ones(shape, np.float32))


# =========================================================================== PSROIPooling

@pytest.mark.parametrize("batch", range(3))
def test_psroipooling_sweep(tmp_path, batch):
    seed = 9500 + batch
    rng = np.random.default_rng(seed)
    failures, cases = [], []
    for i in range(20):
        mode = ["average", "bilinear"][i % 2]
        group, output_dim = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        bins_x, bins_y = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        channels = output_dim * group * group if mode == "average" else output_dim * bins_x * bins_y
        n, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.integers(1, 9))
        r = int(rng.integers(1, 6))
        scale = float(rng.choice([1.0, 0.5, 0.25, 0.0625]))
        if mode == "average":
            start = rng.uniform(0, max(h, w) / scale, (r, 2))
            size = rng.uniform(0, max(h, w) / scale, (r, 2))
        else:  # coordinates relative to the map
            start = rng.uniform(-0.2, 1, (r, 2))
            size = rng.uniform(0, 1, (r, 2))
        rois = np.concatenate([rng.integers(0, n, (r, 1)), start, start + size], 1).astype(np.float32)
        x = (rng.standard_normal((n, channels, h, w)) * 5).astype(np.float32)
        cfg = dict(seed=seed, case=i, mode=mode, group_size=group, output_dim=output_dim, bins=(bins_x, bins_y),
                   shape=x.shape, rois=r, spatial_scale=scale)
        built = build(lambda p: opset1.psroi_pooling(p["x"], p["r"], output_dim, group, scale, bins_x, bins_y, mode),
                      {"x": x, "r": rois}, tmp_path / f"p{i}")
        cases.append((cfg, built))
    for (cfg, built), (names, cpu) in zip(cases, run_cpu_many([built for _, built in cases])):
        try:
            check(built, cpu, names, "PSROIPooling-1 " + describe(cfg), 1e-5)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, f"{len(failures)} cases failed:\n\n" + "\n\n".join(failures[:6])


def test_psroipooling_channel_count_validated(tmp_path):
    x = np.zeros((1, 8, 4, 4), np.float32)
    built = build(lambda p: opset1.psroi_pooling(p["x"], p["r"], 2, 2, 1.0, 1, 1, "average"),
                  {"x": x, "r": np.zeros((1, 5), np.float32)}, tmp_path)
    path = tmp_path / "bad.xml"
    path.write_text(patch_layer(built.xml.read_text(), "PSROIPooling", {"output_dim": "3"}))
    (tmp_path / "bad.bin").write_bytes(built.xml.with_suffix(".bin").read_bytes())
    rejects(path)


def test_avgpool_missing_exclude_pad_means_true(tmp_path):
    # OpenVINO reads a file without exclude-pad as exclude-pad="true" (its default)
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 5)
    built = build(lambda p: opset1.avg_pool(p["x"], [2], [1], [1], [3], False), {"x": x}, tmp_path,
                  patch=lambda s: patch_layer(s, "AvgPool", {"exclude-pad": None}))
    names, cpu = run_cpu(built)
    np.testing.assert_allclose(cpu[0].ravel(), [1.5, 3, 4.5])
    check(built, cpu, names, "AvgPool-1 without exclude-pad", 1e-6)
