"""Rounding float32 values to OpenVINO's narrow float types (f8e4m3, f8e5m2, f8e8m0, f4e2m1, nf4).

irrun keeps these types widened to float32 (irrun/ir/types.py); a value of a narrow type is always
one of the type's code values (the decoding tables in irrun/ir/weights.py). Each `*_codes` function
maps float32 values to the type's codes as OpenVINO's reference Convert does (measured on the pip
package: bit for bit over every float16 and bfloat16 and hundreds of millions of float32 patterns), on
the float32 bits, vectorised. docs/semantics.md lists each type's rounding, overflow, NaN and subnormal
behaviour.
"""
from __future__ import annotations

import numpy as np

from .weights import _BYTE_TABLES, _NIBBLE_TABLES

NARROW_FLOATS = ("f8e4m3", "f8e5m2", "f8e8m0", "f4e2m1", "nf4")

_U32 = np.uint32


def _bits(x: np.ndarray) -> np.ndarray:
    return np.require(x, dtype=np.float32, requirements="C").view(np.uint32)


def _round_half_even_at(fraction: np.ndarray, guard: int) -> np.ndarray:
    """`fraction` with one added at bit `guard` when the bits from `guard` down round up to nearest-even
    (a set sticky bit below `guard`, or a tie whose kept least significant bit is odd)."""
    below = _U32((1 << guard) - 1)
    tie_odd = _U32(3 << guard)
    up = ((fraction & _U32((4 << guard) - 1)) == tie_odd) | ((fraction & below) != 0)
    return fraction + (up.astype(np.uint32) << _U32(guard))


def f8e4m3_codes(x: np.ndarray) -> np.ndarray:
    """OpenVINO's Convert to f8e4m3: float32 -> float16 (ov::float16's rounding), then rounded exactly."""
    return _f8e4m3_codes_exact(f16_bits(x).view(np.float16).astype(np.float32))


def _f8e4m3_codes_exact(x: np.ndarray) -> np.ndarray:
    """f8e4m3 (e4m3fn: bias 7, no infinity, S.1111.111 is NaN): round to nearest even; infinities,
    NaN and anything that rounds past 448 become NaN (0x7F with the input's sign); float32
    subnormals (far below f8e4m3's range) become a signed zero."""
    bits = _bits(x)
    sign = (bits >> _U32(24)) & _U32(0x80)
    exp32 = ((bits >> _U32(23)) & _U32(0xFF)).astype(np.int32)
    mant = bits & _U32(0x7FFFFF)
    exp8 = exp32 - 120
    # normal f8 results: the three kept mantissa bits land on bits 24-26, the guard bit is bit 23
    fraction = _round_half_even_at(mant << _U32(4), 23)
    rounded_exp8 = exp8 + ((fraction & _U32(0x78000000)) != 0)
    normal = sign | (np.clip(rounded_exp8, 0, 15).astype(np.uint32) << _U32(3)) | ((fraction >> _U32(24)) & _U32(7))
    # subnormal f8 results: shift the mantissa with its hidden one right, keep a sticky bit
    full = _U32(0x08000000) | (mant << _U32(4))
    shift = np.clip(1 - exp8, 1, 31).astype(np.uint32)
    sticky = (exp8 < -15) | ((full & ((_U32(1) << shift) - _U32(1))) != 0)
    shifted = np.where(exp8 < -30, _U32(0), full >> shift) | sticky.astype(np.uint32)
    subnormal = sign | (_round_half_even_at(shifted, 23) >> _U32(24))
    codes = np.where(exp8 > 0, normal, subnormal)
    codes = np.where(rounded_exp8 > 15, sign | _U32(0x7F), codes)
    codes = np.where(exp32 == 0, sign, codes)
    codes = np.where(exp32 == 255, sign | _U32(0x7F), codes)
    return codes.astype(np.uint8)


def f16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> float16 bits as ov::float16's constructor computes them: round to nearest even and
    overflow to infinity, with two quirks. A NaN keeps its top ten payload bits (0x7C01 when they are all
    zero). A value whose rounding carries into the exponent of a float16 subnormal keeps the carried
    exponent when it is denormalised, so it doubles: 0x37FFFFFF (just under 2**-15) gives 2**-14."""
    bits = _bits(x)
    sign = (bits >> _U32(16)) & _U32(0x8000)
    exp32 = ((bits >> _U32(23)) & _U32(0xFF)).astype(np.int32)
    fraction = (bits & _U32(0x7FFFFF)) << _U32(3)
    exp16 = exp32 - 112
    rounded = _round_half_even_at(fraction, 15)
    exp16 = exp16 + ((rounded & _U32(0x7C000000)) != 0)
    normal = sign | (np.clip(exp16, 0, 31).astype(np.uint32) << _U32(10)) | ((rounded >> _U32(16)) & _U32(0x3FF))
    full = _U32(0x04000000) | fraction
    shift = np.clip(1 - exp16, 1, 31).astype(np.uint32)
    sticky = (exp16 < -30) | ((full & ((_U32(1) << shift) - _U32(1))) != 0)
    shifted = np.where(exp16 < -30, _U32(0), full >> shift) | sticky.astype(np.uint32)
    subnormal = sign | (_round_half_even_at(shifted, 15) >> _U32(16))
    half = np.where(exp16 > 0, normal, subnormal)
    half = np.where(exp16 > 30, sign | _U32(0x7C00), half)
    half = np.where(exp32 == 0, sign, half)
    payload = (bits >> _U32(13)) & _U32(0x3FF)
    special = sign | _U32(0x7C00) | np.where((fraction != 0) & (payload == 0), _U32(1), payload)
    half = np.where(exp32 == 255, special, half)
    return half.astype(np.uint16)


def f8e5m2_codes(x: np.ndarray) -> np.ndarray:
    """f8e5m2 (bias 15, IEEE infinities and NaNs): through float16 (so two roundings), then the top
    byte of the float16 rounded to nearest even. Float16 values from 57344 (0x7B00) up are truncated,
    not rounded: 57344..65504 stay 57344, and only what overflows float16 becomes infinity."""
    half = f16_bits(x).astype(np.uint32)
    finite = (half & _U32(0x7C00)) != _U32(0x7C00)
    low = half & _U32(0xFF)
    up = (low > _U32(0x80)) | ((half & _U32(0x180)) == _U32(0x180))
    half = half + ((finite & up).astype(np.uint32) << _U32(8))
    return ((half >> _U32(8)) & _U32(0xFF)).astype(np.uint8)


def f8e8m0_codes(x: np.ndarray) -> np.ndarray:
    """f8e8m0 (an unsigned power of two 2**(code - 127); 0xFF is NaN): the float32 exponent, plus one
    when the mantissa is past 1.5 or exactly 1.5 with an odd exponent. Anything with the sign bit set
    (-0.0, negative values, -NaN) gives code 0 (2**-127); +inf gives 254 (2**127) and +NaN 255; a
    float32 with exponent 254 is never rounded up (it stays 254)."""
    bits = _bits(x)
    exp32 = (bits >> _U32(23)) & _U32(0xFF)
    mant = bits & _U32(0x7FFFFF)
    up = (mant > _U32(0x400000)) | ((mant == _U32(0x400000)) & ((exp32 & _U32(1)) == 1))
    codes = exp32 + up.astype(np.uint32)
    codes = np.where(exp32 == 0, (mant > _U32(0x600000)).astype(np.uint32), codes)
    top = exp32 >= 254
    codes = np.where(top, exp32 - ((exp32 == 255) & (mant == 0)).astype(np.uint32), codes)
    codes = np.where((bits >> _U32(31)) != 0, _U32(0), codes)
    return codes.astype(np.uint8)


def f4e2m1_codes(x: np.ndarray) -> np.ndarray:
    """f4e2m1 (values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives): round to nearest even; anything
    above 6 (infinities too) saturates to +-6, NaN becomes 6 with the NaN's sign; |x| <= 0.25 is a signed
    zero."""
    bits = _bits(x)
    exp32 = ((bits >> _U32(23)) & _U32(0xFF)).astype(np.int32)
    mant = bits & _U32(0x7FFFFF)
    sign = ((bits >> _U32(28)) & _U32(8)).astype(np.uint8)
    exp4 = (np.clip(exp32 - 126, 0, 3) << 1).astype(np.uint8)
    rounds_to_next_binade = (((exp32 == 126) & (mant >= 0x400000))
                             | (((exp32 == 127) | (exp32 == 128)) & (mant >= 0x600000)))
    rounds_down = ((exp32 >= 127) & (exp32 <= 129)) & (mant <= 0x200000)
    step = np.where(rounds_to_next_binade, 2, np.where(rounds_down, 0, 1)).astype(np.uint8)
    magnitude = np.abs(np.require(x, dtype=np.float32))
    return np.where(magnitude <= 0.25, sign, (sign | exp4) + step).astype(np.uint8)


# Decision thresholds between neighbouring nf4 values (OpenVINO's ConvertNF4::quantize, float32 literals).
_NF4_THRESHOLDS = np.array([
    -0.8480964004993439, -0.6106329262256622, -0.4599952697753906, -0.33967943489551544,
    -0.23460740596055984, -0.13791173323988914, -0.045525018125772476, 0.03979014977812767,
    0.1202552504837513, 0.2035212516784668, 0.2920137718319893, 0.3893125355243683,
    0.5016634166240692, 0.6427869200706482, 0.8614784181118011], dtype=np.float32)


def nf4_codes(x: np.ndarray) -> np.ndarray:
    """nf4: the number of thresholds x is strictly above (nearest of the 16 values, ties to the lower
    one); NaN gives code 0 (-1.0)."""
    x = np.require(x, dtype=np.float32)
    codes = np.searchsorted(_NF4_THRESHOLDS, x, side="left")
    return np.where(np.isnan(x), 0, codes).astype(np.uint8)


CODES = {"f8e4m3": f8e4m3_codes, "f8e5m2": f8e5m2_codes, "f8e8m0": f8e8m0_codes,
         "f4e2m1": f4e2m1_codes, "nf4": nf4_codes}
TABLES = {**_BYTE_TABLES, **_NIBBLE_TABLES}


def round_to(x: np.ndarray, name: str) -> np.ndarray:
    """float32 values rounded to narrow float type `name`, kept as float32 (irrun's storage)."""
    return TABLES[name][CODES[name](x)]


def ov_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 (kept as float32) as ov::bfloat16's constructor rounds, which OpenVINO's Convert
    and its bf16 arithmetic use: half an ulp is added only when the kept last bit is odd, so a value whose
    kept bit is even is truncated (112.34 -> 112.0, not 112.5; 515 -> 512). The bits are added blindly: a
    NaN whose payload lies in the low 16 bits becomes an infinity."""
    bits = np.require(x, dtype=np.float32, requirements="C").view(np.uint32)
    return ((bits + ((bits & _U32(0x10000)) >> _U32(1))) & _U32(0xFFFF0000)).view(np.float32)


# ---------------------------------------------------------------- FakeConvert's f8 emulation on float16

def fake_f8e4m3_on_f16(half: np.ndarray) -> np.ndarray:
    """FakeConvert's f8e4m3 rounding of float16 bits (OpenVINO's emulate_f8e4m3_on_fp16), not Convert's:
    |x| < 2**-9 flushes to zero; magnitudes from 448 up, infinities and NaN saturate to +-448; the mantissa
    is rounded to three bits half to even (below 480); f8 subnormals are then truncated to their
    shorter mantissa."""
    half = half.astype(np.int32)
    magnitude = np.abs(half.astype(np.uint16).view(np.float16).astype(np.float32))
    half = np.where(magnitude < 2.0 ** -9, 0, half)  # NaN compares false: kept
    exp = ((half & 0x7C00) >> 10) - 15
    sign = half & 0x8000
    mant = half & 0x3FF
    can_round = (half & 0x7FFF) < 0x5F80
    special = ((half & 0x7C00) == 0x7C00) | (exp > 8)
    mant = np.where(exp > 8, 0x300, np.where(exp < -9, 0, mant))
    exp = np.where(exp > 8, 8, np.where(exp < -9, -15, exp))
    mant = np.where((exp == 8) & (mant >= 0x300), 0x300, mant)
    up = ((mant & 0x7F) > 0x40) | ((mant & 0xC0) == 0xC0)
    mant = mant + ((~special & can_round & up).astype(np.int32) << 7)
    dshift = np.where(exp < -6, -6 - exp, 0)
    mant = ((mant >> dshift) & 0xFF80) << dshift
    return ((mant + ((exp + 15) << 10)) | sign).astype(np.uint16)


def fake_f8e5m2_on_f16(half: np.ndarray) -> np.ndarray:
    """FakeConvert's f8e5m2 rounding of float16 bits (OpenVINO's emulate_f8e5m2_on_fp16): the top byte,
    rounded half to even; magnitudes from 57344 up and infinities saturate to +-57344; NaN stays NaN."""
    half = half.astype(np.uint32)
    can_round = (half & _U32(0x7F00)) < _U32(0x7B00)
    finite = (half & _U32(0x7C00)) != _U32(0x7C00)
    up = ((half & _U32(0xFF)) > _U32(0x80)) | ((half & _U32(0x180)) == _U32(0x180))
    half = half + ((can_round & finite & up).astype(np.uint32) << _U32(8))
    magnitude = half & _U32(0x7FFF)
    saturate = (magnitude > _U32(0x7B00)) & (magnitude <= _U32(0x7C00))  # not NaN
    half = np.where(saturate, (half & _U32(0x8000)) | _U32(0x7B00), half)
    return (half & _U32(0xFF00)).astype(np.uint16)
