"""Transpose -> MVN-6 over the last axis -> Transpose fused into one step (irrun/engine/mvn_transposes.py), MVN
computed over the moved axis in the first input's layout (irrun/ops/mvn_axis.py): the kernel against the plain
one (transpose copy, the last-axis MVN, transpose back) on random and edge data, the fused plans against
OpenVINO's reference kernels, and where the rewrite must not fuse."""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset1, opset6

import irrun
from irrun.ir.types import ELEMENT_TYPES
from irrun.ops import matrix, mvn_axis
from irrun.ops.normalization import mvn
from irrun.ops.registry import TensorInfo
from oracle import build, constant, run_irrun, run_reference
from test_eltwise_inplace import make_op

MODES = [(True, "inside_sqrt"), (True, "outside_sqrt"), (False, "inside_sqrt")]
FUSED = "MVN in the first input's layout"
WEIGHTS = np.random.default_rng(9).standard_normal((96, 5)).astype(np.float32)


def plain(x, order, back, variance, eps, inside_sqrt):
    """The unfused layers: a transposed copy, MVN over its last axis, the second Transpose (if any)."""
    result = mvn(np.ascontiguousarray(np.transpose(x, order)), (x.ndim - 1,), variance, eps, inside_sqrt)
    return result if back is None else np.transpose(result, back)


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape, order, back", [((1, 40, 6, 7), (0, 2, 3, 1), (0, 3, 1, 2)),
                                                ((2, 9, 5, 3), (0, 2, 3, 1), None),
                                                ((3, 4, 5, 6, 2), (0, 1, 3, 4, 2), (4, 0, 1, 2, 3)),
                                                ((700, 3), (1, 0), (1, 0)),
                                                ((2, 0, 3), (0, 2, 1), (0, 2, 1))])
def test_kernel_equals_the_transposed_last_axis_form(dtype, shape, order, back, monkeypatch):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    axis = order[-1]
    if x.size:
        x.reshape(-1)[rng.integers(0, x.size, 3)] = [np.nan, np.inf, -0.0]
        constant_column = [0] * x.ndim
        constant_column[axis] = slice(None)
        x[tuple(constant_column)] = 2.5  # variance 0 along the axis
    out_order = order if back is None else [order[a] for a in back]
    tolerance = 2e-3 if dtype == np.float16 else 2e-5
    for variance, eps_mode in MODES:
        inside = eps_mode == "inside_sqrt"
        with np.errstate(all="ignore"):
            want = plain(x, order, back, variance, 1e-5, inside)
            got = mvn_axis.transposed_mvn(x, axis, out_order, variance, 1e-5, inside)
            monkeypatch.setattr(mvn_axis, "ROWS_BLOCK", 7)  # blocks of a few columns and slabs
            blocked = mvn_axis.transposed_mvn(x, axis, out_order, variance, 1e-5, inside)
            monkeypatch.undo()
        assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tolerance, atol=tolerance)
        close = 1e-3 if dtype == np.float16 else 1e-6  # the blocks' sums round apart: within an f16 ulp
        np.testing.assert_allclose(blocked, got, rtol=close, atol=close)
        if x.size:
            assert np.isnan(got).sum() == np.isnan(want).sum() > 0
        with np.errstate(all="ignore"):
            view = mvn_axis.transposed_mvn(x, axis, out_order, variance, 1e-5, inside, view=True)
        assert np.array_equal(view, got, equal_nan=True)
        assert view.flags.owndata == (out_order == sorted(out_order)) or not x.size
        if out_order == sorted(out_order) and dtype != np.float16:  # in place (the fused step's run_into)
            buffer = x.copy()
            with np.errstate(all="ignore"):
                assert mvn_axis.transposed_mvn(buffer, axis, out_order, variance, 1e-5, inside, out=buffer) is buffer
            np.testing.assert_array_equal(buffer, got)


def fused_steps(built):
    model = irrun.load(str(built.xml))
    plan = model.plan([tuple(f.shape) for f in built.feeds])
    return [step for step in plan.kernels if FUSED in step.name], len(plan.kernels)


def layer_norm(node, variance=True, eps_mode="inside_sqrt"):
    return opset6.mvn(node, constant(np.array([-1], np.int64)), variance, 1e-6, eps_mode)


def transpose(node, order):
    return opset1.transpose(node, constant(np.array(order, np.int64)))


CASES = {  # name: (shape, spread, offset, make, fused steps, kernel steps)
    "there and back": ((1, 40, 56, 56), 0.1, 5.0,
                       lambda x: transpose(layer_norm(transpose(x, [0, 2, 3, 1])), [0, 3, 1, 2]), 1, 1),
    "in place after a layer": ((1, 40, 6, 5), 1.0, 1.0,
                               lambda x: transpose(layer_norm(transpose(opset1.relu(x), [0, 2, 3, 1])), [0, 3, 1, 2]),
                               1, 2),
    "wide, read twice after": ((1, 768, 7, 7), 0.2, 10.0, lambda x: opset1.add(*[transpose(layer_norm(
        transpose(x, [0, 2, 3, 1]), False), [0, 3, 1, 2])] * 2), 1, 2),
    "into a MatMul": ((1, 96, 8, 8), 1.0, 1.0, lambda x: opset1.matmul(layer_norm(transpose(
        x, [0, 2, 3, 1]), True, "outside_sqrt"), constant(WEIGHTS), False, False), 1, 2),
    "into a MatMul after a layer": ((2, 96, 3, 5), 0.2, 10.0, lambda x: opset1.matmul(layer_norm(transpose(
        opset1.relu(x), [0, 2, 3, 1])), constant(WEIGHTS.T.copy()), False, True), 1, 3),
    "into a MatMul and more": ((1, 96, 8, 8), 1.0, 1.0, lambda x: (lambda norm: opset1.add(opset1.matmul(
        norm, constant(WEIGHTS), False, False), opset1.reduce_sum(norm, constant(np.array([3])), True)))(
        layer_norm(transpose(x, [0, 2, 3, 1]))), 0, 5),
    "into a transposed MatMul": ((1, 8, 8, 96), 1.0, 1.0, lambda x: opset1.matmul(layer_norm(transpose(
        x, [0, 3, 1, 2])), constant(WEIGHTS[:8]), True, False), 0, 3),
    "back, outside_sqrt": ((1, 96, 8, 8), 1.0, 1.0, lambda x: transpose(layer_norm(transpose(
        x, [0, 2, 3, 1]), True, "outside_sqrt"), [0, 3, 1, 2]), 1, 1),
    "another order back": ((2, 3, 4, 5, 6), 3.0, 0.0,
                           lambda x: transpose(layer_norm(transpose(x, [0, 1, 3, 4, 2])), [4, 0, 1, 2, 3]), 1, 1),
    "last axis stays last": ((2, 5, 6, 7), 1.0, 0.0,
                             lambda x: transpose(layer_norm(transpose(x, [0, 2, 1, 3])), [0, 2, 1, 3]), 0, 3),
    "transposed data read twice": ((2, 5, 6, 7), 1.0, 0.0, lambda x: (lambda moved: opset1.add(
        layer_norm(moved), moved))(transpose(x, [0, 2, 3, 1])), 0, 3),
    "two axes": ((2, 5, 6, 7), 1.0, 0.0, lambda x: opset6.mvn(transpose(x, [0, 2, 3, 1]), constant(
        np.array([2, 3], np.int64)), True, 1e-6, "inside_sqrt"), 0, 2),
    "two in a row": ((1, 8, 4, 5), 1.0, 0.0, lambda x: transpose(layer_norm(transpose(layer_norm(transpose(
        x, [0, 2, 3, 1])), [0, 3, 1, 2])), [0, 2, 3, 1]), 1, 3),  # the second MVN reads the fused step's output
}


@pytest.mark.parametrize("name", CASES)
def test_fused_plans_against_the_reference(name, tmp_path):
    shape, spread, offset, make, fused, kernels = CASES[name]
    x = (np.random.default_rng(len(name)).standard_normal(shape) * spread + offset).astype(np.float32)
    built = build(lambda p: make(p["x"]), {"x": x}, tmp_path)
    steps, count = fused_steps(built)
    assert (len(steps), count) == (fused, kernels)
    # in place where the result keeps the layout of an input the run owns (not the caller's x)
    assert [step.inplace for step in steps] == [name.endswith("after a layer")] * fused
    got = next(iter(run_irrun(built).values()))
    tolerance = 4e-6 * 96 + 1e-5 if "MatMul" in name else 2e-5  # MatMul: the oracle tests' 4e-6 * K + 1e-5
    np.testing.assert_allclose(got, run_reference(built)[0], rtol=tolerance, atol=tolerance)


def test_first_transpose_as_a_model_output_is_not_fused(tmp_path):
    x = np.random.default_rng(3).standard_normal((1, 8, 4, 4)).astype(np.float32)

    def make(p):
        moved = transpose(p["x"], [0, 2, 3, 1])
        return [transpose(layer_norm(moved), [0, 3, 1, 2]), moved]
    built = build(make, {"x": x}, tmp_path)
    assert fused_steps(built)[0] == []
    got = list(run_irrun(built).values())
    for a, b in zip(got, run_reference(built)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def test_matmul_reads_rows_through_strides():
    """MatMul-1 takes a stack of rows whose leading axes merge into one without a copy (the channels-last view
    of batch-1 channels-first data) as one product, with the bits of the contiguous copy; other strided data
    (batch 2, every other column) as a batched product, as before."""
    rng = np.random.default_rng(4)
    data = rng.standard_normal((2, 24, 5, 7)).astype(np.float32)
    weights = rng.standard_normal((24, 9)).astype(np.float32)
    views = [data[:1].transpose(0, 2, 3, 1), data.transpose(0, 2, 3, 1), data[:, :, ::2].transpose(0, 2, 3, 1)]
    assert [matrix._rows(a) is not None for a in views] == [True, False, False]
    for a in views:
        got, want = (matrix_product(v, weights) for v in (a, np.ascontiguousarray(a)))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got, np.einsum("...k,kn->...n", a.astype(np.float64), weights), rtol=1e-5,
                                   atol=1e-5)
    np.testing.assert_array_equal(*(matrix_product(v, weights) for v in (views[0], np.ascontiguousarray(views[0]))))


def matrix_product(a, b):
    infos = [TensorInfo(a.shape, ELEMENT_TYPES["f32"]), TensorInfo(b.shape, ELEMENT_TYPES["f32"])]
    op, out_infos = make_op("MatMul", 1, {}, infos)
    return op.run([a, b], infos, out_infos)[0]
