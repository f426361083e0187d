"""Plans with value-dependent steps (not static): every output is still checked against the memory budget
before its kernel runs, for the steps inferred again at run time and for the static steps between them, and
the refusal names the layer."""
import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset3

import irrun
from irrun.errors import MemoryBudgetError
from irrun.ops.activation import Relu
from irrun.ops.shape_ops import Broadcast3
from oracle import run_reference

KIB = 1024


def dynamic_model(tmp_path) -> str:
    """x -> Relu -> Relu (static shapes) beside NonZero(x) and a Broadcast of x's first element to a shape given by
    the values of `target` (inferred at run time)."""
    x = opset1.parameter([-1], np.float32, name="x")
    target = opset1.parameter([1], np.int64, name="target")
    relu = opset1.relu(opset1.relu(x))
    head = opset1.strided_slice(x, opset1.constant(np.array([0], np.int64)), opset1.constant(np.array([1], np.int64)),
                                opset1.constant(np.array([1], np.int64)), [0], [0])
    wide = opset3.broadcast(head, target)
    model = ov.Model([opset1.result(relu), opset1.result(opset3.non_zero(x, "i64")), opset1.result(wide)],
                     [x, target], "dynamic_budget")
    path = tmp_path / "dynamic_budget.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return str(path)


def feeds(n: int, wide: int) -> list:
    x = np.where(np.arange(n) % 3 == 0, 0.0, np.linspace(-1, 1, n)).astype(np.float32)
    return [x, np.array([wide], np.int64)]


def test_within_the_budget_the_outputs_are_the_reference(tmp_path):
    path = dynamic_model(tmp_path)
    model = irrun.load(path, max_memory=64 * KIB)
    assert not model.plan([(256,), (1,)]).static
    for n, wide in ((256, 100), (300, 7), (256, 2000)):
        got = list(model.run(feeds(n, wide)).values())
        expected = run_reference(ov.Core().read_model(path), feeds(n, wide))
        assert len(got) == 3
        for a, b in zip(got, expected):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_a_step_inferred_at_run_time_is_refused_before_its_kernel_runs(tmp_path, monkeypatch):
    model = irrun.load(dynamic_model(tmp_path), max_memory=64 * KIB)
    model.run(feeds(256, 100))
    calls = []
    original = Broadcast3.run
    monkeypatch.setattr(Broadcast3, "run", lambda *args: calls.append(1) or original(*args))
    with pytest.raises(MemoryBudgetError, match="memory budget") as info:
        model.run(feeds(256, 64 * KIB // 4))  # the broadcast alone fills the budget
    assert "Broadcast-3" in str(info.value) and "output 0 of shape [16384]" in str(info.value) and not calls
    assert "\n" not in str(info.value)


def test_a_static_step_of_a_dynamic_plan_is_refused_before_its_kernel_runs(tmp_path, monkeypatch):
    model = irrun.load(dynamic_model(tmp_path), max_memory=64 * KIB)
    calls = []
    original = Relu.run
    monkeypatch.setattr(Relu, "run", lambda *args: calls.append(1) or original(*args))
    n = 6 * KIB  # the input (24 KiB) and the first Relu's output fit; the second Relu's does not beside them
    with pytest.raises(MemoryBudgetError, match="memory budget") as info:
        model.run(feeds(n, 1))
    assert "Relu-1" in str(info.value) and "output 0 of shape [6144]" in str(info.value) and len(calls) == 1
    plan = model.plan([(n,), (1,)])
    relu_steps = [s for s in plan.kernels if s.node.ref.type == "Relu"]
    assert not plan.static and relu_steps and not any(s.dynamic for s in relu_steps)
