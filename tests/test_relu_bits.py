"""Relu runs as np.clip(x, 0, inf), one SIMD pass; its bits must stay the reference's `x < 0 ? 0 : x` (NaN
and -0.0 pass through) in NumPy's vector loops too, which the oracle sweeps' small shapes do not reach."""
import numpy as np
import pytest

from irrun.ops.activation import Relu
from oracle import assert_same, build, run_reference
from test_oracle_activation import node
from test_oracle_elementwise import run_irrun

SPECIALS = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-45, -1e-45, 1.0, -1.0]


def with_specials(rng, shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    mask = rng.random(shape) < 0.3
    x[mask] = rng.choice(np.array(SPECIALS, dtype), int(mask.sum()))
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float16])  # the reference has no f64 Relu
@pytest.mark.parametrize("size", [1, 7, 31, 4099])
def test_relu_long_arrays_match_reference_bits(dtype, size):
    x = with_specials(np.random.default_rng(size), size, dtype)
    built = build(lambda p: node("opset1", "Relu", [p["x"]]), {"x": x})
    assert_same(run_irrun(built), run_reference(built), built.output_names, context=f"Relu {dtype} {size}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_kernel_on_views_and_in_place(dtype):
    base = with_specials(np.random.default_rng(1), (64, 130), dtype)
    bits = np.uint32 if dtype == np.float32 else np.uint64
    for x in (base[:, ::2], base.T, base[3:, 5:], base):
        expected = np.where(x < 0, dtype(0), x)  # the reference's definition
        got = Relu.float_into(None, x, np.empty(x.shape, dtype))
        assert np.array_equal(got.view(bits), expected.view(bits))
        Relu.float_into(None, x, x)  # in place, as irrun/inplace.py runs it
        assert np.array_equal(x.view(bits), expected.view(bits))
