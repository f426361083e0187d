"""irrun vs OpenVINO on DeformableConvolution-1/8, BinaryConvolution-1 and DeformablePSROIPooling-1.

Oracle: the CPU plugin (f32 hint); OpenVINO 2026.4.1 has no Node.evaluate for these ops.
Tolerances:
- DeformableConvolution f32: both sides sample in f32 and sum L = C_in/group * taps products in different
  orders (irrun: one matmul per batch item); data, filters and masks are O(1): atol = 4e-6 * L + 1e-5.
  f16: OpenVINO's reference kernel (and irrun) rounds every product and every partial sum to f16, the CPU
  plugin sums in f32 and rounds once: L roundings of partial sums of magnitude up to ~sqrt(L) at 2^-11
  relative, bounded by atol = 1e-3 * L * (1 + sqrt(L)) plus one f16 ulp; the f16 path is checked bit-exact
  against a literal transcription of the reference kernel (reference_deformable).
- BinaryConvolution: integer-valued results, compared exactly.
- DeformablePSROIPooling: a mean of bilinear samples in f32 on both sides: atol 1e-5.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset8

import irrun
import oracle as O
from irrun.errors import IRError
from oracle import assert_same, build, run_cpu, run_cpu_many, run_irrun


def tolerance(length):
    return 4e-6 * length + 1e-5


# ---------------------------------------------------------------- DeformableConvolution

def deformable_case(rng, version, case):
    groups = int(rng.integers(1, 3))
    deformable_groups = int(rng.choice([1, 2]))
    in_per_group = int(rng.integers(1, 3)) * deformable_groups
    channels = groups * in_per_group
    if channels % deformable_groups:
        deformable_groups = 1
    out_channels = groups * int(rng.integers(1, 3))
    kernel = [int(k) for k in rng.integers(1, 4, 2)]
    strides = [int(s) for s in rng.integers(1, 3, 2)]
    dilations = [int(d) for d in rng.choice([1, 1, 2], 2)]
    pads_begin = [int(p) for p in rng.integers(0, 2, 2)]
    pads_end = [int(p) for p in rng.integers(0, 2, 2)]
    spatial = [int(rng.integers((k - 1) * d + 1, 8)) for k, d in zip(kernel, dilations)]
    return dict(version=version, batch=int(rng.integers(1, 3)), channels=channels, out_channels=out_channels,
                groups=groups, deformable_groups=deformable_groups, kernel=kernel, strides=strides,
                dilations=dilations, pads_begin=pads_begin, pads_end=pads_end, spatial=spatial,
                mask=version == 8 and bool(rng.random() < 0.7),
                bilinear_pad=version == 8 and bool(rng.random() < 0.5),
                offset_scale=float(rng.choice([0.5, 2.0, 4.0])), integer_offsets=bool(rng.random() < 0.2),
                auto_pad=str(rng.choice(["explicit", "explicit", "same_upper", "same_lower", "valid"])),
                dtype="f16" if case % 5 == 4 else "f32")


def deformable_model(cfg, rng):
    dtype = np.float16 if cfg["dtype"] == "f16" else np.float32
    taps = math.prod(cfg["kernel"])
    pads = {"explicit": (cfg["pads_begin"], cfg["pads_end"]), "valid": ([0, 0], [0, 0])}.get(cfg["auto_pad"])
    if pads is None:  # same_upper / same_lower: ceil(d / s)
        out = [-(-d // s) for d, s in zip(cfg["spatial"], cfg["strides"])]
    else:
        out = [(d + pb + pe - ((k - 1) * dl + 1)) // s + 1 for d, pb, pe, k, dl, s in
               zip(cfg["spatial"], *pads, cfg["kernel"], cfg["dilations"], cfg["strides"])]
    x = rng.standard_normal((cfg["batch"], cfg["channels"], *cfg["spatial"])).astype(dtype)
    offsets = rng.standard_normal((cfg["batch"], cfg["deformable_groups"] * 2 * taps, *out)) * cfg["offset_scale"]
    if cfg["integer_offsets"]:
        offsets = np.round(offsets)
    offsets = offsets.astype(dtype)
    w = rng.standard_normal((cfg["out_channels"], cfg["channels"] // cfg["groups"], *cfg["kernel"])).astype(dtype)
    inputs = {"x": x, "offsets": offsets}
    if cfg["mask"]:
        inputs["mask"] = rng.random((cfg["batch"], cfg["deformable_groups"] * taps, *out)).astype(dtype)

    def make(p):
        args = (p["x"], p["offsets"], O.constant(w), cfg["strides"], cfg["pads_begin"], cfg["pads_end"],
                cfg["dilations"])
        if cfg["version"] == 1:
            return opset1.deformable_convolution(*args, auto_pad=cfg["auto_pad"], group=cfg["groups"],
                                                 deformable_group=cfg["deformable_groups"])
        return opset8.deformable_convolution(*args, mask=p.get("mask"), auto_pad=cfg["auto_pad"],
                                             group=cfg["groups"],
                                             deformable_group=cfg["deformable_groups"],
                                             bilinear_interpolation_pad=cfg["bilinear_pad"])

    return build(make, inputs), cfg["channels"] // cfg["groups"] * taps


@pytest.mark.parametrize("version", [1, 8])
def test_deformable_convolution_sweep(version):
    rng = np.random.default_rng(300 + version)
    cases = []
    for case in range(14):
        cfg = deformable_case(rng, version, case)
        context = f"DeformableConvolution-{version} case {case}: " + ", ".join(f"{k}={v}" for k, v in cfg.items())
        cases.append((cfg, context, *deformable_model(cfg, rng)))
    for (cfg, context, built, length), (_, expected) in zip(cases, run_cpu_many([built for _, _, built, _ in cases])):
        # f16: irrun sums in f16 term by term as OpenVINO's reference does (exact against its transcription
        # below); the CPU plugin sums in f32 and rounds once
        atol = tolerance(length) if cfg["dtype"] == "f32" else 1e-3 * length * (1 + math.sqrt(length))
        assert_same(run_irrun(built, context), expected, built.output_names, atol=atol,
                    f16_ulp=cfg["dtype"] == "f16", context=context)


def test_deformable_convolution_zero_offsets_is_a_convolution():
    # hand-checkable: with zero offsets and a unit mask, DeformableConvolution is Convolution with zero padding
    rng = np.random.default_rng(310)
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    offsets = np.zeros((1, 18, 5, 6), np.float32)
    built = build(lambda p: opset8.deformable_convolution(p["x"], p["o"], O.constant(w), [1, 1], [1, 1], [1, 1],
                                                          [1, 1]), {"x": x, "o": offsets})
    twin = build(lambda p: opset1.convolution(p["x"], O.constant(w), [1, 1], [1, 1], [1, 1], [1, 1]), {"x": x})
    _, expected = run_cpu(twin)
    assert_same(run_irrun(built), expected, built.output_names, atol=tolerance(18))


@pytest.mark.parametrize("info, rule", [
    (dict(x=(1, 4, 5, 5), o=(1, 16, 3, 3), w=(2, 4, 3, 3)), "port.dims"),          # offsets channels
    (dict(x=(1, 4, 5, 5), o=(1, 18, 4, 3), w=(2, 4, 3, 3)), "port.dims"),          # offsets spatial
    (dict(x=(1, 4, 5, 5), o=(1, 18, 3, 3), w=(2, 4, 3, 3), m=(1, 8, 3, 3)), "port.dims"),
    (dict(x=(1, 4, 5, 5), o=(1, 18, 3, 3), w=(3, 2, 3, 3), group=2), "port.dims"),  # filters not divisible
    (dict(x=(1, 4, 5, 5), o=(1, 18, 3, 3), w=(2, 4, 3, 3), group=2), "port.dims"),
    (dict(x=(1, 4, 5, 5), o=(1, 18, 3, 3), w=(2, 4, 3, 3), group=0), "attr.range"),
    (dict(x=(1, 4, 5), o=(1, 6, 3), w=(2, 4, 3)), "port.rank"),
])
def test_deformable_convolution_invalid(info, rule, tmp_path):
    from irbuild import IRBuilder

    info = dict(info)
    group = info.pop("group", 1)
    names = list(info)
    with pytest.raises(RuntimeError):
        params = [O.parameter(n, s, np.float32) for n, s in info.items()]
        spatial = len(info["x"]) - 2
        opset8.deformable_convolution(params[0], params[1], params[2], [1] * spatial, [0] * spatial, [0] * spatial,
                                      [1] * spatial, mask=params[3] if len(params) > 3 else None, group=group)
    builder = IRBuilder()
    sources = [(builder.parameter(list(info[n]), "f32", name=n), 0) for n in names]
    spatial = len(info["x"]) - 2
    attrs = {"strides": ",".join(["1"] * spatial), "dilations": ",".join(["1"] * spatial),
             "pads_begin": ",".join(["0"] * spatial), "pads_end": ",".join(["0"] * spatial), "group": group,
             "deformable_group": 1}  # OpenVINO's reader refuses a DeformableConvolution without it
    layer = builder.op("DeformableConvolution", "opset8", sources, attrs, [([1, 2, 3, 3], "f32")])
    builder.result((layer, 0))
    with pytest.raises(IRError) as error:
        irrun.load(str(builder.save(tmp_path)))
    assert error.value.rule == rule, error.value


def test_deformable_group_must_divide_channels(tmp_path):
    # OpenVINO's shape inference accepts 4 channels in 3 deformable groups (its kernel would read offsets of a
    # fourth group); irrun refuses it
    node = opset8.deformable_convolution(*[O.parameter(n, s, np.float32) for n, s in
                                           (("x", (1, 4, 5, 5)), ("o", (1, 54, 3, 3)), ("w", (2, 4, 3, 3)))],
                                         [1, 1], [0, 0], [0, 0], [1, 1], deformable_group=3)
    assert list(node.get_output_shape(0)) == [1, 2, 3, 3]
    from irbuild import IRBuilder

    builder = IRBuilder()
    sources = [(builder.parameter(list(s), "f32", name=n), 0) for n, s in
               (("x", (1, 4, 5, 5)), ("o", (1, 54, 3, 3)), ("w", (2, 4, 3, 3)))]
    layer = builder.op("DeformableConvolution", "opset8", sources,
                       {"strides": "1,1", "dilations": "1,1", "pads_begin": "0,0", "pads_end": "0,0",
                        "group": 1, "deformable_group": 3}, [([1, 2, 3, 3], "f32")])
    builder.result((layer, 0))
    with pytest.raises(IRError) as error:
        irrun.load(str(builder.save(tmp_path)))
    assert error.value.rule == "port.dims"


# ---------------------------------------------------------------- BinaryConvolution
#
# The CPU plugin runs BinaryConvolution only behind a binarising FakeQuantize (levels 2) and with input
# channels a multiple of 8; it reads the packed u1 weights least significant bit first, where the IR (and
# OpenVINO's reference kernel, and irrun) put element 0 in the most significant bit: the CPU twin gets its
# weight bytes bit-reversed. It also takes pad_value in the -1/+1 domain (0 adds nothing, -1 counts as bit 0),
# where the reference compares pad_value with the bit like an input value (only 1 and 0 ever match): the
# sweep pads with 1.0 (where both agree) or not at all; the other pad values are pinned below.

def u1_constant(bits, lsb_first=False):
    flat = bits.astype(np.uint8).ravel()
    if lsb_first:  # reverse the bit order inside every byte of the packed stream
        padded = np.concatenate([flat, np.zeros(-len(flat) % 8, np.uint8)])
        flat = padded.reshape(-1, 8)[:, ::-1].ravel()[:len(flat)]
    return ov.op.Constant(ov.Type.u1, ov.Shape(list(bits.shape)), flat.tolist())


def binarized(p):
    def scalar(v):
        return O.constant(np.full((1, 1, 1, 1), v, np.float32))
    return opset1.fake_quantize(p["x"], scalar(0), scalar(0), scalar(0), scalar(1), 2)


def binary_models(x, bits, strides, pads_begin, pads_end, dilations, pad_value, auto_pad="explicit"):
    def make(lsb_first):
        return lambda p: opset1.binary_convolution(binarized(p), u1_constant(bits, lsb_first), strides, pads_begin,
                                                   pads_end, dilations, "xnor-popcount", pad_value, auto_pad)
    return build(make(False), {"x": x}), build(make(True), {"x": x})


def test_binary_convolution_sweep():
    rng = np.random.default_rng(320)
    cases = []
    for case in range(12):
        channels = int(rng.choice([8, 16]))
        kernel = [int(k) for k in rng.integers(1, 4, 2)]
        strides = [int(s) for s in rng.integers(1, 3, 2)]
        dilations = [int(d) for d in rng.choice([1, 2], 2)]
        padded = bool(rng.random() < 0.5)
        pads_begin = [int(p) for p in rng.integers(0, 2, 2)] if padded else [0, 0]
        pads_end = [int(p) for p in rng.integers(0, 2, 2)] if padded else [0, 0]
        auto_pad = str(rng.choice(["explicit", "explicit", "same_upper", "valid"])) if padded else "explicit"
        spatial = [int(rng.integers((k - 1) * d + 1, 8)) for k, d in zip(kernel, dilations)]
        x = rng.standard_normal((int(rng.integers(1, 3)), channels, *spatial)).astype(np.float32)
        bits = rng.integers(0, 2, (int(rng.integers(1, 4)), channels, *kernel))
        context = (f"binary case {case}: x={x.shape} kernel={kernel} strides={strides} dilations={dilations} "
                   f"pads={pads_begin},{pads_end} auto_pad={auto_pad}")
        cases.append((context, *binary_models(x, bits, strides, pads_begin, pads_end, dilations, 1.0, auto_pad)))
    for (context, built, _), (_, expected) in zip(cases, run_cpu_many([twin for *_, twin in cases])):
        assert_same(run_irrun(built, context), expected, built.output_names, context=context)


def test_binary_convolution_hand_computed():
    x = np.array([[[[1, 0, 1], [0, 1, 0]]]], np.float32)
    bits = np.array([[[[1, 0], [0, 1]]]])
    # one 2x2 filter [[1, 0], [0, 1]] over the 0/1 image [[1, 0, 1], [0, 1, 0]] padded with one column p on the
    # left: windows [[p, 1], [p, 0]], [[1, 0], [0, 1]], [[0, 1], [1, 0]]; output = 2 * matches - 4
    expected = {
        1.0: [[-2, 4, -4]],   # p = 1 matches the filter's top-left 1: one match
        0.0: [[-2, 4, -4]],   # p = 0 matches the filter's bottom-left 0: one match
        -1.0: [[-4, 4, -4]],  # -1 matches no bit
        0.5: [[-4, 4, -4]],
    }
    for pad_value, values in expected.items():
        built = build(lambda p: opset1.binary_convolution(p["x"], u1_constant(bits), [1, 1], [0, 1], [0, 0], [1, 1],
                                                          "xnor-popcount", pad_value), {"x": x})
        got = run_irrun(built)[built.output_names[0]]
        np.testing.assert_array_equal(got[0, 0], values, err_msg=f"pad_value {pad_value}")


def test_binary_convolution_values_other_than_0_and_1_never_match():
    # the reference compares input values with the bits exactly: 0.5 and -1 match neither bit
    x = np.array([[[[0.5, -1.0, 1.0, 0.0]]]], np.float32)
    bits = np.array([[[[1]]]])
    built = build(lambda p: opset1.binary_convolution(p["x"], u1_constant(bits), [1, 1], [0, 0], [0, 0], [1, 1],
                                                      "xnor-popcount", 0.0), {"x": x})
    np.testing.assert_array_equal(run_irrun(built)[built.output_names[0]].ravel(), [-1, -1, 1, -1])


@pytest.mark.parametrize("pad_value", [0.0, -1.0])
def test_cpu_plugin_takes_pad_value_in_the_plus_minus_one_domain(pad_value):
    # pinned: with pad_value 0 or -1 the CPU plugin's results differ from the reference semantics irrun follows
    rng = np.random.default_rng(321)
    x = rng.standard_normal((1, 8, 4, 5)).astype(np.float32)
    bits = rng.integers(0, 2, (2, 8, 3, 3))
    built, twin = binary_models(x, bits, [1, 1], [1, 1], [1, 1], [1, 1], pad_value)
    _, cpu = run_cpu(twin)
    got = run_irrun(built)[built.output_names[0]]
    border = np.ones(got.shape, bool)
    border[:, :, 1:-1, 1:-1] = False
    np.testing.assert_array_equal(got[~border], cpu[0][~border])  # windows without padding agree
    assert (got[border] != cpu[0][border]).any()
    # the CPU's reading: each padded tap adds pad_value * (+1 for bit 1, -1 for bit 0); the reference's
    # (irrun's): a padded tap matches the bit equal to pad_value (0 matches bit 0, -1 matches nothing)
    weights_pm = 2 * bits.astype(np.float32) - 1
    padded_pm = np.pad(np.where(x > 0, 1.0, -1.0), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=pad_value)
    cpu_model = np.array([[[(padded_pm[0, :, i:i + 3, j:j + 3] * weights_pm[o]).sum() for j in range(5)]
                           for i in range(4)] for o in range(2)])
    np.testing.assert_array_equal(cpu[0][0], cpu_model)


def test_cpu_plugin_reads_u1_weights_least_significant_bit_first():
    # pinned: the same IR on the CPU plugin gives the results of its bit-reversed twin's semantics
    rng = np.random.default_rng(322)
    x = rng.standard_normal((1, 8, 3, 3)).astype(np.float32)
    bits = rng.integers(0, 2, (1, 8, 1, 1))
    bits[0, :, 0, 0] = [1, 1, 1, 0, 0, 0, 0, 0]
    built, twin = binary_models(x, bits, [1, 1], [0, 0], [0, 0], [1, 1], 1.0)
    _, direct = run_cpu(built)
    _, expected = run_cpu(twin)
    assert (direct[0] != expected[0]).any()
    assert_same(run_irrun(built), expected, built.output_names)


def test_binary_convolution_refuses_non_u1_filters(tmp_path):
    from irbuild import IRBuilder

    builder = IRBuilder()
    data = builder.parameter([1, 8, 4, 4], "f32", name="x")
    weights = builder.const(np.ones((2, 8, 3, 3), np.float32))
    layer = builder.op("BinaryConvolution", "opset1", [(data, 0), (weights, 0)],
                       {"strides": "1,1", "dilations": "1,1", "pads_begin": "0,0", "pads_end": "0,0",
                        "mode": "xnor-popcount", "pad_value": "0"}, [([1, 2, 2, 2], "f32")])
    builder.result((layer, 0))
    with pytest.raises(IRError) as error:
        irrun.load(str(builder.save(tmp_path)))
    assert error.value.rule == "port.type"


# ---------------------------------------------------------------- DeformablePSROIPooling

def psroi_case(rng, case):
    group_size = int(rng.integers(1, 4))
    output_dim = int(rng.integers(1, 4))
    part_size = int(rng.integers(1, 4))
    classes = int(rng.choice([c for c in (1, output_dim) if output_dim % c == 0]))
    height, width = int(rng.integers(3, 9)), int(rng.integers(3, 9))
    batch = int(rng.integers(1, 3))
    scale = float(rng.choice([1.0, 0.5, 0.25]))
    count = int(rng.integers(1, 5))
    corners = rng.uniform(-2, max(height, width) / scale + 2, (count, 4))
    rois = np.concatenate([rng.integers(0, batch, (count, 1)), np.minimum(corners[:, :2], corners[:, 2:]),
                           np.maximum(corners[:, :2], corners[:, 2:])], axis=1).astype(np.float32)
    rois = rois[:, [0, 1, 2, 3, 4]]
    x = rng.standard_normal((batch, output_dim * group_size ** 2, height, width)).astype(np.float32)
    with_offsets = case % 3 != 0
    offsets = rng.standard_normal((count, 2 * classes, part_size, part_size)).astype(np.float32)
    return dict(x=x, rois=rois, offsets=offsets if with_offsets else None, output_dim=output_dim,
                group_size=group_size, spatial_scale=scale, spatial_bins_x=int(rng.integers(1, 4)),
                spatial_bins_y=int(rng.integers(1, 4)), trans_std=float(rng.choice([0.1, 0.5, 1.0])),
                part_size=part_size)


def test_deformable_psroi_pooling_sweep():
    rng = np.random.default_rng(330)
    cases = []
    for case in range(14):
        cfg = psroi_case(rng, case)
        inputs = {"x": cfg["x"], "rois": cfg["rois"]}
        if cfg["offsets"] is not None:
            inputs["offsets"] = cfg["offsets"]
        attrs = {k: cfg[k] for k in ("spatial_bins_x", "spatial_bins_y", "trans_std", "part_size")}

        def make(p):
            return opset1.deformable_psroi_pooling(p["x"], p["rois"], cfg["output_dim"], cfg["spatial_scale"],
                                                   cfg["group_size"], offsets=p.get("offsets"), **attrs)

        context = (f"DeformablePSROIPooling case {case}: x={cfg['x'].shape} rois={cfg['rois'].tolist()} "
                   f"offsets={cfg['offsets'] is not None} " + ", ".join(f"{k}={v}" for k, v in attrs.items()))
        cases.append((context, build(make, inputs)))
    for (context, built), (_, expected) in zip(cases, run_cpu_many([built for _, built in cases])):
        assert_same(run_irrun(built, context), expected, built.output_names, atol=1e-5, context=context)


def test_deformable_psroi_negative_batch_id_skips_only_that_roi():
    # the reference skips a ROI with a negative batch id (zeros) and goes on; the CPU plugin stops at it and
    # leaves every later ROI zero too (pinned). irrun follows the reference.
    x = np.ones((1, 4, 4, 4), np.float32)
    rois = np.array([[-1, 0, 0, 3, 3], [0, 0, 0, 3, 3]], np.float32)
    built = build(lambda p: opset1.deformable_psroi_pooling(p["x"], p["r"], 1, 1.0, 2), {"x": x, "r": rois})
    _, cpu = run_cpu(built)
    np.testing.assert_array_equal(cpu[0], 0)
    got = run_irrun(built)[built.output_names[0]]
    np.testing.assert_array_equal(got[0], 0)
    np.testing.assert_array_equal(got[1], 1)  # hand-written: a constant map averages to itself
    # with the ROIs swapped the CPU plugin agrees
    swapped = build(lambda p: opset1.deformable_psroi_pooling(p["x"], p["r"], 1, 1.0, 2),
                    {"x": x, "r": rois[::-1].copy()})
    _, expected = run_cpu(swapped)
    assert_same(run_irrun(swapped), expected, swapped.output_names, atol=1e-6)


def test_empty_batch_and_no_rois():
    """OpenVINO's inferred shapes for an empty batch and an empty ROI list; irrun gives those shapes."""
    cases = [
        (lambda p: opset8.deformable_convolution(p["x"], p["o"], O.constant(np.ones((2, 3, 3, 3), np.float32)),
                                                 [1, 1], [0, 0], [0, 0], [1, 1]),
         {"x": np.zeros((0, 3, 5, 5), np.float32), "o": np.zeros((0, 18, 3, 3), np.float32)}),
        (lambda p: opset1.deformable_psroi_pooling(p["x"], p["r"], 2, 1.0, 2),
         {"x": np.zeros((1, 8, 4, 4), np.float32), "r": np.zeros((0, 5), np.float32)}),
    ]
    for make, inputs in cases:
        built = build(make, inputs)
        got = run_irrun(built)[built.output_names[0]]
        assert got.shape == tuple(built.model.outputs[0].get_shape())


# ---------------------------------------------------------------- OpenVINO's reference kernel, transcribed

def reference_deformable(x, offsets, w, mask, strides, pads_begin, dilations, out, group, deformable_group,
                         bilinear_pad, T):
    """A literal scalar transcription of OpenVINO's deformable_convolution reference kernel
    (src/core/reference/include/openvino/reference/deformable_convolution.hpp): sums in the data type T, one
    term at a time. Slow; for tiny inputs only. An independent expected value for the f16 path, which no
    runnable OpenVINO executes (the CPU plugin computes f16 in f32)."""
    n, channels, height, width = x.shape
    out_channels, in_per_group, kh, kw = w.shape
    per_deformable = channels // deformable_group
    result = np.zeros((n, out_channels, *out), T)

    def bilinear(plane, xi, yi):
        if bilinear_pad:
            y1, x1 = int(np.floor(yi)), int(np.floor(xi))
            y2, x2 = y1 + 1, x1 + 1
        else:
            y1, x1 = max(int(np.floor(yi)), 0), max(int(np.floor(xi)), 0)
            y2, x2 = min(int(np.ceil(yi)), height - 1), min(int(np.ceil(xi)), width - 1)
        dx, dy = np.float32(xi) - np.float32(x1), np.float32(yi) - np.float32(y1)
        v11 = np.float32(plane[y1, x1]) if y1 >= 0 and x1 >= 0 else np.float32(0)
        v21 = np.float32(plane[y1, x2]) if y1 >= 0 and x2 < width else np.float32(0)
        v12 = np.float32(plane[y2, x1]) if y2 < height and x1 >= 0 else np.float32(0)
        v22 = np.float32(plane[y2, x2]) if y2 < height and x2 < width else np.float32(0)
        one = np.float32(1)
        return ((one - dx) * (one - dy) * v11 + (one - dx) * dy * v12 + dx * (one - dy) * v21 + dx * dy * v22)

    for b, o, oy, ox in itertools.product(range(n), range(out_channels), range(out[0]), range(out[1])):
        g = o // (out_channels // group)
        total = T(0)
        for c_local in range(in_per_group):
            c = g * in_per_group + c_local
            d = c // per_deformable
            for ky, kx in itertools.product(range(kh), range(kw)):
                tap = ky * kw + kx
                y = T(np.float32(oy * strides[0] - pads_begin[0] + ky * dilations[0]) +
                      np.float32(offsets[b, d * 2 * kh * kw + 2 * tap, oy, ox]))
                xi = T(np.float32(ox * strides[1] - pads_begin[1] + kx * dilations[1]) +
                       np.float32(offsets[b, d * 2 * kh * kw + 2 * tap + 1, oy, ox]))
                if bilinear_pad:
                    inside = -1 < int(xi) < width and -1 < int(y) < height
                else:
                    inside = 0 <= xi < width and 0 <= y < height
                if not inside:
                    continue
                m = T(1) if mask is None else T(mask[b, d * kh * kw + tap, oy, ox])
                total = T(total + T(T(T(bilinear(x[b, c], xi, y)) * T(w[o, c_local, ky, kx])) * m))
        result[b, o, oy, ox] = total
    return result


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_deformable_convolution_matches_the_reference_kernel_transcribed(dtype):
    rng = np.random.default_rng(340 + (dtype == np.float16))
    for case in range(4):
        group, deformable_group = (1, 2) if case % 2 else (2, 1)
        channels, kernel = 4, [3, 2] if case < 2 else [2, 2]
        x = rng.standard_normal((1, channels, 5, 5)).astype(dtype)
        w = rng.standard_normal((2 * group, channels // group, *kernel)).astype(dtype)
        out = [5 + 2 - kernel[0] + 1, 5 + 2 - kernel[1] + 1]  # pads 1, 1, stride 1
        taps = kernel[0] * kernel[1]
        offsets = (rng.standard_normal((1, deformable_group * 2 * taps, *out)) * 2).astype(dtype)
        mask = rng.random((1, deformable_group * taps, *out)).astype(dtype)
        bilinear_pad = bool(case % 2)
        built = build(lambda p: opset8.deformable_convolution(
            p["x"], p["o"], O.constant(w), [1, 1], [1, 1], [1, 1], [1, 1], mask=p["m"], group=group,
            deformable_group=deformable_group, bilinear_interpolation_pad=bilinear_pad),
            {"x": x, "o": offsets, "m": mask})
        expected = reference_deformable(x, offsets, w, mask, [1, 1], [1, 1], [1, 1], out, group, deformable_group,
                                        bilinear_pad, dtype)
        got = run_irrun(built)[built.output_names[0]]
        context = f"case {case} {np.dtype(dtype).name}"
        if dtype == np.float16:  # the same operations in the same order: bit-exact
            assert_same([got], [expected], context=context)
        else:  # irrun contracts with one matmul (another summation order)
            assert_same([got], [expected], atol=tolerance(channels // group * taps), context=context)


def reference_psroi(x, rois, offsets, output_dim, scale, group_size, bins_x, bins_y, trans_std, part_size, T):
    """A literal scalar transcription of OpenVINO's deformable_psroi_pooling reference kernel
    (src/core/reference/include/openvino/reference/deformable_psroi_pooling.hpp): coordinates in f32,
    interpolation and sums in the data type T."""
    _, channels, height, width = x.shape
    f = np.float32
    result = np.zeros((len(rois), output_dim, group_size, group_size), T)
    for r, roi in enumerate(rois):
        batch = int(roi[0])
        if batch < 0:
            continue
        rnd = [f(np.sign(v) * np.floor(abs(float(v)) + 0.5)) for v in roi[1:]]
        x1, y1 = rnd[0] * f(scale) - f(0.5), rnd[1] * f(scale) - f(0.5)
        x2, y2 = (rnd[2] + f(1)) * f(scale) - f(0.5), (rnd[3] + f(1)) * f(scale) - f(0.5)
        roi_w, roi_h = max(x2 - x1, f(0.1)), max(y2 - y1, f(0.1))
        bin_w, bin_h = roi_w / f(group_size), roi_h / f(group_size)
        c_in = 0
        for c, h, w in itertools.product(range(output_dim), range(group_size), range(group_size)):
            bx, by = x1 + f(w) * bin_w, y1 + f(h) * bin_h
            if offsets is not None:
                coords = offsets.shape[1] // 2
                cls = c // (output_dim // coords)
                ph, pw = h * part_size // group_size, w * part_size // group_size
                ox = T(T(offsets[r, 2 * cls, ph, pw]) * T(trans_std))
                oy = T(T(offsets[r, 2 * cls + 1, ph, pw]) * T(trans_std))
                bx, by = bx + f(ox) * roi_w, by + f(oy) * roi_h
            sub_w, sub_h = bin_w / f(bins_x), bin_h / f(bins_y)
            total, count = T(0), 0
            for sy in range(bins_y):
                yy = by + f(sy) * sub_h
                if yy < -0.5 or yy > height - 0.5:
                    continue
                for sx in range(bins_x):
                    xx = bx + f(sx) * sub_w
                    if xx < -0.5 or xx > width - 0.5:
                        continue
                    xc, yc = min(max(xx, f(0)), f(width - 1)), min(max(yy, f(0)), f(height - 1))
                    left, right = int(np.floor(xc)), int(np.ceil(xc))
                    top, bottom = int(np.floor(yc)), int(np.ceil(yc))
                    plane = x[batch, c_in]
                    dx, dy = T(abs(xc - f(left))), T(abs(yc - f(top)))
                    top_v = T(plane[top, left] + T(T(plane[top, right] - plane[top, left]) * dx))
                    bottom_v = T(plane[bottom, left] + T(T(plane[bottom, right] - plane[bottom, left]) * dx))
                    total = T(total + T(top_v + T(T(bottom_v - top_v) * dy)))
                    count += 1
            if count:
                result[r, c, h, w] = T(total / T(count))
            c_in += 1
    return result


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_deformable_psroi_matches_the_reference_kernel_transcribed(dtype):
    rng = np.random.default_rng(350 + (dtype == np.float16))
    for case in range(4):
        cfg = psroi_case(rng, case + 1)  # cases 1, 2 and 4 have offsets
        x, rois, offsets = cfg["x"].astype(dtype), cfg["rois"].astype(dtype), cfg["offsets"]
        inputs = {"x": x, "rois": rois}
        if offsets is not None:
            offsets = offsets.astype(dtype)
            inputs["offsets"] = offsets
        attrs = {k: cfg[k] for k in ("spatial_bins_x", "spatial_bins_y", "trans_std", "part_size")}
        built = build(lambda p: opset1.deformable_psroi_pooling(p["x"], p["rois"], cfg["output_dim"],
                                                                cfg["spatial_scale"], cfg["group_size"],
                                                                offsets=p.get("offsets"), **attrs), inputs)
        expected = reference_psroi(x, rois, offsets, cfg["output_dim"], cfg["spatial_scale"], cfg["group_size"],
                                   attrs["spatial_bins_x"], attrs["spatial_bins_y"], attrs["trans_std"],
                                   attrs["part_size"], dtype)
        assert_same(run_irrun(built), [expected], built.output_names, context=f"case {case}: {attrs}")
