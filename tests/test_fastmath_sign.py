"""fastmath.copy_sign (the sign of x onto out, on the bits) against np.copysign, bit for bit, on every kind of
float32 value."""
from __future__ import annotations

import numpy as np

from irrun.ops import fastmath


def test_copy_sign_equals_numpy_copysign():
    rng = np.random.default_rng(3)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1.2e-38, -3.4e38, 1.0], np.float32)
    x = np.concatenate([special, rng.standard_normal(1000).astype(np.float32)])
    for out in (np.roll(x, 3), x[::-1], np.abs(x)):
        want = np.copysign(out, x)
        got = out.copy()
        fastmath.copy_sign(got, x, np.empty(x.size, np.int32))
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
