"""Winograd F(2x2, 3x3) for 2D convolutions with many channels over large maps (the FCN and RetinaNet heads):
the 3D tiles of conv_winograd on a depth of one.

Measured per layer (one thread, CPU time, against im2col): 2048 -> 512 channels over 28x28 0.59x the time,
512 -> 512 over 28x28 0.76x, 256 -> 256 over 40x40 0.8x, 256 -> 819 over 40x40 0.84x, 256 -> 256 over 28x28
0.92x; even at 20x20 (100 tiles) and slower below 256 channels or on smaller maps (ResNet-50's 3x3 layers),
where the transforms cost more than the products save."""
from __future__ import annotations

from . import conv_winograd

MIN_CHANNELS = 256  # input and output channels at least
MIN_TILES = 196     # 2x2 output tiles at least (a 28x28 map)


def run(x, w, strides, dilations, begins, out, reserve, cache):
    """x [N, C, H, W], w [G, O, C, kh, kw] in the compute type -> [N, O, *out] by Winograd tiles where they
    are worth it and conv_winograd takes the layer (3x3, stride and dilation 1, one group, all finite), else
    None."""
    if x.ndim != 4 or min(w.shape[1], w.shape[2]) < MIN_CHANNELS or (out[0] // 2) * (out[1] // 2) < MIN_TILES:
        return None
    result = conv_winograd.run(x[:, :, None], w[:, :, :, None], (1, *strides), (1, *dilations), (0, *begins),
                               [1, *out], reserve, cache)
    return None if result is None else result.reshape(x.shape[0], -1, *out)
