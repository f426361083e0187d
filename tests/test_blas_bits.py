"""Results do not depend on the BLAS's thread count (irrun/ops/blas.py), which is what lets the engine fit that count
to the machine's load by default (engine/blas_threads.py): OpenBLAS's matrix-matrix products give the same bits on
one and two threads, the matrix-vector products that do not go through ops.blas.matmul on one thread, every
product in the ops goes through it, and whole models give the same bits on one and two threads."""
from __future__ import annotations

import ast
import ctypes
import itertools
from pathlib import Path

import numpy as np
import pytest
from openvino import opset1

import irrun
from irrun.ops import blas
from oracle import build

OPS = Path(irrun.__file__).parent / "ops"
MODELS = Path(__file__).parents[1] / "models"
GETTER, SETTER = blas.openblas_function(blas.GETTERS), blas.openblas_function(blas.SETTERS)
pytestmark = pytest.mark.skipif(SETTER is None, reason="NumPy's BLAS is not OpenBLAS")  # the claim is OpenBLAS's


def at_threads(count, compute):
    before = int(GETTER())
    SETTER(ctypes.c_int(count))
    try:
        return compute()
    finally:
        SETTER(ctypes.c_int(before))


def test_openblas_matrix_products_give_the_same_bits_on_one_and_two_threads():
    rng = np.random.default_rng(0)
    for m, k, n, transposed in itertools.product([2, 33, 197], [3, 768, 2048], [2, 64, 1000], [False, True]):
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((n, k), dtype=np.float32).T if transposed else rng.standard_normal((k, n), np.float32)
        one, two = at_threads(1, lambda: a @ b), at_threads(2, lambda: a @ b)
        np.testing.assert_array_equal(one.view(np.int32), two.view(np.int32), err_msg=f"{m} {k} {n} {transposed}")


@pytest.mark.parametrize("a_shape,b_shape", [((1, 2048), (2048, 1000)), ((197, 4096), (4096, 1)), ((4096,), (4096, 64)),
                                             ((3, 1, 768), (768, 3000)), ((20000,), (20000,))])
def test_matrix_vector_products_run_on_one_thread(a_shape, b_shape):
    """These shapes go to OpenBLAS's matrix-vector kernels; the first two differed between one and two threads."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(a_shape, dtype=np.float32), rng.standard_normal(b_shape, dtype=np.float32)
    reference = at_threads(1, lambda: np.matmul(a, b))
    for count in (1, 2):
        got = at_threads(count, lambda: blas.matmul(a, b))
        np.testing.assert_array_equal(np.asarray(got).view(np.int32), np.asarray(reference).view(np.int32))
    assert at_threads(2, lambda: (blas.matmul(a, b), int(GETTER()))[1]) == 2  # the count is restored


def test_every_product_in_the_ops_goes_through_blas_matmul():
    """A matrix product written with @, np.matmul, np.dot, np.inner, np.tensordot or an optimised einsum would
    bypass the one-thread rule."""
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
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "einsum"
                  and any(keyword.arg == "optimize" for keyword in node.keywords)):
                found.append(f"{path.name}:{node.lineno} einsum(optimize=...)")
    assert not found, found


def test_models_give_the_same_bits_on_one_and_two_threads(tmp_path):
    """A batch-1 fully connected layer of the shape that differed, and a shipped CNN."""
    rng = np.random.default_rng(2)
    weights = rng.standard_normal((2048, 1000)).astype(np.float32)
    built = build(lambda p: opset1.matmul(p["x"], opset1.constant(weights), False, False),
                  {"x": rng.standard_normal((1, 2048)).astype(np.float32)}, tmp_path / "fc")
    resnet = MODELS / "torch_resnet"
    cases = [(built.xml, built.feeds), (resnet / "model.xml", [np.load(resnet / "input.npy")])]
    for xml, feeds in cases:
        model = irrun.load(str(xml))
        one, two = at_threads(1, lambda: model.run(feeds)), at_threads(2, lambda: model.run(feeds))
        for name in one:
            np.testing.assert_array_equal(one[name].view(np.int32), two[name].view(np.int32), err_msg=f"{xml} {name}")
