"""Compressed weights: decompression chains as OpenVINO computes them, and the fused (streamed) readers.

Oracles:
  * OpenVINO's core ConstantFolding pass (`openvino.passes.ConstantFolding` on the read-back model): the
    folded weight Const. irrun's weights must equal it bit for bit.
  * The CPU plugin (INFERENCE_PRECISION_HINT=f32, DYNAMIC_QUANTIZATION_GROUP_SIZE=0, KV_CACHE_PRECISION=f32),
    which fuses the chain into a FullyConnected / Gather with compressed weights: bit for bit too, except
    where its f32 hint turns a `Convert(f16)` into `Convert(f32)` (nf4 codes, f16 chain outputs), pinned below.
The weights are read out exactly: a MatMul with the identity as its first input gives W^T (each output is one
product w * 1 plus zeros), a Gather of every row gives W. Random inputs compare the fused forms with the unfused fold:
the cached weight and the gathered rows bit for bit; a MatMul streamed block by block within 2 K eps32 of
sum |x w| per output, because numpy's BLAS chooses its kernel, and so the order of the sums over K, by the
width of the matrix it is given (measured: about 2 of 3 outputs differ in the last bit).
"""
from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops
from openvino.passes import ConstantFolding, Manager

import irrun
import irrun.engine.decompression as decompression
import oracle as O
from irrun.errors import MemoryBudgetError
from irrun.tools.compare import OPENVINO_F32_CONFIG
from irrun.engine.plan import REWRITES

CPU_CONFIG = O.cpu_config(**OPENVINO_F32_CONFIG)
BITS = {"u8": 8, "i8": 8, "u4": 4, "i4": 4, "nf4": 4, "f4e2m1": 4, "f8e4m3": 8, "f8e5m2": 8, "u2": 2, "f8e8m0": 8}


def packed_const(et: str, codes: np.ndarray) -> ov.Node:
    """A Const of type `et` holding these codes (bit patterns), packed low bits first as IR files are."""
    bits = BITS[et]
    flat = codes.astype(np.uint8).reshape(-1)
    per_byte = 8 // bits
    flat = np.concatenate([flat, np.zeros((-flat.size) % per_byte, np.uint8)]).reshape(-1, per_byte)
    raw = np.zeros(flat.shape[0], np.uint8)
    for k in range(per_byte):
        raw |= flat[:, k] << np.uint8(k * bits)
    tensor = ov.Tensor(getattr(ov.Type, et), ov.Shape(list(codes.shape)))
    tensor.data[:] = raw.reshape(tensor.data.shape)
    return ov.op.Constant(tensor)


def random_codes(rng, et: str, shape) -> np.ndarray:
    """Codes of every value but NaN and infinity (an identity MatMul would spread them: NaN * 0)."""
    codes = rng.integers(0, 1 << BITS[et], shape).astype(np.uint8)
    if et == "f8e4m3":
        codes = np.where((codes & 0x7F) == 0x7F, 0x3C, codes)
    if et == "f8e5m2":
        codes = np.where((codes & 0x7C) == 0x7C, codes & 0x83, codes)
    return codes.astype(np.uint8)


def f16_scale(rng, shape, dtype):
    return ops.constant((rng.uniform(0.3, 3.0, shape) * 0.01 * rng.choice([-1, 1], shape)).astype(dtype))


def chain(rng, fmt: str, rows: int, cols: int, group: int | None, zero_point: bool, scale: str = "f16",
          to_f32: bool = True) -> ov.Node:
    """A chain as NNCF writes it: codes -> Convert -> [Subtract zp] -> Multiply scale -> [Reshape] -> [Convert]."""
    shape = (rows, cols // group, group) if group else (rows, cols)
    side_shape = (rows, cols // group, 1) if group else (rows, 1)
    ct = ov.Type.f16 if scale in ("f16", "f8e8m0") else ov.Type.f32
    if fmt == "codebook":
        table = ops.convert(packed_const("f8e4m3", random_codes(rng, "f8e4m3", (16,))), ct)
        index = ops.convert(packed_const("u4", random_codes(rng, "u4", shape)), ov.Type.u8)
        value = ops.gather(table, index, ops.constant(np.int64(0)))
    else:
        value = ops.convert(packed_const(fmt, random_codes(rng, fmt, shape)), ct)
    if zero_point:
        zp_type = "u8" if BITS[fmt if fmt != "codebook" else "u4"] == 8 else fmt if fmt in ("u4", "u2") else "u4"
        value = ops.subtract(value, ops.convert(packed_const(zp_type, random_codes(rng, zp_type, side_shape)), ct))
    if scale == "f8e8m0":
        factor = ops.convert(packed_const("f8e8m0", rng.integers(118, 132, side_shape).astype(np.uint8)), ct)
    else:
        factor = f16_scale(rng, side_shape, np.float16 if scale == "f16" else np.float32)
    value = ops.multiply(value, factor)
    if group:
        value = ops.reshape(value, ops.constant(np.array([rows, cols], np.int64)), False)
    if to_f32 and ct == ov.Type.f16:
        value = ops.convert(value, ov.Type.f32)
    return value


def save(tmp_path, outputs, params, name="model"):
    model = ov.Model(outputs, params)
    path = tmp_path / f"{name}.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    return str(path)


def folded_weights(path) -> dict[str, np.ndarray]:
    """OpenVINO's core ConstantFolding of the saved model: the Const the MatMul (as W) and the Gather read."""
    model = O.core().read_model(path)
    manager = Manager()
    manager.register_pass(ConstantFolding())
    manager.run_passes(model)
    weights = {}
    for node in model.get_ordered_ops():
        if node.get_type_name() == "MatMul":
            weights["MatMul"] = np.array(node.input_value(1).get_node().get_data())
        if node.get_type_name() == "Gather" and node.input_value(0).get_node().get_type_name() == "Constant":
            weights["Gather"] = np.array(node.input_value(0).get_node().get_data())
    return weights


def cpu(path, feeds) -> list[np.ndarray]:
    compiled = O.core().compile_model(path, "CPU", CPU_CONFIG)
    result = compiled(feeds)
    return [np.array(result[o]) for o in compiled.outputs]


def run(path, feeds, **load) -> list[np.ndarray]:
    return list(irrun.load(path, **load).run(feeds).values())


FORMATS = [  # (format, zero point, scale, group)
    ("u8", True, "f16", None), ("u8", True, "f32", None), ("i8", False, "f16", None), ("u8", False, "f16", 32),
    ("u4", True, "f16", 32), ("u4", True, "f32", 16), ("u4", True, "f16", None), ("i4", False, "f16", 32),
    ("i4", False, "f32", None), ("nf4", False, "f16", 32), ("nf4", False, "f32", 16),
    ("f4e2m1", False, "f8e8m0", 32), ("f4e2m1", False, "f16", 16), ("f8e4m3", False, "f16", 32),
    ("f8e4m3", False, "f8e8m0", 32), ("f8e5m2", False, "f16", None), ("f8e5m2", False, "f32", 16),
    ("codebook", False, "f16", 32), ("u2", True, "f16", 16),
]


def identity_model(tmp_path, rng, fmt, zero_point, scale, group, rows, cols=64):
    """A MatMul of an identity by one chain and a Gather of every row (and two negative ones) of another: the
    outputs are the decompressed weights read out exactly. Returns the model's path and its feeds."""
    x = ops.parameter([cols, cols], ov.Type.f32, name="x")
    ids = ops.parameter([rows + 2], ov.Type.i64, name="ids")
    matmul = ops.matmul(x, chain(rng, fmt, rows, cols, group, zero_point, scale), False, True)
    gather = ops.gather(chain(rng, fmt, rows, cols, group, zero_point, scale), ids, ops.constant(np.int64(0)))
    path = save(tmp_path, [matmul, gather], [x, ids])
    feeds = [np.eye(cols, dtype=np.float32), np.concatenate([np.arange(rows), [-1, -rows]]).astype(np.int64)]
    return path, feeds


@pytest.mark.parametrize("fmt,zero_point,scale,group", FORMATS)
def test_weights_equal_openvino_folding_and_cpu(tmp_path, fmt, zero_point, scale, group):
    """Each format, per channel or grouped, f16 or f32 scales, read through a MatMul and a Gather (its own
    chain each): irrun equals ConstantFolding bit for bit, and the CPU plugin (except nf4 behind an f16
    Convert, below)."""
    rows = 12
    path, feeds = identity_model(tmp_path, np.random.default_rng(abs(hash((fmt, zero_point, scale, group))) % 2**32),
                                 fmt, zero_point, scale, group, rows)
    model = irrun.load(path)
    assert len(model.decompression.chains) == 2
    got = list(model.run(feeds).values())
    on_cpu = cpu(path, feeds)
    if fmt != "codebook":  # ConstantFolding cannot fold a Gather with u8 indices (no reference evaluate)
        folded = folded_weights(path)
        expected = [np.ascontiguousarray(folded["MatMul"].T), folded["Gather"][feeds[1] % rows]]
        O.assert_same(got, expected, zero_sign=False, context=f"{fmt} vs ConstantFolding")
    if fmt == "nf4" and scale == "f16":
        # the CPU plugin's f32 hint turns Convert(nf4 -> f16) into Convert(nf4 -> f32): nf4 levels unrounded
        assert any(not np.array_equal(a, b) for a, b in zip(got, on_cpu))
        O.assert_same(got, on_cpu, atol=1e-3 * float(np.abs(got[0]).max()), context="nf4 vs CPU")
    else:
        O.assert_same(got, on_cpu, zero_sign=False, context=f"{fmt} vs CPU plugin")


def test_chain_in_f32_not_op_by_op(tmp_path):
    """The measurement behind the rule: the op-by-op reference (Node.evaluate) rounds the f16 Subtract and
    Multiply; ConstantFolding and the CPU plugin do not, and neither does irrun."""
    rng = np.random.default_rng(5)
    x = ops.parameter([64, 64], ov.Type.f32, name="x")
    path = save(tmp_path, [ops.matmul(x, chain(rng, "u8", 16, 64, None, True), False, True)], [x])
    feeds = [np.eye(64, dtype=np.float32)]
    by_op = O.run_reference(O.core().read_model(path), feeds)[0]
    got = run(path, feeds)[0]
    assert not np.array_equal(got, by_op)
    O.assert_same([got], [np.ascontiguousarray(folded_weights(path)["MatMul"].T)], zero_sign=False)
    O.assert_same([got], cpu(path, feeds), zero_sign=False)


def test_f16_constant_subgraphs_fold_in_f32(tmp_path):
    """Not only chains: any f16 constant subgraph folds in f32 and rounds once, where a Convert(f16) or the
    end of the folded region forces it (here a Sqrt and Divide feeding a Convert(f32), and the same values
    as an f16 Result)."""
    rng = np.random.default_rng(6)
    a = ops.constant(rng.uniform(0.1, 3, (4, 33)).astype(np.float16))
    b = ops.constant(rng.uniform(0.1, 3, (4, 33)).astype(np.float16))
    value = ops.sqrt(ops.divide(ops.subtract(a, b), ops.multiply(a, b)))
    rounded_on_the_way = ops.convert(ops.convert(ops.multiply(a, b), ov.Type.f16), ov.Type.f32)
    x = ops.parameter([1], ov.Type.f32, name="x")
    path = save(tmp_path, [ops.convert(value, ov.Type.f32), value, rounded_on_the_way, x], [x])
    model = O.core().read_model(path)
    manager = Manager()
    manager.register_pass(ConstantFolding())
    manager.run_passes(model)
    expected = [np.array(r.input_value(0).get_node().get_data()) for r in model.get_results()[:3]]
    got = run(path, [np.ones(1, np.float32)])[:3]
    O.assert_same(got, expected)
    by_op = O.run_reference(O.core().read_model(path), [np.ones(1, np.float32)])
    assert not np.array_equal(by_op[0], expected[0])  # op by op, each f16 result is rounded


@pytest.mark.parametrize("fmt,zero_point,scale,group", [
    ("u4", True, "f16", 32), ("i8", False, "f16", None), ("nf4", False, "f32", 16), ("codebook", False, "f16", 32)])
def test_fused_equals_unfused(tmp_path, monkeypatch, fmt, zero_point, scale, group):
    """Random inputs: cached, streamed (several blocks), and unfused give the same bits."""
    rng = np.random.default_rng(7)
    rows, cols = 40, 128
    x = ops.parameter([3, 5, cols], ov.Type.f32, name="x")
    ids = ops.parameter([2, 7], ov.Type.i32, name="ids")
    weight = chain(rng, fmt, rows, cols, group, zero_point, scale)
    outputs = [ops.matmul(x, weight, False, True), ops.gather(weight, ids, ops.constant(np.int32(0)))]
    path = save(tmp_path, outputs, [x, ids])
    feeds = [rng.standard_normal((3, 5, cols)).astype(np.float32),
             rng.integers(-rows, rows, (2, 7)).astype(np.int32)]
    monkeypatch.setattr(decompression, "BLOCK_BYTES", 7 * cols * 4)  # 7 rows a block: 6 blocks, the last short
    monkeypatch.setattr(decompression, "LOOKUP_ELEMENTS", 3 * cols)
    cached = irrun.load(path)
    streamed = irrun.load(path, max_memory=(tmp_path / "model.bin").stat().st_size + 36 * 1024)
    assert all(w.cached is not None for w in cached.decompression.weights.values())
    assert all(w.cached is None for w in streamed.decompression.weights.values())
    assert "streamed" in str(streamed.plan(feeds and {"x": (3, 5, cols), "ids": (2, 7)}))
    monkeypatch.setattr(decompression, "ENABLED", False)
    unfused = irrun.load(path)
    assert not unfused.decompression.chains
    expected = list(unfused.run(feeds).values())
    O.assert_same(list(cached.run(feeds).values()), expected, context="cached")
    got = list(streamed.run(feeds).values())
    O.assert_same(got[1:], expected[1:], context="streamed Gather")
    # numpy's BLAS picks its kernel (and with it the order of the K products' sums) by the matrix width, so
    # a block of rows is not always bit-equal to the same rows of the whole product: within K rounding errors
    weight = cached.decompression.weights[next(iter(cached.decompression.weights))].cached.astype(np.float64)
    bound = 2 * cols * np.finfo(np.float32).eps * (np.abs(feeds[0]).astype(np.float64) @ np.abs(weight).T)
    assert np.all(np.abs(got[0].astype(np.float64) - expected[0]) <= bound), "streamed MatMul"


def test_streaming_fits_a_budget_folding_does_not(tmp_path, monkeypatch):
    """A budget below the f32 weight: folding refuses to load, the fused reader streams."""
    rng = np.random.default_rng(8)
    rows, cols = 256, 256
    x = ops.parameter([1, cols], ov.Type.f32, name="x")
    path = save(tmp_path, [ops.matmul(x, chain(rng, "u4", rows, cols, 64, True), False, True)], [x])
    feeds = [rng.standard_normal((1, cols)).astype(np.float32)]
    budget = rows * cols * 4 // 2   # half the f32 weight
    monkeypatch.setattr(decompression, "BLOCK_BYTES", 16 * cols * 4)
    got = run(path, feeds, max_memory=budget)
    on_cpu = cpu(path, feeds)
    O.assert_same(got, on_cpu, atol=1e-5 * cols)
    monkeypatch.setattr(decompression, "ENABLED", False)
    with pytest.raises(MemoryBudgetError, match="memory budget"):
        irrun.load(path, max_memory=budget)


def test_chains_with_other_readers_fold_as_before(tmp_path):
    """A chain also read by an Add is not fused: it is folded at load (in f32, as OpenVINO folds)."""
    rng = np.random.default_rng(9)
    x = ops.parameter([16, 16], ov.Type.f32, name="x")
    weight = chain(rng, "u8", 16, 16, None, True)
    path = save(tmp_path, [ops.matmul(x, weight, False, True), ops.add(weight, x)], [x])
    model = irrun.load(path)
    assert not model.decompression.chains
    feeds = [np.eye(16, dtype=np.float32)]
    O.assert_same(list(model.run(feeds).values())[:1], [np.ascontiguousarray(folded_weights(path)["MatMul"].T)], zero_sign=False)


def test_rewrite_is_registered_once():
    assert REWRITES.count(decompression.fuse_readers) == 1


NNCF_DATA = __import__("pathlib").Path(__file__).parent / "data" / "compressed"


@pytest.mark.parametrize("name", sorted(p.stem for p in NNCF_DATA.glob("*.xml")))
def test_nncf_compressed_models(name):
    """Tiny models compressed by nncf.compress_weights (models/make_compressed_models.py) in each mode, with
    the CPU plugin's outputs: every weight is matched as a chain, the fused run agrees with the CPU plugin
    (measured: within 7e-7 of max |y|, from the order of the sums over K = 256; nf4 1.3e-4, its levels
    rounded to f16 by ConstantFolding and not by the plugin; atol 1e-5 and 1e-3 of max |y|) and the
    unfused fold bit for bit."""
    saved = np.load(NNCF_DATA / f"{name}.npz")
    feeds = {"x": saved["x"], "ids": saved["ids"]}
    model = irrun.load(str(NNCF_DATA / f"{name}.xml"))
    assert len(model.decompression.chains) == 2
    got = model.run(feeds)["y"]
    scale = np.abs(saved["y"]).max()
    O.assert_same([got], [saved["y"]], atol=(1e-3 if name.startswith("nf4") else 1e-5) * scale, context=name)
    decompression.ENABLED = False
    try:
        unfused = irrun.load(str(NNCF_DATA / f"{name}.xml")).run(feeds)["y"]
    finally:
        decompression.ENABLED = True
    O.assert_same([got], [unfused], context=f"{name} fused vs unfused")


def test_chain_that_cannot_stream_is_folded_whole(tmp_path):
    """A scale per input channel ([1, K]) varies along the codes' innermost axis, so no per-group table
    exists: the chain is still taken from its readers but folded whole at load, with the same values."""
    rng = np.random.default_rng(10)
    rows, cols = 8, 32
    codes = ops.convert(packed_const("u4", random_codes(rng, "u4", (rows, cols))), ov.Type.f16)
    weight = ops.convert(ops.multiply(codes, f16_scale(rng, (1, cols), np.float16)), ov.Type.f32)
    x = ops.parameter([cols, cols], ov.Type.f32, name="x")
    path = save(tmp_path, [ops.matmul(x, weight, False, True)], [x])
    model = irrun.load(path, max_memory=1 << 20)
    (weight,) = model.decompression.weights.values()
    assert len(model.decompression.chains) == 1 and weight.cached is not None
    got = list(model.run([np.eye(cols, dtype=np.float32)]).values())
    O.assert_same(got, [np.ascontiguousarray(folded_weights(path)["MatMul"].T)], zero_sign=False)


def test_gather_from_a_1d_converted_table_is_folded():
    """Gather(Convert(f8e4m3 Const [16]), ids, axis 0): a 1-D Const is not a code tensor (no rows and
    innermost axis to build a table on), so this is folded, not matched (it raised numpy's ValueError,
    found by tools/fuzz.py on a cb4 export whose codebook Gather lost its chain). Bytes 4, 8, 60 are
    f8e4m3 2^-7 (subnormal), 2^-6 and 1.5."""
    path = __import__("pathlib").Path(__file__).parent / "data" / "fuzz_regressions" / "codebook_rank1_gather"
    model = irrun.load(str(path / "model.xml"))
    assert not model.decompression.chains
    got = model.run([np.array([1, 2, 15], np.int32)])["output0"]
    assert got.dtype == np.float16 and got.tolist() == [2.0 ** -7, 2.0 ** -6, 1.5]
