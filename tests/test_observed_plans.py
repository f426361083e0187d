"""Runs with an observer that reads layer outputs (dumps, compare, precision) see every layer, also where a plain
run fuses layers into one step (engine/mvn_transposes.py: ConvNeXt's LayerNorm); a profile times the plan a plain
run executes, the fused step under its last layer and no output computed that nothing reads."""
from __future__ import annotations

import numpy as np

import irrun
from irrun.tools.dumps import chain
from irrun.tools.profile import Profiler
from oracle import build, run_reference
from test_mvn_transposes import layer_norm, transpose

TYPES = ["Parameter", "Transpose", "MVN", "Transpose", "Result"]


def _layer_norm_2d(tmp_path):
    x = (np.random.default_rng(4).standard_normal((1, 40, 6, 5)) * 0.1 + 5).astype(np.float32)
    built = build(lambda p: transpose(layer_norm(transpose(p["x"], [0, 2, 3, 1])), [0, 3, 1, 2]), {"x": x},
                  tmp_path)
    return irrun.load(str(built.xml)), x, built


def _reader(seen):
    def observe(node, outputs, seconds):
        seen.append((node.ref.type, [None if a is None else a.shape for a in outputs]))
    return observe


def test_an_observer_reading_outputs_sees_every_layer_of_a_fused_pattern(tmp_path):
    model, x, built = _layer_norm_2d(tmp_path)
    plain = model.run([x])
    seen = []
    observed = model.run([x], observer=_reader(seen))
    types = [t for t, _ in seen if t != "Constant"]
    assert types == TYPES
    assert [shapes for t, shapes in seen if t == "MVN"] == [[(1, 6, 5, 40)]]
    # the unfused layers sum in another order than the fused step: both within the MVN tests' tolerance
    for fused, unfused, want in zip(plain.values(), observed.values(), run_reference(built)):
        np.testing.assert_allclose(fused, want, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(unfused, want, rtol=2e-5, atol=2e-5)


def test_a_chain_with_a_reader_sees_every_layer_and_a_profile_alone_sees_the_fused_step(tmp_path):
    model, x, _ = _layer_norm_2d(tmp_path)
    seen = []
    model.run([x], observer=chain(_reader(seen), Profiler(model)))
    assert [t for t, _ in seen if t != "Constant"] == TYPES
    profiler = Profiler(model)
    model.run([x], observer=profiler)
    report = profiler.report()
    assert "MVN-6" not in report and "Transpose-1" in report  # the fused step under its last layer


def _max_pool_values_only(tmp_path):
    """MaxPool-8 whose indices nothing reads (densenet121's stem)."""
    import openvino.opset8 as opset8
    x = np.random.default_rng(5).standard_normal((1, 3, 9, 9)).astype(np.float32)
    built = build(lambda p: [opset8.max_pool(p["x"], [2, 2], [1, 1], [1, 1], [1, 1], [3, 3]).output(0)], {"x": x},
                  tmp_path)
    return irrun.load(str(built.xml)), x


def test_a_profile_times_the_outputs_a_plain_run_computes_and_a_reader_gets_them_all(tmp_path, monkeypatch):
    from irrun.ops import pooling
    asked = []
    real = pooling.max_pool
    monkeypatch.setattr(pooling, "max_pool", lambda *args: asked.append(args[-1]) or real(*args))
    model, x = _max_pool_values_only(tmp_path)
    plain = model.run([x])
    profiler = Profiler(model)
    profiled = model.run([x], observer=profiler)
    seen = []
    model.run([x], observer=_reader(seen))
    assert asked == [False, False, True]  # with_indices: plain run, profile, reader
    assert [shapes for t, shapes in seen if t == "MaxPool"] == [[(1, 3, 5, 5), (1, 3, 5, 5)]]
    np.testing.assert_array_equal(list(profiled.values())[0], list(plain.values())[0])
    assert "MaxPool-8" in profiler.report()
