"""Model state: ReadValue-3/6 and Assign-3/6 run step after step in a session, against OpenVINO's CPU plugin
(an infer request carries the variables; f32 hints): outputs and `session.state` against `query_state()` after
every step, reset, init subgraphs, KV-cache growth with beam_idx reordering, and the checker's variable rules."""
import re
import shutil

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset3, opset8
from openvino.op.util import Variable, VariableInfo

import irrun
from irrun.errors import IRError
from irrun.tools.compare import OPENVINO_F32_CONFIG
from oracle import cpu_config, cpu_reports_run_time_errors

CPU_CONFIG = cpu_config(**OPENVINO_F32_CONFIG)


def variable(var_id, shape, et=ov.Type.f32) -> Variable:
    info = VariableInfo()
    info.variable_id, info.data_shape, info.data_type = var_id, ov.PartialShape(shape), et
    return Variable(info)


def save(model: ov.Model, tmp_path, name="state") -> str:
    path = tmp_path / f"{name}.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return str(path)


def stepper(path):
    """An irrun session and an OpenVINO infer request on the same IR."""
    request = ov.Core().compile_model(ov.Core().read_model(path), "CPU", CPU_CONFIG).create_infer_request()
    return irrun.load(path).session(), request


def step_both(session, request, feeds: dict, context=""):
    got = session.run(feeds)
    expected = request.infer(feeds)
    for (name, array), exp in zip(got.items(), expected.values()):
        np.testing.assert_allclose(array, np.asarray(exp), rtol=1e-6, atol=1e-6, err_msg=f"{context} output {name}")
    states = {s.name: np.asarray(s.state.data) for s in request.query_state()}
    assert set(session.state) == set(states), context
    for name, value in states.items():
        assert session.state[name].shape == value.shape, f"{context} state {name}"
        np.testing.assert_allclose(session.state[name], value, rtol=1e-6, atol=1e-6, err_msg=f"{context} {name}")
    return got


def accumulator(tmp_path):
    """acc' = acc + x (ReadValue-6 without init: zeros first); y = acc' * 2."""
    x = opset1.parameter([2, 3], np.float32, name="x")
    v = variable("acc", [2, 3])
    total = opset1.add(ov.op.read_value(v), x)
    out = opset1.multiply(total, opset1.constant(np.float32(2)))
    return save(ov.Model([opset1.result(out)], [ov.op.assign(total, v)], [x], "acc"), tmp_path)


def test_accumulator_steps_reset_and_fresh_model_runs(tmp_path):
    path = accumulator(tmp_path)
    session, request = stepper(path)
    rng = np.random.default_rng(0)
    for step in range(4):
        step_both(session, request, {"x": rng.standard_normal((2, 3)).astype(np.float32)}, f"step {step}")
    session.reset_state()
    request.reset_state()
    assert dict(session.state) == {}
    x = rng.standard_normal((2, 3)).astype(np.float32)
    step_both(session, request, {"x": x}, "after reset")
    model = irrun.load(path)
    first = model.run({"x": x})[model.outputs[0].name]
    np.testing.assert_allclose(first, 2 * x, rtol=1e-6)
    np.testing.assert_array_equal(model.run({"x": x})[model.outputs[0].name], first)  # Model.run starts fresh


def test_state_is_a_read_only_view_and_outputs_do_not_alias_it(tmp_path):
    x = opset1.parameter([3], np.float32, name="x")
    v = variable("v", [3])
    read = ov.op.read_value(v)
    total = opset1.add(read, x)
    path = save(ov.Model([opset1.result(total), opset1.result(read)], [ov.op.assign(total, v)], [x], "alias"),
                tmp_path)
    session = irrun.load(path).session()
    out = list(session.run({"x": np.ones(3, np.float32)}).values())
    with pytest.raises(ValueError):
        session.state["v"][0] = 5
    out[0][:] = 100  # the caller owns its outputs: the Assigned one
    np.testing.assert_array_equal(session.state["v"], np.ones(3, np.float32))
    out = list(session.run({"x": np.ones(3, np.float32)}).values())
    np.testing.assert_array_equal(out[0], [2, 2, 2])
    out[1][:] = 100  # and the ReadValue's
    np.testing.assert_array_equal(session.state["v"], [2, 2, 2])


def test_init_subgraph_is_used_only_while_the_variable_is_unset(tmp_path):
    """A seq2seq-style cross state: the init is computed from `enc`; later steps ignore a changed `enc` and
    do not compute the init subgraph at all."""
    x = opset1.parameter([2, 4], np.float32, name="x")
    enc = opset1.parameter([2, 4], np.float32, name="enc")
    init = opset1.multiply(opset1.tanh(enc), opset1.constant(np.float32(3)))
    v = variable("cross", [2, 4])
    cross = ov.op.read_value(init, v)
    out = opset1.add(cross, x)
    path = save(ov.Model([opset1.result(out)], [ov.op.assign(cross, v)], [x, enc], "cross"), tmp_path)
    session, request = stepper(path)
    rng = np.random.default_rng(1)
    for step in range(3):
        feeds = {"x": rng.standard_normal((2, 4)).astype(np.float32),
                 "enc": rng.standard_normal((2, 4)).astype(np.float32)}
        step_both(session, request, feeds, f"step {step}")
        if step == 0:
            expected_state = np.tanh(feeds["enc"]) * 3
    np.testing.assert_allclose(session.state["cross"], expected_state, rtol=1e-6)
    seen = []
    session.run(feeds, observer=lambda node, outputs, seconds: seen.append(node.ref.type))
    assert "Tanh" not in seen and "ReadValue" in seen
    session.reset_state()
    request.reset_state()
    step_both(session, request, feeds, "after reset")


def test_readvalue3_and_assign3(tmp_path):
    x = opset1.parameter([2], np.float32, name="x")
    read = opset3.read_value(x, "v3")
    total = opset1.add(read, opset1.constant(np.array([1, -2], np.float32)))
    path = save(ov.Model([opset1.result(total)], [opset3.assign(total, "v3")], [x], "v3"), tmp_path)
    text = open(path).read()
    assert 'type="ReadValue" version="opset3"' in text and 'type="Assign" version="opset3"' in text
    session, request = stepper(path)
    for step in range(3):
        step_both(session, request, {"x": np.full(2, 5.0 * (step + 1), np.float32)}, f"step {step}")


def test_assign_writes_after_the_step(tmp_path):
    """a' = b, b' = a + x: every ReadValue of a step sees the values from before it."""
    x = opset1.parameter([2], np.float32, name="x")
    va, vb = variable("a", [2]), variable("b", [2])
    ra = ov.op.read_value(opset1.constant(np.array([1, 2], np.float32)), va)
    rb = ov.op.read_value(opset1.constant(np.array([10, 20], np.float32)), vb)
    new_b = opset1.add(ra, x)
    out = opset1.concat([ra, rb], 0)
    path = save(ov.Model([opset1.result(out)], [ov.op.assign(rb, va), ov.op.assign(new_b, vb)], [x], "swap"),
                tmp_path)
    session, request = stepper(path)
    for step in range(4):
        step_both(session, request, {"x": np.array([step, -step], np.float32)}, f"step {step}")


def kv_cache_model(tmp_path, zero="computed", heads=2, dim=4):
    """An optimum-intel-style KV cache: init = a zero-length Broadcast shaped from the input's batch; the
    past is reordered by Gather(beam_idx) and grown by Concat along the sequence axis. `zero`: the init's
    length 0 as a constant ("constant") or computed from the input's shape ("computed")."""
    x = opset1.parameter([-1, heads, -1, dim], np.float32, name="x")
    beam_idx = opset1.parameter([-1], np.int32, name="beam_idx")
    shape = opset3.shape_of(x, "i64")
    batch = opset8.gather(shape, opset1.constant(np.array([0], np.int64)), opset1.constant(np.int64(0)))
    if zero == "constant":
        length = opset1.constant(np.array([0], np.int64))
    else:
        length = opset1.multiply(opset8.gather(shape, opset1.constant(np.array([2], np.int64)),
                                               opset1.constant(np.int64(0))), opset1.constant(np.array([0], np.int64)))
    init_shape = opset1.concat([batch, opset1.constant(np.array([heads], np.int64)), length,
                                opset1.constant(np.array([dim], np.int64))], 0)
    init = opset3.broadcast(opset1.constant(np.float32(0)), init_shape)
    v = variable("past_key", [-1, heads, -1, dim])
    past = opset8.gather(ov.op.read_value(init, v), beam_idx, opset1.constant(np.int64(0)))
    present = opset1.concat([past, opset1.multiply(x, opset1.constant(np.float32(0.5)))], 2)
    score = opset1.reduce_sum(present, opset1.constant(np.array([2, 3], np.int64)), False)
    return save(ov.Model([opset1.result(score)], [ov.op.assign(present, v)], [x, beam_idx], f"kv_{zero}"),
                tmp_path, f"kv_{zero}")


def kv_steps(batch, seed):
    rng = np.random.default_rng(seed)
    orders = [np.arange(batch), rng.permutation(batch), np.array([batch - 1] * batch), rng.permutation(batch)]
    return [{"x": rng.standard_normal((batch, 2, length, 4)).astype(np.float32), "beam_idx": order.astype(np.int32)}
            for length, order in zip([3, 1, 1, 2], orders)]


@pytest.mark.parametrize("batch", [1, 3])
def test_kv_cache_grows_and_beam_idx_reorders(tmp_path, batch):
    session, request = stepper(kv_cache_model(tmp_path))
    steps = kv_steps(batch, batch)
    for index, feeds in enumerate(steps):
        step_both(session, request, feeds, f"step {index}")
    assert session.state["past_key"].shape == (batch, 2, 7, 4)
    # After reset_state the CPU plugin keeps part of the old cache in this pattern (Gather(beam_idx) + Concat);
    # a fresh infer request is the reset state's reference.
    request.reset_state()
    after_reset = next(iter(request.infer(steps[0]).values()))
    session.reset_state()
    _, fresh = stepper(session.model.path)
    got = step_both(session, fresh, steps[0], "after reset")
    assert not np.allclose(next(iter(got.values())), after_reset)


def test_kv_cache_with_a_constant_zero_length_init_departs_from_the_cpu_plugin(tmp_path):
    """The CPU plugin sizes the state from an init whose length is a constant 0 and then refuses to grow it
    (ParameterMismatch on the second step's Assign; on one thread it does not raise and every step's output has
    batch 0); the reference semantics grow it like the computed-0 form, whose CPU results are the expectation
    here."""
    constant = kv_cache_model(tmp_path, "constant")
    request = ov.Core().compile_model(ov.Core().read_model(constant), "CPU", CPU_CONFIG).create_infer_request()
    steps = kv_steps(3, 7)
    if cpu_reports_run_time_errors():
        with pytest.raises(RuntimeError, match="ParameterMismatch|incompatible"):
            for feeds in steps:
                request.infer(feeds)
    else:
        assert all(next(iter(request.infer(feeds).values())).shape[0] == 0 for feeds in steps)
    session = irrun.load(constant).session()
    _, reference = stepper(kv_cache_model(tmp_path, "computed"))
    for index, feeds in enumerate(steps):
        got = next(iter(session.run(feeds).values()))
        np.testing.assert_allclose(got, next(iter(reference.infer(feeds).values())), rtol=1e-6, atol=1e-6,
                                   err_msg=f"step {index}")
        np.testing.assert_allclose(session.state["past_key"], reference.query_state()[0].state.data, rtol=1e-6)


def test_unset_variable_without_init_reads_zeros_with_dynamic_dims_empty(tmp_path):
    """The CPU plugin reads an unset variable of shape [1,?] as zeros [1,0] (the reference evaluate allows only
    static shapes)."""
    x = opset1.parameter([1, -1], np.float32, name="x")
    v = variable("grow", [1, -1])
    grown = opset1.concat([ov.op.read_value(v), x], 1)
    path = save(ov.Model([opset1.result(grown)], [ov.op.assign(grown, v)], [x], "grow"), tmp_path)
    session, request = stepper(path)
    for step in range(3):
        step_both(session, request, {"x": np.full((1, step + 1), step + 1.0, np.float32)}, f"step {step}")


# ---------------------------------------------------------------- defects: checker and runtime


def _defect(tmp_path, edit, name):
    base = accumulator(tmp_path)
    text = edit(open(base).read())
    path = tmp_path / f"{name}.xml"
    path.write_text(text)
    shutil.copy(base.replace(".xml", ".bin"), tmp_path / f"{name}.bin")
    return str(path)


def _layer(text, layer_type):
    return re.search(rf'<layer id="(\d+)"[^>]*type="{layer_type}"', text).group(1)


def _second_assign(text):
    assign = re.search(r'<layer id="\d+"[^>]*type="Assign".*?</layer>', text, re.S).group(0)
    source = re.search(rf'<edge from-layer="(\d+)" from-port="(\d+)" to-layer="{_layer(text, "Assign")}"', text)
    text = text.replace("</layers>", re.sub(r'id="\d+" name="([^"]+)"', r'id="99" name="\1_again"', assign, 1)
                        + "\n</layers>")
    return text.replace("</edges>", f'<edge from-layer="{source.group(1)}" from-port="{source.group(2)}" '
                                    f'to-layer="99" to-port="0" />\n</edges>')


def _drop_assign(text):
    layer = _layer(text, "Assign")
    text = re.sub(rf'<layer id="{layer}".*?</layer>\s*', "", text, flags=re.S)
    return re.sub(rf'<edge [^>]*to-layer="{layer}"[^>]*/>\s*', "", text)


DEFECTS = {
    # name: (edit, rule, severity); OpenVINO's core refuses to read the model, or the CPU plugin to run it
    "assign_unknown_id": (lambda t: t.replace('<data variable_id="acc" />', '<data variable_id="other" />'),
                          "variable.assign", "error"),
    "assign_twice": (_second_assign, "variable.assign.multiple", "error"),
    "read_only": (_drop_assign, "variable.read.only", "warning"),
    "variable_type": (lambda t: t.replace('variable_type="f32"', 'variable_type="i32"'), "variable.type", "error"),
    "variable_shape": (lambda t: t.replace('variable_shape="2,3"', 'variable_shape="2,4"'), "variable.shape", "error"),
}


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_variable_defects_are_reported_by_the_checker_and_refused_by_the_runtime(tmp_path, name):
    edit, rule, severity = DEFECTS[name]
    path = _defect(tmp_path, edit, name)
    report = irrun.check(path)
    assert rule in [d.rule for d in report.diagnostics if d.severity == severity], report.lines()
    try:
        model = ov.Core().read_model(path)
    except RuntimeError:
        model = None  # assign_unknown_id, variable_type, variable_shape
    if model is not None and cpu_reports_run_time_errors():  # on one thread the plugin runs assign_twice and
        with pytest.raises(RuntimeError):                     # read_only (reading uninitialised memory)
            request = ov.Core().compile_model(model, "CPU", CPU_CONFIG).create_infer_request()
            request.infer({"x": np.ones((2, 3), np.float32)})
    if severity == "error":
        with pytest.raises(IRError) as info:
            irrun.load(path).session().run({"x": np.ones((2, 3), np.float32)})
        assert "\n" not in str(info.value)
    else:  # a ReadValue without Assign: reads its initial value (zeros) every run
        session = irrun.load(path).session()
        for _ in range(2):
            out = session.run({"x": np.ones((2, 3), np.float32)})
            np.testing.assert_array_equal(next(iter(out.values())), np.full((2, 3), 2, np.float32))
        assert dict(session.state) == {}


def test_init_that_does_not_fit_the_variable_is_an_error(tmp_path):
    x = opset1.parameter([2], np.float32, name="x")
    read = ov.op.read_value(opset1.constant(np.zeros(2, np.float32)), variable("v", [2]))
    total = opset1.add(read, x)
    base = save(ov.Model([opset1.result(total)], [ov.op.assign(total, variable("v", [2]))], [x], "init"), tmp_path)
    text = open(base).read()
    for new, rule in (('variable_shape="3"', "variable.shape"), ('variable_type="f16"', "variable.type")):
        path = tmp_path / f"{rule}.xml"
        attr = new.split("=")[0]
        path.write_text(re.sub(rf'{attr}="[^"]*"', new, text, count=1))
        shutil.copy(base.replace(".xml", ".bin"), str(path).replace(".xml", ".bin"))
        with pytest.raises(RuntimeError):
            ov.Core().read_model(path)
        assert rule in [r for r, _ in irrun.check(path).rules()]
        with pytest.raises(IRError) as info:
            irrun.load(path)
        assert info.value.rule == rule


def test_variable_of_dynamic_type_and_rank_takes_its_init(tmp_path):
    x = opset1.parameter([2], np.float32, name="x")
    v = variable("v", ov.PartialShape.dynamic(), ov.Type.dynamic)
    total = opset1.add(ov.op.read_value(opset1.constant(np.array([1, 2], np.float32)), v), x)
    path = save(ov.Model([opset1.result(total)], [ov.op.assign(total, v)], [x], "dynamic"), tmp_path)
    assert 'variable_type="dynamic" variable_shape="..."' in open(path).read()
    session, request = stepper(path)
    for step in range(3):
        step_both(session, request, {"x": np.array([step, 1], np.float32)}, f"step {step}")


def test_a_failed_run_changes_no_variable(tmp_path):
    session = irrun.load(accumulator(tmp_path)).session()
    session.run({"x": np.ones((2, 3), np.float32)})
    with pytest.raises(IRError):
        session.run({"x": np.ones((2, 4), np.float32)})
    np.testing.assert_array_equal(session.state["acc"], np.ones((2, 3), np.float32))
    plan = session.model.plan({"x": (2, 3)}, state=session.state)
    assert "variable 'acc' [2,3]" in str(plan) and "read:acc" in str(plan) and "write:acc" in str(plan)
