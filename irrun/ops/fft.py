"""Fourier transforms: DFT-7, IDFT-7, RDFT-9, IRDFT-9, STFT-15, ISTFT-16.

Complex tensors are real tensors with a last dimension of 2 (real, imaginary). A signal size trims or
zero-pads its axis before the transform (-1 keeps the input size); IDFT and IRDFT divide by the product
of the transformed sizes. Every transform computes in complex128 with numpy.fft and rounds once to the
output type (OpenVINO's reference computes in f32; the results agree to f32 rounding noise)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ShapeError
from .arithmetic import finish
from .attrs import Bool
from .registry import Op, TensorInfo, op
from .shapes import as_index_array, require_rank, shape_str

FFT_TYPES = ("f32", "f16", "bf16")
COMPLEX_BYTES = 16


def _check_float(info, what, port):
    if info.type.name not in FFT_TYPES:
        raise ShapeError(f"{what} element type must be f32, f16 or bf16, got {info.type}", rule="port.type",
                         port=port)


def _check_index_type(info, what, port):
    if info.type.name not in ("i32", "i64"):
        raise ShapeError(f"{what} element type must be i32 or i64, got {info.type}", rule="port.type", port=port)


def _as_complex(x):
    return x[..., 0].astype(np.float64) + 1j * x[..., 1].astype(np.float64)


def _as_pairs(c):
    return np.stack([c.real, c.imag], axis=-1)


def _spread_nan(result, source, axes):
    """OpenVINO multiplies every input of a transform by complex twiddles, so one NaN input makes every output
    of its transform NaN (real and imaginary parts); numpy.fft's butterflies may keep some finite."""
    lines = np.isnan(source).any(axis=tuple(axes), keepdims=True)
    if lines.any():
        result = np.where(lines, complex(np.nan, np.nan) if np.iscomplexobj(result) else np.nan, result)
    return result


# ---------------------------------------------------------------- DFT family

class _FFTBase(Op):
    num_inputs = (2, 3)
    real_input = False  # RDFT: the data is real, axes count from the data's own rank

    def check_inputs_and_axes(self, inputs):
        """Validates the inputs; returns (axes normalised, or None when unknown; signal sizes or None)."""
        data, axes_info = inputs[:2]
        _check_float(data, "data", 0)
        _check_index_type(axes_info, "axes", 1)
        require_rank(axes_info.shape, (1,), "axes", 1)
        rank = data.rank
        if rank is not None:
            minimum = 1 if self.real_input else 2
            if rank < minimum:
                raise ShapeError(f"data rank is {rank} ({shape_str(data.shape)}), must be at least {minimum}",
                                 rule="port.rank", port=0)
            if not self.real_input and data.shape[-1] not in (None, 2):
                raise ShapeError(f"the last dimension of data must be 2 (real, imaginary), got "
                                 f"{shape_str(data.shape)}", rule="port.dims", port=0)
            axes_rank = rank if self.real_input else rank - 1
            count = None if axes_info.shape is None else axes_info.shape[0]
            if count is not None and count > axes_rank:
                raise ShapeError(f"{count} axes for a {'real' if self.real_input else 'complex'} input of rank "
                                 f"{axes_rank}", rule="port.dims", port=1)
        signal_size = None
        if len(inputs) == 3:
            size_info = inputs[2]
            _check_index_type(size_info, "signal_size", 2)
            require_rank(size_info.shape, (1,), "signal_size", 2)
            if None not in (axes_info.shape, size_info.shape) and None not in (axes_info.shape[0],
                                                                                size_info.shape[0]) \
                    and axes_info.shape[0] != size_info.shape[0]:
                raise ShapeError(f"axes {shape_str(axes_info.shape)} and signal_size {shape_str(size_info.shape)} "
                                 f"must have the same length", rule="port.dims", port=2)
            if size_info.value is not None:
                signal_size = [int(v) for v in as_index_array(size_info.value, "signal_size", 2).reshape(-1)]
                bad = [v for v in signal_size if v < -1]
                if bad:
                    raise ShapeError(f"signal_size {signal_size} has a value below -1", rule="attr.range.spec",
                                     port=2)
        axes = None
        if axes_info.value is not None and rank is not None:
            axes_rank = rank if self.real_input else rank - 1
            axes = []
            for axis in as_index_array(axes_info.value, "axes", 1).reshape(-1).tolist():
                if not -axes_rank <= axis < axes_rank:
                    raise ShapeError(f"axis {axis} is outside [{-axes_rank}, {axes_rank - 1}]", rule="attr.range",
                                     port=1)
                axes.append(axis + axes_rank if axis < 0 else axis)
            if len(set(axes)) != len(axes):
                raise ShapeError(f"axes {axes} are not unique", rule="attr.range", port=1)
            if signal_size is not None and len(signal_size) != len(axes):
                raise ShapeError(f"axes {axes} and signal_size {signal_size} must have the same length",
                                 rule="port.dims", port=2)
        return axes, signal_size

    def sizes(self, dims, axes, signal_size):
        """The transformed length of each axis (signal_size, or the input's size where it is -1)."""
        if signal_size is None:
            return [dims[a] for a in axes]
        return [dims[a] if s == -1 else s for a, s in zip(axes, signal_size)]


def _resize_dims(shape: list, axes, signal_size, sizes_unknown: bool) -> None:
    """Set each transformed axis's dim to its signal size (-1 keeps it; unknown sizes make it dynamic)."""
    if sizes_unknown:
        for axis in axes:
            shape[axis] = None
    elif signal_size is not None:
        for axis, size in zip(axes, signal_size):
            if size != -1:
                shape[axis] = size


def _resize(c, axes, sizes):
    """Trim or zero-pad each axis to its size (what numpy.fft's `s` does, also for sizes of 0)."""
    index = [slice(None)] * c.ndim
    pad = [(0, 0)] * c.ndim
    for axis, size in zip(axes, sizes):
        index[axis] = slice(0, size)
        pad[axis] = (0, max(0, size - c.shape[axis]))
    c = c[tuple(index)]
    return np.pad(c, pad) if any(p[1] for p in pad) else c


class _ComplexTransform(_FFTBase):
    inverse = False

    def infer(self, inputs):
        data = inputs[0]
        axes, signal_size = self.check_inputs_and_axes(inputs)
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        shape = list(data.shape)
        if axes is None:
            shape[:-1] = [None] * (len(shape) - 1)
        else:
            _resize_dims(shape, axes, signal_size, sizes_unknown=len(inputs) == 3 and signal_size is None)
        return [TensorInfo(tuple(shape), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        axes, signal_size = self.check_inputs_and_axes(in_infos)
        sizes = self.sizes(x.shape, axes, signal_size)
        out_shape = out_infos[0].shape
        self.reserve(COMPLEX_BYTES * 2 * max(math.prod(out_shape[:-1]), math.prod(x.shape[:-1])), "DFT buffers")
        source = _resize(_as_complex(x), axes, sizes)
        c = source
        if c.size and axes:
            c = np.fft.ifftn(c, axes=axes) if self.inverse else np.fft.fftn(c, axes=axes)
            c = _spread_nan(c, source, axes)
        return [finish(_as_pairs(c), out_infos[0].type)]


@op("DFT", 7)
class DFT7(_ComplexTransform):
    pass


@op("IDFT", 7)
class IDFT7(_ComplexTransform):
    inverse = True


@op("RDFT", 9)
class RDFT9(_FFTBase):
    """Real input [..]: the complex spectrum [.., 2], the last listed axis keeping size // 2 + 1 bins."""

    real_input = True

    def infer(self, inputs):
        data = inputs[0]
        axes, signal_size = self.check_inputs_and_axes(inputs)
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        shape = list(data.shape)
        if axes is None:
            return [TensorInfo((None,) * len(shape) + (2,), data.type)]
        _resize_dims(shape, axes, signal_size, sizes_unknown=len(inputs) == 3 and signal_size is None)
        last = axes[-1]
        if shape[last] is not None:
            shape[last] = shape[last] // 2 + 1
        return [TensorInfo((*shape, 2), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        axes, signal_size = self.check_inputs_and_axes(in_infos)
        sizes = self.sizes(x.shape, axes, signal_size)
        self.reserve(COMPLEX_BYTES * 2 * max(math.prod(out_infos[0].shape[:-1]), x.size), "RDFT buffers")
        real = _resize(x.astype(np.float64), axes, sizes)
        if math.prod(out_infos[0].shape) == 0:
            return [np.zeros(out_infos[0].shape, out_infos[0].type.storage)]
        c = np.fft.rfft(real, axis=axes[-1])
        if len(axes) > 1:
            c = np.fft.fftn(c, axes=axes[:-1])
        return [finish(_as_pairs(_spread_nan(c, real, axes)), out_infos[0].type)]


@op("IRDFT", 9)
class IRDFT9(_FFTBase):
    """Complex input [.., 2] holding half a Hermitian spectrum on the last listed axis: the real signal.
    That axis's output length is its signal size, or 2 * (n - 1) by default; the input along it is
    trimmed or zero-padded to length // 2 + 1, and the imaginary parts of bin 0 (and of the Nyquist bin
    for even lengths) are ignored."""

    def infer(self, inputs):
        data = inputs[0]
        axes, signal_size = self.check_inputs_and_axes(inputs)
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        shape = list(data.shape[:-1])
        if axes is None:
            return [TensorInfo((None,) * len(shape), data.type)]
        last = axes[-1]
        default_last = None if data.shape[last] is None else 2 * (data.shape[last] - 1)
        if len(inputs) == 3 and signal_size is None:
            shape[last] = None
            return [TensorInfo(tuple(shape), data.type)]
        if signal_size is not None:
            for axis, size in zip(axes, signal_size):
                if size != -1:
                    shape[axis] = size
        if signal_size is None or signal_size[-1] == -1:
            shape[last] = default_last
        if shape[last] is not None and shape[last] < 0:
            raise ShapeError("the last transformed axis has size 0, giving a negative output length",
                             rule="port.dims", port=0)
        return [TensorInfo(tuple(shape), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        axes, signal_size = self.check_inputs_and_axes(in_infos)
        out_shape = out_infos[0].shape
        sizes = [out_shape[a] for a in axes]
        self.reserve(COMPLEX_BYTES * 2 * max(math.prod(out_shape), math.prod(x.shape[:-1])), "IRDFT buffers")
        if math.prod(out_shape) == 0:
            return [np.zeros(out_shape, out_infos[0].type.storage)]
        source = _resize(_as_complex(x), axes, [*sizes[:-1], sizes[-1] // 2 + 1])
        c = np.fft.ifftn(source, axes=axes[:-1]) if len(axes) > 1 else source
        signal = _spread_nan(np.fft.irfft(c, n=sizes[-1], axis=axes[-1]), source, axes)
        return [finish(signal, out_infos[0].type)]


# ---------------------------------------------------------------- STFT / ISTFT

def _scalar_int(info, what, port, positive=True):
    """A scalar integer input's value (None when unknown); checks its type, rank and sign."""
    _check_index_type(info, what, port)
    if info.shape is not None and len(info.shape) != 0 and not (what == "length" and tuple(info.shape) == (1,)):
        raise ShapeError(f"{what} must be a scalar, got {shape_str(info.shape)}", rule="port.rank", port=port)
    if info.value is None:
        return None
    value = int(np.asarray(info.value).reshape(-1)[0])
    if positive and value <= 0:
        raise ShapeError(f"{what} is {value}, must be greater than zero", rule="attr.range", port=port)
    return value


def _check_window(data, window, frame_size, port=1):
    if window.type != data.type:
        raise ShapeError(f"window element type {window.type} must match the data's ({data.type})",
                         rule="port.type", port=port)
    require_rank(window.shape, (1,), "window", port)
    length = None if window.shape is None else window.shape[0]
    if length is not None and frame_size is not None and not 1 <= length <= frame_size:
        raise ShapeError(f"window length {length} must be in [1, frame_size = {frame_size}]", rule="port.dims",
                         port=port)


def _padded_window(window, frame_size):
    """The window centred in frame_size samples (OpenVINO puts (frame_size - length) // 2 zeros first)."""
    padded = np.zeros(frame_size, dtype=np.float64)
    first = (frame_size - len(window)) // 2
    padded[first:first + len(window)] = window
    return padded


@op("STFT", 15)
class STFT15(Op):
    """Signal [batch?, length] -> [batch?, frames, bins, 2] (transpose_frames: [batch?, bins, frames, 2])
    with frames = (length - frame_size) // frame_step + 1, bins = frame_size // 2 + 1."""

    transpose_frames = Bool()
    num_inputs = (4, 4)

    def geometry(self, inputs):
        signal, window, size_info, step_info = inputs
        _check_float(signal, "signal", 0)
        require_rank(signal.shape, (1, 2), "signal", 0)
        frame_size = _scalar_int(size_info, "frame_size", 2, positive=False)
        frame_step = _scalar_int(step_info, "frame_step", 3)
        length = None if signal.shape is None else signal.shape[-1]
        if frame_size is not None and (frame_size < 1 or (length is not None and frame_size > length)):
            raise ShapeError(f"frame_size {frame_size} must be in [1, signal length {length}]", rule="attr.range",
                             port=2)
        _check_window(signal, window, frame_size)
        return frame_size, frame_step, length

    def infer(self, inputs):
        signal = inputs[0]
        frame_size, frame_step, length = self.geometry(inputs)
        if signal.shape is None:
            return [TensorInfo(None, signal.type)]
        frames = None if None in (frame_size, frame_step, length) else (length - frame_size) // frame_step + 1
        bins = None if frame_size is None else frame_size // 2 + 1
        inner = (bins, frames) if self.transpose_frames else (frames, bins)
        return [TensorInfo((*signal.shape[:-1], *inner, 2), signal.type)]

    def run(self, inputs, in_infos, out_infos):
        signal, window = inputs[:2]
        frame_size, frame_step, _ = self.geometry(in_infos)
        self.reserve(COMPLEX_BYTES * 3 * math.prod(out_infos[0].shape), "STFT frames")
        frames = np.lib.stride_tricks.sliding_window_view(signal, frame_size, axis=-1)[..., ::frame_step, :]
        windowed = frames.astype(np.float64) * _padded_window(window, frame_size)
        spectrum = _as_pairs(_spread_nan(np.fft.rfft(windowed, axis=-1), windowed, [-1]))
        if self.transpose_frames:
            spectrum = np.swapaxes(spectrum, -2, -3)
        return [finish(spectrum, out_infos[0].type)]


@op("ISTFT", 16)
class ISTFT16(Op):
    """[batch?, bins, frames, 2] -> [batch?, length]: each frame's inverse real DFT times the window,
    overlap-added and divided by the overlap-added squared window (0 where that sum is 0); `normalized`
    multiplies by sqrt(frame_size); `center` drops frame_size // 2 samples at each end. A `length` input
    trims or zero-pads the result (0 gives an empty one, as OpenVINO's shape inference says; a negative one
    is an error); without it the length is (frames - 1) * frame_step + frame_size, less
    2 * (frame_size // 2) when centred."""

    center = Bool()
    normalized = Bool()
    num_inputs = (4, 5)

    def geometry(self, inputs):
        data, window, size_info, step_info = inputs[:4]
        _check_float(data, "data", 0)
        require_rank(data.shape, (3, 4), "data", 0)
        frame_size = _scalar_int(size_info, "frame_size", 2)
        frame_step = _scalar_int(step_info, "frame_step", 3)
        if data.shape is not None:
            bins = data.shape[-3]
            if frame_size is not None and bins is not None and bins != frame_size // 2 + 1:
                raise ShapeError(f"data {shape_str(data.shape)} has {bins} bins; frame_size {frame_size} needs "
                                 f"{frame_size // 2 + 1}", rule="port.dims", port=0)
        _check_window(data, window, frame_size)
        length = None
        if len(inputs) == 5:
            length = _scalar_int(inputs[4], "length", 4, positive=False)
            if length is not None and length < 0:
                raise ShapeError(f"length is {length}, must not be negative", rule="attr.range", port=4)
        # OpenVINO does not check this dim (checked after its own checks); irrun requires the complex pair it reads
        if data.shape is not None and data.shape[-1] not in (None, 2):
            raise ShapeError(f"the last dimension of data must be 2 (real, imaginary), got {shape_str(data.shape)}",
                             rule="port.dims.spec", port=0)
        return frame_size, frame_step, length

    def default_length(self, frames, frame_size, frame_step):
        full = (frames - 1) * frame_step + frame_size
        return full - 2 * (frame_size // 2) if self.center else full

    def infer(self, inputs):
        data = inputs[0]
        frame_size, frame_step, length = self.geometry(inputs)
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        batch = data.shape[:-3]
        if len(inputs) == 5:
            out = length
        else:
            out = self._default(data, frame_size, frame_step)
        return [TensorInfo((*batch, out), data.type)]

    def _default(self, data, frame_size, frame_step):
        frames = data.shape[-2]
        if None in (frames, frame_size, frame_step):
            return None
        if frames == 0:
            raise ShapeError("data has no frames", rule="shape.empty", port=0)
        return self.default_length(frames, frame_size, frame_step)

    def run(self, inputs, in_infos, out_infos):
        data, window = inputs[:2]
        frame_size, frame_step, _ = self.geometry(in_infos)
        out_len = out_infos[0].shape[-1]
        frames = data.shape[-2]
        full = (frames - 1) * frame_step + frame_size
        batch = data.shape[:-3]
        self.reserve(8 * (2 * math.prod(batch) * (frames * frame_size + full) + full), "ISTFT buffers")
        spectrum = np.swapaxes(_as_complex(data), -1, -2)  # [batch?, frames, bins]
        padded = _padded_window(window, frame_size)
        pieces = _spread_nan(np.fft.irfft(spectrum, n=frame_size, axis=-1), spectrum, [-1]) * padded
        signal = np.zeros((*batch, full))
        weight = np.zeros(full)
        if frames <= frame_size:  # overlap-add: one slice add per frame, or per sample position in a frame
            for index in range(frames):
                signal[..., index * frame_step:index * frame_step + frame_size] += pieces[..., index, :]
                weight[index * frame_step:index * frame_step + frame_size] += padded ** 2
        else:
            for first in range(frame_size):
                signal[..., first:first + (frames - 1) * frame_step + 1:frame_step] += pieces[..., first]
                weight[first:first + (frames - 1) * frame_step + 1:frame_step] += padded[first] ** 2
        nonzero = weight != 0
        signal = np.where(nonzero, signal / np.where(nonzero, weight, 1), 0.0)
        if self.normalized:
            signal *= math.sqrt(frame_size)
        margin = frame_size // 2 if self.center else 0
        result = np.zeros((*batch, out_len))
        kept = max(0, min(out_len, full - margin))
        result[..., :kept] = signal[..., margin:margin + kept]
        return [finish(result, out_infos[0].type)]
