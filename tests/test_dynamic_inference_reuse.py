"""Dynamic steps whose output shapes follow from their input shapes alone (a Gather of the elements NonZero
found) reuse the last run's inference while those shapes repeat (irrun/engine/reinfer.py); steps whose shapes
need run-time values (NonZero, a Reshape to a computed shape) are inferred at every run. Values against the
reference, on repeated and on new shapes."""
import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset3, opset8

import irrun
from irrun.engine import reinfer
from irrun.engine.plan import KERNEL
from irrun.errors import MemoryBudgetError
from irrun.ops.indexing import Gather8
from oracle import run_reference

ROWS, WIDTH = 40, 256


def kept_rows_model(tmp_path) -> str:
    """x [n] -> the rows of a constant table at x's non-zero positions, their shape, and Relu of x's non-zero
    elements reshaped to `target` (a shape given at run time)."""
    x = opset1.parameter([-1], np.float32, name="x")
    target = opset1.parameter([2], np.int64, name="target")
    where = opset1.reshape(opset3.non_zero(x, "i64"), opset1.constant(np.array([-1], np.int64)), False)
    table = opset1.constant(np.arange(ROWS * WIDTH, dtype=np.float32).reshape(ROWS, WIDTH) / 7)
    rows = opset8.gather(table, where, opset1.constant(np.int64(0)))
    kept = opset8.gather(x, where, opset1.constant(np.int64(0)))
    reshaped = opset1.reshape(opset1.relu(kept), target, False)
    model = ov.Model([opset1.result(rows), opset1.result(opset3.shape_of(rows, "i64")), opset1.result(reshaped)],
                     [x, target], "kept_rows")
    path = tmp_path / "kept_rows.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return str(path)


def feeds(rng, count: int, target) -> list:
    x = np.zeros(ROWS, np.float32)
    x[rng.choice(ROWS, count, replace=False)] = rng.standard_normal(count).astype(np.float32) + 3
    return [x, np.array(target, np.int64)]


def steps_of(model, kind: str):
    (plan,) = model._plans.values()
    return [s for s in plan.steps if s.kind == KERNEL and s.node.ref.type == kind]


def test_inference_is_reused_only_while_shapes_repeat(tmp_path, monkeypatch):
    path = kept_rows_model(tmp_path)
    model = irrun.load(path)
    calls = []
    original = Gather8.infer
    monkeypatch.setattr(Gather8, "infer", lambda self, inputs: calls.append(1) or original(self, inputs))
    rng = np.random.default_rng(7)
    runs = [(6, [2, 3]), (6, [3, 2]), (6, [6, 1]), (4, [2, 2]), (4, [1, 4]), (6, [1, 6])]
    # two Gathers, each inferred while planning and twice in the first run (with and without run-time values)
    expected_calls = [6, 0, 0, 2, 0, 2]
    for (count, target), infers in zip(runs, expected_calls):
        calls.clear()
        inputs = feeds(rng, count, target)
        got = list(model.run(inputs).values())
        for a, b in zip(got, run_reference(ov.Core().read_model(path), inputs)):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        assert got[0].shape == (count, WIDTH) and got[2].shape == tuple(target)
        assert len(calls) == infers, (count, target)
    assert all(s.dynamic and s.inferred for s in steps_of(model, "Gather"))
    for kind in ("NonZero", "Reshape"):  # NonZero's count, the computed target: values, at every run
        assert any(s.inferred is reinfer.NEVER for s in steps_of(model, kind))


def test_a_reused_inference_still_checks_the_budget_first(tmp_path, monkeypatch):
    model = irrun.load(kept_rows_model(tmp_path), max_memory=1 << 20)
    rng = np.random.default_rng(8)
    for _ in range(2):
        model.run(feeds(rng, 5, [1, 5]))
    calls = []
    original = Gather8.run
    monkeypatch.setattr(Gather8, "run", lambda *args: calls.append(1) or original(*args))
    model.budget.limit = 4 * WIDTH * 4  # the five rows (5 KiB) no longer fit
    with pytest.raises(MemoryBudgetError, match="memory budget") as info:
        model.run(feeds(rng, 5, [1, 5]))
    assert "Gather-8" in str(info.value) and "output 0 of shape [5,256]" in str(info.value) and not calls


def test_steps_whose_known_outputs_are_empty_run_no_kernel(tmp_path, monkeypatch):
    """A dynamic step whose reused inference gives only empty outputs (the rows of no non-zero element: an MoE
    expert no token was routed to) gets empty arrays of its output shapes and types without its kernel: it has
    nothing to compute, and its kernel's fixed cost was most of an MoE decoder's step."""
    calls = []
    original = Gather8.run
    monkeypatch.setattr(Gather8, "run", lambda *args: calls.append(1) or original(*args))
    path = kept_rows_model(tmp_path)
    model = irrun.load(path)
    rng = np.random.default_rng(9)
    # Gather kernels run: both at the first run (inference learned there), none while the empty shapes repeat,
    # both again for new shapes
    for count, target, gathers in [(0, [0, 3], 2), (0, [3, 0], 0), (0, [0, 1], 0), (5, [1, 5], 2), (0, [0, 2], 2)]:
        calls.clear()
        inputs = feeds(rng, count, target)
        got = list(model.run(inputs).values())
        for a, b in zip(got, run_reference(ov.Core().read_model(path), inputs)):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
        assert len(calls) == gathers, (count, target)
