"""float32 kernels for erf and GELU: polynomials evaluated in float32 with Horner's rule, a
cache-sized block at a time, into preallocated buffers (no float64 detour). Each has a near branch
(|x| < 1) and a far one; a block whose far elements are few computes the far branch on those alone
(`split_block`), with the same operations on the same values, so the bits do not depend on the mix.

Accuracy against float64, measured by tests/test_fastmath.py on dense sweeps of float32: erf within
1.7 ulp everywhere; GELU (erf form) within 1.5 ulp for x > 0, 3.5 ulp for -1 < x < 0 and 7 ulp for -4 < x < -1
(where it is below 0.16 in magnitude) and an absolute error below 1e-9 further into the negative tail (where
OpenVINO's double formula itself rounds to 0 below x = -10). On every float32 of -1 < x < -0.75, where x / 2
and x*x * C(x*x) cancel most, GELU is within 3.6 ulp (the sweeps sample it; the degree-5 C before: 3.7). The
coefficients come from tools/fit_erf.py. Measured and dropped (issue 23): the polynomial as one BLAS
matrix-vector product over a block's powers of x*x (4 passes to build them, then sgemv): 1.75x the time of Horner.
"""
from __future__ import annotations

import numpy as np

BLOCK = 32768  # elements per block: the block's temporaries stay in the L2 (and L3) cache


def constants(values):
    """float32 0-d arrays: a ufunc converts a NumPy scalar operand to an array at every call (0.2 us, 5% of a
    pass over a block); a 0-d array it takes as it is."""
    return tuple(np.array(v, np.float32) for v in values)


# erf(z) = z + z * A(z*z) for z < 1
ERF_SMALL = [7.853896386222914e-05, -0.0008010204182937741, 0.005188328679651022, -0.026853812858462334,
             0.1128358542919159, -0.3761262595653534, 0.12837916612625122]
# erfc(z) = exp(-z*z) * t * B(t - B_CENTER), t = 1 / (1 + z / 2), for z >= 1
ERFC_LARGE = [-0.07016099244356155, -0.04301223158836365, 0.10222242772579193, 0.05183366686105728,
              -0.14268215000629425, -0.11993925273418427, 0.19489601254463196, 0.5159978270530701,
              0.5974112749099731, 0.4573172926902771]
B_CENTER = 0.4166666567325592
# Phi(x) = 0.5 + x * C(x*x) for |x| < 1 (the standard normal CDF; degree 4: one multiply-add pass fewer than
# degree 5, whose fit was 50 times more accurate than float32 needs)
PHI_SMALL = [9.150186815531924e-05, -0.0011630894150584936, 0.009962376207113266, -0.06648819148540497,
             0.39894214272499084]
# Phi(-|x|) = exp(-x*x / 2) * t * D(t - D_CENTER), t = 1 / (1 + |x| / 2), for |x| >= 1
PHI_TAIL = [0.047457966953516006, -0.12856654822826385, 0.016514969989657402, 0.12661242485046387,
            -0.0695096030831337, -0.1314801126718521, 0.103395976126194, 0.31395381689071655,
            0.30131620168685913]
D_CENTER = 0.3921568691730499
ERF_SMALL_F32, ERFC_LARGE_F32, PHI_SMALL_F32, PHI_TAIL_F32 = (
    constants(table) for table in (ERF_SMALL, ERFC_LARGE, PHI_SMALL, PHI_TAIL))
HALF, NEG_HALF, ONE, TWO, ZERO, INF, NEG_INF = constants([0.5, -0.5, 1, 2, 0, np.inf, -np.inf])
TAIL_CLIP, INF_CLIP, D_CENTER_F32 = constants([16, 64, D_CENTER])  # (_gelu_far)


class Blocks:
    """Scratch buffers of one block: `count` float32 temporaries, a boolean mask and an int32 mask."""

    def __init__(self, count: int, size: int | None = None):
        size = size or BLOCK
        self.floats = [np.empty(size, np.float32) for _ in range(count)]
        self.mask = np.empty(size, np.bool_)
        self.bits = np.empty(size, np.int32)

    def views(self, n: int):
        return [b[:n] for b in self.floats], self.mask[:n], self.bits[:n]


def select(mask, a, b, bits):
    """b = a where mask else b, on the bits (branch-free: np.where and np.copyto(where=) branch per
    element and cost several times more on mixed masks). `bits` is int32 scratch."""
    np.negative(mask.view(np.int8), out=bits, casting="unsafe")  # all ones where mask, else 0
    ai, bi = a.view(np.int32), b.view(np.int32)
    np.bitwise_xor(ai, bi, out=ai)  # a ^ b, a is scratch
    np.bitwise_and(ai, bits, out=ai)
    np.bitwise_xor(bi, ai, out=bi)  # b ^ ((a ^ b) & mask)


def blockwise(kernel, x: np.ndarray, temporaries: int, out: np.ndarray | None = None) -> np.ndarray:
    """kernel(x block, out block, floats, mask, bits), block by block, into `out` (float32, x's shape;
    a new array if None). `out` may be x itself: each block of x is then copied to a scratch buffer
    first, since the kernels read their input after writing their output."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if out is None:
        out = np.empty(x.shape, np.float32)
    flat_in, flat_out = x.reshape(-1), out.reshape(-1)
    copy = np.empty(min(BLOCK, flat_in.size), np.float32) if np.shares_memory(x, out) else None
    with np.errstate(all="ignore"):
        blockwise_into(kernel, flat_in, flat_out, Blocks(temporaries), copy)
    return out


def blockwise_into(kernel, flat_in, flat_out, scratch: Blocks, copy=None):
    """kernel(...) as `blockwise` runs it, over flat arrays; `copy`: a block's room where each block of
    flat_in is copied first (when flat_out is flat_in)."""
    for start in range(0, flat_in.size, BLOCK):
        xs = flat_in[start:start + BLOCK]
        if copy is not None:
            np.copyto(copy[:xs.size], xs)
            xs = copy[:xs.size]
        floats, mask, bits = scratch.views(xs.size)
        kernel(xs, flat_out[start:start + BLOCK], floats, mask, bits)


def chunked(kernel, x: np.ndarray, out: np.ndarray, temporaries: int = 1, block: int = 65536) -> np.ndarray:
    """kernel(x block, out block, *scratch blocks) over flat blocks of contiguous x and out (same shape and
    dtype; out C-contiguous), so that an op of several passes makes them in the cache. `out` may be x: a kernel must then
    read each element of its x block before (or while) writing that element of its out block."""
    flat_in, flat_out = x.reshape(-1), out.reshape(-1)
    size = min(block, flat_in.size)
    scratch = [np.empty(size, x.dtype) for _ in range(temporaries)]
    with np.errstate(all="ignore"):
        for start in range(0, flat_in.size, block):
            xs = flat_in[start:start + block]
            kernel(xs, flat_out[start:start + block], *(s[:xs.size] for s in scratch))
    return out


def horner(coefficients, s, out):
    """out = polynomial(s), coefficients (`constants`) highest degree first."""
    c = coefficients
    np.multiply(s, c[0], out=out)
    out += c[1]
    for k in c[2:]:
        out *= s
        out += k
    return out


# a block with at most this fraction of |x| >= 1 computes the far branch on those elements alone; above
# it, gathering and scattering cost more than the far branch on the whole block (measured break-even points)
ERF_GATHER = 0.4
GELU_GATHER = 0.5
# gelu_erf_f32's blocks: its near branch's three streams still fit the L2 cache at twice BLOCK (5-10% faster on
# the zoo's Gelu inputs, measured); blocks that are mostly far go through _gelu_block a BLOCK at a time
GELU_BLOCK = 2 * BLOCK


def split_block(x, out, floats, is_near, bits, near, far, gather):
    """out = near(x) where |x| < 1, far(x) elsewhere (NaN included). `near` runs on the whole block; `far`
    runs on the elements that need it when they are few (gathered, computed, put back: the same operations
    on the same values as on the whole block), else on the whole block, and a select picks.
    near(x, out, xx, s) gets x*x and a scratch buffer, far(x, out, s1, s2, s3, s4) scratch buffers."""
    a, b, c, d, e, f = floats
    np.multiply(x, x, out=a)
    np.less(a, np.float32(1), out=is_near)  # |x| < 1 exactly: x*x rounds to at most |x| below 1
    far_count = x.size - np.count_nonzero(is_near)
    if far_count <= x.size * gather:
        near(x, out, a, b)
        if far_count:
            where = np.flatnonzero(np.logical_not(is_near))
            n = far_count
            far(np.take(x, where, out=c[:n]), d[:n], a[:n], b[:n], e[:n], f[:n])
            out[where] = d[:n]
    else:
        near(x, c, a, b)
        far(x, out, a, b, d, e)
        select(is_near, c, out, bits)


SIGN = np.int32(-2**31)
MAGNITUDE = np.int32(0x7FFFFFFF)


def copy_sign(out, x, bits):
    """np.copysign(out, x, out=out) on the bits, 2-3 times faster (NumPy's copysign loop is not vectorised).
    `bits` is int32 scratch."""
    np.bitwise_and(x.view(np.int32), SIGN, out=bits)
    magnitude = out.view(np.int32)
    np.bitwise_and(magnitude, MAGNITUDE, out=magnitude)
    np.bitwise_or(magnitude, bits, out=magnitude)


def _erf_near(x, out, zz, z):  # erf(z) = z + z * A(z*z), z = |x| < 1
    np.abs(x, out=z)
    horner(ERF_SMALL_F32, zz, out)
    out *= z
    out += z


def _erf_far(x, out, z, zz, t, shifted):  # erf(z) = 1 - erfc(z), z = |x| >= 1
    np.abs(x, out=z)
    np.multiply(z, z, out=zz)
    np.add(z, np.float32(2), out=t)  # t = 1 / (1 + z / 2) = 2 / (2 + z), rounded alike
    np.divide(np.float32(2), t, out=t)
    np.subtract(t, np.float32(B_CENTER), out=shifted)
    horner(ERFC_LARGE_F32, shifted, out)
    out *= t
    np.negative(zz, out=zz)
    np.exp(zz, out=zz)
    out *= zz
    np.subtract(np.float32(1), out, out=out)  # 1 - erfc


def _erf_block(x, out, floats, is_near, bits):
    split_block(x, out, floats, is_near, bits, _erf_near, _erf_far, ERF_GATHER)
    copy_sign(out, x, bits)


def erf_f32(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """erf of float32 data in float32 (within 1.5 ulp)."""
    return blockwise(_erf_block, x, 6, out)


def exp_half_square(x, out, t, scratch):
    """out = exp(-x*x / 2) without the rounding of x*x: x = high + low with high holding 12 bits, so
    high*high is exact, and exp(-(x*x - high*high) / 2) = exp(-d) = 1 - d + d*d/2 (d < 0.05 for |x| < 15,
    below that exp(-x*x/2) is far under float32's smallest value)."""
    np.bitwise_and(x.view(np.int32), np.int32(-4096), out=out.view(np.int32))  # high
    np.subtract(x, out, out=scratch)  # low
    np.add(x, out, out=t)
    scratch *= t
    scratch *= HALF  # d = low * (x + high) / 2
    out *= out
    out *= NEG_HALF
    np.exp(out, out=out)
    np.multiply(scratch, HALF, out=t)
    t -= ONE
    t *= scratch
    t += ONE
    out *= t


def _gelu_near(x, out, xx, t, halved=False):  # x * Phi(x) = x / 2 + x*x * C(x*x) for |x| < 1
    horner(PHI_SMALL_F32, xx, out)  # (t holds x / 2 already when halved)
    out *= xx
    if not halved:
        np.multiply(x, HALF, out=t)
    out += t


def _gelu_far(x, out, clipped, xx, t, shifted):  # x * Phi(x) = max(x, 0) - |x| * Phi(-|x|) for |x| >= 1
    np.clip(x, -TAIL_CLIP, TAIL_CLIP, out=clipped)  # Phi(-16) is below float32's range
    exp_half_square(clipped, xx, t, shifted)
    np.abs(clipped, out=clipped)
    np.add(clipped, TWO, out=t)  # t = 1 / (1 + |x| / 2) = 2 / (2 + |x|), rounded alike
    np.divide(TWO, t, out=t)
    np.subtract(t, D_CENTER_F32, out=shifted)
    horner(PHI_TAIL_F32, shifted, out)
    out *= t
    out *= xx  # h = Phi(-|x|)
    # |x| * h, where |min(x, 64)| is |x| except at +inf (64: h = 0 gives +inf's result +inf;
    # -inf gives inf * 0 = NaN, as OpenVINO's formula does)
    np.clip(x, NEG_INF, INF_CLIP, out=t)  # (np.clip: np.minimum's bits, 3x faster)
    np.abs(t, out=t)
    out *= t
    np.clip(x, ZERO, INF, out=shifted)  # max(x, 0)
    np.subtract(shifted, out, out=out)


def _gelu_block(x, out, floats, is_near, bits):
    split_block(x, out, floats, is_near, bits, _gelu_near, _gelu_far, GELU_GATHER)
    copy_sign(out, x, bits)  # x * Phi(x) has the sign of x, also when it is 0 (-0.0 from x < 0)


def gelu_erf_f32(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """x * Phi(x) for float32 data in float32 (`out` may be x). The same operations on the same values as
    _gelu_block, fewer passes where most of x is near: a block with no |x| >= 1 skips the mask, one with
    no x*x = 0 (the only place x/2 + x*x * C can lose the sign of x) skips copy_sign, and the far elements
    of blocks that have few are gathered from several blocks and computed together (FarElements)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if out is None:
        out = np.empty(x.shape, np.float32)
    flat_in, flat_out = x.reshape(-1), out.reshape(-1)
    scratch, whole = Blocks(2, min(GELU_BLOCK, flat_in.size)), None
    far = FarElements(flat_out)
    in_place = np.shares_memory(x, out)
    with np.errstate(all="ignore"):
        for start in range(0, flat_in.size, GELU_BLOCK):
            xs, block_out = flat_in[start:start + GELU_BLOCK], flat_out[start:start + GELU_BLOCK]
            (xx, half), is_far, bits = scratch.views(xs.size)
            np.multiply(xs, xs, out=xx)
            top = xx.max()
            if not top < 1:
                if np.count_nonzero(far_mask(xx, top, is_far)) > xs.size * GELU_GATHER:
                    whole = whole or (Blocks(6), np.empty(BLOCK, np.float32) if in_place else None)
                    blockwise_into(_gelu_block, xs, block_out, *whole)
                    continue
                far.add(np.flatnonzero(is_far), start, xs)
            np.multiply(xs, HALF, out=half)  # before block_out, which may be xs, is written
            _gelu_near(xs, block_out, xx, half, halved=True)
            if not xx.min() > 0:
                copy_sign(block_out, half, bits)  # x / 2 has the sign of x, also where it is 0
        far.flush()
    return out


def far_mask(xx, top, out):
    """x*x >= 1 or NaN, given top = max(x*x) (NaN if there is a NaN)."""
    if top == top:
        return np.greater_equal(xx, ONE, out=out)
    return np.logical_not(np.less(xx, ONE, out=out), out=out)


class FarElements:
    """Elements with |x| >= 1 gathered from blocks (their flat positions and values, into buffers allocated at
    the first), computed by _gelu_far and put in place when the next block's would not fit in `room` (the
    blocks they come from are written by then). The room is a block's most, GELU_GATHER of it, which keeps
    the far branch's temporaries in the L2 cache (computing twice as many together was slower per element)."""

    def __init__(self, flat_out):
        self.flat_out, self.count = flat_out, 0
        self.room = min(max(1, int(GELU_BLOCK * GELU_GATHER)), flat_out.size)
        self.positions = self.values = self.scratch = None

    def add(self, where, start, xs):
        if self.count + where.size > self.room:
            self.flush()
        if self.positions is None:
            self.positions, self.values = np.empty(self.room, np.intp), np.empty(self.room, np.float32)
        end = self.count + where.size
        np.add(where, start, out=self.positions[self.count:end])
        np.take(xs, where, out=self.values[self.count:end], mode="clip")  # (where is in range)
        self.count = end

    def flush(self):
        n = self.count
        if not n:
            return
        if self.scratch is None:
            self.scratch = [np.empty(self.room, np.float32) for _ in range(5)], np.empty(self.room, np.int32)
        floats, bits = self.scratch
        values, (result, *scratch) = self.values[:n], [f[:n] for f in floats]
        _gelu_far(values, result, *scratch)
        copy_sign(result, values, bits[:n])
        self.flat_out[self.positions[:n]] = result
        self.count = 0
