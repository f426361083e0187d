"""Subnormal softmax probabilities as zeros in the products that read them (irrun/ops/subnormals.py, the plan
rewrite irrun/engine/subnormal_products.py, ScaledDotProductAttention): only subnormal values change, the
products stay within a few float32 ulp of OpenVINO's reference (which keeps them), and a model without them
gives the same bits with and without the rewrite."""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset8

import irrun
import oracle as O
from irrun.engine import plan as plan_module
from irrun.engine import subnormal_products
from irrun.ops import subnormals


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_flush_zeroes_subnormal_values_only(dtype):
    info = np.finfo(dtype)
    a = np.array([info.tiny, -info.tiny, info.tiny / 2, -info.tiny / 4, info.smallest_subnormal, 0.0, -0.0, 1.0,
                  np.inf, -np.inf, np.nan], dtype)
    flushed = subnormals.flush(a)
    assert flushed is not a
    want = a.copy()
    want[2:5] = 0
    np.testing.assert_array_equal(flushed.view(f"u{a.itemsize}"), want.view(f"u{a.itemsize}"))
    assert subnormals.flush(flushed) is flushed  # none left: the array itself
    probabilities = np.abs(a[np.isfinite(a)])
    np.testing.assert_array_equal(subnormals.flush(probabilities, nonnegative=True), subnormals.flush(probabilities))
    normal = np.array([1.0, info.tiny, 3.0], dtype)
    assert subnormals.flush(normal, nonnegative=True) is normal
    assert subnormals.flush(a, in_place=True) is a and not np.any(a[2:5])
    ints = np.arange(4)
    assert subnormals.flush(ints) is ints


def softmax_product(tmp_path, scores, values):
    """Softmax(scores) @ values, saved as IR."""
    return O.build(lambda p: opset8.matmul(opset8.softmax(p["s"], -1), p["v"], False, False),
                   {"s": scores, "v": values}, tmp_path)


def test_softmax_product_matches_the_reference(tmp_path):
    rng = np.random.default_rng(11)
    scores = (rng.standard_normal((2, 3, 16, 49)) * 40).astype(np.float32)
    values = rng.standard_normal((2, 3, 49, 8)).astype(np.float32)
    built = softmax_product(tmp_path, scores, values)
    model = irrun.load(str(built.xml))
    assert "subnormals as zeros" in str(model.plan({"s": scores.shape, "v": values.shape}))
    probabilities = np.exp(scores - scores.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    assert np.any((probabilities > 0) & (probabilities < np.finfo(np.float32).tiny))  # the case is exercised
    names, expected = built.output_names, O.run_reference(built)
    O.assert_same(model.run(built.feed_dict), expected, names, atol=1e-6)


def test_without_subnormals_the_bits_do_not_change(tmp_path, monkeypatch):
    rng = np.random.default_rng(12)
    scores = rng.standard_normal((1, 2, 8, 16)).astype(np.float32)
    values = rng.standard_normal((1, 2, 16, 4)).astype(np.float32)
    built = softmax_product(tmp_path, scores, values)
    flushed = irrun.load(str(built.xml)).run(built.feed_dict)
    rewrites = [r for r in plan_module.REWRITES if r is not subnormal_products.flush_softmax_operands]
    monkeypatch.setattr(plan_module, "REWRITES", rewrites)
    monkeypatch.setattr("irrun.engine.runtime.REWRITES", rewrites)
    plain = irrun.load(str(built.xml)).run(built.feed_dict)
    assert "subnormals" not in str(irrun.load(str(built.xml)).plan({"s": scores.shape, "v": values.shape}))
    for key in plain:
        np.testing.assert_array_equal(flushed[key], plain[key])


def test_attention_with_subnormal_probabilities_matches_the_reference(tmp_path):
    from openvino import opset13
    rng = np.random.default_rng(13)
    q = (rng.standard_normal((1, 2, 12, 16)) * 6).astype(np.float32)
    k = (rng.standard_normal((1, 2, 40, 16)) * 6).astype(np.float32)
    v = rng.standard_normal((1, 2, 40, 8)).astype(np.float32)
    built = O.build(lambda p: opset13.scaled_dot_product_attention(p["q"], p["k"], p["v"], causal=False),
                    {"q": q, "k": k, "v": v}, tmp_path)
    names, expected = O.run_cpu(built)  # no reference evaluate for this op: the CPU plugin, f32
    O.assert_same(O.run_irrun(built), expected, names, atol=1e-5)
