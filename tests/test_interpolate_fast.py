"""Interpolate's products over all axes at once (`interpolate.resample`: cheapest axis order, one BLAS
call per axis when the axis is first or last or one per block of a banded matrix, identity axes
skipped, no final copy) against the kernel
it replaced (one batched matrix product per axis in the given order, kept below as `old_apply_taps`) and
against the plain tap-by-tap sum in float64, on random shapes, axes, modes, transforms and float types;
non-finite data against OpenVINO's reference."""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset11

from oracle import assert_same, build, run_reference

import irrun
from irrun.ops import interpolate as I
from test_oracle_movement import const

F32 = np.float32
TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners")


def old_apply_taps(x, axis, idx, w):
    """The kernel before this change, verbatim: one matrix product per axis, (pre, out, post) batches."""
    out_len, in_len = idx.shape[0], x.shape[axis]
    if x.dtype.kind == "f" and idx.size and out_len * in_len <= I.DENSE_LIMIT:
        work = np.float64 if x.dtype == np.float64 else np.float32
        weights = np.zeros((out_len, in_len), np.float64)
        np.add.at(weights, (np.repeat(np.arange(out_len), idx.shape[1]), idx.reshape(-1)), w.reshape(-1))
        weights = weights.astype(work)
        pre = int(np.prod(x.shape[:axis], dtype=np.int64))
        rows = x.astype(work, copy=False).reshape(pre, in_len, -1)
        y = np.matmul(weights, rows)
        return y.reshape(x.shape[:axis] + (out_len,) + x.shape[axis + 1:])
    return I.sum_taps(x, axis, idx, w)


def random_steps(rng, shape, mode):
    """Taps for a random subset of axes, built as Interpolate's run builds them."""
    rank = len(shape)
    axes = sorted(int(a) for a in rng.choice(rank, int(rng.integers(1, rank + 1)), replace=False))
    transform = str(rng.choice(TRANSFORMS))
    steps, out_shape = [], list(shape)
    for a in axes:
        in_len = shape[a]
        out_len = int(rng.choice([1, in_len, max(1, in_len // 2), in_len * 2, in_len * 3 + 1, int(rng.integers(1, 20))]))
        out_shape[a] = out_len
        scale = F32(out_len) / F32(in_len)
        coords = I.source_coords(transform, out_len, in_len, scale)
        if mode == "linear":
            antialias = rng.random() < 0.5 and scale < 1
            idx, w = I.taps_linear(coords, in_len, scale, scale if antialias else F32(1))
            total = w.sum(1)
            w = w / np.where(total == 0, 1, total)[:, None]
        elif mode == "linear_onnx":
            idx, w = I.taps_linear_onnx(coords, in_len)
        else:
            idx, w = I.taps_cubic(coords, in_len, float(rng.choice([-0.75, -0.5])))
        steps.append((a, idx, w))
    return steps, tuple(out_shape)


def sum_bound(x, steps):
    """sum of |w| |x| over the taps: what rounding errors of the sums scale with."""
    y = np.abs(x)
    for a, idx, w in steps:
        y = I.sum_taps(y, a, idx, np.abs(w))
    return y


def far(a, b, tol):
    return np.abs(a.astype(np.float64) - b.astype(np.float64)) > tol


@pytest.mark.parametrize("case", range(60))
def test_resample_matches_the_old_kernel_and_the_plain_taps(case, monkeypatch):
    if case % 2:
        monkeypatch.setattr(I, "BAND_ROWS", 2)  # banded products wherever they save
    rng = np.random.default_rng(7000 + case)
    dtype = (np.float32, np.float16, np.float64)[case % 3]
    mode = ("linear_onnx", "linear", "cubic")[case // 3 % 3]
    rank = int(rng.integers(1, 6))
    shape = tuple(int(d) for d in rng.integers(1, 7 if rank > 3 else 12, rank))
    x = rng.uniform(-1, 1, shape).astype(dtype)
    steps, out_shape = random_steps(rng, shape, mode)
    got = I.resample(x, steps)
    old = x
    for a, idx, w in steps:
        old = old_apply_taps(old, a, idx, w)
    plain = x
    for a, idx, w in steps:
        plain = I.sum_taps(plain, a, idx, w)
    work = np.float64 if dtype == np.float64 else np.float32
    ctx = f"{case=} {dtype=} {mode=} {shape=} {[(a, len(i)) for a, i, _ in steps]}"
    assert got.dtype == work and got.shape == out_shape and not np.shares_memory(got, x), ctx
    # Both products sum in the work type, in different orders: a few ulps of the work type of the
    # summed magnitudes apart, and as far from the float64 sums.
    tol = 8 * np.finfo(work).eps * sum_bound(x, steps)
    assert not far(got, old, tol).any(), ctx
    assert not far(got, plain, tol).any(), ctx
    # rounded to the data type, as the op does: at most one ulp of the data type more
    spacing = np.spacing(np.abs(old.astype(dtype))).astype(np.float64)
    assert not far(got.astype(dtype), old.astype(dtype), tol + spacing).any(), ctx


@pytest.mark.parametrize("banded", [False, True])
def test_each_product_layout_matches_the_old_kernel(banded, monkeypatch):
    """Dense and banded products (blocks of 3 output rows forced; some blocks without weights), with
    the axis first (pre == 1), in the middle (batched) and last (post == 1)."""
    if banded:
        monkeypatch.setattr(I, "BAND_ROWS", 3)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 40, 4, 37)).astype(F32)
    for axis in range(5):
        in_len = x.shape[axis]
        out_len = 50
        coords = np.sort(rng.uniform(-1, in_len, out_len)).astype(F32) if banded else \
            rng.uniform(-1, in_len, out_len).astype(F32)
        idx, w = I.taps_cubic(coords, in_len, -0.75)
        if banded:
            w[7:13] = 0  # two blocks of zero weights
        weights = I.dense_weights(idx, w, in_len, F32)
        assert (I.bands(weights) is not None) == (banded and in_len >= 37), axis
        got = I.matmul_axis(x, axis, weights)
        want = old_apply_taps(x, axis, idx, w)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
        assert got.flags.c_contiguous and got.dtype == F32


def test_axis_order_and_fast_path(monkeypatch):
    """28 -> 224 on the last two axes (lraspp's upsampling): the last axis first (one BLAS call), no
    tap-by-tap sums on finite float data; the identity axis is skipped bit for bit."""
    x = np.random.default_rng(1).uniform(-1, 1, (1, 21, 28, 28)).astype(F32)
    steps = []
    for a in (2, 3):
        coords = I.source_coords("pytorch_half_pixel", 224, 28, F32(8))
        steps.append((a, *I.taps_linear_onnx(coords, 28)))
    assert I.product_order(x.shape, steps) == (1, 0)
    assert I.bands(I.dense_weights(*steps[0][1:], 28, F32)) is not None
    monkeypatch.setattr(I, "sum_taps", None)  # would fail if called
    y = I.resample(x, steps)
    assert y.dtype == F32 and y.shape == (1, 21, 224, 224)
    same = (2, *I.taps_linear_onnx(I.source_coords("half_pixel", 28, 28, F32(1)), 28))
    z = I.resample(x, [same])
    assert np.array_equal(z, x) and not np.shares_memory(z, x)


@pytest.mark.parametrize("mode", ["linear_onnx", "cubic"])
def test_non_finite_data_matches_the_reference(mode):
    """A dense product would turn one inf into NaN over its whole row (0 * inf); the taps do not.
    ('linear' mode is not followed there yet: see docs/semantics.md.)"""
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (1, 2, 5, 6)).astype(F32)
    x[0, 0, 2, 3] = np.inf
    x[0, 1, 4, 0] = -np.inf
    x[0, 1, 1, 1] = np.nan
    attrs = dict(coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_floor",
                 antialias=False, pads_begin=[0], pads_end=[0], cube_coeff=-0.75)
    built = build(lambda p: opset11.interpolate(p["x"], const(np.array([9, 13], np.int64)), mode, "sizes",
                                                axes=const(np.array([2, 3], np.int64)), **attrs), {"x": x})
    expected = run_reference(built)
    got = irrun.load(str(built.xml)).run(built.feed_dict)
    assert_same(got, expected, built.output_names, atol=1e-5, context=mode)
