"""irrun vs OpenVINO: RNNSequence-5, GRUSequence-5, LSTMSequence-5, ScaledDotProductAttention-13.

OpenVINO 2026.4 has no reference evaluate() for these ops (Node.evaluate returns False), so the CPU
plugin at f32 inference precision is the oracle. Its semantics were checked against the reference
kernels' sources (src/core/reference/include/openvino/reference/{sequences,gru_cell,lstm_cell}.hpp and
the ScaledDotProductAttention spec pseudo-code): gate order z, r, h (GRU) and f, i, c, o (LSTM), clip
before the activations, zero outputs past each sequence length, reverse within each sequence length.

Tolerances: f32 within 1e-5 absolute (values are O(1) after sigmoid/tanh/softmax; the CPU plugin uses
its own exp/tanh approximations and summation order, measured differences stay below 1e-6); relu
activations can grow values, so sequences with relu compare with 1e-5 relative as well; f16 within
2e-3 plus one f16 ulp (both sides compute in f32 and round once, the CPU plugin's internal f16
conversions of weights cost up to a couple of ulps).
"""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset5, opset13

import irrun
import oracle as O
from oracle import assert_same, build, run_cpu, run_cpu_many, run_irrun


def describe(cfg):
    return ", ".join(f"{k}={v}" for k, v in cfg.items())


# =========================================================================== sequences

GATES = {"rnn": 1, "gru": 3, "lstm": 4}
ACTIVATION_COUNT = {"rnn": 1, "gru": 2, "lstm": 3}


def gen_sequence(rng, kind, i):
    batch, steps, inputs, hidden = (int(v) for v in (rng.integers(1, 4), rng.integers(1, 6), rng.integers(1, 5),
                                                     rng.integers(1, 5)))
    direction = ("forward", "reverse", "bidirectional")[i % 3]
    d = 2 if direction == "bidirectional" else 1
    lbr = bool(rng.integers(0, 2)) if kind == "gru" else False
    acts = None
    if rng.random() < 0.5:
        acts = [("sigmoid", "tanh", "relu")[int(rng.integers(0, 3))] for _ in range(ACTIVATION_COUNT[kind])]
    dtype = np.dtype(np.float16 if i % 5 == 4 else np.float32)
    g = GATES[kind]
    lengths = (rng.integers(0, steps + 1, batch) if rng.random() < 0.6 else np.full(batch, steps))
    cfg = dict(kind=kind, batch=batch, steps=steps, input_size=inputs, hidden=hidden, direction=direction,
               linear_before_reset=lbr, clip=float(rng.choice([0.0, 0.0, 0.5, 2.0])), activations=acts,
               dtype=dtype.name, seq_lengths=lengths.tolist(), lengths_type=("int32", "int64")[i % 2])
    arrays = dict(
        x=rng.standard_normal((batch, steps, inputs)).astype(dtype),
        h=rng.standard_normal((batch, d, hidden)).astype(dtype),
        c=rng.standard_normal((batch, d, hidden)).astype(dtype),
        s=lengths.astype(cfg["lengths_type"]),
        W=(rng.standard_normal((d, g * hidden, inputs)) * 0.7).astype(dtype),
        R=(rng.standard_normal((d, g * hidden, hidden)) * 0.7).astype(dtype),
        B=rng.standard_normal((d, (4 if lbr else g) * hidden)).astype(dtype),
    )
    return cfg, arrays


def sequence_node(p, cfg, a, weights_as_inputs):
    w, r, b = (p[k] if weights_as_inputs else O.constant(a[k]) for k in ("W", "R", "B"))
    kw = dict(clip=cfg["clip"])
    if cfg["activations"] is not None:
        kw["activations"] = cfg["activations"]
    kind, hidden, direction = cfg["kind"], cfg["hidden"], cfg["direction"]
    if kind == "rnn":
        return opset5.rnn_sequence(p["x"], p["h"], p["s"], w, r, b, hidden, direction, **kw)
    if kind == "gru":
        return opset5.gru_sequence(p["x"], p["h"], p["s"], w, r, b, hidden, direction,
                                   linear_before_reset=cfg["linear_before_reset"], **kw)
    return opset5.lstm_sequence(p["x"], p["h"], p["c"], p["s"], w, r, b, hidden, direction, **kw)


@pytest.mark.parametrize("kind,batch", [(k, b) for k in GATES for b in range(2)])
def test_sequence_sweep(tmp_path, kind, batch):
    seed = 500 + 10 * list(GATES).index(kind) + batch
    rng = np.random.default_rng(seed)
    failures, cases = [], []
    for i in range(15):
        cfg, a = gen_sequence(rng, kind, i)
        weights_as_inputs = i % 4 == 3
        names = ["x", "h"] + (["c"] if kind == "lstm" else []) + ["s"] + (["W", "R", "B"] if weights_as_inputs else [])
        cases.append((cfg, build(lambda p: sequence_node(p, cfg, a, weights_as_inputs), {n: a[n] for n in names},
                                 tmp_path / f"s{i}")))
    for i, ((cfg, built), (out_names, cpu)) in enumerate(zip(cases, run_cpu_many([b for _, b in cases]))):
        ctx = f"{kind.upper()}Sequence-5 seed={seed} case={i} " + describe(cfg)
        f32 = cfg["dtype"] == "float32"
        relu = cfg["activations"] is not None and "relu" in cfg["activations"]
        if f32:
            atol = [1e-5 * max(1.0, float(np.abs(c).max(initial=0))) if relu else 1e-5 for c in cpu]
        else:
            atol = 2e-3 * (max(1.0, max(float(np.abs(c.astype(np.float32)).max(initial=0)) for c in cpu)) if relu else 1)
        try:
            got = run_irrun(built, ctx)
            assert_same(got, cpu, out_names, atol=atol, f16_ulp=not f32, context=ctx)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, f"{len(failures)} cases failed:\n\n" + "\n\n".join(failures[:5])


def _rnn(tmp_path, lengths, direction, steps=3):
    rng = np.random.default_rng(3)
    batch, inputs, hidden = len(lengths), 2, 2
    x = rng.standard_normal((batch, steps, inputs)).astype(np.float32)
    h = rng.standard_normal((batch, 1, hidden)).astype(np.float32)
    w, r, b = (rng.standard_normal(s).astype(np.float32) for s in ((1, hidden, inputs), (1, hidden, hidden), (1, hidden)))
    return build(lambda p: opset5.rnn_sequence(p["x"], p["h"], p["s"], O.constant(w), O.constant(r), O.constant(b),
                                               hidden, direction),
                 {"x": x, "h": h, "s": np.array(lengths, np.int32)}, tmp_path / direction)


def test_sequence_length_zero_and_beyond_steps(tmp_path):
    # length 0: Y and Ho are 0. Forward with a length past the steps: Y is computed for every step but Ho
    # is 0 (the reference looks for the state at step length - 1, which does not exist); the CPU plugin
    # agrees. Reverse refuses such lengths (its ReverseSequence), and so does irrun.
    built = _rnn(tmp_path, [0, 5, 2], "forward")
    names, cpu = run_cpu(built)
    np.testing.assert_array_equal(cpu[1][:2], 0)
    np.testing.assert_array_equal(cpu[0][0], 0)
    assert np.abs(cpu[0][1]).min() > 0
    got = run_irrun(built)
    assert_same(got, cpu, names, atol=1e-6, context="RNNSequence-5 lengths 0 and 5 of 3")
    built = _rnn(tmp_path / "all_beyond", [5, 4], "forward")  # every length past the steps
    names, cpu = run_cpu(built)
    np.testing.assert_array_equal(cpu[1], 0)
    assert_same(run_irrun(built), cpu, names, atol=1e-6, context="RNNSequence-5 lengths 5 and 4 of 3")
    built = _rnn(tmp_path, [1, 5], "reverse")
    if O.cpu_reports_run_time_errors():
        with pytest.raises(RuntimeError):
            run_cpu(built)
    with pytest.raises(irrun.IRError):
        run_irrun(built)


def test_lstm_gate_order_is_f_i_c_o(tmp_path):
    # One step, hidden 1, zero input weights and states: the gates are sigmoid/tanh of the biases alone.
    # B = [f, i, c, o] = [b0, b1, b2, b3]; C = sigmoid(b1) * tanh(b2) (C0 = 0, so f does not show),
    # H = sigmoid(b3) * tanh(C).
    bias = np.array([[5.0, -1.0, 0.5, 2.0]], np.float32)
    x = np.zeros((1, 1, 1), np.float32)
    zeros = np.zeros((1, 1, 1), np.float32)
    built = build(lambda p: opset5.lstm_sequence(p["x"], p["h"], p["c"], p["s"], O.constant(np.zeros((1, 4, 1), np.float32)),
                                                 O.constant(np.zeros((1, 4, 1), np.float32)), O.constant(bias), 1,
                                                 "forward"),
                  {"x": x, "h": zeros, "c": zeros, "s": np.array([1], np.int32)}, tmp_path)
    names, cpu = run_cpu(built)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    c = sig(-1.0) * np.tanh(0.5)
    np.testing.assert_allclose(cpu[2].ravel(), [c], rtol=1e-5)
    np.testing.assert_allclose(cpu[1].ravel(), [sig(2.0) * np.tanh(c)], rtol=1e-5)
    assert_same(run_irrun(built), cpu, names, atol=1e-6, context="LSTM gate order")


def test_gru_gate_order_is_z_r_h(tmp_path):
    # zero weights, H0 = 1: z = sigmoid(bz), h~ = tanh(bh) (r multiplies a zero matrix), H = (1-z) h~ + z
    bias = np.array([[1.5, -3.0, 0.25]], np.float32)
    built = build(lambda p: opset5.gru_sequence(p["x"], p["h"], p["s"], O.constant(np.zeros((1, 3, 1), np.float32)),
                                                O.constant(np.zeros((1, 3, 1), np.float32)), O.constant(bias), 1,
                                                "forward"),
                  {"x": np.zeros((1, 1, 1), np.float32), "h": np.ones((1, 1, 1), np.float32),
                   "s": np.array([1], np.int32)}, tmp_path)
    names, cpu = run_cpu(built)
    z = 1 / (1 + np.exp(-1.5))
    np.testing.assert_allclose(cpu[1].ravel(), [(1 - z) * np.tanh(0.25) + z], rtol=1e-5)
    assert_same(run_irrun(built), cpu, names, atol=1e-6, context="GRU gate order")


# =========================================================================== attention

def gen_attention(rng, i):
    nb = int(rng.integers(1, 3))
    batch = [int(v) for v in rng.integers(1, 4, nb)]
    length, source, embed, embed_v = (int(v) for v in rng.integers(1, 7, 4))

    def batch_shape():
        return [b if rng.random() < 0.7 else 1 for b in batch]

    dtype = np.dtype(np.float16 if i % 5 == 4 else np.float32)
    arrays = dict(q=rng.standard_normal(batch_shape() + [length, embed]).astype(dtype),
                  k=rng.standard_normal(batch_shape() + [source, embed]).astype(dtype),
                  v=rng.standard_normal(batch_shape() + [source, embed_v]).astype(dtype))
    mask = ("none", "boolean", "float", "zero scalar")[i % 4]
    mask_l = length if rng.random() < 0.7 else 1
    if mask == "boolean":
        arrays["m"] = rng.random(batch_shape()[int(rng.integers(0, nb + 1)):] + [mask_l, source]) < 0.7
    elif mask == "float":
        arrays["m"] = (rng.standard_normal(batch_shape()[int(rng.integers(0, nb + 1)):] + [mask_l, source]) * 2).astype(dtype)
    scale = float(rng.uniform(0.1, 1.5)) if rng.random() < 0.4 else None
    cfg = dict(q=arrays["q"].shape, k=arrays["k"].shape, v=arrays["v"].shape, causal=bool(rng.random() < 0.3),
               mask=mask, mask_shape=arrays["m"].shape if "m" in arrays else None, scale=scale, dtype=dtype.name,
               scale_shape=("scalar", "[1]")[i % 2])
    return cfg, arrays


def attention_node(p, cfg, dtype):
    args = [p["q"], p["k"], p["v"]]
    if "m" in p:
        args.append(p["m"])
    elif cfg["mask"] == "zero scalar" or cfg["scale"] is not None:
        args.append(O.constant(np.array(0, dtype)))
    if cfg["scale"] is not None:
        value = np.array(cfg["scale"], dtype)
        args.append(O.constant(value if cfg["scale_shape"] == "scalar" else value.reshape(1)))
    return opset13.scaled_dot_product_attention(*args, causal=cfg["causal"])


@pytest.mark.parametrize("batch", range(3))
def test_attention_sweep(tmp_path, batch):
    seed = 600 + batch
    rng = np.random.default_rng(seed)
    failures, cases = [], []
    for i in range(20):
        cfg, arrays = gen_attention(rng, i)
        cases.append((cfg, build(lambda p: attention_node(p, cfg, arrays["q"].dtype), arrays, tmp_path / f"a{i}")))
    for i, ((cfg, built), (names, cpu)) in enumerate(zip(cases, run_cpu_many([b for _, b in cases]))):
        ctx = f"ScaledDotProductAttention-13 seed={seed} case={i} " + describe(cfg)
        f32 = cfg["dtype"] == "float32"
        try:
            got = run_irrun(built, ctx)
            assert_same(got, cpu, names, atol=1e-5 if f32 else 2e-3, f16_ulp=not f32, context=ctx)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, f"{len(failures)} cases failed:\n\n" + "\n\n".join(failures[:5])


def test_attention_fully_masked_row_is_nan(tmp_path):
    # a boolean mask row with no true entry: softmax over -inf only gives NaN (as in the spec's formula)
    q = np.random.default_rng(1).standard_normal((1, 2, 3)).astype(np.float32)
    mask = np.array([[[True, False], [False, False]]])
    built = build(lambda p: opset13.scaled_dot_product_attention(p["q"], p["q"], p["q"], p["m"]),
                  {"q": q, "m": mask}, tmp_path)
    names, cpu = run_cpu(built)
    assert np.isnan(cpu[0][0, 1]).all() and not np.isnan(cpu[0][0, 0]).any()
    assert_same(run_irrun(built), cpu, names, atol=1e-6, context="fully masked row")


def test_attention_causal_is_top_left_aligned(tmp_path):
    # causal with L > S: query row i sees keys 0..min(i, S-1) (triu(k=1) on [L, S], not bottom-right)
    rng = np.random.default_rng(2)
    q = rng.standard_normal((1, 4, 3)).astype(np.float32)
    k = rng.standard_normal((1, 2, 3)).astype(np.float32)
    v = np.eye(2, dtype=np.float32)[None]
    built = build(lambda p: opset13.scaled_dot_product_attention(p["q"], p["k"], p["v"], causal=True),
                  {"q": q, "k": k, "v": v}, tmp_path)
    names, cpu = run_cpu(built)
    np.testing.assert_allclose(cpu[0][0, 0], [1, 0], atol=1e-6)  # row 0 sees key 0 only
    assert_same(run_irrun(built), cpu, names, atol=1e-6, context="causal L > S")


def test_attention_causal_ignores_mask(tmp_path):
    rng = np.random.default_rng(4)
    q = rng.standard_normal((2, 3, 4)).astype(np.float32)
    mask = np.zeros((2, 3, 3), bool)  # would block everything
    built = build(lambda p: opset13.scaled_dot_product_attention(p["q"], p["q"], p["q"], p["m"], causal=True),
                  {"q": q, "m": mask}, tmp_path)
    names, cpu = run_cpu(built)
    assert not np.isnan(cpu[0]).any()
    assert_same(run_irrun(built), cpu, names, atol=1e-5, context="causal ignores mask")
