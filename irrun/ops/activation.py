"""Unary math and activation ops.

Floats: f16/bf16 compute in f32 and round once at the end (OpenVINO's reference converts them to f32
and back); ops whose reference computes in double (Gelu, Mish) do so here too.
Integers (where OpenVINO allows them) follow the reference: the value goes through `double` and is cast
back like a C cast, rounded to nearest for Sqrt, Erf, Cos, Tanh, Tan, Acos, Atan, Sinh, Cosh, Asinh and
Acosh and truncated for Exp, Log, Sin and Asin; integer Sigmoid is 1 / (1 + T(exp(-x))) in integer
arithmetic, integer Atanh is the type's max / min / 0 by the sign of x.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ExecutionError, ShapeError
from .arithmetic import BOOLEAN, as_work, c_cast, finish, reject_boolean, work_dtype
from .attrs import Bool, Enum, Float, Int
from .broadcasting import numpy_shape
from .fastmath import blockwise, chunked, erf_f32, gelu_erf_f32
from .registry import Op, TensorInfo, op, same_buffer
from .shapes import shape_str

FLOAT_TYPES = ("f16", "bf16", "f32", "f64")


def erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 for f64 data (float32 data: fastmath.erf_f32): the Maclaurin series below 2.5 and a
    continued fraction for erfc above (absolute error below 1e-14)."""
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    small = ax < 2.5
    out = np.empty_like(x)
    xs = x[small]
    x2 = xs * xs
    term = xs.copy()
    total = xs.copy()
    for n in range(1, 46):
        term = term * (-x2) / n
        total += term / (2 * n + 1)
    out[small] = (2.0 / math.sqrt(math.pi)) * total
    large = ~small
    xl = ax[large]
    with np.errstate(invalid="ignore", over="ignore"):
        t = xl.copy()
        for k in range(80, 0, -1):
            t = xl + (k / 2.0) / t
        erfc = np.exp(-xl * xl) / math.sqrt(math.pi) / t
        out[large] = np.copysign(1.0 - erfc, x[large])
    return out


def _round_half_away(x):
    return np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5))


def computes_in_storage(et) -> bool:
    """Float data computed in its own dtype (f32, f64), so that a result can be written into an input."""
    return et.is_float and et.storage == work_dtype(et)


class Unary(Op):
    """One input, output of the same shape and type; `kind` limits the types like OpenVINO does.

    Ops that define `float_into(x, out)` (the float form written into `out`, which may be x itself) run in
    place (irrun/engine/inplace.py) on f32/f64 data; their `float_fn` is then `float_into` into a new array."""

    types = "no_boolean"  # no_boolean | float | any
    float_into = None

    def can_run_into(self, in_infos, out_infos, port=0):
        return self.float_into is not None and computes_in_storage(in_infos[0].type) and \
            same_buffer(in_infos, out_infos)

    def run_into(self, inputs, in_infos, out_infos, out):
        with np.errstate(all="ignore"):
            return [self.float_into(inputs[0], out)]

    def infer(self, inputs):
        x = inputs[0]
        self.check_type(x)
        return [TensorInfo(x.shape, x.type)]

    def check_type(self, x):
        if self.types == "no_boolean":
            reject_boolean(x)
        elif self.types == "float" and x.type.name not in FLOAT_TYPES + ("dynamic",) and not x.type.is_float:
            raise ShapeError(f"input element type must be a floating-point type, got {x.type}", rule="port.type")

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        et = in_infos[0].type
        with np.errstate(all="ignore"):
            if et.is_float:
                result = self.float_fn(as_work(x, et))
            else:
                result = self.int_fn(x)
        return [finish(result, out_infos[0].type)]

    def float_fn(self, x):
        raise NotImplementedError

    def int_fn(self, x):
        return self.float_fn(x)


def new_like(x: np.ndarray) -> np.ndarray:
    """A new C-contiguous array of x's shape and dtype."""
    return np.empty(x.shape, x.dtype)


class MathUnary(Unary):
    """A math function: the float form in the work type, the integer form through double."""

    function = None
    int_rounding = "trunc"  # or "round" (std::round) for the integer form

    def float_fn(self, x):
        return type(self).function(x)

    def int_fn(self, x):
        value = type(self).function(x.astype(np.float64))
        if self.int_rounding == "round":
            value = _round_half_away(value)
        return c_cast(value, x.dtype)


class UfuncUnary(MathUnary):
    """A math function that is a NumPy ufunc on float data."""

    def float_fn(self, x):
        return self.float_into(x, new_like(x))

    def float_into(self, x, out):
        return type(self).function(x, out=out)


@op("Abs", 1)
class Abs(UfuncUnary):
    function = np.abs

    def int_fn(self, x):
        return np.abs(x)


@op("Negative", 1)
class Negative(UfuncUnary):
    function = np.negative

    def int_fn(self, x):
        return np.negative(x)


@op("Sign", 1)
class Sign(Unary):
    def float_fn(self, x):
        return np.sign(x) + 0  # -0.0 -> 0.0 like the reference; NaN stays NaN


@op("Floor", 1)
class Floor(Unary):
    def float_fn(self, x):
        return np.floor(x)

    def int_fn(self, x):
        return x


@op("Ceiling", 1)
class Ceiling(Unary):
    def float_fn(self, x):
        return np.ceil(x)

    def int_fn(self, x):
        return x


@op("Sqrt", 1)
class Sqrt(UfuncUnary):
    function = np.sqrt
    int_rounding = "round"


@op("Exp", 1)
class Exp(UfuncUnary):
    function = np.exp


@op("Log", 1)
class Log(UfuncUnary):
    function = np.log


@op("Sin", 1)
class Sin(UfuncUnary):
    function = np.sin


@op("Cos", 1)
class Cos(UfuncUnary):
    function = np.cos
    int_rounding = "round"


@op("Tanh", 1)
class Tanh(UfuncUnary):
    function = np.tanh
    int_rounding = "round"


@op("Erf", 1)
class Erf(MathUnary):
    int_rounding = "round"

    @staticmethod
    def function(x):
        return erf(x)

    def float_fn(self, x):
        return erf(x) if x.dtype == np.float64 else erf_f32(x)

    def can_run_into(self, in_infos, out_infos, port=0):
        return in_infos[0].type.name == "f32" and same_buffer(in_infos, out_infos)

    def float_into(self, x, out):
        return erf_f32(x, out)


class PreciseMathUnary(MathUnary):
    """f32 data computed in double and rounded to f32 (glibc's float functions are within an ulp)."""

    def float_fn(self, x):
        return type(self).function(x.astype(np.float64)).astype(x.dtype)


@op("Tan", 1)
class Tan(PreciseMathUnary):
    function = np.tan
    int_rounding = "round"


@op("Asin", 1)
class Asin(PreciseMathUnary):
    function = np.arcsin


@op("Acos", 1)
class Acos(PreciseMathUnary):
    function = np.arccos
    int_rounding = "round"


@op("Atan", 1)
class Atan(PreciseMathUnary):
    function = np.arctan
    int_rounding = "round"


@op("Sinh", 1)
class Sinh(PreciseMathUnary):
    function = np.sinh
    int_rounding = "round"


@op("Cosh", 1)
class Cosh(PreciseMathUnary):
    function = np.cosh
    int_rounding = "round"


@op("Asinh", 4)  # C++ ov::op::v3::Asinh, first in opset4
class Asinh(PreciseMathUnary):
    function = np.arcsinh
    int_rounding = "round"


@op("Acosh", 4)
class Acosh(PreciseMathUnary):
    function = np.arccosh
    int_rounding = "round"


@op("Atanh", 4)
class Atanh(PreciseMathUnary):
    """Integers: the type's max for x > 0 (atanh(1) is +inf), its min for x < 0, 0 for 0."""

    function = np.arctanh

    def int_fn(self, x):
        info = np.iinfo(x.dtype)
        return np.where(x > 0, info.max, np.where(x < 0, info.min, 0)).astype(x.dtype)


@op("SoftSign", 9)
class SoftSign(Unary):
    """x / (1 + |x|) in the work type."""

    types = "float"

    def float_fn(self, x):
        return x / (x.dtype.type(1) + np.abs(x))


def erfinv_giles(x: np.ndarray) -> np.ndarray:
    """OpenVINO's ErfInv reference: Giles' single-precision rational approximation evaluated in double
    (about 1e-7 relative, also for f64 data); 0 -> +0 (also -0), +-1 -> +-inf, |x| > 1 and NaN -> NaN."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - x) * (1.0 + x))
        s = w - 2.5
        central = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941):
            central = c + central * s
        s = np.sqrt(w) - 3.0
        tail = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  -0.00943887047, 1.00167406, 2.83297682):
            tail = c + tail * s
        out = np.where(w < 5.0, central, tail) * x
    out = np.where(x == 0, 0.0, out)
    out = np.where(x >= 1, np.where(x > 1, np.nan, np.inf), out)
    return np.where(x <= -1, np.where(x < -1, np.nan, -np.inf), out)


@op("ErfInv", 17)
class ErfInv(Unary):
    types = "float"

    def float_fn(self, x):
        return erfinv_giles(x).astype(x.dtype)


class FloatClass(Op):
    """IsNaN, IsInf, IsFinite: a floating-point input, a boolean output of its shape."""

    def infer(self, inputs):
        (x,) = inputs
        if not x.type.is_float and x.type.name != "dynamic":
            raise ShapeError(f"the input element type must be a floating-point type, got {x.type}",
                             rule="port.type")
        return [TensorInfo(x.shape, BOOLEAN)]

    def run(self, inputs, in_infos, out_infos):
        return [np.asarray(self.test(as_work(inputs[0], in_infos[0].type)))]


@op("IsNaN", 10)
class IsNaN(FloatClass):
    def test(self, x):
        return np.isnan(x)


@op("IsFinite", 10)
class IsFinite(FloatClass):
    def test(self, x):
        return np.isfinite(x)


@op("IsInf", 10)
class IsInf(FloatClass):
    detect_negative = Bool(default=True)
    detect_positive = Bool(default=True)

    def test(self, x):
        if self.detect_negative and self.detect_positive:
            return np.isinf(x)
        if self.detect_negative:
            return np.isneginf(x)
        if self.detect_positive:
            return np.isposinf(x)
        return np.zeros(x.shape, dtype=bool)


def _sigmoid_block(x, out):
    one = x.dtype.type(1)
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += one
    np.divide(one, out, out=out)


@op("Sigmoid", 1)
class Sigmoid(Unary):
    """1 / (1 + exp(-x)) in the work type."""

    def float_fn(self, x):
        return self.float_into(x, new_like(x))

    def float_into(self, x, out):
        return chunked(_sigmoid_block, x, out, 0)

    def int_fn(self, x):
        e = c_cast(np.exp(np.negative(x).astype(np.float64)), x.dtype)
        d = e + x.dtype.type(1)  # wraps like T arithmetic
        # T(1) / d truncates: 1 for d == 1, -1 for d == -1, else 0
        out = (d == 1).astype(x.dtype)
        if x.dtype.kind == "i":
            out = out - (d == -1).astype(x.dtype)
        return out


@op("Relu", 1)
class Relu(Unary):
    """x < 0 -> +0, else x: NaN and -0.0 pass through, which np.clip(x, 0, inf) does for f32 and f64 (the
    work types) in one SIMD pass (np.maximum(0, x) gives the same bits, 3-5x slower: tests/test_relu_bits.py)."""

    def float_fn(self, x):
        return self.float_into(x, new_like(x))

    def float_into(self, x, out):
        return np.clip(x, x.dtype.type(0), x.dtype.type(np.inf), out=out)

    def int_fn(self, x):
        return np.maximum(x.dtype.type(0), x)


@op("Round", 5)
class Round(Unary):
    mode = Enum("half_to_even", "half_away_from_zero", default="half_to_even")
    types = "any"

    def float_fn(self, x):
        if self.mode == "half_to_even":
            return np.rint(x)
        ax = np.abs(x)
        whole = np.floor(ax)
        rounded = whole + (ax - whole >= 0.5)
        return np.copysign(rounded, x)

    def int_fn(self, x):
        return x


@op("Elu", 1)
class Elu(Unary):
    alpha = Float()
    types = "any"

    def float_fn(self, x):
        return np.where(x > 0, x, x.dtype.type(self.alpha) * np.expm1(x))

    def int_fn(self, x):
        if x.dtype == np.bool_:
            return x
        x64 = x.astype(np.float64)
        return c_cast(np.where(x64 > 0, x64, self.alpha * np.expm1(x64)), x.dtype)


@op("Clamp", 1)
class Clamp(Unary):
    min = Float()
    max = Float()

    def infer(self, inputs):
        if not self.min <= self.max:
            raise ShapeError(f"attribute 'min' must be less or equal than 'max', got {self.min} and {self.max}",
                             rule="attr.range")
        x = inputs[0]
        if x.type.name == "boolean":
            raise ShapeError("input element type must be numeric, got boolean", rule="port.type")
        return [TensorInfo(x.shape, x.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        et = in_infos[0].type
        if et.is_float:
            # bounds take the element type (rounded to it), then compare in it
            low = finish(np.array(self.min, np.float64), et).astype(work_dtype(et))
            high = finish(np.array(self.max, np.float64), et).astype(work_dtype(et))
            xw = as_work(x, et)
            return [finish(np.clip(xw, low, high, out=new_like(xw)), et)]
        # integers: ceil(min) and floor(max), limited to the type's range
        info = np.iinfo(x.dtype)
        low = int(min(max(math.ceil(self.min), info.min), info.max)) if math.isfinite(self.min) else \
            (info.min if self.min < 0 else info.max)
        high = int(min(max(math.floor(self.max), info.min), info.max)) if math.isfinite(self.max) else \
            (info.min if self.max < 0 else info.max)
        low, high = x.dtype.type(low), x.dtype.type(high)
        if low > high:  # ceil(min) > floor(max): OpenVINO's x < min ? min : (x > max ? max : x)
            return [np.where(x < low, low, high).astype(x.dtype, copy=False)]
        return [np.clip(x, low, high, out=new_like(x))]

    def can_run_into(self, in_infos, out_infos, port=0):
        return computes_in_storage(in_infos[0].type) and same_buffer(in_infos, out_infos)

    def run_into(self, inputs, in_infos, out_infos, out):
        et = in_infos[0].type
        low = finish(np.array(self.min, np.float64), et)
        high = finish(np.array(self.max, np.float64), et)
        return [np.clip(inputs[0], low, high, out=out)]


@op("Gelu", 2)
class Gelu2(Unary):
    """GELU with erf: 0.5 * x * (1 + erf(x / sqrt(2))); OpenVINO computes it in double. irrun computes
    f64 data in double and float32 data in float32 (fastmath.py: within a few ulp of the double result);
    the tanh form as x / (1 + exp(-2u)), u = sqrt(2/pi) * (x + 0.044715 x^3), which is
    0.5 x (1 + tanh(u)) without its cancellation for negative x."""

    types = "float"
    approximation_mode = "erf"

    def float_fn(self, x):
        if x.dtype == np.float32:
            return gelu_tanh_f32(x) if self.approximation_mode == "tanh" else gelu_erf_f32(x)
        x64 = x.astype(np.float64)
        if self.approximation_mode == "tanh":
            inner = math.sqrt(2.0 / math.pi) * (x64 + 0.044715 * x64 ** 3)
            return 0.5 * x64 * (1.0 + np.tanh(inner))
        return 0.5 * x64 * (1.0 + erf(x64 / math.sqrt(2.0)))

    def can_run_into(self, in_infos, out_infos, port=0):
        return in_infos[0].type.name == "f32" and same_buffer(in_infos, out_infos)

    def float_into(self, x, out):
        return gelu_tanh_f32(x, out) if self.approximation_mode == "tanh" else gelu_erf_f32(x, out)


def _gelu_tanh_block(x, out, floats, mask, bits):
    (u,) = floats
    scale = -2.0 * math.sqrt(2.0 / math.pi)
    np.multiply(x, x, out=u)
    u *= np.float32(scale * 0.044715)
    u += np.float32(scale)
    u *= x  # -2 * sqrt(2/pi) * (x + 0.044715 x^3)
    np.exp(u, out=u)
    u += np.float32(1)
    np.divide(x, u, out=out)


def gelu_tanh_f32(x, out=None):
    return blockwise(_gelu_tanh_block, x, 1, out)


@op("Gelu", 7)
class Gelu7(Gelu2):
    approximation_mode = Enum("erf", "tanh", default="erf")


@op("Swish", 4)
class Swish(Op):
    """x * sigmoid(beta * x), i.e. x / (1 + exp(-beta * x)); beta is an optional scalar input (1.0)."""

    num_inputs = (1, 2)

    def infer(self, inputs):
        x = inputs[0]
        if not x.type.is_float and x.type.name != "dynamic":
            raise ShapeError(f"Swish input must be a floating-point type, got {x.type}", rule="port.type")
        if len(inputs) == 2:
            beta = inputs[1]
            if beta.shape is not None and len(beta.shape) != 0:
                raise ShapeError(f"beta must be a scalar, got rank {len(beta.shape)}", rule="port.rank", port=1)
            if beta.type.name != x.type.name:
                raise ShapeError(f"Swish inputs must have the same type, got {x.type} and {beta.type}",
                                 rule="port.type", port=1)
        return [TensorInfo(x.shape, x.type)]

    def run(self, inputs, in_infos, out_infos):
        et = in_infos[0].type
        x = as_work(inputs[0], et)
        return [finish(self.run_into([x] + inputs[1:], in_infos, out_infos, new_like(x))[0], et)]

    def can_run_into(self, in_infos, out_infos, port=0):
        return computes_in_storage(in_infos[0].type) and same_buffer(in_infos, out_infos)

    def run_into(self, inputs, in_infos, out_infos, out):
        x = inputs[0]
        beta = as_work(inputs[1], in_infos[0].type) if len(inputs) == 2 else x.dtype.type(1)
        negative_beta = np.negative(beta, dtype=x.dtype)

        def block(x, out, t):  # x / (1 + exp(-beta * x))
            np.multiply(x, negative_beta, out=t)
            np.exp(t, out=t)
            t += x.dtype.type(1)
            np.divide(x, t, out=out)
        return [chunked(block, x, out)]


# np.clip's ufunc without the Python wrapper around it (which costs more than the pass on a cache block)
clip = getattr(getattr(np, "_core", None), "umath", np).clip


def _hswish_block(x, out, t):  # x * min(max(x + 3, 0), 6) / 6
    np.add(x, x.dtype.type(3), out=t)
    clip(t, x.dtype.type(0), x.dtype.type(6), out=t)
    np.multiply(t, x, out=out)
    out /= x.dtype.type(6)


def _hsigmoid_block(x, out):  # min(max(x + 3, 0), 6) / 6
    np.add(x, x.dtype.type(3), out=out)
    clip(out, x.dtype.type(0), x.dtype.type(6), out=out)
    out /= x.dtype.type(6)


@op("HSwish", 4)
class HSwish(Unary):
    def float_fn(self, x):
        return self.float_into(x, new_like(x))

    def float_into(self, x, out):
        return chunked(_hswish_block, x, out)

    def int_fn(self, x):
        return c_cast(self.float_fn(x.astype(np.float64)), x.dtype)


@op("HSigmoid", 5)
class HSigmoid(Unary):
    def float_fn(self, x):
        return self.float_into(x, new_like(x))

    def float_into(self, x, out):
        return chunked(_hsigmoid_block, x, out, 0)

    def int_fn(self, x):
        return c_cast(self.float_fn(x.astype(np.float64)), x.dtype)


@op("Mish", 4)
class Mish(Unary):
    """x * tanh(log(exp(x) + 1)), all in the work type like OpenVINO's reference (which adds T{1}: in
    f32, exp(x) + 1 is 1 below x = -16.6 and Mish is -0 there)."""

    types = "float"

    def float_fn(self, x):
        return self.float_into(x, new_like(x))

    def float_into(self, x, out):
        return chunked(_mish_block, x, out)


def _mish_block(x, out, t):
    np.exp(x, out=t)
    t += x.dtype.type(1)
    np.log(t, out=t)
    np.tanh(t, out=t)
    np.multiply(t, x, out=out)


@op("SoftPlus", 4)
class SoftPlus(Unary):
    """log(exp(x) + 1) below the threshold log(max of the type), x from it on."""

    types = "float"

    def float_fn(self, x):
        threshold = np.log(np.finfo(x.dtype).max).astype(x.dtype)
        return np.where(x < threshold, np.log(np.exp(x) + x.dtype.type(1)), x)


@op("Selu", 1)
class Selu(Op):
    """x > 0 ? lambda * x : alpha * lambda * (exp(x) - 1), in the work type. alpha and lambda are meant
    to hold one element; OpenVINO checks no shapes, and its CPU plugin (the only executable kernel in
    2026.4.1) reads only their first element: irrun does the same (an empty one is an error)."""

    num_inputs = (3, 3)

    def infer(self, inputs):
        x = inputs[0]
        result = None
        for port, info in enumerate(inputs):
            if info.type.name == "dynamic":
                continue
            if result is not None and info.type.name != result.name:
                raise ShapeError(f"input element types do not match: {result} and {info.type}",
                                 rule="port.type", port=port)
            result = info.type
        if result is not None and not result.is_float:
            raise ShapeError(f"input element types must be floating-point, got {result}", rule="port.type")
        return [TensorInfo(x.shape, result if result is not None else x.type)]

    def run(self, inputs, in_infos, out_infos):
        et = out_infos[0].type
        x = as_work(inputs[0], et)
        for port in (1, 2):
            if inputs[port].size == 0:
                raise ExecutionError(f"Selu input {port} is empty", rule="input.value", port=port)
        alpha = as_work(inputs[1], et).reshape(-1)[0]
        lam = as_work(inputs[2], et).reshape(-1)[0]
        with np.errstate(all="ignore"):
            result = np.where(x > 0, lam * x, alpha * lam * (np.exp(x) - x.dtype.type(1)))
        return [finish(result, et)]


# ---------------------------------------------------------------- PRelu

@op("PRelu", 1)
class PRelu(Op):
    """x < 0 ? x * slope : x. A 1-D slope whose length equals the channel dim (axis 1, or 0 for a 1-D
    input) runs along the channels; any other slope broadcasts numpy-style onto the data. OpenVINO
    checks nothing at load (its kernel then reads out of bounds); irrun rejects a slope that does not
    broadcast to the data's shape."""

    num_inputs = (2, 2)

    def slope_shape(self, data_shape, slope_shape):
        if data_shape is None or slope_shape is None:
            return slope_shape
        channel = 1 if len(data_shape) > 1 else 0
        if len(slope_shape) == 1 and len(data_shape) > 0 and data_shape[channel] is not None \
                and data_shape[channel] == slope_shape[0]:
            shape = [1] * len(data_shape)
            shape[channel] = slope_shape[0]
            return tuple(shape)
        return tuple(slope_shape)

    def infer(self, inputs):
        data, slope = inputs
        shape = self.slope_shape(data.shape, slope.shape)
        channel_unknown = data.shape is not None and slope.shape is not None and len(slope.shape) == 1 \
            and len(data.shape) > 0 and data.shape[1 if len(data.shape) > 1 else 0] is None
        if data.shape is not None and shape is not None and not channel_unknown:
            merged, ok = numpy_shape(data.shape, shape)
            extra = len(shape) - len(data.shape)
            if ok and extra > 0 and all(d == 1 for d in merged[:extra]):
                merged = merged[extra:]
            if not ok or (merged is not None and any(
                    m is not None and d is not None and m != d for m, d in zip(merged, data.shape))) \
                    or len(merged) != len(data.shape):
                raise ShapeError(f"slope {shape_str(slope.shape)} does not broadcast to the data "
                                 f"{shape_str(data.shape)}", rule="shape.broadcast.spec", port=1)  # OpenVINO reads it
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        x, slope = inputs
        et = in_infos[0].type
        shape = self.slope_shape(x.shape, slope.shape)
        slope = slope.reshape(shape)
        if slope.ndim > x.ndim:
            slope = slope.reshape(slope.shape[slope.ndim - x.ndim:])
        if et.is_float:
            xw = as_work(x, et)
            sw = slope.astype(xw.dtype, copy=False)
            with np.errstate(all="ignore"):
                result = np.where(xw < 0, xw * sw, xw)
            return [finish(result, et)]
        if slope.dtype != x.dtype:
            slope = c_cast(slope.astype(np.float64), x.dtype) if slope.dtype.kind == "f" else slope.astype(x.dtype)
        with np.errstate(all="ignore"):
            result = np.where(x < 0, x * slope, x)
        return [np.broadcast_to(result, x.shape).astype(x.dtype, copy=False)]


# ---------------------------------------------------------------- Softmax, LogSoftmax

class SoftmaxBase(Op):
    """exp(x - max) / sum, or (x - max) - log(sum(exp(x - max))), along `axis` in the work type."""

    axis = Int(default=1)
    negative_axis = True
    log = False

    def infer(self, inputs):
        (x,) = inputs
        self.normalized_axis(x.rank)
        return [TensorInfo(x.shape, x.type)]

    def normalized_axis(self, rank):
        if rank is None:
            if not self.negative_axis and self.axis < 0:
                raise ShapeError(f"axis {self.axis} is out of bounds", rule="attr.range")
            return None
        low = -rank if self.negative_axis else 0
        high = max(rank - 1, 0)
        if not low <= self.axis <= high:
            raise ShapeError(f"axis {self.axis} is out of range [{low}, {high}] for rank {rank}", rule="attr.range")
        return self.axis + rank if self.axis < 0 else self.axis

    def run(self, inputs, in_infos, out_infos):
        (x,) = inputs
        et = in_infos[0].type
        xw = as_work(x, et) if et.is_float else x.astype(np.float64)
        if xw.ndim == 0:
            result = self._compute(xw.reshape(1), 0).reshape(())
        else:
            result = self._compute(xw, self.normalized_axis(xw.ndim))
        return [finish(result, et)]

    def can_run_into(self, in_infos, out_infos, port=0):
        return computes_in_storage(in_infos[0].type) and in_infos[0].shape is not None and \
            len(in_infos[0].shape) > 0 and same_buffer(in_infos, out_infos)

    def run_into(self, inputs, in_infos, out_infos, out):
        x = inputs[0]
        return [self._compute(x, self.normalized_axis(x.ndim), out)]

    def _compute(self, xw, axis, out=None):
        """Along the last axis of contiguous data, a block of rows at a time (each row's passes then stay
        in the cache; the same per-row operations as the whole-array form below)."""
        if out is None:
            out = new_like(xw)
        if xw.size == 0:
            return out
        with np.errstate(all="ignore"):
            if axis == xw.ndim - 1 and xw.flags.c_contiguous:
                rows, out_rows = xw.reshape(-1, xw.shape[-1]), out.reshape(-1, xw.shape[-1])
                step = max(1, ROWS_BLOCK // xw.shape[-1])
                for start in range(0, rows.shape[0], step):
                    self._along(rows[start:start + step], out_rows[start:start + step], -1)
            else:
                self._along(xw, out, axis)
        return out

    def _along(self, x, out, axis):
        np.subtract(x, np.max(x, axis=axis, keepdims=True), out=out)
        if self.log:
            out -= np.log(np.sum(np.exp(out), axis=axis, keepdims=True))
        else:
            np.exp(out, out=out)
            out /= np.sum(out, axis=axis, keepdims=True)


ROWS_BLOCK = 1 << 20  # elements of a block of softmax rows (smaller tensors: one block)


@op("Softmax", 1)
class Softmax1(SoftmaxBase):
    negative_axis = False


@op("Softmax", 8)
class Softmax8(SoftmaxBase):
    pass


@op("LogSoftmax", 5)
class LogSoftmax5(SoftmaxBase):
    log = True
