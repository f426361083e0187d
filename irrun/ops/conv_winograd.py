"""Winograd F(2x2, 3x3) for 3D convolutions with 3x3 kernels over height and width (issue 23: r3d_18's body).

Along height and width the output is computed in 2x2 tiles from 4x4 input tiles: input tiles transformed by
B^T d B (additions only), weights by G g G^T (once per layer, in float64, then rounded), 16 matrix products
per output frame, and the products transformed back by A^T m A (additions only): 4 multiplications per
output instead of 9. The depth offsets need no transform: with the transformed input laid out frame by
frame, the frames an output frame reads (d * stride .. d * stride + kd - 1) are consecutive, so their rows
are one strided view and each product takes all kd offsets at once (K = kd * channels).

Winograd sums in another order than the plain definition, with values mixed inside a tile: an inf or NaN
in a tile would spread to its neighbours, so layers whose input or weights are not all finite, and results
that overflow, take the plain kernel. Errors stay at the plain kernel's level (transforms with 0, +-1 and
+-1/2 only), checked by tests/test_conv_winograd.py against float64."""
from __future__ import annotations

import numpy as np

from .blas import matmul

G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
MIN_CHANNELS = 32    # fewer input channels: the products are too thin to gain (measured on r3d_18's layers)
MIN_TILES = 100      # 2x2 tiles per frame at least: 14x14 frames and smaller lose to the blocked columns
TRANSFORM_BLOCK = 32  # output channels whose weights are transformed (in float64) together
FRAMES_PER_CHUNK = 2  # output frames whose products are transformed back together (a few MB)
ROWS_BYTES = 1 << 19  # the transforms' rows between their two passes: a block of channels this large


def usable(x, w, strides, dilations):
    """x [N, C, D, H, W], w [G, O, C, kd, kh, kw] in the compute type: one group, 3x3 over height and
    width, stride and dilation 1 there, dilation 1 along depth, floats, enough channels and tiles."""
    if x.ndim != 5 or w.shape[0] != 1 or tuple(w.shape[4:]) != (3, 3) or x.dtype.kind != "f":
        return False
    if tuple(strides[1:]) != (1, 1) or tuple(dilations) != (1, 1, 1):
        return False
    return w.shape[2] >= MIN_CHANNELS and (x.shape[3] // 2) * (x.shape[4] // 2) >= MIN_TILES


def transformed_weights(w):
    """w [1, O, C, kd, 3, 3] -> U [16, O, kd * C]: G g G^T per output channel, input channel and depth
    offset, computed in float64, rounded to w's type once."""
    _, out_channels, channels, depth = w.shape[:4]
    u = np.empty((4, 4, out_channels, depth, channels), w.dtype)
    for o0 in range(0, out_channels, TRANSFORM_BLOCK):  # float64 a block of output channels at a time
        g = w[0, o0:o0 + TRANSFORM_BLOCK].astype(np.float64)
        u[:, :, o0:o0 + TRANSFORM_BLOCK] = matmul(G, matmul(g, G.T)).transpose(3, 4, 0, 2, 1)  # [a, b, O, kd, C]
    return u.reshape(16, out_channels, depth * channels)


def _place(x, planes, begins):
    """x [C, D, H, W] into planes [Dp, C, 2, 2, Th + 1, Tw + 1] (zeros elsewhere): padded position
    (d, 2i + r, 2j + q) holds x[:, d - bd, 2i + r - bh, 2j + q - bw] at planes[d, :, r, q, i, j], so that
    the rows and columns a tile reads are runs of one plane."""
    (bd, bh, bw), (depth, height, width) = begins, x.shape[1:]
    lo, hi = max(0, -bd), min(depth, planes.shape[0] - bd)
    if hi <= lo:
        return
    frames = x.transpose(1, 0, 2, 3)[lo:hi]
    target = planes[lo + bd:hi + bd]
    for r in (0, 1):
        rows = _parity_run(bh, r, height, planes.shape[4])
        for q in (0, 1):
            columns = _parity_run(bw, q, width, planes.shape[5])
            if rows is not None and columns is not None:
                target[:, :, r, q, rows[0], columns[0]] = frames[:, :, rows[1], columns[1]]


def _parity_run(begin, parity, size, count):
    """Along one axis padded by `begin`: (slice of plane positions, slice of x positions) of the padded
    positions 2 * i + parity that hold x, i < count; None when there are none."""
    first = begin + ((parity - begin) % 2)  # the first padded position of this parity at or after x's start
    while first < 0:
        first += 2
    start, i0 = first - begin, (first - parity) // 2
    n = min(count - i0, len(range(start, size, 2)))
    if n <= 0:
        return None
    return slice(i0, i0 + n), slice(start, start + 2 * n - 1, 2)


def forward(x, weights, strides, begins, out, reserve):
    """x [N, C, D, H, W], weights = transformed_weights(w) -> [N, O, *out], or None when a result is not
    finite (the caller then runs the plain kernel). The tiles of a frame are computed on a pitch of Tw + 1
    per tile row (one tile per row beyond the output, dropped at the end), so that every transform runs
    over whole planes."""
    n, channels = x.shape[:2]
    _, out_channels, k = weights.shape
    depth = k // channels
    do, ho, wo = out
    th, tw = -(-ho // 2), -(-wo // 2)
    pitch = tw + 1
    tiles = th * pitch
    frames = (do - 1) * strides[0] + depth
    item = x.itemsize
    chunk = min(FRAMES_PER_CHUNK, do)  # 2D layers (a depth of one): one frame
    block = max(1, min(channels, ROWS_BYTES // (8 * tiles * item)))  # channels per block of rows
    inverse_block = max(1, min(out_channels, ROWS_BYTES // (8 * chunk * tiles * item)))
    reserve((frames * channels * (4 * (th + 1) * pitch + 16 * tiles) + block * 8 * tiles
             + chunk * 24 * out_channels * tiles) * item + (0 if ho % 2 == wo % 2 == 0 else
                                                           out_channels * chunk * 4 * th * tw * item),
            "Winograd tiles")
    planes = np.empty((frames, channels, 2, 2, th + 1, pitch), x.dtype)
    flat = planes.reshape(frames, channels, 2, 2, -1)
    rows = np.empty((4, block, 2, tiles), x.dtype)
    transformed = np.empty((4, 4, frames, channels, tiles), x.dtype)
    products = np.empty((chunk, 4, 4, out_channels, tiles), x.dtype)
    result = np.empty((n, out_channels, do, ho, wo), x.dtype)
    stacked = transformed.reshape(16, frames * channels, tiles)
    for b in range(n):
        planes[...] = 0
        _place(x[b], planes, begins)
        for f in range(frames):  # both passes a block of channels at a time: the rows stay in the cache
            for c0 in range(0, channels, block):
                c1 = min(channels, c0 + block)
                # B^T d along the height: rows 2i, 2i + 1 (parities 0, 1 at i) and 2i + 2, 2i + 3 (at i + 1)
                d = [flat[f, c0:c1, r % 2, :, (r // 2) * pitch:(r // 2) * pitch + tiles] for r in range(4)]
                _input_transform(d, rows[:, :c1 - c0])
                # ... and along the width, the same with the column parities (a tile's last column is junk)
                e = [rows[:, :c1 - c0, c % 2, c // 2:c // 2 + tiles - 1] for c in range(4)]
                _input_transform(e, transformed.transpose(1, 0, 2, 3, 4)[:, :, f, c0:c1, :tiles - 1])
        transformed[..., tiles - 1] = 0
        for t0 in range(0, do, chunk):
            count = min(chunk, do - t0)
            m = products[:count]
            for i in range(count):
                f0 = (t0 + i) * strides[0]
                matmul(weights, stacked[:, f0 * channels:(f0 + depth) * channels],
                       out=m[i].reshape(16, out_channels, tiles))
            for o0 in range(0, out_channels, inverse_block):  # the rows between its passes stay in the cache
                _inverse(m[:, :, :, o0:o0 + inverse_block], result[b, o0:o0 + inverse_block, t0:t0 + count], th, tw)
    if not np.isfinite(result).all():
        return None
    return result


def _input_transform(d, out):
    """B^T applied along one axis: out[0..3] from the four rows (or columns) d[0..3] of each tile."""
    np.subtract(d[0], d[2], out=out[0])
    np.add(d[1], d[2], out=out[1])
    np.subtract(d[2], d[1], out=out[2])
    np.subtract(d[1], d[3], out=out[3])


def _inverse(m, target, th, tw):
    """A^T m A: m [F, 4, 4, O, th * (tw + 1)] -> target [O, F, ho, wo] (the tiles' outputs cropped to it)."""
    count, _, _, out_channels, tiles = m.shape
    ho, wo = target.shape[2:]
    rows = np.empty((2, count, 4, out_channels, tiles), m.dtype)
    np.add(m[:, 0], m[:, 1], out=rows[0])
    rows[0] += m[:, 2]
    np.subtract(m[:, 1], m[:, 2], out=rows[1])
    rows[1] -= m[:, 3]
    rows = rows.reshape(2, count, 4, out_channels, th, tw + 1)[..., :tw].transpose(0, 2, 3, 1, 4, 5)
    even = ho % 2 == 0 and wo % 2 == 0
    tiles = target if even else np.empty((out_channels, count, 2 * th, 2 * tw), m.dtype)
    grid = tiles.reshape(out_channels, count, th, 2, tw, 2)
    for a in range(2):
        r = rows[a]  # [4, O, F, th, tw]
        first, second = grid[:, :, :, a, :, 0], grid[:, :, :, a, :, 1]
        np.add(r[0], r[1], out=first)
        first += r[2]
        np.subtract(r[1], r[2], out=second)
        second -= r[3]
    if not even:
        target[...] = tiles[:, :, :ho, :wo]


def run(x, w, strides, dilations, begins, out, reserve, cache):
    """The convolution by Winograd tiles where `usable` and every value is finite, else None. `cache` (a dict
    kept while the layer's weights stay the same array, or None) keeps the transformed weights."""
    if not usable(x, w, strides, dilations):
        return None
    weights = None if cache is None else cache.get("winograd")
    if weights is None:
        out_channels = w.shape[1]
        reserve(16 * out_channels * w[0, 0].size // 9 * w.itemsize
                + TRANSFORM_BLOCK * w[0, 0].size * 8 * 3, "Winograd-transformed weights")
        weights = transformed_weights(w) if np.isfinite(w).all() else False
        if cache is not None:
            cache["winograd"] = weights
    if weights is False or not np.isfinite(x).all():
        return None
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow makes the caller run the plain kernel
        return forward(x, weights, strides, begins, out, reserve)
