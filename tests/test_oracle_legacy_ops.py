"""irrun vs OpenVINO: FakeQuantize-1, HardSigmoid-1, GRN-1, ShuffleChannels-1, ReverseSequence-1,
Reverse-1, Xor-1, BatchToSpace-2, SpaceToBatch-2, CTCGreedyDecoder-1, CTCGreedyDecoderSeqLen-6,
RNNCell-1, GRUCell-3, LSTMCell-1, LSTMCell-4.

Oracles: OpenVINO 2026.4's reference kernels (Node.evaluate) for FakeQuantize (f32, f16, i32, i64, u32,
u64), ShuffleChannels, Reverse, Xor, BatchToSpace and SpaceToBatch; the CPU plugin (f32 inference
precision) for the rest, which have no reference evaluate().

Tolerances:
- exact (bit for bit) for FakeQuantize, every data-movement op, Xor and the CTC decoders (integer outputs);
  FakeQuantize is exact because irrun does the same f32 operations in the same order (nearbyint is
  numpy's rint, half to even) and f16 is converted to f32 and rounded back once, as the reference does.
- HardSigmoid: f32 within 1e-6 absolute (outputs lie in [0, 1]; the CPU plugin may fuse alpha * x + beta
  into one FMA, one f32 rounding less); f16 within one f16 ulp (both round one f32 value).
- GRN: f32 within 1e-6 absolute (|y| <= 1; the CPU plugin sums the squares in its own order and uses its
  own sqrt/division: a few f32 ulps); f16 within 1e-3 plus one f16 ulp.
- Cells: f32 within 1e-5 absolute (values O(1) after sigmoid/tanh; the CPU plugin uses its own exp/tanh
  approximations), relu cells also 1e-5 relative; f16 within 2e-3 plus one f16 ulp (as the sequence tests).
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from openvino import opset1, opset2, opset3, opset4, opset6
from openvino.utils.node_factory import NodeFactory

import oracle as O
from oracle import assert_same, build, run_cpu, run_cpu_many, run_irrun, run_reference


def check_model(built):
    """The checker's findings (rule ids) for a saved model."""
    from irrun.tools.check import check_file

    return check_file(str(built.xml))


def _sweep(cases, context_fn, run):
    failures = []
    for i, case in enumerate(cases):
        try:
            run(i, case)
        except AssertionError as e:
            failures.append(f"{context_fn(i, case)}\n{e}")
    assert not failures, f"{len(failures)} of {len(cases)} cases failed:\n\n" + "\n\n".join(failures[:4])


# =========================================================================== FakeQuantize

RANGE_SHAPES = [(), (1,), (1, 3, 1, 1), (3, 1, 1), (1, 1, 4, 5), (2, 3, 4, 5), (1, 3, 4, 1), (4, 1), (5,),
                (2, 1, 1, 1), (1, 1, 1, 1)]


def _fq_case(rng, i, dtype):
    x_shape = (2, 3, 4, 5)
    shapes = [RANGE_SHAPES[int(rng.integers(len(RANGE_SHAPES)))] for _ in range(4)]
    if i % 3 == 0:
        shapes = [shapes[0]] * 4  # per-channel style: all four alike
    in_low = rng.uniform(-2, 1, shapes[0])
    if i % 4 == 1:  # input_low > input_high somewhere
        in_high = in_low - rng.uniform(-1, 2, shapes[1]) if shapes[1] == shapes[0] else rng.uniform(-3, 0, shapes[1])
    else:
        in_high = rng.uniform(-1, 3, shapes[1])
    if i % 7 == 2:
        in_high = np.broadcast_to(in_low, shapes[1]).copy() if np.broadcast_shapes(shapes[0], shapes[1]) == shapes[1] \
            else in_high  # empty input range
    out_low, out_high = rng.uniform(-3, 3, shapes[2]), rng.uniform(-3, 3, shapes[3])
    x = rng.uniform(-3.5, 3.5, x_shape)
    # exact boundaries and midpoints between levels
    x.flat[:6] = np.broadcast_to(in_low, x_shape).flat[:6]
    x.flat[6:12] = np.broadcast_to(in_high, x_shape).flat[6:12]
    levels = int(rng.choice([2, 3, 5, 16, 255, 256, 65536]))
    lo, hi = np.broadcast_to(in_low, x_shape), np.broadcast_to(in_high, x_shape)
    half = lo + (np.floor(rng.uniform(0, levels - 1, x_shape)) + 0.5) / (levels - 1) * (hi - lo)
    pick = rng.random(x_shape) < 0.2
    x = np.where(pick, half, x)
    feeds = {"x": x, "il": in_low, "ih": in_high, "ol": out_low, "oh": out_high}
    return {k: np.asarray(v).astype(dtype) for k, v in feeds.items()}, levels


def _fq_node(levels, mode="numpy"):
    return lambda p: opset1.fake_quantize(p["x"], p["il"], p["ih"], p["ol"], p["oh"], levels, mode)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_fake_quantize_sweep(tmp_path, dtype):
    seed = 11 if dtype == "float32" else 12
    rng = np.random.default_rng(seed)
    cases = [_fq_case(rng, i, dtype) for i in range(60)]

    def run(i, case):
        feeds, levels = case
        built = build(_fq_node(levels), feeds, tmp_path / f"c{i}")
        expected = run_reference(built)
        assert_same(run_irrun(built), expected, built.output_names)

    _sweep(cases, lambda i, c: f"FakeQuantize {dtype} seed={seed} case={i} levels={c[1]} "
                               f"shapes={[v.shape for v in c[0].values()]}", run)


def test_fake_quantize_constant_ranges_and_cpu(tmp_path):
    # the usual IR form: ranges are constants; the CPU plugin agrees with the reference here (f32 inputs)
    rng = np.random.default_rng(13)
    cases = []
    for i in range(6):
        feeds, levels = _fq_case(rng, i, np.float32)
        x = feeds.pop("x")
        built = build(lambda p: opset1.fake_quantize(p["x"], *(O.constant(feeds[k]) for k in ("il", "ih", "ol", "oh")),
                                                     levels), {"x": x}, tmp_path / f"c{i}")
        cases.append((feeds, levels, built))
    for i, ((feeds, levels, built), (names, cpu)) in enumerate(zip(cases, run_cpu_many([b for *_, b in cases]))):
        expected = run_reference(built)
        assert_same(run_irrun(built), expected, built.output_names, context=f"case {i}")
        # The CPU plugin computes x * scale + shift in its own form: at a midpoint between two levels it
        # may round to the other one. OpenVINO is inconsistent there, so allow one quantization step.
        got = list(run_irrun(built).values())[0]
        step = np.abs(feeds["oh"] - feeds["ol"]) / (levels - 1)
        diff = np.abs(got.astype(np.float64) - cpu[0])
        assert (diff <= np.broadcast_to(step, diff.shape) * (1 + 1e-5) + 1e-5).all(), f"CPU case {i}"
        assert (diff > 1e-5).mean() < 0.2, f"CPU case {i}: more than midpoints differ"


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
def test_fake_quantize_integer(tmp_path, dtype):
    # the reference computes in the integer type (truncating division) up to the rounding
    rng = np.random.default_rng(14)

    def run(i, case):
        built = build(_fq_node(case[1]), case[0], tmp_path / f"c{i}")
        assert_same(run_irrun(built), run_reference(built), built.output_names)

    cases = []
    for i in range(8):
        shapes = [RANGE_SHAPES[int(rng.integers(len(RANGE_SHAPES)))] for _ in range(4)]
        signed = dtype.startswith("int")
        low = (-40, 40) if signed else (0, 80)
        feeds = {"x": rng.integers(*low, (2, 3, 4, 5))}
        for k, s in zip(("il", "ih", "ol", "oh"), shapes):
            feeds[k] = rng.integers(*low, s)
        cases.append(({k: np.asarray(v).astype(dtype) for k, v in feeds.items()}, int(rng.choice([3, 16, 256]))))
    _sweep(cases, lambda i, c: f"FakeQuantize {dtype} case={i}", run)


def test_fake_quantize_pdpd_and_odd_layouts(tmp_path):
    """pdpd ranges placed at axis 0, and a numpy range with more dims than X: OpenVINO's shape inference
    accepts them, and its kernels (reference and CPU alike) read the ranges in blocks rather than
    broadcasting them where pdpd places them; irrun reproduces that read pattern."""
    rng = np.random.default_rng(15)
    layouts = [("pdpd", (2, 3, 4, 5), [(2, 3)] * 4), ("pdpd", (2, 3, 4, 5), [(2, 3, 1, 1)] * 4),
               ("pdpd", (2, 3, 4, 5), [(2,), (2, 3), (1,), ()]), ("pdpd", (2, 3, 4, 5), [(2, 1, 4)] * 4),
               ("pdpd", (2, 3, 4, 5), [(2, 3, 4)] * 2 + [(2, 1)] * 2), ("numpy", (3, 4), [(2, 3, 4), (), (), ()]),
               ("numpy", (3, 4), [(2, 3, 4)] * 4), ("pdpd", (4, 6), [(4,), (4,), (4, 6), (4, 6)])]
    builts = []
    for i, (mode, x_shape, shapes) in enumerate(layouts):
        feeds = {"x": rng.uniform(-3, 3, x_shape)}
        for k, s in zip(("il", "ih", "ol", "oh"), shapes):
            feeds[k] = rng.uniform(-2, 2, s) + (1.5 if k == "ih" else 0)
        feeds = {k: np.asarray(v, np.float32) for k, v in feeds.items()}
        builts.append(build(_fq_node(7, mode), feeds, tmp_path / f"c{i}"))
    for (mode, x_shape, shapes), built, (names, cpu) in zip(layouts, builts, run_cpu_many(builts)):
        expected = run_reference(built)
        context = f"{mode} x={x_shape} ranges={shapes}"
        assert_same(run_irrun(built), expected, built.output_names, context=context)
        assert_same(run_irrun(built), cpu, names, atol=1e-5, context="CPU " + context)


def test_fake_quantize_rejects_what_openvino_rejects(tmp_path):
    from irrun.tools.check import check

    feeds = {"x": np.zeros((2, 3, 4), np.float32), "il": np.zeros((3, 1), np.float32),
             "ih": np.ones((3, 1), np.float32), "ol": np.zeros((), np.float32), "oh": np.ones((), np.float32)}
    built = build(_fq_node(5), feeds, tmp_path / "ok")
    assert check(built.xml).conformant
    # ranges of shape [5,1] cannot broadcast onto [2,3,4] (3 vs 5)
    text = built.xml.read_text().replace('shape="3,1"', 'shape="5,1"')
    text = re.sub(r"<dim>3</dim>(\s*)<dim>1</dim>", r"<dim>5</dim>\1<dim>1</dim>", text)
    bad = tmp_path / "bad.xml"
    bad.write_text(text)
    (tmp_path / "bad.bin").write_bytes(built.xml.with_suffix(".bin").read_bytes())
    with pytest.raises(RuntimeError, match="Argument shapes are inconsistent"):
        O.core().read_model(str(bad))
    assert ("shape.broadcast", "5") in check(bad).rules() or any(
        rule == "shape.broadcast" for rule, _ in check(bad).rules()), check(bad).lines()
    # OpenVINO does not require the ranges to have the data's element type (the CPU plugin converts them)
    rng = np.random.default_rng(16)
    feeds = {"x": rng.uniform(-2, 2, (2, 3, 4)).astype(np.float32), "il": np.full((3, 1), -1, np.float16),
             "ih": np.ones((3, 1), np.float32), "ol": np.zeros((), np.float16), "oh": np.ones((), np.float32)}
    built = build(_fq_node(5), feeds, tmp_path / "mixed")
    assert check(built.xml).conformant, check(built.xml).lines()
    names, cpu = run_cpu(built)
    assert_same(run_irrun(built), cpu, names, atol=1e-6)


# =========================================================================== HardSigmoid, GRN

def test_hard_sigmoid_sweep(tmp_path):
    rng = np.random.default_rng(21)
    cases = []
    for i in range(12):
        dtype = np.float16 if i % 3 == 2 else np.float32
        shape = tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(0, 5))))
        alpha, beta = float(rng.uniform(-1, 1)), float(rng.uniform(-0.5, 1.5))
        x = rng.uniform(-6, 6, shape)
        cases.append((x.astype(dtype), np.array(alpha, dtype), np.array(beta, dtype)))
    # constant alpha and beta: the CPU plugin has no kernel for them as Parameters (nor a reference)
    builts = [build(lambda p: opset1.hard_sigmoid(p["x"], O.constant(alpha), O.constant(beta)), {"x": x},
                    tmp_path / f"c{i}") for i, (x, alpha, beta) in enumerate(cases)]
    oracle = run_cpu_many(builts)

    def run(i, case):
        x, alpha, beta = case
        built, (names, cpu) = builts[i], oracle[i]
        f16 = x.dtype == np.float16
        assert_same(run_irrun(built), cpu, names, atol=0.0 if f16 else 1e-6, f16_ulp=f16)

    _sweep(cases, lambda i, c: f"HardSigmoid case={i} dtype={c[0].dtype} shape={c[0].shape} alpha={c[1]} "
                               f"beta={c[2]}", run)


def test_grn_sweep(tmp_path):
    rng = np.random.default_rng(22)
    cases = []
    for i in range(12):
        dtype = np.float16 if i % 4 == 3 else np.float32
        rank = 2 + i % 3
        shape = tuple(int(d) for d in rng.integers(1, 6, rank))
        bias = float(rng.choice([1e-6, 1e-3, 0.5, 2.0]))
        cases.append((rng.standard_normal(shape).astype(dtype), bias))
    builts = [build(lambda p: opset1.grn(p["x"], bias), {"x": x}, tmp_path / f"c{i}")
              for i, (x, bias) in enumerate(cases)]
    oracle = run_cpu_many(builts)

    def run(i, case):
        x, bias = case
        built, (names, cpu) = builts[i], oracle[i]
        f16 = x.dtype == np.float16
        assert_same(run_irrun(built), cpu, names, atol=1e-3 if f16 else 1e-6, f16_ulp=f16)

    _sweep(cases, lambda i, c: f"GRN case={i} dtype={c[0].dtype} shape={c[0].shape} bias={c[1]}", run)


# =========================================================================== data movement

DTYPES = ["float32", "float16", "int8", "uint8", "int32", "int64"]


def test_shuffle_channels_sweep(tmp_path):
    rng = np.random.default_rng(31)
    cases = []
    for i in range(16):
        rank = int(rng.integers(1, 5))
        axis = int(rng.integers(-rank, rank))
        group = int(rng.choice([1, 2, 3]))
        shape = [int(d) for d in rng.integers(1, 4, rank)]
        shape[axis] = group * int(rng.integers(1, 4))
        dtype = DTYPES[i % len(DTYPES)]
        cases.append((rng.integers(-100, 100, shape).astype(dtype), axis, group))

    def run(i, case):
        x, axis, group = case
        built = build(lambda p: opset3.shuffle_channels(p["x"], axis, group), {"x": x}, tmp_path / f"c{i}")
        assert "ShuffleChannels" in built.xml.read_text() and 'version="opset1"' in built.xml.read_text()
        assert_same(run_irrun(built), run_reference(built), built.output_names)

    _sweep(cases, lambda i, c: f"ShuffleChannels case={i} shape={c[0].shape} axis={c[1]} group={c[2]}", run)


def test_reverse_sequence_sweep(tmp_path):
    rng = np.random.default_rng(32)
    cases = []
    for i in range(16):
        rank = int(rng.integers(2, 5))
        batch_axis = int(rng.integers(-rank, rank))
        seq_axis = int(rng.integers(-rank, rank))
        while seq_axis % rank == batch_axis % rank:
            seq_axis = int(rng.integers(-rank, rank))
        shape = [int(d) for d in rng.integers(1, 5, rank)]
        lengths = rng.integers(0, shape[seq_axis] + 1, shape[batch_axis])
        ltype = ("int32", "int64", "float32")[i % 3]
        dtype = ("float32", "int32")[i % 2]
        cases.append((rng.integers(-100, 100, shape).astype(dtype), lengths.astype(ltype), batch_axis, seq_axis))
    builts = [build(lambda p: opset1.reverse_sequence(p["x"], p["s"], batch_axis, seq_axis), {"x": x, "s": lengths},
                    tmp_path / f"c{i}") for i, (x, lengths, batch_axis, seq_axis) in enumerate(cases)]
    oracle = run_cpu_many(builts)

    def run(i, case):
        names, cpu = oracle[i]
        assert_same(run_irrun(builts[i]), cpu, names)

    _sweep(cases, lambda i, c: f"ReverseSequence case={i} shape={c[0].shape} lengths={c[1].tolist()} "
                               f"batch_axis={c[2]} seq_axis={c[3]}", run)


def _reverse_node(mode, axes):
    return lambda p: NodeFactory("opset1").create("Reverse", [p["x"].output(0), O.constant(axes).output(0)],
                                                  {"mode": mode})


def test_reverse_sweep(tmp_path):
    rng = np.random.default_rng(33)
    cases = []
    for i in range(16):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(d) for d in rng.integers(1, 5, rank))
        mode = ("index", "mask")[i % 2]
        if mode == "index":
            count = int(rng.integers(1, rank + 1))  # OpenVINO's factory refuses an empty Constant
            axes = rng.permutation(rank)[:count]
            if i % 4 == 0:  # negative axes count from the end (the spec does not say so)
                axes = axes - rank
            axes = axes.astype(("int64", "int32", "uint8")[i // 2 % 3] if i % 4 else "int64")
        else:
            axes = rng.random(rank) < 0.5
        cases.append((rng.integers(-100, 100, shape).astype(DTYPES[i % len(DTYPES)]), mode, axes))
    builts = [build(_reverse_node(mode, axes), {"x": x}, tmp_path / f"c{i}") for i, (x, mode, axes) in enumerate(cases)]
    # the reference reads index axes only as i64 (it throws for others): the CPU plugin
    on_cpu = [i for i, (_, _, axes) in enumerate(cases) if axes.dtype not in (np.int64, np.bool_)]
    oracle = dict(zip(on_cpu, run_cpu_many([builts[i] for i in on_cpu])))

    def run(i, case):
        built = builts[i]
        if i not in oracle:
            assert_same(run_irrun(built), run_reference(built), built.output_names)
        else:
            names, cpu = oracle[i]
            assert_same(run_irrun(built), cpu, names)

    _sweep(cases, lambda i, c: f"Reverse case={i} shape={c[0].shape} mode={c[1]} axes={c[2].tolist()}", run)


def test_xor_legacy(tmp_path):
    rng = np.random.default_rng(34)
    for i, (sa, sb) in enumerate([((2, 3), (2, 3)), ((2, 1, 4), (3, 1)), ((), (5,)), ((4,), ())]):
        a, b = rng.random(sa) < 0.5, rng.random(sb) < 0.5
        built = build(lambda p: opset1.logical_xor(p["a"], p["b"]), {"a": a, "b": b}, tmp_path / f"c{i}",
                      patch=lambda t: re.sub(r'type="LogicalXor" version="\w+"', 'type="Xor" version="opset1"', t))
        assert [n.get_type_name() for n in built.model.get_ordered_ops()].count("Xor") == 1
        assert_same(run_irrun(built), run_reference(built), built.output_names, context=f"{sa} {sb}")


def _block_case(rng, i, to_space):
    rank = int(rng.integers(2, 6))
    block = [1] + [int(v) for v in rng.integers(1, 4, rank - 1)]
    if to_space:
        spatial = [int(v) for v in rng.integers(1, 4, rank - 1)]
        batch = int(np.prod(block)) * int(rng.integers(1, 3))
        shape = [batch] + spatial
        begin = [0] + [int(rng.integers(0, s * b + 1)) for s, b in zip(spatial, block[1:])]
        end = [0] + [int(rng.integers(0, s * b - c + 1)) for s, b, c in zip(spatial, block[1:], begin[1:])]
    else:
        shape = [int(rng.integers(1, 3))]
        begin, end = [0], [0]
        for b in block[1:]:
            dim = int(rng.integers(1, 5))
            padded = b * (-(-dim // b) + int(rng.integers(0, 2)))
            pb = int(rng.integers(0, padded - dim + 1))
            shape.append(dim), begin.append(pb), end.append(padded - dim - pb)
    itype = "int64"
    x = rng.integers(-100, 100, shape).astype(DTYPES[i % len(DTYPES)])
    return x, *(np.array(v, itype) for v in (block, begin, end))


@pytest.mark.parametrize("to_space", [True, False], ids=["BatchToSpace", "SpaceToBatch"])
def test_batch_space_sweep(tmp_path, to_space):
    rng = np.random.default_rng(35 + to_space)
    cases = [_block_case(rng, i, to_space) for i in range(16)]
    factory = opset2.batch_to_space if to_space else opset2.space_to_batch
    builts = [build(lambda p: factory(p["x"], O.constant(block), O.constant(begin), O.constant(end)), {"x": x},
                    tmp_path / f"c{i}") for i, (x, block, begin, end) in enumerate(cases)]
    # SpaceToBatch's evaluate() returns False for rank 2: the CPU plugin
    on_cpu = [i for i, (x, *_) in enumerate(cases) if not (x.ndim > 2 or to_space)]
    # i32 block and crops/pads: the reference throws (it reads them as i64), so the CPU plugin; its
    # SpaceToBatch misplaces values with some pads (e.g. data [1,3,3,1], block [1,3,1,3], pads_end
    # [0,0,1,2], where the reference and irrun agree): no pads there
    twinned = [i for i, (_, _, begin, end) in enumerate(cases)
               if i % 3 == 0 and (to_space or not (begin.any() or end.any()))]
    twins = {}
    for i in twinned:
        x, block32, begin32, end32 = (cases[i][0], *(v.astype(np.int32) for v in cases[i][1:]))
        twins[i] = build(lambda p: factory(p["x"], O.constant(block32), O.constant(begin32), O.constant(end32)),
                         {"x": x.astype(np.float32)}, tmp_path / f"c{i}_i32")
    oracle = iter(run_cpu_many([builts[i] for i in on_cpu] + [twins[i] for i in twinned]))
    cpu_results = dict(zip(on_cpu, oracle))
    twin_results = dict(zip(twinned, oracle))

    def run(i, case):
        built = builts[i]
        if i not in cpu_results:
            assert_same(run_irrun(built), run_reference(built), built.output_names)
        else:
            names, cpu = cpu_results[i]
            assert_same(run_irrun(built), cpu, names)
        if i in twin_results:
            names, cpu = twin_results[i]
            assert_same(run_irrun(twins[i]), cpu, names)

    _sweep(cases, lambda i, c: f"{'BatchToSpace' if to_space else 'SpaceToBatch'} case={i} shape={c[0].shape} "
                               f"block={c[1].tolist()} begin={c[2].tolist()} end={c[3].tolist()}", run)


# =========================================================================== CTC greedy decoders

def test_ctc_greedy_decoder_sweep(tmp_path):
    rng = np.random.default_rng(41)
    cases = []
    for i in range(12):
        steps, batch, classes = (int(v) for v in rng.integers(1, 7, 3))
        # few classes and a strong blank make repeats and blanks frequent
        data = rng.standard_normal((steps, batch, classes)) + (rng.random((steps, batch, 1)) < 0.3) * \
            np.eye(classes)[classes - 1] * 3
        mask = (rng.random((steps, batch)) < 0.8).astype(np.float32)
        if i % 3 == 0:
            mask[:] = 1
        cases.append((data.astype(np.float32), mask, bool(i % 2)))
    builts = [build(lambda p: opset1.ctc_greedy_decoder(p["x"], p["m"], merge), {"x": data, "m": mask},
                    tmp_path / f"c{i}") for i, (data, mask, merge) in enumerate(cases)]
    oracle = run_cpu_many(builts)

    def run(i, case):
        names, cpu = oracle[i]
        assert_same(run_irrun(builts[i]), cpu, names)

    _sweep(cases, lambda i, c: f"CTCGreedyDecoder case={i} shape={c[0].shape} merge={c[2]} mask={c[1].T.tolist()}",
           run)


def test_ctc_greedy_decoder_seq_len_sweep(tmp_path):
    rng = np.random.default_rng(42)
    cases = []
    for i in range(12):
        batch, steps, classes = (int(v) for v in rng.integers(1, 7, 3))
        data = rng.standard_normal((batch, steps, classes))
        lengths = rng.integers(0, steps + 1, batch)
        blank = None if i % 3 == 0 else int(rng.integers(0, classes))
        cases.append((data.astype(np.float32), lengths.astype(("int32", "int64")[i % 2]), blank, bool(i % 2),
                      ("i32", "i64")[i // 2 % 2], ("i32", "i64")[i // 4 % 2]))

    def model(i, case):
        data, lengths, blank, merge, ctype, ltype = case
        inputs = {"x": data, "l": lengths}
        if blank is not None:
            inputs["b"] = np.array([blank], lengths.dtype)
        return build(lambda p: opset6.ctc_greedy_decoder_seq_len(p["x"], p["l"], p.get("b"), merge, ctype, ltype),
                     inputs, tmp_path / f"c{i}")

    builts = [model(i, case) for i, case in enumerate(cases)]
    oracle = run_cpu_many(builts)

    def run(i, case):
        names, cpu = oracle[i]
        assert_same(run_irrun(builts[i]), cpu, names)

    _sweep(cases, lambda i, c: f"CTCGreedyDecoderSeqLen case={i} shape={c[0].shape} lengths={c[1].tolist()} "
                               f"blank={c[2]} merge={c[3]}", run)


# =========================================================================== cells

GATES = {"rnn": 1, "gru": 3, "lstm4": 4, "lstm1": 4}
ACTIVATION_COUNT = {"rnn": 1, "gru": 2, "lstm4": 3, "lstm1": 3}


def _cell_case(rng, kind, i):
    batch, inputs, hidden = (int(v) for v in rng.integers(1, 5, 3))
    dtype = np.dtype(np.float16 if i % 5 == 4 else np.float32)
    lbr = kind == "gru" and bool(rng.integers(0, 2))
    acts = None
    if rng.random() < 0.5:
        acts = [("sigmoid", "tanh", "relu")[int(rng.integers(0, 3))] for _ in range(ACTIVATION_COUNT[kind])]
    g = GATES[kind]
    cfg = dict(kind=kind, batch=batch, input_size=inputs, hidden=hidden, dtype=dtype.name, activations=acts,
               clip=float(rng.choice([0.0, 0.0, 0.5, 2.0])), linear_before_reset=lbr,
               peepholes=kind == "lstm1" and i % 2 == 0, input_forget=kind == "lstm1" and i % 3 == 1)
    arrays = dict(x=rng.standard_normal((batch, inputs)), h=rng.standard_normal((batch, hidden)),
                  c=rng.standard_normal((batch, hidden)), W=rng.standard_normal((g * hidden, inputs)) * 0.7,
                  R=rng.standard_normal((g * hidden, hidden)) * 0.7,
                  B=rng.standard_normal(((4 if lbr else g) * hidden,)), P=rng.standard_normal((3 * hidden,)))
    return cfg, {k: v.astype(dtype) for k, v in arrays.items()}


def _cell_node(p, cfg, a, weights_as_inputs):
    w, r, b = (p[k] if weights_as_inputs else O.constant(a[k]) for k in ("W", "R", "B"))
    kw = dict(clip=cfg["clip"])
    if cfg["activations"] is not None:
        kw["activations"] = cfg["activations"]
    kind, hidden = cfg["kind"], cfg["hidden"]
    if kind == "rnn":
        return opset3.rnn_cell(p["x"], p["h"], w, r, b, hidden, kw.pop("activations", ["tanh"]), [], [], **kw)
    if kind == "gru":
        return opset3.gru_cell(p["x"], p["h"], w, r, b, hidden, linear_before_reset=cfg["linear_before_reset"], **kw)
    if kind == "lstm4":
        return opset4.lstm_cell(p["x"], p["h"], p["c"], w, r, b, hidden, **kw)
    ins = [p["x"], p["h"], p["c"], w, r, b]
    if cfg["peepholes"]:
        ins.append(O.constant(a["P"]))
    attrs = dict(hidden_size=hidden, clip=cfg["clip"], input_forget=cfg["input_forget"],
                 activations=cfg["activations"] or ["sigmoid", "tanh", "tanh"], activations_alpha=[],
                 activations_beta=[], weights_format="fico")
    return NodeFactory("opset1").create("LSTMCell", [v.output(0) for v in ins], attrs)


@pytest.mark.parametrize("kind", list(GATES))
def test_cell_sweep(tmp_path, kind):
    seed = 600 + list(GATES).index(kind)
    rng = np.random.default_rng(seed)
    cases = [_cell_case(rng, kind, i) for i in range(10)]

    def model(i, case):
        cfg, a = case
        weights_as_inputs = i % 4 == 3
        names = ["x", "h"] + (["c"] if kind.startswith("lstm") else []) + (["W", "R", "B"] if weights_as_inputs else [])
        return build(lambda p: _cell_node(p, cfg, a, weights_as_inputs), {n: a[n] for n in names}, tmp_path / f"c{i}")

    builts = [model(i, case) for i, case in enumerate(cases)]
    oracle = run_cpu_many(builts)

    def run(i, case):
        cfg, _ = case
        built, (out_names, cpu) = builts[i], oracle[i]
        f32 = cfg["dtype"] == "float32"
        relu = cfg["activations"] is not None and "relu" in cfg["activations"]
        scale = max(1.0, max(float(np.abs(c.astype(np.float32)).max(initial=0)) for c in cpu)) if relu else 1.0
        atol = (1e-5 if f32 else 2e-3) * scale
        assert_same(run_irrun(built), cpu, out_names, atol=atol, f16_ulp=not f32)

    _sweep(cases, lambda i, c: f"{kind} cell seed={seed} case={i} " + ", ".join(f"{k}={v}" for k, v in c[0].items()),
           run)


# =========================================================================== validation and dynamic shapes

def _x(shape, dtype=np.float32):
    return np.zeros(shape, dtype)


INVALID = [
    # (name, make, inputs, layer type, <data> patch, rule irrun must report); OpenVINO refuses each when
    # reading it, except where noted
    ("ShuffleChannels group does not divide", lambda p: opset3.shuffle_channels(p["x"], 1, 2), {"x": _x((1, 4, 2))},
     "ShuffleChannels", {"group": "3"}, "port.dims"),
    ("ShuffleChannels axis out of range", lambda p: opset3.shuffle_channels(p["x"], 1, 2), {"x": _x((1, 4, 2))},
     "ShuffleChannels", {"axis": "3"}, "attr.range"),
    ("ShuffleChannels group 0", lambda p: opset3.shuffle_channels(p["x"], 1, 2), {"x": _x((1, 4, 2))},
     "ShuffleChannels", {"group": "0"}, "attr.range"),
    ("ReverseSequence batch_axis out of range",
     lambda p: opset1.reverse_sequence(p["x"], p["s"], 0, 1), {"x": _x((2, 3)), "s": np.ones(2, np.int32)},
     "ReverseSequence", {"batch_axis": "2"}, "attr.range"),
    ("ReverseSequence lengths do not match the batch axis",
     lambda p: opset1.reverse_sequence(p["x"], p["s"], 0, 1), {"x": _x((2, 3)), "s": np.ones(2, np.int32)},
     "ReverseSequence", {"batch_axis": "1", "seq_axis": "0"}, "port.dims"),
    ("CTCGreedyDecoderSeqLen bad index type",
     lambda p: opset6.ctc_greedy_decoder_seq_len(p["x"], p["l"]), {"x": _x((2, 3, 4)), "l": np.ones(2, np.int32)},
     "CTCGreedyDecoderSeqLen", {"classes_index_type": "x7"}, "attr.value"),
    ("LSTMCell-4 unknown activation",
     lambda p: opset4.lstm_cell(p["x"], p["h"], p["c"], O.constant(_x((8, 3))), O.constant(_x((8, 2))),
                                O.constant(_x((8,))), 2),
     {"x": _x((1, 3)), "h": _x((1, 2)), "c": _x((1, 2))}, "LSTMCell", {"activations": "sigmoid,tanh,foo"},
     "attr.value"),
    ("GRUCell hidden_size does not match W",
     lambda p: opset3.gru_cell(p["x"], p["h"], O.constant(_x((6, 3))), O.constant(_x((6, 2))), O.constant(_x((6,))), 2),
     {"x": _x((1, 3)), "h": _x((1, 2))}, "GRUCell", {"hidden_size": "3"}, "attr.value.spec"),  # OpenVINO reads it, CPU compile refuses

]


@pytest.mark.parametrize("case", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_models_are_refused_like_openvino(tmp_path, case):
    from irrun.tools.check import check

    name, make, inputs, layer_type, attrs, rule = case
    built = build(make, inputs, tmp_path / "ok")
    assert check(built.xml).conformant, check(built.xml).lines()
    bad = tmp_path / "bad.xml"
    bad.write_text(O.patch_layer(built.xml.read_text(), layer_type, attrs))
    (tmp_path / "bad.bin").write_bytes(built.xml.with_suffix(".bin").read_bytes())
    if "hidden_size" in attrs:
        # OpenVINO's shape inference ignores a hidden_size that W and R contradict (the output takes H's
        # dims); the CPU plugin then refuses to compile the model. irrun refuses it when checking.
        with pytest.raises(O.OracleUnsupported, match="incorrect input/output shapes"):
            run_cpu(O.Built(bad, O.core().read_model(str(bad)), [], [], [], []))
    else:
        with pytest.raises(RuntimeError):
            O.core().read_model(str(bad))
    rules = [r for r, _ in check(bad).rules()]
    assert rule in rules, check(bad).lines()


def _ps(shape):
    import openvino as ov

    return ov.PartialShape([-1 if d is None else d for d in shape]) if shape is not None else ov.PartialShape.dynamic()


def _ov_shape(node, i=0):
    ps = node.get_output_partial_shape(i)
    if ps.rank.is_dynamic:
        return None
    return tuple(d.get_length() if d.is_static else None for d in ps)


DYNAMIC = [
    ("ShuffleChannels", [(None, 4, None)], lambda ps: opset3.shuffle_channels(ps[0], -2, 2), dict(axis=-2, group=2)),
    ("GRN", [(None, 3, None)], lambda ps: opset1.grn(ps[0], 0.1), dict(bias=0.1)),
    ("ReverseSequence", [(None, 5, 2), (3,)], lambda ps: opset1.reverse_sequence(ps[0], ps[1], 0, 1),
     dict(batch_axis=0, seq_axis=1)),
    ("CTCGreedyDecoder", [(None, 2, 5), (4, None)], lambda ps: opset1.ctc_greedy_decoder(ps[0], ps[1]), {}),
    ("CTCGreedyDecoderSeqLen", [(None, None, 5), (3,)], lambda ps: opset6.ctc_greedy_decoder_seq_len(ps[0], ps[1]),
     {}),
    ("FakeQuantize", [(None, 3, None, 4), (1, 3, 1, 1), (), (), ()],
     lambda ps: opset1.fake_quantize(*ps, 5), dict(levels=5)),
    ("LSTMCell", [(None, 3), (None, 2), (4, None), (8, 3), (8, 2), (8,)],
     lambda ps: opset4.lstm_cell(*ps, 2), dict(hidden_size=2)),
    ("GRUCell", [(None, 3), (None, 2), (6, 3), (6, 2), (6,)], lambda ps: opset3.gru_cell(*ps, 2), dict(hidden_size=2)),
    ("RNNCell", [(None, 3), (5, 2), (2, 3), (2, 2), (2,)],
     lambda ps: opset3.rnn_cell(*ps, 2, ["tanh"], [], []), dict(hidden_size=2)),
]


@pytest.mark.parametrize("case", DYNAMIC, ids=[c[0] for c in DYNAMIC])
def test_dynamic_shape_inference_matches_openvino(case):
    import openvino as ov

    from irrun.ir.types import ELEMENT_TYPES
    from irrun.ops import REGISTRY, TensorInfo
    from irrun.ops.registry import Context

    op_type, shapes, make, attrs = case
    types = [ov.Type.f32] * len(shapes)
    if op_type in ("ReverseSequence", "CTCGreedyDecoderSeqLen"):
        types[1] = ov.Type.i32
    params = [opset1.parameter(_ps(s), t) for s, t in zip(shapes, types)]
    node = make(params)
    version = {"GRUCell": 3, "LSTMCell": 4, "CTCGreedyDecoderSeqLen": 6}.get(op_type, 1)
    cls = REGISTRY[(op_type, version)]
    values = {name: attr.default for name, attr in cls.attributes.items()}
    values.update(attrs)
    op_ = cls(values, Context())
    infos = [TensorInfo(s, ELEMENT_TYPES["i32" if t == ov.Type.i32 else "f32"]) for s, t in zip(shapes, types)]
    out = op_.infer(infos)
    expected = [_ov_shape(node, i) for i in range(node.get_output_size())]
    assert [o.shape for o in out] == expected


def test_ctc_greedy_decoder_seq_len_float_index_type(tmp_path):
    # the spec allows i32/i64 only; OpenVINO takes f32 too and writes the indices as floats
    rng = np.random.default_rng(43)
    inputs = {"x": rng.standard_normal((3, 5, 4)).astype(np.float32), "l": np.array([5, 2, 0], np.int32)}
    built = build(lambda p: opset6.ctc_greedy_decoder_seq_len(p["x"], p["l"]), inputs, tmp_path,
                  patch=lambda t: O.patch_layer(t, "CTCGreedyDecoderSeqLen", {"classes_index_type": "f32"}))
    assert built.output_types[0] == "f32"
    names, cpu = run_cpu(built)
    assert_same(run_irrun(built), cpu, names)


ACCEPTED = [
    # OpenVINO accepts these although the spec restricts the types; irrun's checker must not refuse them
    ("HardSigmoid i32 data", lambda p: opset1.hard_sigmoid(p["x"], O.constant(np.array(1, np.int32)),
                                                           O.constant(np.array(0, np.int32))),
     {"x": _x((2, 3), np.int32)}),
    ("GRN i32 data", lambda p: opset1.grn(p["x"], 0.5), {"x": _x((2, 3), np.int32)}),
    ("CTCGreedyDecoder i32 data and mask", lambda p: opset1.ctc_greedy_decoder(p["x"], p["m"]),
     {"x": _x((3, 2, 4), np.int32), "m": _x((3, 2), np.int32)}),
    ("CTCGreedyDecoderSeqLen f32 lengths", lambda p: opset6.ctc_greedy_decoder_seq_len(p["x"], p["l"]),
     {"x": _x((2, 3, 4)), "l": _x((2,))}),
    ("ReverseSequence with batch_axis == seq_axis", lambda p: opset1.reverse_sequence(p["x"], p["s"], 1, 1),
     {"x": _x((2, 3)), "s": np.ones(3, np.int32)}),
]


@pytest.mark.parametrize("case", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_models_openvino_accepts_pass_the_checker(tmp_path, case):
    from irrun.tools.check import check

    name, make, inputs = case
    built = build(make, inputs, tmp_path)
    report = check(built.xml)
    assert report.conformant, report.lines()


def test_reverse_sequence_shared_axis_and_fractional_lengths(tmp_path):
    # batch_axis == seq_axis: position j of the axis reverses with length[j] (CPU plugin); f32 lengths
    # are truncated
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for i, lengths in enumerate(([1, 3, 2, 4], [2, 0, 1, 3])):
        built = build(lambda p: opset1.reverse_sequence(p["x"], p["s"], 1, 1),
                      {"x": x, "s": np.array(lengths, np.int32)}, tmp_path / f"c{i}")
        names, cpu = run_cpu(built)
        assert_same(run_irrun(built), cpu, names, context=str(lengths))
    built = build(lambda p: opset1.reverse_sequence(p["x"], p["s"], 0, 1),
                  {"x": x.reshape(2, 6), "s": np.array([2.7, 3.2], np.float32)}, tmp_path / "frac")
    names, cpu = run_cpu(built)
    assert_same(run_irrun(built), cpu, names, context="fractional lengths")
