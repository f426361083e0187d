"""float32 erf and GELU (irrun/ops/fastmath.py) against float64 references over dense sweeps of the
float32 range, in ulps of the correctly rounded result; and the Gelu/Erf ops on the corners."""
from __future__ import annotations

import math

import numpy as np
import pytest

from irrun.ops.fastmath import BLOCK, erf_f32, gelu_erf_f32

erf64 = np.vectorize(math.erf, otypes=[np.float64])
erfc64 = np.vectorize(math.erfc, otypes=[np.float64])


def floats_between(lo, hi, step):
    """Every `step`-th float32 from lo to hi (0 <= lo < hi), by bit pattern: dense in every binade."""
    bits = np.arange(np.float32(lo).view(np.int32), np.float32(hi).view(np.int32) + 1, step, dtype=np.int32)
    return bits.view(np.float32)


def ulps(got, want):
    """|got - want| in units of the spacing of float32 at want (want in float64)."""
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / spacing


def test_erf_within_1_7_ulp_over_the_float32_range():
    z = floats_between(0, 6, 1013)  # about a million values from 1e-45 (denormals) to 6
    z = np.concatenate([z, -z, np.float32([1e10, 3e38])])
    error = ulps(erf_f32(z), erf64(z.astype(np.float64)))
    assert error.max() <= 1.7, (error.max(), z[error.argmax()])


def test_erf_near_the_region_border_every_float():
    z = floats_between(0.99, 1.01, 1)
    error = ulps(erf_f32(z), erf64(z.astype(np.float64)))
    assert error.max() <= 1.7, (error.max(), z[error.argmax()])


def gelu64(x):
    x = x.astype(np.float64)
    return 0.5 * x * erfc64(-x / math.sqrt(2.0))


@pytest.mark.parametrize("lo, hi, limit", [(0, 1, 1.5), (1, 16, 1.5), (-1, 0, 3.5), (-2, -1, 7.0), (-4, -2, 7.0)])
def test_gelu_ulp_error(lo, hi, limit):
    mag = floats_between(min(abs(lo), abs(hi)), max(abs(lo), abs(hi)), 1031)
    x = mag if lo >= 0 else -mag
    error = ulps(gelu_erf_f32(x), gelu64(x))
    assert error.max() <= limit, (error.max(), x[error.argmax()])


def test_gelu_far_negative_tail_absolute_error():
    x = -floats_between(4, 40, 257)
    got = gelu_erf_f32(x)
    assert np.all(np.abs(got - gelu64(x)) < 1e-9)
    assert np.all(got <= 0)


def test_corners_and_block_edges():
    special = np.float32([np.inf, -np.inf, np.nan, 0.0, -0.0, 3e38, -3e38, 1e-45, -1e-45])
    g = gelu_erf_f32(special)
    assert g[0] == np.inf and np.isnan(g[1]) and np.isnan(g[2])
    assert g[3] == 0 and not np.signbit(g[3]) and np.signbit(g[4]) and g[5] == np.float32(3e38)
    assert g[6] == 0 and np.signbit(g[6])
    e = erf_f32(special)
    assert list(e[:2]) == [1, -1] and np.isnan(e[2]) and np.signbit(e[4]) and list(e[5:7]) == [1, -1]
    # a length that is not a multiple of the block, in a non-contiguous 2-d view
    x = np.random.default_rng(0).standard_normal((3, 2 * BLOCK + 7)).astype(np.float32)[:, ::2]
    np.testing.assert_allclose(gelu_erf_f32(x), gelu64(x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(erf_f32(x), erf64(x.astype(np.float64)), rtol=1e-6, atol=1e-7)
    assert gelu_erf_f32(x).shape == x.shape
    assert gelu_erf_f32(np.zeros((0, 3), np.float32)).shape == (0, 3)


@pytest.mark.parametrize("far_fraction", [0.0, 0.01, 0.3, 0.8])
@pytest.mark.parametrize("in_place", [False, True])
def test_gelu_equals_the_block_kernel_bit_for_bit(far_fraction, in_place):
    """gelu_erf_f32 skips passes (mask, copy_sign) and gathers far elements across blocks: the bits must be
    those of the plain block kernel, with zeros, subnormals and NaN in otherwise near blocks, and enough
    far elements for several flushes."""
    from irrun.ops.fastmath import _gelu_block, blockwise
    rng = np.random.default_rng(int(far_fraction * 100) + in_place)
    x = rng.uniform(-1, 1, 7 * BLOCK + 13).astype(np.float32)
    far = rng.random(x.size) < far_fraction
    x[far] = (rng.standard_normal(far.sum()) * 5).astype(np.float32)
    x[BLOCK + 3:BLOCK + 9] = [0.0, -0.0, 1e-45, -1e-45, -1e-30, np.nan]  # a near block needing copy_sign
    x[3 * BLOCK + 1] = -3e38
    want = blockwise(_gelu_block, x, 6)
    got = gelu_erf_f32(x, x) if in_place else gelu_erf_f32(x)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))


@pytest.mark.parametrize("block", [1024, 8192])
def test_gelu_bits_do_not_depend_on_the_block_sizes(block, monkeypatch):
    """Blocks near and far, some mostly far (the whole-block fallback), some with a few far elements gathered
    over several blocks (flushed when the next block's do not fit), NaN and signed zeros: the same bits with
    small blocks as with the default ones, in place or not."""
    from irrun.ops import fastmath
    rng = np.random.default_rng(block)
    x = rng.uniform(-1, 1, 300_007).astype(np.float32)
    for start, fraction in [(0, 0.9), (70_000, 0.02), (150_000, 0.3), (230_000, 0.6)]:
        part = x[start:start + 60_000]
        far = rng.random(part.size) < fraction
        part[far] = (rng.standard_normal(far.sum()) * 6).astype(np.float32)
    x[rng.integers(0, x.size, 40)] = np.float32([np.nan, 0.0, -0.0, -1e-45, np.inf, -np.inf, 1e-30, -3e38] * 5)
    want = gelu_erf_f32(x)
    monkeypatch.setattr(fastmath, "BLOCK", block)
    monkeypatch.setattr(fastmath, "GELU_BLOCK", 2 * block)
    np.testing.assert_array_equal(gelu_erf_f32(x).view(np.int32), want.view(np.int32))
    np.testing.assert_array_equal(gelu_erf_f32(x, x).view(np.int32), want.view(np.int32))
