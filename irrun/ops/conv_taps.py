"""Kernel offsets that read only padding, dropped before a forward convolution runs.

With a dilation as large as the input (DeepLab's ASPP: 3x3 kernels dilated 12, 24 and 36 over 14x14
features), every output position reads the outer kernel rows and columns from the zero padding alone.
Along each spatial axis the offsets whose windows reach the input form a range; the kernel is cut to it and
the padding before the axis shrinks by the dropped offsets' reach, which leaves every output position
reading the same input positions through the same weights. A 3x3 layer dilated 24 or 36 over 14x14 becomes
a 1x1 product on the unpadded input (9 times less work, no padded copy). Values: the same sums without
the zero terms; a weight of inf or NaN at a dropped offset no longer turns zeros from the padding into NaN,
as OpenVINO's reference, which multiplies only the input, never did.
"""
from __future__ import annotations


def reaches_input(offset, size, stride, dilation, begin, out) -> bool:
    """Whether kernel offset `offset` along an axis reads an input position for some output position:
    output o reads o * stride + offset * dilation - begin."""
    start = offset * dilation - begin
    first = max(0, -(start // stride))  # the first output reading a position >= 0
    return first < out and first * stride + start < size


def crop_to_input(w, spatial_in, strides, dilations, begins, out):
    """(w [..., *K] cut to the offsets that reach the input along each axis, begins adjusted to them); w
    and begins unchanged when every offset reaches it (or none does: the output is all padding)."""
    kernel = w.shape[-len(out):]
    ranges, new_begins = [], []
    for k, size, s, d, b, o in zip(kernel, spatial_in, strides, dilations, begins, out):
        reaching = [i for i in range(k) if reaches_input(i, size, s, d, b, o)]
        if not reaching:
            return w, begins
        ranges.append(slice(reaching[0], reaching[-1] + 1))
        new_begins.append(b - reaching[0] * d)
    if all(r.stop - r.start == k for r, k in zip(ranges, kernel)):
        return w, begins
    return w[(Ellipsis, *ranges)], new_begins
