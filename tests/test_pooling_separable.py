"""MaxPool's values without indices, one spatial axis at a time (irrun/ops/pooling.py _separable_max), against
the running max over every window offset that the indices path keeps (itself tested against OpenVINO in
tests/test_oracle_pooling.py), bit for bit: random 1D to 3D layers (kernels, strides, dilations, pads, ceil
windows past the end), floats with inf, NaN, lowest and signed zeros, and integers."""
from __future__ import annotations

import numpy as np
import pytest

from irrun.ir.types import ELEMENT_TYPES
from irrun.ops import pooling as P
from test_oracle_pooling import gen_data

TYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32, "u8": np.uint8}


def random_case(rng, i, dtype, modes):
    """A random 1D-3D layer (kernel, strides, dilations, pads, output dims) and its input: floor windows, or one
    window more (ceil rounding reaches past the padded end)."""
    rank = 1 + i % 3
    kernel = [int(v) for v in rng.integers(1, 4, rank)]
    strides = [int(v) for v in rng.integers(1, 4, rank)]
    dilations = [int(v) for v in rng.integers(1, 3, rank)]
    pads = [int(rng.integers(0, k)) for k in kernel]
    dims = [int(rng.integers((k - 1) * d + 1, 9)) for k, d in zip(kernel, dilations)]
    out = [(n + p - (k - 1) * d - 1) // s + 1 + int(rng.integers(0, 2))
           for n, p, k, d, s in zip(dims, pads, kernel, dilations, strides)]
    x = gen_data(rng, (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *dims), dtype, modes[i % len(modes)])
    return x, (kernel, strides, dilations, pads, out)


def assert_separable_equals_running(x, element_type, geometry):
    separable, none = P.max_pool(x, element_type, *geometry, False)
    assert none is None
    running, _ = P.max_pool(x, element_type, *geometry, True)
    assert separable.dtype == running.dtype, geometry
    np.testing.assert_array_equal(separable.view(f"u{x.itemsize}"), running.view(f"u{x.itemsize}"),
                                  err_msg=str(geometry))


@pytest.mark.parametrize("type_name", list(TYPES))
def test_separable_max_equals_the_running_max_over_windows(type_name):
    dtype, element_type = TYPES[type_name], ELEMENT_TYPES[type_name]
    rng = np.random.default_rng([31, np.dtype(dtype).num])
    for i in range(40):
        x, geometry = random_case(rng, i, dtype, ["ties", "cont", "special"])
        if x.dtype.kind == "f":
            x[x == 0] = 0.0  # no negative zero: the separable values alone (with one: the test below)
        assert_separable_equals_running(x, element_type, geometry)


def test_negative_zero_is_found_in_every_float_type():
    for dtype in (np.float16, np.float32, np.float64):
        x = np.array([1, 0, -2], dtype)
        assert not P._has_negative_zero(x)
        x[1] = -0.0
        assert P._has_negative_zero(x) and P._has_negative_zero(x[::-1])
    assert not P._has_negative_zero(np.array([0, -1], np.int32))


@pytest.mark.parametrize("type_name", ["f32", "f16", "f64"])
def test_zero_maxima_take_the_sign_of_their_windows_first_zero(type_name):
    """With -0.0 in the input the separable values are kept and only their zeros are fixed: bit for bit the
    values of the indices path, which reads them back from the reference's winners."""
    dtype, element_type = TYPES[type_name], ELEMENT_TYPES[type_name]
    rng = np.random.default_rng([32, np.dtype(dtype).num])
    for i in range(40):
        x, geometry = random_case(rng, i, dtype, ["ties", "special"])
        x[x > 0] *= -1 if i % 4 < 2 else 1  # mostly windows without a positive: many zero maxima
        x.flat[0] = -0.0
        assert_separable_equals_running(x, element_type, geometry)
