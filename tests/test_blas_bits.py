"""Results do not depend on how many threads compute the products (irrun/ops/blas.py), which is what lets the
engine fit that count to the machine's load by default (engine/blas_threads.py): ops.blas.matmul gives the same
bits on one, two and three workers for shapes whose bits OpenBLAS's own threads change (K = 464, a batch-1 fully
connected layer, matrix-vector products, f64), every product in the ops goes through it, and whole models give
the same bits on one and two workers."""
from __future__ import annotations

import ast
import itertools
import warnings
from pathlib import Path

import numpy as np
import pytest
from openvino import opset1

import irrun
from irrun.engine import blas_threads
from irrun.ops import blas
from oracle import build

OPS = Path(irrun.__file__).parent / "ops"
MODELS = Path(__file__).parents[1] / "models"


@pytest.fixture
def at_workers(monkeypatch):
    """at_workers(count, compute): compute() with products on `count` threads (the BLAS itself on one)."""
    monkeypatch.setattr(blas_threads._POLICY, "current", blas_threads._POLICY.current)
    monkeypatch.setattr(blas._Workers, "split", blas._Workers.split)
    before = blas.workers()

    def run(count, compute):
        assert blas_threads._apply(count)
        try:
            return compute()
        finally:
            blas.set_workers(before)
    return run


SHAPES = [((1024, 464), (464, 49)), ((64, 2305), (2305, 196)), ((1, 2048), (2048, 1000)), ((1, 4096), (4096, 3000)),
          ((197, 4096), (4096, 1)), ((3, 128, 768), (768, 600)), ((2, 1, 1024, 464), (464, 300)),
          ((300, 1153), (1153, 7))]


@pytest.mark.parametrize("a_shape,b_shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_bits_do_not_depend_on_the_workers(at_workers, a_shape, b_shape, dtype):
    rng = np.random.default_rng(sum(a_shape) + sum(b_shape))
    a, b = rng.standard_normal(a_shape).astype(dtype), rng.standard_normal(b_shape).astype(dtype)
    results = [at_workers(count, lambda: blas.matmul(a, b)) for count in (1, 2, 3)]
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])
    np.testing.assert_allclose(results[0], np.matmul(a, b), rtol=1e-4, atol=1e-3)
    out = np.full(results[0].shape, np.nan, dtype=dtype)
    assert at_workers(2, lambda: blas.matmul(a, b, out=out)) is out
    np.testing.assert_array_equal(out, results[0])


def test_blocks_are_fixed_by_the_shapes():
    assert blas._blocks(np.zeros((2, 3), np.float32), np.zeros((3, 4), np.float32)) is None  # small: one call
    assert blas._blocks(np.zeros((8, 8), np.int64), np.zeros((8, 8), np.int64)) is None  # NumPy's own loop
    axis, bounds = blas._blocks(np.zeros((1024, 464), np.float32), np.zeros((464, 49), np.float32))
    assert axis == -2 and bounds == [0, 256, 512, 768, 1024]
    axis, bounds = blas._blocks(np.zeros((1, 4096), np.float32), np.zeros((4096, 3000), np.float32))
    assert axis == -1 and bounds == [0, 750, 1500, 2250, 3000]
    axis, bounds = blas._blocks(np.zeros((8, 1, 4096), np.float32), np.zeros((4096, 300), np.float32))
    assert axis == -1 and bounds == [0, 150, 300]  # a batch of eight counts; blocks of 128 at least


def test_every_product_in_the_ops_goes_through_blas_matmul():
    """A matrix product written with @, np.matmul, np.dot, np.inner or np.tensordot would bypass the blocks."""
    found = []
    for path in sorted(OPS.glob("*.py")):
        if path.name == "blas.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                found.append(f"{path.name}:{node.lineno} @")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in ("matmul", "dot", "inner", "tensordot", "vdot")
                  and isinstance(node.func.value, ast.Name) and node.func.value.id == "np"):
                found.append(f"{path.name}:{node.lineno} np.{node.func.attr}")
    assert not found, found


def test_models_give_the_same_bits_on_one_and_two_workers(tmp_path, at_workers):
    """ShuffleNet-v2's 1x1 convolution over 464 channels and a batch-1 fully connected layer (both change with
    OpenBLAS's own thread count), and a shipped CNN."""
    rng = np.random.default_rng(2)
    conv_weights = rng.standard_normal((1024, 464, 1, 1)).astype(np.float32)
    conv = build(lambda p: opset1.convolution(p["x"], opset1.constant(conv_weights), [1, 1], [0, 0], [0, 0], [1, 1]),
                 {"x": rng.standard_normal((1, 464, 7, 7)).astype(np.float32)}, tmp_path / "conv")
    fc_weights = rng.standard_normal((2048, 1000)).astype(np.float32)
    fc = build(lambda p: opset1.matmul(p["x"], opset1.constant(fc_weights), False, False),
               {"x": rng.standard_normal((1, 2048)).astype(np.float32)}, tmp_path / "fc")
    resnet = MODELS / "torch_resnet"
    cases = [(conv.xml, conv.feeds), (fc.xml, fc.feeds), (resnet / "model.xml", [np.load(resnet / "input.npy")])]
    for (xml, feeds), inplace in itertools.product(cases, (True, False)):
        model = irrun.load(str(xml))
        observer = None if inplace else (lambda *args: None)  # the plain step loop too
        one = at_workers(1, lambda: model.run(feeds, observer=observer))
        two = at_workers(2, lambda: model.run(feeds, observer=observer))
        for name in one:
            np.testing.assert_array_equal(one[name], two[name], err_msg=f"{xml} {name}")


def test_products_on_helper_threads_warn_no_more_than_on_one(tmp_path, at_workers):
    """inf * 0 in a product gives NaN quietly, as on one thread: NumPy's error state is per thread, and the helper
    threads printed "RuntimeWarning: invalid value encountered in matmul" for the blocks they computed."""
    weights = np.zeros((512, 512), np.float32)
    built = build(lambda p: opset1.matmul(p["x"], opset1.constant(weights), False, False),
                  {"x": np.full((512, 512), np.inf, np.float32)}, tmp_path)
    model = irrun.load(str(built.xml))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = at_workers(2, lambda: model.run(built.feeds))
    assert np.isnan(next(iter(out.values()))).all()
    assert [str(w.message) for w in caught] == []


def test_few_rows_times_a_wide_matrix_is_computed_transposed():
    """2..FEW_ROWS rows times a wide matrix: (b^T a^T)^T, returned C-contiguous, the same bits with `out`; one row
    (a matrix-vector product) and more rows as they are."""
    rng = np.random.default_rng(7)
    b = rng.standard_normal((300, 400)).astype(np.float32)  # below CHUNK_WORK: one call, unsplit
    for rows, transposed in ((1, False), (2, True), (17, True), (blas.FEW_ROWS, True), (blas.FEW_ROWS + 1, False)):
        a = rng.standard_normal((rows, 300)).astype(np.float32)
        got = blas.matmul(a, b)
        assert got.flags.c_contiguous and got.shape == (rows, 400)
        np.testing.assert_array_equal(got, np.matmul(b.T, a.T).T if transposed else np.matmul(a, b))
        out = np.full_like(got, np.nan)
        assert blas.matmul(a, b, out=out) is out
        np.testing.assert_array_equal(out, got)
