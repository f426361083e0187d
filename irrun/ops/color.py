"""Colour conversion: NV12toRGB-8, NV12toBGR-8, I420toRGB-8, I420toBGR-8, RGBtoNV12-17, BGRtoNV12-17.

Images are NHWC. YUV images come as one plane [N, H * 3 / 2, W, 1] or as separate planes: NV12 Y
[N, H, W, 1] + interleaved UV [N, H / 2, W / 2, 2]; I420 Y + U [N, H / 2, W / 2, 1] + V (same). Every value
is computed in f32 with OpenVINO's BT.601 coefficients; u8 results round half away from zero and clamp to
[0, 255], float results only clamp."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .arithmetic import finish
from .attrs import Bool
from .registry import Op, TensorInfo, op
from .shapes import require_rank, shape_str

F32 = np.float32


def _check_type(info, port):
    if not (info.type.name == "u8" or info.type.is_float) or info.type.storage is None:
        raise ShapeError(f"element type must be u8 or floating point, got {info.type}", rule="port.type", port=port)


def _dim(shape, axis):
    return None if shape is None else shape[axis]


def _require(condition, message, port, rule="port.dims"):
    if not condition:
        raise ShapeError(message, rule=rule, port=port)


def _to_output(values, element_type):
    """f32 values in [?] to the output type: u8 rounds half away from zero, then everything clamps to
    [0, 255]."""
    if element_type.name == "u8":
        rounded = np.floor(values.astype(np.float64) + 0.5)
        return np.clip(rounded, 0, 255).astype(np.uint8)
    return finish(np.clip(values, F32(0), F32(255)), element_type)


# ---------------------------------------------------------------- YUV -> RGB / BGR

class _FromYUV(Op):
    bgr = False
    planes = 2  # separate input planes besides the single-plane form (NV12: Y, UV; I420: Y, U, V)
    chroma_channels = (2,)

    def infer(self, inputs):
        if len(inputs) not in (1, self.planes):
            raise ShapeError(f"has {len(inputs)} inputs, expects 1 (single plane) or {self.planes} (separate "
                             f"planes)", rule="port.count")
        for port, info in enumerate(inputs):
            _check_type(info, port)
            require_rank(info.shape, (4,), "image plane", port)
            if info.type != inputs[0].type:
                raise ShapeError(f"planes must share one element type, got {inputs[0].type} and {info.type}",
                                 rule="port.type", port=port)
        y = inputs[0].shape
        channels = _dim(y, 3)
        _require(channels in (None, 1), f"Y plane {shape_str(y)} must have 1 channel", 0)
        batch, height, width = _dim(y, 0), _dim(y, 1), _dim(y, 2)
        _require(width is None or width % 2 == 0, f"image width {width} must be even", 0)
        if len(inputs) == 1:
            _require(height is None or height % 3 == 0, f"single-plane height {height} must be divisible by 3", 0)
            height = None if height is None else height * 2 // 3
        else:
            _require(height is None or height % 2 == 0, f"image height {height} must be even", 0)
            for port, info in enumerate(inputs[1:], start=1):
                chroma = info.shape
                expected = self.chroma_channels[port - 1]
                _require(_dim(chroma, 3) in (None, expected),
                         f"chroma plane {shape_str(chroma)} must have {expected} channel(s)", port)
                # the chroma plane is [N, H / 2, W / 2]; where the Y plane leaves a dim unknown, it tells it
                sizes = [batch, height, width]
                for axis, scale in ((0, 1), (1, 2), (2, 2)):
                    size = _dim(chroma, axis)
                    if size is None:
                        continue
                    if sizes[axis] is None:
                        sizes[axis] = size * scale
                    _require(sizes[axis] == size * scale,
                             f"chroma plane {shape_str(chroma)} does not fit the Y plane {shape_str(y)}", port)
                batch, height, width = sizes
        return [TensorInfo((batch, height, width, 3), inputs[0].type)]

    def planes_of(self, inputs):
        """(Y [N, H, W], U [N, H/2, W/2], V [N, H/2, W/2]) from the inputs."""
        raise NotImplementedError

    def run(self, inputs, in_infos, out_infos):
        y, u, v = self.planes_of(inputs)
        n, h, w = y.shape
        self.reserve(4 * 8 * n * h * w, "colour conversion temporaries")
        u = np.repeat(np.repeat(u.astype(F32) - F32(128), 2, axis=1), 2, axis=2)
        v = np.repeat(np.repeat(v.astype(F32) - F32(128), 2, axis=1), 2, axis=2)
        luma = F32(1.164) * (y.astype(F32) - F32(16))
        red = luma + F32(1.596) * v
        green = luma - F32(0.391) * u - F32(0.813) * v
        blue = luma + F32(2.018) * u
        rgb = np.stack((blue, green, red) if self.bgr else (red, green, blue), axis=-1)
        return [_to_output(rgb, out_infos[0].type)]


class _NV12(_FromYUV):
    num_inputs = (1, 2)

    def planes_of(self, inputs):
        if len(inputs) == 1:
            image = inputs[0][..., 0]
            h = image.shape[1] * 2 // 3
            y, uv = image[:, :h], image[:, h:]
            n, _, w = y.shape
            uv = uv.reshape(n, h // 2, w // 2, 2)
        else:
            y, uv = inputs[0][..., 0], inputs[1]
        return y, uv[..., 0], uv[..., 1]


class _I420(_FromYUV):
    num_inputs = (1, 3)
    planes = 3
    chroma_channels = (1, 1)

    def planes_of(self, inputs):
        if len(inputs) == 3:
            return inputs[0][..., 0], inputs[1][..., 0], inputs[2][..., 0]
        image = inputs[0][..., 0]
        n, rows, w = image.shape
        h = rows * 2 // 3
        chroma = image[:, h:].reshape(n, 2, h // 2, w // 2)
        return image[:, :h], chroma[:, 0], chroma[:, 1]


@op("NV12toRGB", 8)
class NV12toRGB8(_NV12):
    pass


@op("NV12toBGR", 8)
class NV12toBGR8(_NV12):
    bgr = True


@op("I420toRGB", 8)
class I420toRGB8(_I420):
    pass


@op("I420toBGR", 8)
class I420toBGR8(_I420):
    bgr = True


# ---------------------------------------------------------------- RGB / BGR -> NV12

class _ToNV12(Op):
    """[N, H, W, 3] -> NV12: Y per pixel; U and V per pixel, each clamped (and rounded for u8), then
    averaged over each 2x2 block (and rounded again for u8)."""

    single_plane = Bool(default=True)
    bgr = False

    def infer(self, inputs):
        (image,) = inputs
        _check_type(image, 0)
        require_rank(image.shape, (4,), "image", 0)
        batch, height, width, channels = (None,) * 4 if image.shape is None else image.shape
        _require(channels in (None, 3), f"image {shape_str(image.shape)} must have 3 channels", 0)
        _require(height is None or height % 2 == 0, f"image height {height} must be even", 0)
        _require(width is None or width % 2 == 0, f"image width {width} must be even", 0)
        if self.single_plane:
            return [TensorInfo((batch, None if height is None else height * 3 // 2, width, 1), image.type)]
        half_h = None if height is None else height // 2
        half_w = None if width is None else width // 2
        return [TensorInfo((batch, height, width, 1), image.type),
                TensorInfo((batch, half_h, half_w, 2), image.type)]

    def run(self, inputs, in_infos, out_infos):
        image = inputs[0]
        n, h, w, _ = image.shape
        self.reserve(4 * 6 * n * h * w, "colour conversion temporaries")
        pixels = image.astype(F32)
        red, green, blue = pixels[..., 0], pixels[..., 1], pixels[..., 2]
        if self.bgr:
            red, blue = blue, red
        element_type = out_infos[0].type
        # OpenVINO sums the three products left to right, then adds the offset, all in f32
        y = _to_output(F32(0.257) * red + F32(0.504) * green + F32(0.098) * blue + F32(16), element_type)
        u = _to_output(F32(-0.148) * red - F32(0.291) * green + F32(0.439) * blue + F32(128), element_type)
        v = _to_output(F32(0.439) * red - F32(0.368) * green - F32(0.071) * blue + F32(128), element_type)
        uv = np.stack([_block_mean(u), _block_mean(v)], axis=-1)  # [N, H/2, W/2, 2]
        uv = _to_output(uv, element_type)
        y = y[..., None]
        if not self.single_plane:
            return [y, uv]
        return [np.concatenate([y, uv.reshape(n, h // 2, w, 1)], axis=1)]


def _block_mean(plane):
    """The mean of each 2x2 block, summed in OpenVINO's order (row-major within the block) in f32."""
    p = plane.astype(F32)
    return (((p[:, 0::2, 0::2] + p[:, 0::2, 1::2]) + p[:, 1::2, 0::2]) + p[:, 1::2, 1::2]) / F32(4)


@op("RGBtoNV12", 17)
class RGBtoNV12(_ToNV12):
    pass


@op("BGRtoNV12", 17)
class BGRtoNV12(_ToNV12):
    bgr = True
