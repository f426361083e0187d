"""Execution plans: built once per input shape and cached, printable, value-dependent steps inferred again at
run time, freeing points, the budget checked while planning, rewrites replacing steps."""
import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset3, opset8

import irrun
from irrun.engine import plan as plan_module
from irrun.engine import runtime
from irrun.errors import MemoryBudgetError
from irrun.ops.activation import Relu
from irrun.engine.plan import KERNEL, Step
from oracle import run_reference


def save(model: ov.Model, tmp_path, name="m") -> str:
    path = tmp_path / f"{name}.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return str(path)


def reference(path, feeds: list):
    return run_reference(ov.Core().read_model(path), feeds)


def chain_model(tmp_path, shape=(-1, 4), layers=6):
    x = opset1.parameter(list(shape), np.float32, name="x")
    node = x
    for i in range(layers):
        node = (opset1.relu, opset1.negative, opset1.absolute)[i % 3](node)
    return save(ov.Model([opset1.result(node)], [x], "chain"), tmp_path)


def test_plan_is_cached_per_input_shape_and_inference_runs_once(tmp_path, monkeypatch):
    model = irrun.load(chain_model(tmp_path))
    calls = []
    original = Relu.infer
    monkeypatch.setattr(Relu, "infer", lambda self, inputs: calls.append(1) or original(self, inputs))
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
    first = model.run([x])
    assert len(calls) == 2  # the plan for [2, 4]: two Relu layers inferred once
    for _ in range(3):
        again = model.run([x + 1])
    assert len(calls) == 2
    np.testing.assert_array_equal(next(iter(first.values())), reference(model.path, [x])[0])
    np.testing.assert_array_equal(next(iter(again.values())), reference(model.path, [x + 1])[0])
    model.run([np.ones((5, 4), np.float32)])
    assert len(calls) == 4  # a new shape: a new plan
    assert model.plan([(2, 4)]) is model.plan({"x": (2, 4)})


def test_plan_cache_is_bounded(tmp_path):
    model = irrun.load(chain_model(tmp_path))
    for batch in range(1, 3 * runtime.PLAN_CACHE_SIZE):
        data = np.linspace(-1, 1, 4 * batch, dtype=np.float32).reshape(batch, 4)
        np.testing.assert_array_equal(next(iter(model.run([data]).values())), reference(model.path, [data])[0])
    assert len(model._plans) == runtime.PLAN_CACHE_SIZE


def test_plan_prints_its_steps_with_shapes_and_freeing_points(tmp_path):
    model = irrun.load(chain_model(tmp_path, layers=3))
    plan = model.plan({"x": [3, 4]})
    text = str(plan)
    assert plan.static and "static" in text.splitlines()[0]
    assert [s.kind for s in plan.steps] == ["input", "kernel", "kernel", "kernel", "result"]
    assert "Relu-1" in text and "Negative-1" in text and "Abs-1" in text and "f32[3,4]" in text
    # each intermediate dies right after its only reader; the output is kept
    kernels = plan.kernels
    assert kernels[0].frees == kernels[0].inputs and kernels[1].frees == kernels[1].inputs
    assert kernels[2].frees == kernels[2].inputs and plan.outputs == kernels[2].outputs
    assert plan.peak == 2 * 3 * 4 * 4


def test_unread_outputs_die_right_after_their_step(tmp_path):
    x = opset1.parameter([1, 1, 4, 4], np.float32, name="x")
    pool = opset8.max_pool(x, [1, 1], [1, 1], [0, 0], [0, 0], [2, 2])
    out = opset1.relu(pool.output(0))
    model = irrun.load(save(ov.Model([opset1.result(out)], [x], "pool"), tmp_path))
    plan = model.plan([(1, 1, 4, 4)])
    pool_step = next(s for s in plan.kernels if s.node.ref.type == "MaxPool")
    assert pool_step.outputs[1] in pool_step.frees  # the unused indices
    seen = {}
    data = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    result = model.run([data], observer=lambda node, outputs, seconds: seen.setdefault(node.ref.type, outputs))
    assert seen["MaxPool"][1] is not None and seen["MaxPool"][1].dtype == np.int64  # the observer sees it
    np.testing.assert_array_equal(next(iter(result.values())), reference(model.path, [data])[0])


def test_value_dependent_shapes_are_inferred_at_run_time(tmp_path):
    """NonZero and a Reshape to a shape computed from an input's values: same input shapes, different
    output shapes on each run, under one cached plan."""
    x = opset1.parameter([-1], np.float32, name="x")
    target = opset1.parameter([2], np.int64, name="target")
    nz = opset3.non_zero(x, "i64")
    doubled = opset1.multiply(target, opset1.constant(np.array([1, 1], np.int64)))
    reshaped = opset1.reshape(opset1.relu(x), doubled, False)
    path = save(ov.Model([opset1.result(nz), opset1.result(reshaped)], [x, target], "dyn"), tmp_path)
    model = irrun.load(path)
    plan = model.plan([(6,), (2,)])
    assert not plan.static and any(s.dynamic for s in plan.kernels)
    for values, shape in (([0, 1, 0, 2, 3, 0], [2, 3]), ([1, 1, 1, 0, 0, 5], [3, 2]), ([0] * 6, [6, 1])):
        feeds = [np.array(values, np.float32), np.array(shape, np.int64)]
        got = list(model.run(feeds).values())
        for a, b in zip(got, reference(path, feeds)):
            np.testing.assert_array_equal(a, b)
    assert len(model._plans) == 1


def test_shape_arithmetic_is_computed_while_planning(tmp_path):
    """ShapeOf -> Gather -> Concat -> Reshape on a dynamic input: folded into the plan, a static plan."""
    x = opset1.parameter([-1, -1], np.float32, name="x")
    shape = opset3.shape_of(x, "i64")
    rows = opset8.gather(shape, opset1.constant(np.array([0], np.int64)), opset1.constant(np.int64(0)))
    target = opset1.concat([rows, opset1.constant(np.array([-1], np.int64))], 0)
    out = opset1.reshape(opset1.relu(x), target, True)
    path = save(ov.Model([opset1.result(out)], [x], "shapes"), tmp_path)
    model = irrun.load(path)
    plan = model.plan([(3, 8)])
    assert plan.static and [s.node.ref.type for s in plan.kernels] == ["Relu", "Reshape"]
    data = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_array_equal(next(iter(model.run([data]).values())), reference(path, [data])[0])


def test_a_static_plan_checks_the_budget_before_running_anything(tmp_path, monkeypatch):
    path = chain_model(tmp_path, shape=(-1, 1024), layers=4)
    tensor = 64 * 1024 * 4
    model = irrun.load(path, max_memory=2 * tensor)  # the input and one intermediate, or two intermediates
    model.run([np.ones((64, 1024), np.float32)])
    calls = []
    monkeypatch.setattr(Relu, "run", lambda *args: calls.append(1))
    with pytest.raises(MemoryBudgetError, match="memory budget") as info:
        model.run([np.ones((65, 1024), np.float32)])
    assert "Relu-1" in str(info.value) and not calls  # refused while planning: no kernel ran


def test_a_rewrite_replaces_steps_in_one_place(tmp_path):
    """A rewrite fuses Relu -> Negative into one step; the run gives the same values."""
    path = chain_model(tmp_path, layers=3)
    data = np.linspace(-3, 3, 8, dtype=np.float32).reshape(2, 4)
    expected = reference(path, [data])[0]

    def fuse(plan):
        relu = next(s for s in plan.steps if s.kind == KERNEL and s.node.ref.type == "Relu")
        (neg,) = plan.readers(relu.outputs[0])
        fused = Step(KERNEL, neg.node, relu.inputs, neg.outputs, relu.in_infos, neg.out_infos,
                     kernel=lambda arrays, ii, oi: [-np.maximum(arrays[0], 0)], label="fused Relu+Negative")
        plan.replace([relu, neg], fused)

    plan_module.REWRITES.append(fuse)
    try:
        model = irrun.load(path)
        plan = model.plan([(2, 4)])
    finally:
        plan_module.REWRITES.remove(fuse)
    assert [s.name for s in plan.kernels][0] == "fused Relu+Negative" and len(plan.kernels) == 2
    assert "fused Relu+Negative" in str(plan)
    np.testing.assert_array_equal(next(iter(model.run([data]).values())), expected)
