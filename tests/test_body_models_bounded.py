"""A Loop/If body gets a Model per shapes of its Parameters; when those shapes depend on values (the boxes a
detector kept), they change run after run: the body keeps a bounded number of Models, and the results stay
right when an evicted one is made again."""
import numpy as np
import openvino as ov
from openvino import opset1, opset3, opset8

import irrun
from irrun.engine.plan import KERNEL
from irrun.ops import control_flow


def if_on_kept_values(tmp_path) -> str:
    """x -> its non-zero elements (a value-dependent count) -> If(cond): then Relu, else Negative."""
    x = opset1.parameter([-1], np.float32, name="x")
    cond = opset1.parameter([], bool, name="cond")
    kept = opset8.gather(x, opset1.reshape(opset3.non_zero(x, "i64"), opset1.constant(np.array([-1])), False),
                         opset1.constant(np.int64(0)))
    then_in, else_in = opset1.parameter([-1], np.float32), opset1.parameter([-1], np.float32)
    then = ov.Model([opset1.result(opset1.relu(then_in))], [then_in], "then")
    other = ov.Model([opset1.result(opset1.negative(else_in))], [else_in], "else")
    node = opset8.if_op(cond)
    node.set_then_body(then)
    node.set_else_body(other)
    node.set_input(kept.output(0), then_in, else_in)
    out = node.set_output(then.get_results()[0], other.get_results()[0])
    path = tmp_path / "if_kept.xml"
    ov.save_model(ov.Model([opset1.result(out)], [x, cond], "if_kept"), path, compress_to_fp16=False)
    return str(path)


def test_body_models_stay_bounded_and_right(tmp_path):
    model = irrun.load(if_on_kept_values(tmp_path))
    rng = np.random.default_rng(3)
    counts = list(range(1, 3 * control_flow.BODY_MODELS)) + [2, 1]  # the first shapes again, after eviction
    for run, count in enumerate(counts):
        x = np.zeros(40, np.float32)
        x[rng.choice(40, count, replace=False)] = rng.standard_normal(count).astype(np.float32) + 0.5
        cond = np.array(run % 2 == 0)
        (got,) = model.run({"x": x, "cond": cond}).values()
        kept = x[x != 0]
        expected = np.maximum(kept, 0) if cond else -kept
        assert got.dtype == np.float32 and got.shape == (count,)
        np.testing.assert_array_equal(got, expected)
    (plan,) = model._plans.values()
    (step,) = [s for s in plan.steps if s.kind == KERNEL and s.node.ref.type == "If"]
    for graph, _, _ in step.node.op.branches.values():
        assert 1 <= len(graph._models) <= control_flow.BODY_MODELS
