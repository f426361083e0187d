"""TensorIterator-1, Loop-5 and If-8 (ops with nested bodies) against OpenVINO's CPU plugin.

Models are built with the openvino Python API, saved as IR and read back (tests/oracle.py). The reference
kernels (Node.evaluate) do not run these ops in 2026.4 (evaluate() returns False), so the CPU plugin is the
oracle. Every saved IR is also checked: no error diagnostics. Float outputs are compared with atol 1e-5
(the bodies are a few f32 adds/multiplies/tanh; the CPU plugin may fuse them)."""
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset8
from oracle import assert_same, build, run_cpu

import irrun
from irrun.check import check

ATOL = 1e-5


def c(value, dtype=None):
    return opset1.constant(np.asarray(value, dtype=dtype))


def verify(built, context, by_name=True):
    report = check(built.xml)
    assert not report.errors, f"{context}\n" + "\n".join(report.lines())
    got = irrun.load(built.xml).run(built.feed_dict)
    names, expected = run_cpu(built)
    float_tol = [ATOL if e.dtype.kind == "f" else None for e in expected]
    if not by_name:  # the CPU plugin folds an If with a constant condition away, and its output names with it
        got, names = list(got.values()), None
    assert_same(got, expected, names, atol=float_tol, context=context)


# ---------------------------------------------------------------- TensorIterator

def make_ti(axis, reverse, concat_stride, params):
    x, h0 = params["x"], params["h"]
    xshape = list(x.get_output_partial_shape(0).to_shape())
    part = list(xshape)
    part[axis] = 1
    xi = opset1.parameter(part, np.float32, name="xi")
    hi = opset1.parameter(list(h0.get_output_partial_shape(0).to_shape()), np.float32, name="hi")
    w = opset1.parameter(list(h0.get_output_partial_shape(0).to_shape()), np.float32, name="w")
    step = opset1.squeeze(xi, c([axis], np.int64))
    new_h = opset1.tanh(opset1.add(opset1.multiply(hi, w), step))
    out = opset1.unsqueeze(opset1.multiply(new_h, c(2.0, np.float32)), c([axis], np.int64))
    body = ov.Model([opset1.result(new_h), opset1.result(out)], [xi, hi, w], "body")
    ti = ov.op.tensor_iterator()
    ti.set_body(body)
    if reverse:
        ti.set_sliced_input(xi, x.output(0), -1, -1, 1, 0, axis)
    else:
        ti.set_sliced_input(xi, x.output(0), 0, 1, 1, -1, axis)
    ti.set_merged_input(hi, h0.output(0), new_h.output(0))
    ti.set_invariant_input(w, params["w"].output(0))
    last = ti.get_iter_value(new_h.output(0), -1)
    if concat_stride > 0:
        seq = ti.get_concatenated_slices(out.output(0), 0, 1, 1, -1, axis)
    else:
        seq = ti.get_concatenated_slices(out.output(0), -1, -1, 1, 0, axis)
    return [last, seq]


@pytest.mark.parametrize("seed", range(8))
def test_tensor_iterator(seed, tmp_path):
    rng = np.random.default_rng(seed)
    axis = int(rng.integers(0, 2))
    steps, batch, width = int(rng.integers(1, 5)), int(rng.integers(1, 4)), int(rng.integers(1, 5))
    xshape = [steps, batch, width] if axis == 0 else [batch, steps, width]
    reverse, concat_stride = bool(rng.integers(0, 2)), int(rng.choice([-1, 1]))
    inputs = {"x": rng.standard_normal(xshape).astype(np.float32),
              "h": rng.standard_normal((batch, width)).astype(np.float32),
              "w": rng.standard_normal((batch, width)).astype(np.float32)}
    built = build(lambda p: make_ti(axis, reverse, concat_stride, p), inputs, tmp_path)
    verify(built, f"seed {seed}: axis {axis} reverse {reverse} concat stride {concat_stride} x {xshape}")


# ---------------------------------------------------------------- Loop

def make_loop(trip, cond_limit, concat, use_iteration, params):
    a = params["a"]
    width = a.get_output_partial_shape(0).to_shape()[0]
    it = opset1.parameter([], np.int64, name="it")
    ai = opset1.parameter([width], np.float32, name="ai")
    bi = opset1.parameter([width], np.float32, name="bi")
    grow = opset1.convert(it, "f32") if use_iteration else c(1.5, np.float32)
    ao = opset1.add(opset1.multiply(ai, bi), grow)
    ao_r = opset1.result(ao)
    # the body's condition: keep going while the iteration number (or a running sum) is below a limit
    if cond_limit is None:
        keep = opset1.result(c(True))
    elif use_iteration:
        keep = opset1.result(opset1.less(it, c(cond_limit, np.int64)))
    else:
        keep = opset1.result(opset1.less(opset1.reduce_sum(ao, c([0], np.int64)), c(float(cond_limit), np.float32)))
    piece = opset1.result(opset1.unsqueeze(ao, c([0], np.int64)))
    body = ov.Model([ao_r, keep, piece], [it, ai, bi], "loop_body")
    loop = opset8.loop(params["trip"], params["cond"])
    loop.set_function(body)
    loop.set_special_body_ports([0, 1])
    loop.set_merged_input(ai, a.output(0), ao.output(0))
    loop.set_invariant_input(bi, params["b"].output(0))
    outputs = [loop.get_iter_value(ao.output(0), -1)]
    if concat:
        outputs.append(loop.get_concatenated_slices(piece.output(0), 0, 1, 1, -1, 0))
    return outputs


@pytest.mark.parametrize("seed", range(10))
def test_loop(seed, tmp_path):
    rng = np.random.default_rng(100 + seed)
    width = int(rng.integers(1, 5))
    trip = int(rng.choice([-1, 0, 1, 3, 5])) if seed else 4
    cond_limit = None if trip == -1 and seed % 2 else rng.choice([None, 2, 3])
    if trip == -1 and cond_limit is None:
        cond_limit = 3
    use_iteration = bool(rng.integers(0, 2)) or seed == 0
    if not use_iteration and cond_limit is not None:
        cond_limit = int(cond_limit) * 4
    concat = bool(rng.integers(0, 2)) or seed == 0
    start = bool(rng.integers(0, 5)) or seed == 0  # mostly true: a false start runs no iteration
    inputs = {"trip": np.array(trip, np.int64), "cond": np.array(start),
              "a": rng.uniform(-1, 1, width).astype(np.float32), "b": rng.uniform(0.5, 1.5, width).astype(np.float32)}
    if concat and (not start or trip == 0):
        concat = False  # CPU: an empty concatenated output
    built = build(lambda p: make_loop(p["trip"] if trip else p["trip"], cond_limit, concat, use_iteration, p),
                  inputs, tmp_path)
    verify(built, f"seed {seed}: trip {trip} start {start} cond limit {cond_limit} iteration input "
                  f"{use_iteration} concat {concat}")


# ---------------------------------------------------------------- If

def make_if(cond, kind, params):
    x, y = params["x"], params["y"]
    shape = list(x.get_output_partial_shape(0).to_shape())
    tx, ty = opset1.parameter(shape, np.float32), opset1.parameter(shape, np.float32)
    ex = opset1.parameter(shape, np.float32)
    then = ov.Model([opset1.result(opset1.add(tx, ty)), opset1.result(opset1.multiply(tx, c(3.0, np.float32)))],
                    [tx, ty], "then")
    if kind == "reduce":  # else gives a different shape: the If output is dynamic unless cond is constant
        second = opset1.reduce_sum(ex, c([0], np.int64), keep_dims=True)
    else:
        second = opset1.negative(ex)
    other = ov.Model([opset1.result(opset1.exp(ex)), opset1.result(second)], [ex], "else")
    node = opset8.if_op(cond)
    node.set_then_body(then)
    node.set_else_body(other)
    node.set_input(x.output(0), tx, ex)
    node.set_input(y.output(0), ty, None)
    first = node.set_output(then.get_results()[0], other.get_results()[0])
    second_out = node.set_output(then.get_results()[1], other.get_results()[1])
    return [first, second_out]


@pytest.mark.parametrize("seed", range(8))
def test_if(seed, tmp_path):
    rng = np.random.default_rng(200 + seed)
    shape = [int(rng.integers(2, 4)), int(rng.integers(1, 4))]
    value = bool(seed % 2)
    constant = seed % 4 >= 2
    kind = "reduce" if seed >= 4 else "same"
    inputs = {"x": rng.standard_normal(shape).astype(np.float32), "y": rng.standard_normal(shape).astype(np.float32)}
    if not constant:
        inputs["cond"] = np.array(value)
    built = build(lambda p: make_if(c(value) if constant else p["cond"], kind, p), inputs, tmp_path)
    verify(built, f"seed {seed}: cond {value} constant {constant} else {kind}", by_name=not constant)


# ---------------------------------------------------------------- a converted PyTorch model

def test_converted_torch_loop_and_if():
    """models/torch_loop_if: a scripted PyTorch for-loop and if, converted to Loop-5 and If-8
    (models/make_control_flow_model.py; shipped, so that this test needs no torch)."""
    xml = Path(__file__).parents[1] / "models" / "torch_loop_if" / "model.xml"
    kinds = {node.get_type_name() for node in ov.Core().read_model(str(xml)).get_ordered_ops()}
    assert {"Loop", "If"} <= kinds
    report = check(xml)
    assert not report.errors, "\n".join(report.lines())
    loaded = irrun.load(xml)
    compiled = ov.Core().compile_model(str(xml), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    rng = np.random.default_rng(7)
    for case, (scale, n) in enumerate([(1.0, 3), (-20.0, 0), (-20.0, 1), (1.0, 5)]):
        feeds = [(rng.standard_normal((2, 3)) * scale).astype(np.float32), np.array(n, np.int64)]
        feeds = [f.astype(ov_input.get_element_type().to_dtype()) for f, ov_input in zip(feeds, compiled.inputs)]
        expected = [np.asarray(v) for v in compiled(feeds).values()]
        got = list(loaded.run(feeds).values())
        assert_same(got, expected, atol=ATOL, context=f"case {case}: scale {scale} n {n}")
