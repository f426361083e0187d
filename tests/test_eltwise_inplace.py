"""Issue 11 (eltwise): activations written with `out=` and in cache blocks, against their plain formulas
(the earlier kernels, bit for bit) on random data and corners; and in-place execution (irrun/inplace.py):
bit-identical outputs with and without it, caller arrays and constants never written."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset3, opset4, opset5, opset7, opset8
from oracle import build, run_irrun, run_reference
from test_models import MODELS, model_inputs

import irrun
from irrun.engine import inplace
from irrun.ir.types import ELEMENT_TYPES
from irrun.ops import activation, fastmath
from irrun.ops.registry import REGISTRY, Context, TensorInfo

CORNERS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-38, -1e-38, 3e38, -3e38, 88.7, -88.7,
           89.0, -104.0, 20.0, -20.0, -3.0, 3.0, 1.0, -1.0]


def data(dtype, size=70001, seed=0):
    """Random values over several scales with the corners spread through (also in a block's tail)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(size) * rng.choice([0.01, 1.0, 4.0, 30.0], size)
    x[rng.integers(0, size, 400)] = rng.choice(CORNERS, 400)
    x[-len(CORNERS):] = CORNERS
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def make_op(op_type, version, attrs, infos):
    cls = REGISTRY[(op_type, version)]
    values = {name: attr.default for name, attr in cls.attributes.items()}
    values.update(attrs)
    op = cls(values, Context())
    return op, op.infer(infos)


def run(op_type, version, attrs, arrays, et):
    infos = [TensorInfo(a.shape, ELEMENT_TYPES[et]) for a in arrays]
    op, out_infos = make_op(op_type, version, attrs, infos)
    with np.errstate(all="ignore"):
        result = op.run(arrays, infos, out_infos)[0]
    if op.can_run_into(infos, out_infos):  # the in-place form gives the same bits, into its input
        buffer = arrays[0].copy()
        with np.errstate(all="ignore"):
            into = op.run_into([buffer] + list(arrays[1:]), infos, out_infos, buffer)[0]
        assert into is buffer
        np.testing.assert_array_equal(bits(into), bits(result))
    return result


# the earlier kernels, the definitions the faster ones must equal bit for bit (in the work type)
def relu_bits(x):
    bits = np.dtype(f"i{x.dtype.itemsize}")
    keep = (x < 0).view(np.int8).astype(bits) - 1
    return (x.view(bits) & keep).view(x.dtype)


def sigmoid(x):
    one = x.dtype.type(1)
    return one / (np.exp(-x) + one)


def swish(x, beta):
    return x / (np.exp(x * -beta) + x.dtype.type(1))


def hsigmoid(x):
    return np.clip(x + x.dtype.type(3), x.dtype.type(0), x.dtype.type(6)) / x.dtype.type(6)


def hswish(x):
    return np.clip(x + x.dtype.type(3), x.dtype.type(0), x.dtype.type(6)) * x / x.dtype.type(6)


def mish(x):
    return np.tanh(np.log(np.exp(x) + x.dtype.type(1))) * x


PLAIN = {
    "Relu": (1, {}, relu_bits), "Sigmoid": (1, {}, sigmoid), "HSigmoid": (5, {}, hsigmoid),
    "HSwish": (4, {}, hswish), "Mish": (4, {}, mish), "Exp": (1, {}, np.exp), "Tanh": (1, {}, np.tanh),
    "Sqrt": (1, {}, np.sqrt), "Log": (1, {}, np.log), "Abs": (1, {}, np.abs), "Negative": (1, {}, np.negative),
    "Sin": (1, {}, np.sin), "Cos": (1, {}, np.cos),
    "Swish": (4, {}, lambda x: swish(x, x.dtype.type(1))),
    "Clamp": (1, {"min": -0.5, "max": 6.0}, lambda x: np.clip(x, x.dtype.type(-0.5), x.dtype.type(6))),
}


def same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(bits(got), bits(want))


def bits(array):
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


@pytest.mark.parametrize("name", sorted(PLAIN))
@pytest.mark.parametrize("et", ["f32", "f64", "f16"])
def test_activation_equals_its_plain_formula(name, et):
    version, attrs, plain = PLAIN[name]
    storage = ELEMENT_TYPES[et].storage
    x = data(storage, seed=len(name))
    work = x.astype(np.float32) if et == "f16" else x
    with np.errstate(all="ignore"):
        want = plain(work).astype(storage)
    same_bits(run(name, version, attrs, [x], et), want)
    strided = x[:70000].reshape(-1, 7)[:, ::2]  # not contiguous: no in-place, a new array
    with np.errstate(all="ignore"):
        same_bits(run(name, version, attrs, [strided], et), plain(work[:70000].reshape(-1, 7)[:, ::2]).astype(storage))
    empty = np.zeros((0, 5), storage)
    assert run(name, version, attrs, [empty], et).shape == (0, 5)


@pytest.mark.parametrize("beta", [0.5, -2.0, 0.0])
def test_swish_with_beta(beta):
    x = data(np.float32, seed=3)
    b = np.array(beta, np.float32)
    with np.errstate(all="ignore"):
        same_bits(run("Swish", 4, {}, [x, b], "f32"), swish(x, b))


def softmax_whole(x, axis, log):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    if log:
        return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape, axis", [((3, 700, 197), -1), ((2, 5, 40000), 2), ((4, 9, 6), 1), ((7,), 0),
                                         ((3, 0), -1), ((6, 70000), 0)])
def test_softmax_in_row_blocks_equals_the_whole_array_form(shape, axis, log, monkeypatch):
    monkeypatch.setattr(activation, "ROWS_BLOCK", 1000)
    rng = np.random.default_rng(len(shape) + axis)
    x = (rng.standard_normal(shape) * 5).astype(np.float32)
    if x.size:
        x.reshape(-1)[rng.integers(0, x.size, 5)] = [np.inf, -np.inf, np.nan, -0.0, 80.0]
    op_type, version = ("LogSoftmax", 5) if log else ("Softmax", 8)
    got = run(op_type, version, {"axis": axis}, [x], "f32")
    if x.size == 0:  # (the whole-array form fails on an empty axis)
        assert got.shape == x.shape
        return
    with np.errstate(all="ignore"):
        same_bits(got, softmax_whole(x, axis, log))


@pytest.mark.parametrize("mode", ["erf", "tanh"])
def test_gelu_and_erf_into_their_input(mode):
    x = data(np.float32, size=2 * fastmath.BLOCK + 11, seed=5)
    same_bits(run("Gelu", 7, {"approximation_mode": mode}, [x], "f32"),
              activation.gelu_tanh_f32(x) if mode == "tanh" else fastmath.gelu_erf_f32(x))
    same_bits(run("Erf", 1, {}, [x], "f32"), fastmath.erf_f32(x))


def test_chunked_blocks_any_length():
    for size in (0, 1, 5, 100, 1001):
        x = data(np.float32, size=max(size, len(CORNERS)), seed=size)[:size]
        out = fastmath.chunked(activation._hswish_block, x, np.empty_like(x), block=64)
        with np.errstate(all="ignore"):
            same_bits(out, hswish(x))


# ------------------------------------------------------------------ in-place execution

def save(model: ov.Model, tmp_path: Path, name="m") -> str:
    path = tmp_path / f"{name}.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return str(path)


def both_ways(path, feeds, monkeypatch):
    """Outputs with in-place execution (twice, from one model) and without; the plan's in-place steps."""
    model = irrun.load(path)
    first, second = model.run(feeds), model.run(feeds)
    shapes = {k: np.shape(v) for k, v in feeds.items()} if isinstance(feeds, dict) else [np.shape(f) for f in feeds]
    steps = [s for s in model.plan(shapes).steps if s.inplace]
    monkeypatch.setattr(inplace, "ENABLED", False)
    plain = irrun.load(path).run(feeds)
    monkeypatch.setattr(inplace, "ENABLED", True)
    for name in plain:
        same_bits(first[name], plain[name])
        same_bits(second[name], plain[name])
    return first, steps


def test_chain_runs_in_place_and_matches_the_reference(tmp_path, monkeypatch):
    x = opset1.parameter([2, 3, 50], np.float32, name="x")
    scale = opset1.constant(np.linspace(-3, 3, 50, dtype=np.float32))
    node = opset1.multiply(x, scale)
    node = opset4.swish(opset1.relu(opset4.hswish(opset1.sigmoid(node))))
    node = opset8.softmax(opset7.gelu(node, "tanh"), -1)
    path = save(ov.Model([opset1.result(node)], [x], "chain"), tmp_path)
    feed = np.random.default_rng(0).standard_normal((2, 3, 50)).astype(np.float32)
    kept = feed.copy()
    calls = []
    original = inplace.owned_by_run
    monkeypatch.setattr(inplace, "owned_by_run", lambda values, slot: calls.append(original(values, slot)) or
                        calls[-1])
    outputs, steps = both_ways(path, [feed], monkeypatch)
    assert [s.node.ref.type for s in steps] == ["Sigmoid", "HSwish", "Relu", "Swish", "Gelu", "Softmax"]
    assert calls and all(calls)  # every candidate ran in place
    same_bits(feed, kept)
    want = run_reference(ov.Core().read_model(path), [feed])[0]
    np.testing.assert_allclose(next(iter(outputs.values())), want, rtol=1e-5, atol=1e-6)
    assert " inplace" in str(irrun.load(path).plan([(2, 3, 50)]))


def test_caller_arrays_are_never_written(tmp_path, monkeypatch):
    # Relu of the input itself, of a Reshape (a view of the caller's array) and of an input that is
    # also an output
    x = opset1.parameter([4, 6], np.float32, name="x")
    shape = opset1.constant(np.array([6, 4], np.int64))
    viewed = opset1.relu(opset1.reshape(x, shape, False))
    outputs = [opset1.result(opset1.relu(x)), opset1.result(opset1.sigmoid(viewed)), opset1.result(x)]
    path = save(ov.Model(outputs, [x], "views"), tmp_path)
    feed = np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6)
    kept = feed.copy()
    outputs, _ = both_ways(path, [feed], monkeypatch)
    same_bits(feed, kept)
    got = list(outputs.values())
    same_bits(got[0], np.maximum(kept, 0))
    same_bits(got[2], kept)


def test_constants_are_never_written(tmp_path, monkeypatch):
    # a Reshape of a constant too big to fold while planning, to a shape known only then: its output is a
    # view of the constant that a Relu reads last
    n = 300_000
    x = opset1.parameter([-1], np.float32, name="x")
    table = np.linspace(-1, 1, n, dtype=np.float32)
    viewed = opset1.reshape(opset1.constant(table), opset3.shape_of(x), False)
    node = opset1.add(opset1.relu(viewed), x)
    path = save(ov.Model([opset1.result(node)], [x], "const"), tmp_path)
    feed = np.zeros(n, np.float32)
    model = irrun.load(path)
    for _ in range(3):
        got = next(iter(model.run([feed]).values()))
        same_bits(got, np.maximum(table, 0))
    plan = model.plan([(n,)])
    relu = next(s for s in plan.steps if s.node.ref.type == "Relu")
    assert relu.inplace  # a candidate by the plan, refused at run time: the constant holds the memory
    same_bits(plan.initial[next(s for s in plan.steps if s.kind == "constant").outputs[0]], table)


def test_ownership_check():
    values = [np.zeros(4, np.float32)]
    assert inplace.owned_by_run(values, 0)
    held = np.zeros(4, np.float32)
    values = [held]
    assert not inplace.owned_by_run(values, 0)  # the caller holds it
    values = [np.zeros((2, 2)).reshape(4)]
    assert inplace.owned_by_run(values, 0)  # the only view of a private array
    base = np.zeros((2, 2))
    values = [base.reshape(4)]
    assert not inplace.owned_by_run(values, 0)
    values = [np.zeros(4)]
    values.append(values[0])  # two slots, one array
    assert not inplace.owned_by_run(values, 0)
    values = [np.frombuffer(bytearray(16), np.float32)]  # memory owned by another object
    assert not inplace.owned_by_run(values, 0)
    frozen = np.zeros(4)
    frozen.flags.writeable = False
    values = [frozen]
    del frozen
    assert not inplace.owned_by_run(values, 0)
    values = [np.zeros((4, 4))[:, ::2].copy().T]  # not C-contiguous
    assert not inplace.owned_by_run(values, 0)


def test_observers_see_every_layer_as_its_own_array(tmp_path):
    x = opset1.parameter([3, 5], np.float32, name="x")
    node = opset1.sigmoid(opset1.relu(opset1.multiply(x, opset1.constant(np.float32(2)))))
    path = save(ov.Model([opset1.result(node)], [x], "obs"), tmp_path)
    feed = np.linspace(-2, 2, 15, dtype=np.float32).reshape(3, 5)
    seen = {}
    model = irrun.load(path)
    model.run([feed], observer=lambda node, outputs, _: seen.update({node.ref.type: [o.copy() for o in outputs]}))
    same_bits(seen["Multiply"][0], feed * 2)
    same_bits(seen["Relu"][0], np.maximum(feed * 2, 0))


SHIPPED = [m for m in MODELS if not m.name.startswith("maxpool_example")]


@pytest.mark.parametrize("model_dir", SHIPPED, ids=lambda p: p.name)
def test_shipped_models_bit_identical_with_and_without_in_place(model_dir, monkeypatch):
    feeds = model_inputs(model_dir)
    kept = {k: v.copy() for k, v in feeds.items()}
    both_ways(model_dir / "model.xml", feeds, monkeypatch)
    for name, array in feeds.items():
        same_bits(array, kept[name])


def test_oracle_activations_in_place_chain(tmp_path):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((2, 8, 33)) * 3).astype(np.float32)
    built = build(lambda p: opset4.mish(opset1.clamp(opset5.hsigmoid(opset1.multiply(
        p["x"], opset1.constant(np.float32(1.5)))), 0.1, 0.9)), {"x": x}, tmp_path)
    got = next(iter(run_irrun(built).values()))
    np.testing.assert_allclose(got, run_reference(built)[0], rtol=1e-6, atol=1e-7)


def mvn_whole(x, axes, normalize_variance, eps, inside_sqrt):
    """The earlier MVN kernel."""
    work = x.astype(np.float32) if x.dtype.itemsize < 4 else x
    centred = work - np.mean(work, axis=axes, keepdims=True, dtype=work.dtype)
    if normalize_variance:
        variance = np.mean(centred * centred, axis=axes, keepdims=True, dtype=work.dtype)
        eps = work.dtype.type(eps)
        divisor = np.sqrt(variance + eps) if inside_sqrt else np.sqrt(variance) + eps
        centred = centred / divisor
    return centred.astype(x.dtype, copy=False)


@pytest.mark.parametrize("et", ["f32", "f64", "f16"])
@pytest.mark.parametrize("shape, axes", [((2, 300, 96), (-1,)), ((5, 4, 7, 9), (2, 3)), ((3, 5000), (1,)),
                                         ((6, 7), (0,)), ((9,), (0,)), ((2, 3, 4), (0, 1, 2)), ((2, 0, 4), (-1,))])
def test_mvn_equals_the_whole_array_form(et, shape, axes, monkeypatch):
    from irrun.ops import normalization
    monkeypatch.setattr(normalization, "ROWS_BLOCK", 500)
    monkeypatch.setattr(normalization, "EINSUM_ROW", 0)  # rows summed by np.mean (einsum rows: below)
    storage = ELEMENT_TYPES[et].storage
    rng = np.random.default_rng(len(shape))
    x = (rng.standard_normal(shape) * 3 + 1).astype(storage)
    if x.size:
        x.reshape(-1)[rng.integers(0, x.size, 3)] = [np.nan, np.inf, -0.0]
    axes_array = np.array(axes, np.int64)
    infos = [TensorInfo(shape, ELEMENT_TYPES[et]), TensorInfo((len(axes),), ELEMENT_TYPES["i64"], axes_array)]
    normalized = tuple(sorted(a % len(shape) for a in axes))
    for variance, eps_mode in [(True, "inside_sqrt"), (True, "outside_sqrt"), (False, "inside_sqrt")]:
        attrs = {"normalize_variance": variance, "eps": 1e-5, "eps_mode": eps_mode}
        with np.errstate(all="ignore"):
            want = mvn_whole(x, normalized, variance, 1e-5, eps_mode == "inside_sqrt")
        op, out_infos = make_op("MVN", 6, attrs, infos)
        with np.errstate(all="ignore"):
            same_bits(op.run([x, axes_array], infos, out_infos)[0], want)
            if op.can_run_into(infos, out_infos):
                buffer = x.copy()
                same_bits(op.run_into([buffer, axes_array], infos, out_infos, buffer)[0], want)


@pytest.mark.parametrize("et", ["f32", "f64", "f16"])
@pytest.mark.parametrize("shape", [(2, 300, 96), (700, 40), (5, 1024), (1, 7), (4, 0)])
def test_mvn_rows_by_einsum(et, shape, monkeypatch):
    """Rows summed by einsum: close to the np.mean form, and each row's bits independent of the blocks of
    rows (and of in place or not)."""
    from irrun.ops import normalization
    storage = ELEMENT_TYPES[et].storage
    rng = np.random.default_rng(shape[-1])
    x = (rng.standard_normal(shape) * 3 + 1).astype(storage)
    if x.size:
        x.reshape(-1)[rng.integers(0, x.size, 3)] = [np.nan, np.inf, -0.0]
        x.reshape(-1, shape[-1])[-1] = 2.5  # a constant row: variance 0
    axes = np.array([-1], np.int64)
    infos = [TensorInfo(shape, ELEMENT_TYPES[et]), TensorInfo((1,), ELEMENT_TYPES["i64"], axes)]
    for variance, eps_mode in [(True, "inside_sqrt"), (True, "outside_sqrt"), (False, "inside_sqrt")]:
        op, out_infos = make_op("MVN", 6, {"normalize_variance": variance, "eps": 1e-5, "eps_mode": eps_mode},
                                infos)
        with np.errstate(all="ignore"):
            want = mvn_whole(x, (len(shape) - 1,), variance, 1e-5, eps_mode == "inside_sqrt")
            whole = op.run([x, axes], infos, out_infos)[0]
            monkeypatch.setattr(normalization, "ROWS_BLOCK", 500)
            blocked = op.run([x, axes], infos, out_infos)[0]
            if op.can_run_into(infos, out_infos):
                buffer = x.copy()
                same_bits(op.run_into([buffer, axes], infos, out_infos, buffer)[0], whole)
            monkeypatch.undo()
        same_bits(blocked, whole)
        tolerance = 2e-3 if et == "f16" else 2e-5
        np.testing.assert_allclose(whole.astype(np.float64), want.astype(np.float64), rtol=tolerance, atol=tolerance)


def test_binary_ops_write_into_either_operand(tmp_path, monkeypatch):
    x = opset1.parameter([2, 3, 8], np.float32, name="x")
    r = opset1.relu(x)
    s = opset1.subtract(x, r)                                                  # r dies: into operand 1
    m = opset1.multiply(s, opset1.reduce_mean(s, opset1.constant(np.int64([-1])), True))  # s dies: operand 0
    d = opset1.divide(x, m)                                                    # m dies: operand 1
    out = opset1.add(d, opset1.constant(np.float32([1.5])))                    # d dies: operand 0
    path = save(ov.Model([opset1.result(out)], [x], "binary"), tmp_path)
    feed = (np.random.default_rng(2).standard_normal((2, 3, 8)) * 2).astype(np.float32)
    feed[0, 0, :3] = [np.nan, -0.0, np.inf]
    kept = feed.copy()
    outputs, steps = both_ways(path, [feed], monkeypatch)
    assert [(s.node.ref.type, s.inplace_port) for s in steps] == [
        ("Subtract", 1), ("Multiply", 0), ("Divide", 1), ("Add", 0)]
    same_bits(feed, kept)
    want = run_reference(ov.Core().read_model(path), [feed])[0]
    np.testing.assert_allclose(next(iter(outputs.values())), want, rtol=1e-6, atol=1e-6)


def test_a_step_running_a_kernel_of_its_own_is_not_run_in_place(tmp_path):
    x = opset1.parameter([3, 5], np.float32, name="x")
    node = opset1.relu(opset1.multiply(x, opset1.constant(np.float32(2))))
    model = irrun.load(save(ov.Model([opset1.result(node)], [x], "fused"), tmp_path))
    plan = model.plan([(3, 5)])
    relu = next(s for s in plan.steps if s.node.ref.type == "Relu")
    kept = set(plan.outputs) | {i for i, v in enumerate(plan.initial) if v is not None}
    assert relu.inplace
    relu.kernel = lambda arrays, in_infos, out_infos: [np.abs(arrays[0])]  # e.g. a fused step (plan rewrite)
    inplace.mark(plan, kept)
    assert not relu.inplace


def test_softmax_of_an_empty_tensor_is_empty_like_the_reference(tmp_path):
    x = np.zeros((3, 0), np.float32)
    built = build(lambda p: opset8.softmax(p["x"], -1), {"x": x}, tmp_path)
    want = run_reference(built)[0]
    got = next(iter(run_irrun(built).values()))
    assert got.shape == want.shape == (3, 0) and got.dtype == want.dtype


@pytest.mark.parametrize("fraction", [0.0, 0.002, 0.2, 0.7, 1.0])
def test_erf_and_gelu_far_branch_on_gathered_elements_equals_the_whole_block(fraction, monkeypatch):
    rng = np.random.default_rng(int(fraction * 1000))
    x = rng.uniform(-1, 1, 3 * fastmath.BLOCK + 5).astype(np.float32)
    far = rng.random(x.size) < fraction
    x[far] = (rng.standard_normal(far.sum()) * 6).astype(np.float32)
    x[rng.integers(0, x.size, len(CORNERS))] = CORNERS
    results = {}
    for mode, threshold in [("gathered", 1.0), ("whole", -1.0)]:
        monkeypatch.setattr(fastmath, "ERF_GATHER", threshold)
        monkeypatch.setattr(fastmath, "GELU_GATHER", threshold)
        results[mode] = fastmath.gelu_erf_f32(x), fastmath.erf_f32(x)
    for gathered, whole in zip(results["gathered"], results["whole"]):
        same_bits(gathered, whole)
