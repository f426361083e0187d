"""ExtractImagePatches-3: sliding kh x kw windows (with strides and rates) of an NCHW image, laid out in the
channel dim as [N, kh * kw * C, out_h, out_w], channel index (i * kw + j) * C + c. Positions in the padding
("same_upper" / "same_lower", total pad max(0, (out - 1) * stride + (k - 1) * rate + 1 - in), the smaller half
first for same_upper) read 0."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .attrs import Enum, Ints
from .registry import Op, TensorInfo, op
from .shapes import require_rank


def _axis_geometry(size, kernel, stride, rate, auto_pad):
    """(output length, pad before) along one axis."""
    extent = (kernel - 1) * rate + 1
    if auto_pad == "valid":
        return max(0, (size - extent) // stride + 1), 0
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + extent - size)
    return out, total // 2 if auto_pad == "same_upper" else total - total // 2


@op("ExtractImagePatches", 3)
class ExtractImagePatches3(Op):
    sizes = Ints(min=1, read_below=True)
    strides = Ints(min=1, read_below=True)
    rates = Ints(min=1, read_below=True)
    auto_pad = Enum("valid", "same_upper", "same_lower")

    def check_attrs(self):
        for name in ("sizes", "strides", "rates"):
            if len(getattr(self, name)) != 2:
                raise ShapeError(f"{name} must hold 2 values, got {list(getattr(self, name))}", rule="attr.value")
        for name in ("strides", "rates"):  # OpenVINO refuses a 0, reads a negative value (attr.value.spec)
            if 0 in getattr(self, name):
                raise ShapeError(f"{name} {list(getattr(self, name))} must be positive", rule="attr.range")

    def infer(self, inputs):
        (data,) = inputs
        self.check_attrs()
        require_rank(data.shape, (4,), "data")
        if data.shape is None:
            return [TensorInfo((None,) * 4, data.type)]
        n, c, h, w = data.shape
        spatial = [None if d is None else _axis_geometry(d, k, s, r, self.auto_pad)[0]
                   for d, k, s, r in zip((h, w), self.sizes, self.strides, self.rates)]
        depth = None if c is None else c * self.sizes[0] * self.sizes[1]
        return [TensorInfo((n, depth, *spatial), data.type)]

    def run(self, inputs, in_infos, out_infos):
        (x,) = inputs
        n, c, h, w = x.shape
        (oh, ph), (ow, pw) = (_axis_geometry(d, k, s, r, self.auto_pad)
                              for d, k, s, r in zip((h, w), self.sizes, self.strides, self.rates))
        kh, kw = self.sizes
        sh, sw = self.strides
        rh, rw = self.rates
        out = np.zeros((n, kh, kw, c, oh, ow), dtype=x.dtype)
        if out.size == 0:
            return [out.reshape(out_infos[0].shape)]
        pad_h = max(0, (oh - 1) * sh + (kh - 1) * rh + 1 - h - ph)
        pad_w = max(0, (ow - 1) * sw + (kw - 1) * rw + 1 - w - pw)
        padded = np.pad(x, ((0, 0), (0, 0), (ph, pad_h), (pw, pad_w)))
        for i in range(kh):  # a loop over kernel offsets
            for j in range(kw):
                out[:, i, j] = padded[:, :, i * rh:i * rh + (oh - 1) * sh + 1:sh, j * rw:j * rw + (ow - 1) * sw + 1:sw]
        return [out.reshape(n, kh * kw * c, oh, ow)]
