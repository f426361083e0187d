"""Compressed weights decompressed by arithmetic (`CompressedWeight.make_affine`): u8/u4/u2 codes with per-group
zero points and scales become `(code - zp) * scale` in f32, kept only where that gives the lookup table's bits
for every code of every group. Oracle: OpenVINO's ConstantFolding of the chain (the weight read out exactly
through an identity MatMul and a Gather of every row), bit for bit, streamed and cached; and the lookup path
(`decompression.AFFINE = False`) bit for bit on random inputs."""
import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

import irrun
import irrun.engine.decompression as decompression
import oracle as O
from test_decompression import FORMATS, chain, folded_weights, identity_model, save

ARITHMETIC = ("u8", "u4", "u2")  # codes whose values are their numbers; the other formats look up


def no_cache(monkeypatch):
    """No cache allowance (as if model.bin filled the budget): every weight streams, activations still fit."""
    monkeypatch.setattr(decompression, "_bin_size", lambda graph: 1 << 50)


def affine_identity_model(tmp_path, fmt, zero_point, scale, group):
    rng = np.random.default_rng(abs(hash(("affine", fmt, zero_point, scale, group))) % 2**32)
    return identity_model(tmp_path, rng, fmt, zero_point, scale, group, rows=24)


@pytest.mark.parametrize("fmt,zero_point,scale,group", FORMATS)
def test_arithmetic_weights_equal_openvino_folding(tmp_path, monkeypatch, fmt, zero_point, scale, group):
    path, feeds = affine_identity_model(tmp_path, fmt, zero_point, scale, group)
    monkeypatch.setattr(decompression, "BLOCK_BYTES", 5 * 64 * 4)  # 5 rows a block
    monkeypatch.setattr(decompression, "LOOKUP_ELEMENTS", 3 * 64)
    cached = irrun.load(path)
    no_cache(monkeypatch)
    streamed = irrun.load(path)
    weights = list(streamed.decompression.weights.values())
    assert all(w.cached is None for w in weights) and all(w.cached is not None for w in
                                                           cached.decompression.weights.values())
    assert all((w.affine is not None) == (fmt in ARITHMETIC) for w in weights), fmt
    assert all(w.table is None for w in weights if w.affine is not None)  # no table kept beside the sides
    got = {"streamed": list(streamed.run(feeds).values()), "cached": list(cached.run(feeds).values())}
    if fmt != "codebook":
        folded = folded_weights(path)
        expected = [np.ascontiguousarray(folded["MatMul"].T), folded["Gather"][feeds[1] % 24]]
        for how, outputs in got.items():
            O.assert_same(outputs, expected, zero_sign=False, context=f"{fmt} {how} vs ConstantFolding")
    monkeypatch.setattr(decompression, "AFFINE", False)
    looked_up = list(irrun.load(path).run(feeds).values())
    for a, b in zip(got["streamed"], looked_up):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("fmt,zero_point,scale,group", [("u4", True, "f16", 32), ("u8", True, "f32", None),
                                                         ("u4", False, "f16", 16), ("u8", False, "f16", 32)])
def test_arithmetic_and_lookup_give_the_same_bits_on_random_inputs(tmp_path, monkeypatch, fmt, zero_point, scale,
                                                                    group):
    """Streamed block by block, the same blocks: the MatMul gets the same operands, so the same bits."""
    rng = np.random.default_rng(11)
    rows, cols = 40, 128
    x = ops.parameter([3, 5, cols], ov.Type.f32, name="x")
    ids = ops.parameter([2, 7], ov.Type.i32, name="ids")
    weight = chain(rng, fmt, rows, cols, group, zero_point, scale)
    path = save(tmp_path, [ops.matmul(x, weight, False, True), ops.gather(weight, ids, ops.constant(np.int32(0)))],
                [x, ids])
    feeds = [(rng.standard_normal((3, 5, cols)) * 100).astype(np.float32),
             rng.integers(-rows, rows, (2, 7)).astype(np.int32)]
    monkeypatch.setattr(decompression, "BLOCK_BYTES", 7 * cols * 4)
    budget = (tmp_path / "model.bin").stat().st_size + 36 * 1024
    outputs = {}
    for affine in (True, False):
        monkeypatch.setattr(decompression, "AFFINE", affine)
        model = irrun.load(path, max_memory=budget)
        (weight,) = model.decompression.weights.values()
        assert weight.cached is None and (weight.affine is not None) == affine
        outputs[affine] = list(model.run(feeds).values())
    for a, b in zip(outputs[True], outputs[False]):
        assert a.dtype == b.dtype and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_the_arithmetic_is_kept_only_when_it_gives_every_table_entry(tmp_path, monkeypatch):
    """One table entry off by one ulp (as if the chain rounded somewhere the arithmetic does not): refused."""
    path, _ = affine_identity_model(tmp_path, "u4", True, "f16", 16)
    no_cache(monkeypatch)
    model = irrun.load(path)
    weight = next(iter(model.decompression.weights.values()))
    weight.make_affine()
    assert weight.affine is not None
    weight.keep_table()
    table, table_type = weight.table
    tampered = np.array(table)
    tampered[17, 2, 9] = np.nextafter(tampered[17, 2, 9], np.float32(np.inf))
    weight.table = (tampered, table_type)
    weight.make_affine()
    assert weight.affine is None
