"""Plans made from a cached plan for a new signature (irrun/replan.py), e.g. every decode step of an LLM whose KV
length grows: the same outputs, bit for bit, as plans built afresh (runtime.PLAN_REUSE = False), with shape
subgraphs whose values change, value-dependent steps, structure changes (built afresh), the budget check of
each step at the new length, observers, the plan cache limit, and rewrites that are not reusable."""
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset3, opset8
from openvino.op.util import Variable, VariableInfo

import irrun
from irrun.engine import plan as plan_module
from irrun.engine import reinfer
from irrun.engine import runtime
from irrun.errors import MemoryBudgetError
from irrun.tools.generate import IrrunDecoder
from irrun.engine.plan import KERNEL, Step
from oracle import run_reference

CORPUS = Path(__file__).parent / "data" / "llm"
# decoders with GQA, MoE routing (value-dependent shapes), learned positions, int4/int8 fused decompression,
# and a seq2seq decoder whose cross-attention K/V state is computed on the first step only
GREEDY = ("llama", "llama_int4_asym", "gpt2_int8_asym", "qwen3_moe", "gemma3_text")
RECORDED = ("llama", "bart", "qwen3_moe", "llama_int4_asym")


def save(model: ov.Model, tmp_path, name="m") -> str:
    path = tmp_path / f"{name}.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return str(path)


def reused_plans(model) -> int:
    return sum(plan.reused for plan in model._plans.values())


def greedy(path, decode_steps: int, fresh: bool, monkeypatch) -> tuple[list, object]:
    """A prefill and `decode_steps` greedy decode steps, twice (state reset between: the second pass meets
    lengths whose plans were evicted); per step the logits and the session's state."""
    monkeypatch.setattr(runtime, "PLAN_REUSE", not fresh)
    model = irrun.load(path)
    decoder = IrrunDecoder(model)
    record, reused = [], 0
    for _ in range(2):
        decoder.reset()
        ids = np.array([[3, 14, 15, 9, 2]])
        for _ in range(decode_steps + 1):
            logits = decoder.step(ids)
            record.append((logits.copy(), {k: v.copy() for k, v in decoder.runner.state.items()}))
            ids = np.array([[int(np.argmax(logits))]])
            reused = max(reused, reused_plans(model))
    return record, (model, reused)


def assert_identical(a: list, b: list) -> None:
    assert len(a) == len(b)
    for step, ((logits_a, state_a), (logits_b, state_b)) in enumerate(zip(a, b)):
        assert logits_a.dtype == logits_b.dtype and np.array_equal(logits_a, logits_b), f"step {step}"
        assert state_a.keys() == state_b.keys()
        for name in state_a:
            assert np.array_equal(state_a[name], state_b[name]), f"step {step} state {name}"


@pytest.mark.parametrize("folder", GREEDY)
def test_decoding_many_steps_gives_the_same_bits_with_reused_and_fresh_plans(folder, monkeypatch):
    path = CORPUS / folder / "openvino_model.xml"
    steps = runtime.PLAN_CACHE_SIZE + 4
    reused, (model, count) = greedy(path, steps, False, monkeypatch)
    fresh, (_, fresh_count) = greedy(path, steps, True, monkeypatch)
    assert count > 0 and fresh_count == 0
    assert_identical(reused, fresh)
    assert len(model._plans) == runtime.PLAN_CACHE_SIZE  # the cache limit holds for reused plans


@pytest.mark.parametrize("folder", RECORDED)
def test_recorded_scenarios_match_openvino_and_fresh_plans(folder, monkeypatch):
    """The corpus' recorded steps (batch 2 with beam_idx reorders, a seq2seq decoder fed its encoder's
    states): reused plans against OpenVINO's logits and bit for bit against fresh plans."""
    directory = CORPUS / folder
    xml = directory / ("openvino_decoder_model.xml" if (directory / "openvino_decoder_model.xml").exists()
                       else "openvino_model.xml")
    steps = np.load(directory / "steps.npz")
    runs = {}
    for fresh in (False, True):
        monkeypatch.setattr(runtime, "PLAN_REUSE", not fresh)
        session = irrun.load(xml).session()
        runs[fresh] = []
        for scenario in ("b1", "b2"):
            session.reset_state()
            for step in range(int(steps[f"{scenario}/steps"])):
                prefix = f"{scenario}/{step}/"
                feeds = {k[len(prefix):]: steps[k] for k in steps.files
                         if k.startswith(prefix) and not k.endswith("/logits")}
                logits = session.run(feeds)["logits"]
                np.testing.assert_allclose(logits, steps[prefix + "logits"], rtol=1e-4, atol=1e-5)
                runs[fresh].append((logits, dict(session.state)))
        if not fresh:
            assert reused_plans(session.model) > 0
    assert_identical(runs[False], runs[True])


def shapes_model(tmp_path) -> str:
    """Shape arithmetic on a dynamic input (ShapeOf -> Gather -> Concat -> Reshape, a Broadcast to a computed
    shape), a value-dependent step (NonZero) and a Reshape to a shape computed from an input's values."""
    x = opset1.parameter([-1, -1], np.float32, name="x")
    target = opset1.parameter([2], np.int64, name="target")
    shape = opset3.shape_of(x, "i64")
    rows = opset8.gather(shape, opset1.constant(np.array([1], np.int64)), opset1.constant(np.int64(0)))
    flat = opset1.reshape(opset1.relu(x), opset1.concat([rows, opset1.constant(np.array([-1], np.int64))], 0), False)
    ones = opset3.broadcast(opset1.constant(np.float32(1.5)), shape)
    summed = opset1.add(x, ones)
    nz = opset3.non_zero(opset1.relu(x), "i64")
    by_value = opset1.reshape(opset1.negative(x), target, False)
    return save(ov.Model([opset1.result(flat), opset1.result(summed), opset1.result(nz), opset1.result(by_value)],
                         [x, target], "shapes"), tmp_path)


def test_dynamic_shapes_and_value_dependent_steps_with_reused_plans(tmp_path, monkeypatch):
    path = shapes_model(tmp_path)
    cases = [(rows, cols) for rows in (1, 2, 3) for cols in (4, 6, 1, 12)]
    outputs = {}
    for fresh in (False, True):
        rng = np.random.default_rng(5)
        monkeypatch.setattr(runtime, "PLAN_REUSE", not fresh)
        model = irrun.load(path)
        outputs[fresh] = []
        for rows, cols in cases:
            x = rng.standard_normal((rows, cols)).astype(np.float32)
            target = np.array([cols, rows], np.int64)
            got = list(model.run([x, target]).values())
            for a, b in zip(got, run_reference(ov.Core().read_model(path), [x, target])):
                np.testing.assert_array_equal(a, b)
            outputs[fresh].append(got)
            plan = model.plan({"x": (rows, cols), "target": (2,)})
            assert plan.reused == (not fresh and (rows, cols) != cases[0])
            assert not plan.static  # NonZero and the Reshape by value are inferred at run time
    for a, b in zip(outputs[False], outputs[True]):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and np.array_equal(x, y)


def test_a_structure_change_builds_the_plan_afresh(tmp_path, monkeypatch):
    """A Broadcast to ShapeOf(x) is computed while planning while small, a kernel step when large: the
    reused plan would differ in structure, so that plan is built from scratch."""
    monkeypatch.setattr(runtime, "FOLD_LIMIT", 64)
    x = opset1.parameter([-1], np.float32, name="x")
    ones = opset3.broadcast(opset1.constant(np.float32(2)), opset3.shape_of(x, "i64"))
    path = save(ov.Model([opset1.result(opset1.multiply(x, ones))], [x], "grow"), tmp_path)
    model = irrun.load(path)
    for length, reused in ((4, False), (8, True), (32, False), (33, True), (3, False)):
        data = np.arange(length, dtype=np.float32)
        np.testing.assert_array_equal(next(iter(model.run([data]).values())), 2 * data)
        plan = model.plan([(length,)])
        assert plan.reused == reused, length
        kinds = {s.node.ref.type: s.kind for s in plan.steps}
        assert kinds["Broadcast"] == ("constant" if length * 4 <= 64 else KERNEL)


def kv_model(tmp_path) -> str:
    """A KV-cache-like variable: cache' = Concat(cache, x) on axis 1; y = cache' * 2."""
    info = VariableInfo()
    info.variable_id, info.data_shape, info.data_type = "kv", ov.PartialShape([1, -1, 256]), ov.Type.f32
    var = Variable(info)
    x = opset1.parameter([1, -1, 256], np.float32, name="x")
    init = opset3.broadcast(opset1.constant(np.float32(0)), opset1.constant(np.array([1, 0, 256], np.int64)))
    cache = opset1.concat([ov.op.read_value(init, var), x], 1)
    out = opset1.multiply(cache, opset1.constant(np.float32(2)))
    return save(ov.Model([opset1.result(out)], [ov.op.assign(cache, var)], [x], "kv"), tmp_path)


def test_the_budget_is_checked_for_each_reused_plan_at_its_new_length(tmp_path, monkeypatch):
    path = kv_model(tmp_path)
    x = np.ones((1, 1, 256), np.float32)
    failed = {}
    for fresh in (False, True):
        monkeypatch.setattr(runtime, "PLAN_REUSE", not fresh)
        model = irrun.load(path, max_memory=40 << 10)
        session = model.session()
        for step in range(40):
            try:
                out = session.run({"x": x + step})
            except MemoryBudgetError as exc:
                failed[fresh] = (step, str(exc))
                break
            expected = 2 * np.arange(1, step + 2, dtype=np.float32)
            np.testing.assert_array_equal(out[model.outputs[0].name][0, :, 0], expected)
        if not fresh:
            assert reused_plans(model) > 0
    assert failed[False] == failed[True] and failed[False][0] > 3
    assert "memory budget" in failed[False][1]


def test_observers_see_every_layer_of_a_reused_plan(tmp_path, monkeypatch):
    path = kv_model(tmp_path)
    seen = {}
    for fresh in (False, True):
        monkeypatch.setattr(runtime, "PLAN_REUSE", not fresh)
        session = irrun.load(path).session()
        seen[fresh] = []
        for step in range(4):
            session.run({"x": np.full((1, 2, 256), step, np.float32)},
                        observer=lambda node, outputs, _, shown=seen[fresh]: shown.append(
                            (node.ref.name, [None if a is None else a.copy() for a in outputs])))
        if not fresh:
            assert reused_plans(session.model) > 0
    assert [name for name, _ in seen[False]] == [name for name, _ in seen[True]]
    for (_, a), (_, b) in zip(seen[False], seen[True]):
        assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def test_a_rewrite_that_is_not_reusable_turns_reuse_off(tmp_path):
    x = opset1.parameter([-1, 4], np.float32, name="x")
    path = save(ov.Model([opset1.result(opset1.negative(opset1.relu(x)))], [x], "chain"), tmp_path)

    def fuse(plan):
        relu = next(s for s in plan.steps if s.kind == KERNEL and s.node.ref.type == "Relu")
        (neg,) = plan.readers(relu.outputs[0])
        plan.replace([relu, neg], Step(KERNEL, neg.node, relu.inputs, neg.outputs, relu.in_infos, neg.out_infos,
                                       kernel=lambda arrays, ii, oi: [-np.maximum(arrays[0], 0)]))

    plan_module.REWRITES.append(fuse)
    try:
        model = irrun.load(path)
        for rows in (1, 2, 3):
            data = np.linspace(-1, 1, 4 * rows, dtype=np.float32).reshape(rows, 4)
            np.testing.assert_array_equal(next(iter(model.run([data]).values())), -np.maximum(data, 0))
            assert not model.plan([(rows, 4)]).reused and model.plan([(rows, 4)]).template is None
    finally:
        plan_module.REWRITES.remove(fuse)


@pytest.mark.parametrize("folder", ("llama_int4_asym", "qwen3_moe"))
def test_reused_plans_finish_as_fresh_finishing_would(folder):
    """A reused plan takes its freeing points, sizes and in-place flags over from the plan it was made from
    (Plan.finish's `like`); finishing it again without that gives the same figures and flags."""
    model = irrun.load(CORPUS / folder / "openvino_model.xml")
    decoder = IrrunDecoder(model)
    ids = np.array([[3, 14, 15, 9, 2]])
    for _ in range(4):
        ids = np.array([[int(np.argmax(decoder.step(ids)))]])
    plans = [plan for plan in model._plans.values() if plan.reused]
    assert plans
    for plan in plans:
        taken = [(s.frees, s.inplace, s.inplace_port, s.live, s.out_bytes) for s in plan.steps]
        figures = (plan.peak, plan.sizes, plan.kept)
        plan.finish(set(plan.outputs), model.budget.limit, model._check_planned, held=plan.held)
        assert [(s.frees, s.inplace, s.inplace_port, s.live, s.out_bytes) for s in plan.steps] == taken
        assert (plan.peak, plan.sizes, plan.kept) == figures
        assert any(s.inplace for s in plan.steps)


def test_a_reused_plan_keeps_what_run_time_inference_learned(monkeypatch):
    """A dynamic step learns at its first run whether its output shapes follow from its input shapes alone
    (engine/reinfer.py: one inference with the values, one without). A plan reused for the next KV length keeps
    that for every step whose input infos it keeps: an MoE decoder's expert blocks (shapes from the routing's
    NonZero) learned it again at every decode step, two inferences each, half of a 64-expert model's step."""
    model = irrun.load(CORPUS / "qwen3_moe" / "openvino_model.xml")
    decoder = IrrunDecoder(model)
    learned = []
    original = reinfer._shape_only

    def shape_only(model, step, *args):
        learned.append(step.node.ref.name)
        return original(model, step, *args)
    monkeypatch.setattr(reinfer, "_shape_only", shape_only)
    ids = np.array([[3, 14, 15, 9, 2]])
    for step in range(5):
        learned.clear()
        logits = decoder.step(ids)
        ids = np.array([[int(np.argmax(logits))]])
        if step == 1:
            assert learned  # the first decode step's plan is built afresh: its dynamic steps learn
    assert reused_plans(model) >= 3 and learned == []
