"""irrun vs OpenVINO on GridSample-9, Col2Im-15, EmbeddingBagOffsets-15, EmbeddingBagPacked-15,
EmbeddingBagOffsetsSum-3, EmbeddingBagPackedSum-3 and EmbeddingSegmentsSum-3.

Oracles (OpenVINO 2026.4.1): GridSample has a reference evaluate() for f32 data and f32 grid only, so f32
sweeps compare with both the reference and the CPU plugin, other types with the CPU plugin. Col2Im and
every embedding op have no working evaluate() (it returns False), so the CPU plugin is the truth.

Tolerances:
- GridSample f32: atol 1e-5. Both sides compute coordinates, weights and the (at most 16-term) weighted sum
  in f32 with data ~N(0, 1); bicubic weights are bounded by ~1.3, so the result is O(10) at most and the
  rounding differences stay a few f32 ulps. f16 outputs are rounded once from f32: one f16 ulp is added.
- GridSample integer data: the CPU plugin interpolates in f32 and converts (8-bit types round to nearest,
  wider ones truncate). Nearest mode is exact; bilinear/bicubic may differ by 1 where the f32 result sits
  within an ulp of a rounding boundary, so those allow |diff| <= 1.
- Col2Im f32: sums of at most kh*kw overlapping N(0, 1) values: atol 1e-5. Integers exact.
- Embedding bags f32: sums of at most 6 products of N(0, 1) values (and a division for mean): atol 1e-5.
  Integers exact.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from openvino import opset3, opset9, opset15

import oracle as O
from oracle import assert_same, build, run_cpu, run_cpu_many, run_irrun, run_reference


def check_cpu(cases, atol=None, f16_ulp=False):
    """Compare irrun with the CPU plugin on each (built, context) case; the cases compile as one model."""
    for (built, context), (names, expected) in zip(cases, run_cpu_many([built for built, _ in cases])):
        assert_same(run_irrun(built, context), expected, names, atol=atol, context=context, f16_ulp=f16_ulp)


# ---------------------------------------------------------------- GridSample

MODES = ("bilinear", "bicubic", "nearest")
PADDINGS = ("zeros", "border", "reflection")


def grid_case(rng, mode, padding, align, i, data_dtype=np.float32, grid_dtype=np.float32):
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    h, w = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    ho, wo = int(rng.integers(1, 5)), int(rng.integers(1, 6))
    if np.dtype(data_dtype).kind == "f":
        x = rng.standard_normal((n, c, h, w)).astype(data_dtype)
    else:
        x = rng.integers(0, 100, (n, c, h, w)).astype(data_dtype)
    if i % 3 == 0:  # exact quarter positions: ties for nearest, integer taps for the others
        g = (rng.integers(-10, 11, (n, ho, wo, 2)) / 4).astype(grid_dtype)
    else:
        g = rng.uniform(-2.5, 2.5, (n, ho, wo, 2)).astype(grid_dtype)
    attrs = dict(align_corners=align, mode=mode, padding_mode=padding)
    ctx = f"GridSample {attrs} x{x.shape} {x.dtype} grid{g.shape} {g.dtype} case {i}"
    return build(lambda p: opset9.grid_sample(p["x"], p["g"], attrs), dict(x=x, g=g)), ctx


@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_f32_reference_and_cpu(mode):
    rng = np.random.default_rng(100 + MODES.index(mode))
    cases = [grid_case(rng, mode, padding, align, i)
             for i, (padding, align, rep) in enumerate(itertools.product(PADDINGS, (False, True), range(3)))]
    for (built, ctx), (_, cpu) in zip(cases, run_cpu_many([built for built, _ in cases])):
        got = run_irrun(built, ctx)
        assert_same(got, run_reference(built), built.output_names, atol=1e-5, context=ctx)
        assert_same(got, cpu, built.output_names, atol=1e-5, context=ctx, who="irrun vs CPU")


@pytest.mark.parametrize("types", [(np.float16, np.float32), (np.float16, np.float16), (np.float32, np.float16)])
def test_grid_sample_half_types_cpu(types):
    rng = np.random.default_rng(200)
    cases = [grid_case(rng, mode, padding, align, i, *types)
             for i, (mode, padding, align) in enumerate(itertools.product(MODES, PADDINGS, (False, True)))]
    check_cpu(cases, atol=1e-5 if types[0] == np.float32 else 2e-3, f16_ulp=True)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32])
def test_grid_sample_integer_data_cpu(dtype):
    rng = np.random.default_rng(300)
    modes = list(itertools.product(MODES, PADDINGS, (False, True)))
    cases = [grid_case(rng, mode, padding, align, i, dtype) for i, (mode, padding, align) in enumerate(modes)]
    for (mode, _, _), (built, ctx), (_, cpu) in zip(modes, cases, run_cpu_many([built for built, _ in cases])):
        got = list(run_irrun(built, ctx).values())[0]
        expected = cpu[0]
        assert got.dtype == expected.dtype and got.shape == expected.shape, ctx
        diff = np.abs(got.astype(np.int64) - expected.astype(np.int64))
        assert diff.max(initial=0) <= (0 if mode == "nearest" else 1), f"{ctx}\n{got}\n{expected}"


def test_grid_sample_shape_errors():
    from irrun.errors import ShapeError
    from irrun.ir.types import ELEMENT_TYPES
    from irrun.ops.registry import TensorInfo
    from irrun.ops.sampling import GridSample9

    f32, i32 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i32"]
    op_ = GridSample9(dict(align_corners=False, mode="bilinear", padding_mode="zeros"), None)
    assert op_.infer([TensorInfo((2, 3, 5, 5), f32), TensorInfo((None, 4, 6, 2), f32)])[0].shape == (2, 3, 4, 6)
    assert op_.infer([TensorInfo(None, f32), TensorInfo((None, 4, 6, 2), f32)])[0].shape == (None, None, 4, 6)
    for data, grid, rule in [((2, 3, 5, 5), (2, 4, 6, 3), "port.dims"), ((2, 3, 5, 5), (1, 4, 6, 2), "port.dims"),
                             ((2, 3, 5), (2, 4, 6, 2), "port.rank")]:
        with pytest.raises(ShapeError) as err:
            op_.infer([TensorInfo(data, f32), TensorInfo(grid, f32)])
        assert err.value.rule == rule
    with pytest.raises(ShapeError):
        op_.infer([TensorInfo((2, 3, 5, 5), f32), TensorInfo((2, 4, 6, 2), i32)])


# ---------------------------------------------------------------- Col2Im

def col2im_case(rng, i, dtype=np.float32):
    kernel = [int(v) for v in rng.integers(1, 4, 2)]
    strides = [int(v) for v in rng.integers(1, 4, 2)]
    dilations = [int(v) for v in rng.choice([1, 1, 2], 2)]
    pads_begin = [int(v) for v in rng.integers(0, 3, 2)]
    pads_end = [int(v) for v in rng.integers(0, 3, 2)]
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    size = [int(rng.integers(max(1, e - pb - pe), 9)) for e, pb, pe in zip(eff, pads_begin, pads_end)]
    blocks = [(s + pb + pe - e) // st + 1 for s, pb, pe, e, st in zip(size, pads_begin, pads_end, eff, strides)]
    channels = int(rng.integers(1, 4))
    batched = i % 3 != 2
    shape = ([int(rng.integers(1, 3))] if batched else []) + [channels * kernel[0] * kernel[1], blocks[0] * blocks[1]]
    x = (rng.standard_normal(shape) if np.dtype(dtype).kind == "f" else rng.integers(-9, 10, shape)).astype(dtype)
    index_type = (np.int32, np.int64)[i % 2]
    attrs = dict(strides=strides, dilations=dilations, pads_begin=pads_begin, pads_end=pads_end)
    ctx = f"Col2Im {attrs} size {size} kernel {kernel} x{x.shape} {x.dtype} {index_type.__name__} case {i}"
    built = build(lambda p: opset15.col2im(p["x"], O.constant(np.array(size, index_type)),
                                           O.constant(np.array(kernel, index_type)), **attrs), dict(x=x))
    return built, ctx


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8])
def test_col2im_cpu(dtype):
    rng = np.random.default_rng(400 + np.dtype(dtype).itemsize)
    cases = [col2im_case(rng, i, dtype) for i in range(12 if dtype == np.float32 else 6)]
    atol = {np.float32: 1e-5, np.float16: 1e-5}.get(dtype)
    check_cpu(cases, atol=atol, f16_ulp=dtype == np.float16)


def test_col2im_shape_errors():
    from irrun.errors import ShapeError
    from irrun.ir.types import ELEMENT_TYPES
    from irrun.ops.convolution import Col2Im15
    from irrun.ops.registry import TensorInfo

    f32, i64 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i64"]
    op_ = Col2Im15(dict(strides=(1, 1), dilations=(1, 1), pads_begin=(0, 0), pads_end=(0, 0)), None)
    size, kernel = TensorInfo((2,), i64, np.array([4, 5])), TensorInfo((2,), i64, np.array([2, 2]))
    assert op_.infer([TensorInfo((None, 12, 12), f32), size, kernel])[0].shape == (None, 3, 4, 5)
    assert op_.infer([TensorInfo((12, 12), f32), size, kernel])[0].shape == (3, 4, 5)
    assert op_.infer([TensorInfo((2, 12, 12), f32), TensorInfo((2,), i64), kernel])[0].shape == (2, 3, None, None)
    for data in [(2, 13, 12), (2, 12, 11)]:  # channels not divisible by 4; wrong block count
        with pytest.raises(ShapeError):
            op_.infer([TensorInfo(data, f32), size, kernel])


# ---------------------------------------------------------------- embedding bags

def table(rng, dtype, rows, tail):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal((rows, *tail)).astype(dtype)
    return rng.integers(-20, 21, (rows, *tail)).astype(dtype)


def offsets_case(rng, i, dtype, version):
    rows, tail = int(rng.integers(1, 7)), [int(rng.integers(1, 4))] + ([2] if i % 4 == 3 else [])
    emb = table(rng, dtype, rows, tail)
    itype = (np.int32, np.int64)[i % 2]
    bags = int(rng.integers(1, 5))
    sizes = rng.integers(0, 4, bags)
    sizes[-1] = max(1, sizes[-1])  # OpenVINO rejects an empty last bag (tested below)
    start = int(rng.integers(0, 2)) if i % 5 == 4 else 0  # indices before offsets[0] belong to no bag
    offsets = (start + np.concatenate([[0], np.cumsum(sizes)[:-1]])).astype(itype)
    indices = rng.integers(0, rows, start + int(sizes.sum())).astype(itype)
    reduction = "sum" if version == 3 else ("sum", "mean")[int(rng.integers(0, 2))]
    inputs = dict(e=emb, i=indices, o=offsets)
    extra = []
    choice = int(rng.integers(0, 3))
    if choice >= 1:
        extra.append(O.constant(np.array(int(rng.integers(-1, rows)), itype)))
    if choice == 2 and reduction == "sum":
        inputs["w"] = table(rng, dtype, len(indices), [])
    ctx = f"EmbeddingBagOffsets-{version} {reduction} emb{emb.shape} {emb.dtype} offsets {offsets.tolist()} case {i}"

    def make(p):
        args = [p["e"], p["i"], p["o"], *extra] + ([p["w"]] if "w" in p else [])
        if version == 3:
            return opset3.embedding_bag_offsets_sum(*args)
        return opset15.embedding_bag_offsets(*args, reduction=reduction)

    return build(make, inputs), ctx


@pytest.mark.parametrize("version", [3, 15])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_embedding_bag_offsets_cpu(version, dtype):
    rng = np.random.default_rng(500 + version)
    check_cpu([offsets_case(rng, i, dtype, version) for i in range(16)], atol=1e-5 if dtype == np.float32 else None)


@pytest.mark.parametrize("version", [3, 15])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_embedding_bag_packed_cpu(version, dtype):
    rng = np.random.default_rng(600 + version)
    cases = []
    for i in range(10):
        rows, tail = int(rng.integers(1, 7)), [int(rng.integers(1, 4))]
        emb = table(rng, dtype, rows, tail)
        itype = (np.int32, np.int64)[i % 2]
        indices = rng.integers(0, rows, (int(rng.integers(1, 4)), int(rng.integers(1, 4)))).astype(itype)
        reduction = "sum" if version == 3 else ("sum", "mean")[i % 2 if i < 8 else 0]
        inputs = dict(e=emb, i=indices)
        if reduction == "sum" and rng.random() < 0.5:
            inputs["w"] = table(rng, dtype, indices.shape[0], [indices.shape[1]])
        ctx = f"EmbeddingBagPacked-{version} {reduction} emb{emb.shape} {emb.dtype} indices {indices.tolist()}"

        def make(p):
            args = [p["e"], p["i"]] + ([p["w"]] if "w" in p else [])
            if version == 3:
                return opset3.embedding_bag_packed_sum(*args)
            return opset15.embedding_bag_packed(*args, reduction=reduction)

        cases.append((build(make, inputs), ctx))
    check_cpu(cases, atol=1e-5 if dtype == np.float32 else None)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_embedding_segments_sum_cpu(dtype):
    rng = np.random.default_rng(700)
    cases = []
    for i in range(14):
        rows, tail = int(rng.integers(1, 7)), [int(rng.integers(1, 4))]
        emb = table(rng, dtype, rows, tail)
        itype = (np.int32, np.int64)[i % 2]
        count, segments = int(rng.integers(0, 7)), int(rng.integers(1, 5))
        indices = rng.integers(0, rows, count).astype(itype)
        # sorted ids (the spec demands it; the CPU plugin misreads unsorted ones), some outside [0, segments):
        # OpenVINO's CPU plugin skips those
        segment_ids = np.sort(rng.integers(-1 if i % 3 == 0 else 0, segments + (1 if i % 3 == 0 else 0),
                                           count)).astype(itype)
        inputs = dict(e=emb, i=indices, s=segment_ids)
        dynamic = i % 4 == 1
        if dynamic:
            inputs["n"] = np.array(segments, itype)
        extra = []
        if i % 3 != 2:
            extra.append(O.constant(np.array(int(rng.integers(0, rows)), itype)))
            if rng.random() < 0.5:
                inputs["w"] = table(rng, dtype, count, [])
        ctx = f"EmbeddingSegmentsSum ids {segment_ids.tolist()} segments {segments} emb{emb.shape} {emb.dtype}"

        def make(p):
            num = p["n"] if "n" in p else O.constant(np.array(segments, itype))
            return opset3.embedding_segments_sum(p["e"], p["i"], p["s"], num, *extra, *([p["w"]] if "w" in p else []))

        cases.append((build(make, inputs), ctx))
    check_cpu(cases, atol=1e-5 if dtype == np.float32 else None)


def _both_fail(built, ctx):
    from irrun.errors import IRError

    if O.cpu_reports_run_time_errors():  # on one thread the plugin reads past its inputs instead
        with pytest.raises(RuntimeError):
            run_cpu(built)
    with pytest.raises(IRError) as err:
        run_irrun(built, ctx)
    return err.value


def test_embedding_run_time_errors_like_openvino():
    """Spec disagreement: the spec lets offsets reach len(indices) (an empty last bag); OpenVINO's CPU plugin
    (and its reference kernel) reject any offset >= len(indices). Also out-of-range indices and a used
    default index outside the table."""
    emb = np.arange(12, dtype=np.float32).reshape(4, 3)
    i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
    cases = [
        (lambda p: opset15.embedding_bag_offsets(p["e"], p["i"], p["o"]), dict(e=emb, i=i32(0, 1), o=i32(0, 2))),
        (lambda p: opset15.embedding_bag_offsets(p["e"], p["i"], p["o"]), dict(e=emb, i=i32(0, 4), o=i32(0, 1))),
        (lambda p: opset15.embedding_bag_offsets(p["e"], p["i"], p["o"]), dict(e=emb, i=i32(0, 1, 2), o=i32(2, 1))),
        (lambda p: opset15.embedding_bag_offsets(p["e"], p["i"], p["o"], O.constant(np.int32(4))),
         dict(e=emb, i=i32(0, 1), o=i32(0, 0))),
        (lambda p: opset15.embedding_bag_offsets(p["e"], p["i"], p["o"], O.constant(np.int32(-2))),
         dict(e=emb, i=i32(0, 1), o=i32(0, 0))),
        (lambda p: opset15.embedding_bag_packed(p["e"], p["i"]), dict(e=emb, i=np.array([[0, -1]], np.int32))),
        (lambda p: opset3.embedding_segments_sum(p["e"], p["i"], p["s"], O.constant(np.int32(3)),
                                                 O.constant(np.int32(-1))), dict(e=emb, i=i32(0, 1), s=i32(0, 2))),
    ]
    for k, (make, inputs) in enumerate(cases):
        _both_fail(build(make, inputs), f"error case {k}")


def test_embedding_negative_default_and_unused_default():
    """A default index of -1 fills empty bags with zeros (other negative values are errors when used, -2 unused
    is fine); an out-of-range default index that no bag uses is accepted."""
    emb = np.arange(12, dtype=np.float32).reshape(4, 3)
    check_cpu([(build(lambda p: opset15.embedding_bag_offsets(p["e"], p["i"], p["o"], O.constant(np.int32(default)),
                                                              reduction="mean"),
                      dict(e=emb, i=np.array([0, 1, 2, 3], np.int32), o=np.array(offsets, np.int32))),
                f"default {default} offsets {offsets}")
               for default, offsets in [(-2, [0, 3]), (-1, [0, 2, 2]), (-1, [0, 0, 3]), (7, [0, 3])]])


def test_embedding_weights_with_mean_rejected():
    """OpenVINO refuses per_sample_weights unless reduction is sum (the spec says the same); irrun's loader too."""
    import irrun
    from irrun.errors import IRError

    emb = np.arange(12, dtype=np.float32).reshape(4, 3)
    built = build(lambda p: opset15.embedding_bag_packed(p["e"], p["i"], p["w"], reduction="sum"),
                  dict(e=emb, i=np.array([[0, 1]], np.int32), w=np.ones((1, 2), np.float32)))
    built.xml.write_text(O.patch_layer(built.xml.read_text(), "EmbeddingBagPacked", {"reduction": "mean"}))
    with pytest.raises(Exception, match="SUM"):
        O.core().read_model(str(built.xml))
    with pytest.raises(IRError):
        irrun.load(str(built.xml)).run(built.feed_dict)
