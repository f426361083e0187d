"""RandomUniform-8, bit-exact with OpenVINO's reference generator.

alignment="tensorflow" (the default): Philox 4x32-10 in counter mode. Call j (j = 0, 1, ...) encrypts the
counter (j low, j high, op_seed low, op_seed high) under the key (global_seed low, global_seed high)
and yields four uint32 words; f32, f16, bf16 and i32 take one word per element, f64 and i64 two.
alignment="pytorch": the uint32 stream of MT19937 seeded with global_seed's low 32 bits (op_seed is
unused), one word per element, two for f64 and for i64 unless min and max both fit in uint32.
The words become values as OpenVINO's converters do (docs/semantics.md); each run starts from the
seeds (OpenVINO's op advances its state on every evaluation; irrun gives the first evaluation's values).
"""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .attrs import Bool, Enum, Int, Type
from .registry import Op, TensorInfo, op
from .shapes import as_index_array, numel
from ..ir.narrow_floats import f16_bits, ov_bf16

_M32 = np.uint64(0xFFFFFFFF)
_MUL_N, _MUL_COUNTER = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_KEY_STEP = (np.uint64(0x9E3779B9), np.uint64(0xBB67AE85))


def philox4x32(calls: int, key: int, counter_high: int) -> np.ndarray:
    """Philox 4x32-10 words for calls 0..calls-1 (counter = call index, then counter_high): uint32 [calls*4]."""
    index = np.arange(calls, dtype=np.uint64)
    n0, n1 = index & _M32, index >> np.uint64(32)
    c0 = np.full(calls, counter_high & 0xFFFFFFFF, np.uint64)
    c1 = np.full(calls, (counter_high >> 32) & 0xFFFFFFFF, np.uint64)
    k0, k1 = np.uint64(key & 0xFFFFFFFF), np.uint64((key >> 32) & 0xFFFFFFFF)
    for round_ in range(10):
        p0, p1 = _MUL_N * n0, _MUL_COUNTER * c0
        n0, n1, c0, c1 = (p1 >> np.uint64(32)) ^ n1 ^ k0, p1 & _M32, (p0 >> np.uint64(32)) ^ c1 ^ k1, p0 & _M32
        if round_ < 9:
            k0, k1 = (k0 + _KEY_STEP[0]) & _M32, (k1 + _KEY_STEP[1]) & _M32
    return np.stack([n0, n1, c0, c1], axis=1).reshape(-1).astype(np.uint32)


def mt19937_words(count: int, seed: int) -> np.ndarray:
    """The first `count` uint32 outputs of MT19937 seeded by init_genrand(seed) (NumPy's legacy seeding)."""
    return np.random.RandomState(seed & 0xFFFFFFFF).randint(0, 2 ** 32, size=count, dtype=np.uint32)


def _f16(x32: np.ndarray) -> np.ndarray:
    """float32 -> float16 as ov::float16 rounds."""
    return f16_bits(np.asarray(x32, np.float32)).view(np.float16)


def _f16_op(result32) -> np.ndarray:
    return _f16(result32).astype(np.float32)


def tensorflow_values(words: np.ndarray, name: str, low, high) -> np.ndarray:
    if name == "f32":
        unit = ((words & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)
        return unit * (np.float32(high) - np.float32(low)) + np.float32(low)
    if name == "f16":
        unit = ((words & np.uint32(0x3FF)) | np.uint32(0x3C00)).astype(np.uint16).view(np.float16).astype(np.float32) - 1
        span = _f16_op(np.float32(high) - np.float32(low))
        return _f16(_f16_op(unit * span) + np.float32(low))
    if name == "bf16":
        unit = (((words & np.uint32(0x7F)) | np.uint32(0x3F80)) << np.uint32(16)).view(np.float32) - np.float32(1)
        span = ov_bf16(np.float32(high) - np.float32(low))
        return ov_bf16(ov_bf16(unit * span) + np.float32(low))
    pairs = words.reshape(-1, 2).astype(np.uint64)
    if name == "f64":
        mantissa = ((pairs[:, 0] & np.uint64(0xFFFFF)) << np.uint64(32)) | pairs[:, 1]
        unit = (mantissa | np.uint64(0x3FF0000000000000)).view(np.float64) - 1.0
        return unit * (np.float64(high) - np.float64(low)) + np.float64(low)
    if name == "i32":
        span = np.uint32((int(high) - int(low)) & 0xFFFFFFFF)
        return (words % span + np.uint32(int(low) & 0xFFFFFFFF)).view(np.int32)
    span = np.uint64((int(high) - int(low)) & 0xFFFFFFFFFFFFFFFF)
    joined = (pairs[:, 1] << np.uint64(32)) | pairs[:, 0]
    return (joined % span + np.uint64(int(low) & 0xFFFFFFFFFFFFFFFF)).view(np.int64)


def pytorch_values(words: np.ndarray, name: str, low, high, i64_pairs: bool) -> np.ndarray:
    if name == "f32":
        unit = (words & np.uint32(0xFFFFFF)).astype(np.float32) * np.float32(2.0 ** -24)
        return unit * (np.float32(high) - np.float32(low)) + np.float32(low)
    if name == "f16":
        unit = (words & np.uint32(0x7FF)).astype(np.float32) * np.float32(2.0 ** -11)
        span = _f16_op(np.float32(high) - np.float32(low))
        return _f16(unit * span + np.float32(low))
    if name == "bf16":
        unit = (words & np.uint32(0xFF)).astype(np.float32) * np.float32(2.0 ** -8)
        span = ov_bf16(np.float32(high) - np.float32(low))
        return ov_bf16(unit * span + np.float32(low))
    if name == "i32":
        span = np.uint32((int(high) - int(low)) & 0xFFFFFFFF)
        return (words % span + np.uint32(int(low) & 0xFFFFFFFF)).view(np.int32)
    if name == "i64" and not i64_pairs:
        return words.astype(np.int64) % np.int64(int(high) - int(low)) + np.int64(low)
    pairs = words.reshape(-1, 2).astype(np.uint64)
    joined = (pairs[:, 0] << np.uint64(32)) | pairs[:, 1]
    if name == "f64":
        unit = (joined & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53
        return unit * (np.float64(high) - np.float64(low)) + np.float64(low)
    span = np.uint64((int(high) - int(low)) & 0xFFFFFFFFFFFFFFFF)
    return (joined % span).view(np.int64) + np.int64(low)


_OUTPUT_TYPES = ("f16", "bf16", "f32", "f64", "i32", "i64")


@op("RandomUniform", 8)
class RandomUniform8(Op):
    output_type = Type()
    global_seed = Int(min=0, read_below=True)
    op_seed = Int(min=0, read_below=True)
    alignment = Enum("tensorflow", "pytorch", default="tensorflow")
    num_inputs = (3, 3)

    def infer(self, inputs):
        shape, low, high = inputs
        if shape.type.name not in ("i32", "i64"):
            raise ShapeError(f"the shape input must be i32 or i64, got {shape.type}", rule="port.type", port=0)
        if shape.rank is not None and shape.rank != 1:
            raise ShapeError(f"the shape input must be 1-D, got rank {shape.rank}", rule="port.rank", port=0)
        if self.output_type.name not in _OUTPUT_TYPES:
            raise ShapeError(f"output_type {self.output_type} is not one of {', '.join(_OUTPUT_TYPES)}",
                             rule="attr.value")
        for port, info in ((1, low), (2, high)):
            if info.type != self.output_type:
                raise ShapeError(f"min and max must have the output type {self.output_type}, input {port} is "
                                 f"{info.type}", rule="port.type", port=port)
            if info.shape is not None and not (info.rank == 0 or (info.rank == 1 and info.shape[0] in (1, None))):
                raise ShapeError(f"input {port} must be a scalar or a 1-element 1-D tensor", rule="port.dims",
                                 port=port)
        if low.value is not None and high.value is not None and not low.value.reshape(-1)[0] < high.value.reshape(-1)[0]:
            raise ShapeError(f"min {low.value.reshape(-1)[0]} must be less than max {high.value.reshape(-1)[0]}",
                             rule="input.value", port=1)
        if shape.value is None:
            dims = None if shape.shape is None or shape.shape[0] is None else (None,) * shape.shape[0]
            return [TensorInfo(dims, self.output_type)]
        dims = tuple(max(0, int(d)) for d in as_index_array(shape.value, "the shape", 0).reshape(-1))
        return [TensorInfo(dims, self.output_type)]

    def run(self, inputs, in_infos, out_infos):
        shape = out_infos[0].shape
        count = numel(shape)
        name = self.output_type.name
        low, high = inputs[1].reshape(-1)[0], inputs[2].reshape(-1)[0]
        if self.alignment == "pytorch":
            i64_pairs = name == "i64" and not (int(low) <= 0xFFFFFFFF and int(high) <= 0xFFFFFFFF)
            per_word = 2 if name == "f64" or i64_pairs else 1
            calls = -(-count * per_word // 4)
            self.reserve(calls * 4 * 16, "RandomUniform words")
            values = pytorch_values(mt19937_words(calls * 4, self.global_seed), name, low, high, i64_pairs)
        else:
            per_word = 2 if name in ("f64", "i64") else 1
            calls = -(-count * per_word // 4)
            self.reserve(calls * 4 * 32, "RandomUniform words")
            values = tensorflow_values(philox4x32(calls, self.global_seed, self.op_seed), name, low, high)
        with np.errstate(all="ignore"):
            out = np.asarray(values)[:count].astype(self.output_type.storage)
        return [out.reshape(shape)]


def seed_seq_words(seeds, count: int = 624) -> np.ndarray:
    """std::seed_seq(seeds).generate(count words), the algorithm the C++ standard specifies."""
    values = [int(v) & 0xFFFFFFFF for v in seeds]
    words = [0x8B8B8B8B] * count
    t = 11 if count >= 623 else 7 if count >= 68 else 5 if count >= 39 else 3 if count >= 7 else (count - 1) // 2
    p = (count - t) // 2
    q = p + t
    m = max(len(values) + 1, count)
    mask = 0xFFFFFFFF
    for k in range(m):
        mixed = words[k % count] ^ words[(k + p) % count] ^ words[(k - 1) % count]
        r1 = (1664525 * (mixed ^ (mixed >> 27))) & mask
        r2 = (r1 + (len(values) if k == 0 else k % count + values[k - 1] if k <= len(values) else k % count)) & mask
        words[(k + p) % count] = (words[(k + p) % count] + r1) & mask
        words[(k + q) % count] = (words[(k + q) % count] + r2) & mask
        words[k % count] = r2
    for k in range(m, m + count):
        mixed = (words[k % count] + words[(k + p) % count] + words[(k - 1) % count]) & mask
        r3 = (1566083941 * (mixed ^ (mixed >> 27))) & mask
        r4 = (r3 - k % count) & mask
        words[(k + p) % count] ^= r3
        words[(k + q) % count] ^= r4
        words[k % count] = r4
    return np.array(words, dtype=np.uint32)


def mt19937_seed_seq_words(count: int, seeds) -> np.ndarray:
    """The first `count` outputs of std::mt19937 seeded with std::seed_seq(seeds)."""
    key = seed_seq_words(seeds)
    if not (key[0] & 0x80000000) and not key[1:].any():
        key[0] = 0x80000000
    generator = np.random.MT19937(0)
    generator.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 624}}
    return generator.random_raw(count).astype(np.uint32)


def _first_at_least(cdf: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """For each draw, the first k with draw <= cdf[k] (0 when there is none): a binary search on the
    running maximum of cdf (NaN entries never match)."""
    running = np.fmax.accumulate(cdf)
    running = np.where(np.isnan(running), -np.inf, running)
    found = np.searchsorted(running, draws, side="left")
    return np.where(found < cdf.size, found, 0)


def _float32(values) -> np.ndarray:
    return np.asarray(values, np.float32)


@op("Multinomial", 13)
class Multinomial13(Op):
    """Samples class indices per row of probs. The pip package's core has no Multinomial kernel, so this
    follows its CPU plugin (f32 inference precision, so every probs type is computed in float32): a running
    sum of probs (of exp of them with log_probs), divided by max(row total, 2**-126); draws are
    float(w) / 4294967296.0f, w the std::mt19937 words seeded with std::seed_seq{global_seed, op_seed},
    row-major over (batch, sample); a draw picks the first class with draw <= cdf. Without replacement,
    per row and sample in turn, the picked class's probability p (cdf difference) is removed: cdf[k] -= p
    from the picked class on, then every cdf[k] /= 1 - p. A draw no class takes gives 0 (OpenVINO leaves
    that output element unwritten)."""

    convert_type = Type()
    with_replacement = Bool()
    log_probs = Bool()
    global_seed = Int(min=0, read_below=True)
    op_seed = Int(min=0, read_below=True)
    num_inputs = (2, 2)

    def infer(self, inputs):
        probs, samples = inputs
        if probs.type.name not in ("f16", "bf16", "f32", "f64"):
            raise ShapeError(f"probs must be a float type, got {probs.type}", rule="port.type", port=0)
        if probs.rank is not None and probs.rank != 2:
            raise ShapeError(f"probs must be 2-D, got rank {probs.rank}", rule="port.rank", port=0)
        if not samples.type.is_integer:
            raise ShapeError(f"num_samples must be an integer type, got {samples.type}", rule="port.type", port=1)
        if samples.shape is not None and not (
                samples.rank == 0 or (samples.rank == 1 and samples.shape[0] in (1, None))):
            raise ShapeError("num_samples must be a scalar or a 1-element 1-D tensor", rule="port.dims", port=1)
        if self.convert_type.storage is None or self.convert_type.name == "boolean":
            raise ShapeError(f"convert_type {self.convert_type} cannot hold class indices", rule="attr.value")
        batch = None if probs.shape is None else probs.shape[0]
        count = None
        if samples.value is not None and int(samples.value.reshape(-1)[0]) >= 0:
            count = int(samples.value.reshape(-1)[0])
        return [TensorInfo((batch, count), self.convert_type)]

    def run(self, inputs, in_infos, out_infos):
        probs, samples = inputs
        count = int(samples.reshape(-1)[0])
        if count < 0:
            raise ShapeError(f"num_samples {count} is negative", rule="input.value", port=1)
        in_p = _float32
        batch, classes = probs.shape
        self.reserve(probs.size * 4 * 6 + batch * count * 16, "Multinomial temporaries")
        with np.errstate(all="ignore"):
            values = np.asarray(probs, np.float32)
            if self.log_probs:
                values = in_p(np.exp(in_p(values)))
            cdf = np.empty((batch, classes), np.float32)
            running = np.zeros(batch, np.float32)
            for k in range(classes):  # a running sum rounded to P after each addition
                running = in_p(values[:, k] if k == 0 else running + values[:, k])
                cdf[:, k] = running
            if classes:
                cdf = in_p(cdf / np.maximum(cdf[:, -1:], np.float32(2.0 ** -126)))
            words = mt19937_seed_seq_words(batch * count, (self.global_seed, self.op_seed))
            draws = in_p(words.astype(np.float32) / np.float32(4294967296.0)).reshape(batch, count)
            out = np.zeros((batch, count), dtype=np.int64)
            if self.with_replacement or not classes:
                for row in range(batch if classes else 0):
                    out[row] = _first_at_least(cdf[row], draws[row])
            else:
                rows = np.arange(batch)
                later_base = np.arange(classes)[None, :]
                for j in range(count):
                    hit = draws[:, j:j + 1] <= cdf
                    found = hit.any(axis=1)
                    chosen = hit.argmax(axis=1)
                    out[:, j] = np.where(found, chosen, 0)
                    previous = cdf[rows, np.maximum(chosen - 1, 0)]
                    p = in_p(np.where(chosen > 0, cdf[rows, chosen] - previous, cdf[:, 0]))
                    divisor = in_p(1 - p)[:, None]
                    updated = np.where(later_base >= chosen[:, None], in_p(cdf - p[:, None]), cdf)
                    cdf = np.where(found[:, None], in_p(updated / divisor), cdf)
        return [out.astype(self.convert_type.storage)]
