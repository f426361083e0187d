"""Constant MatMul weights read with transpose_b kept in Fortran order (irrun/engine/weight_layout.py): the
products are bit-identical to those on the C-ordered weight, and the weights that must keep their layout do."""
from __future__ import annotations

import numpy as np
import pytest

import irrun
from irbuild import IRBuilder
from irrun.engine import loader, weight_layout


def linear_model(tmp_path, data_shape, n, k, dtype=np.float32, transpose_a=False, also_added=False, name="m"):
    """Parameter -> MatMul(transpose_b) with an f16 Const -> Convert weight (N, K) computed at load; optionally
    the weight also read by an Add."""
    rng = np.random.default_rng(len(data_shape) * 1000 + n + k)
    et = "f64" if dtype == np.float64 else "f32"
    weight = rng.standard_normal((n, k)).astype(np.float16)
    b = IRBuilder()
    x = b.parameter(data_shape, et, name="x", shape_attr=",".join("?" if d is None else str(d) for d in data_shape))
    w16 = b.const(weight)
    w = b.op("Convert", "opset1", [(w16, 0)], {"destination_type": et}, [([n, k], et)])
    out_shape = list(data_shape[:-2]) + [data_shape[-1] if transpose_a else data_shape[-2], n]
    mm = b.op("MatMul", "opset1", [(x, 0), (w, 0)],
              {"transpose_a": str(transpose_a).lower(), "transpose_b": "true"}, [(out_shape, et)])
    b.result((mm, 0), name="y")
    if also_added:
        add = b.op("Add", "opset1", [(w, 0), (w, 0)], {}, [([n, k], et)])
        b.result((add, 0), name="twice")
    concrete = [d if d is not None else 5 for d in data_shape]
    data = rng.standard_normal(concrete).astype(dtype)
    return b.save(tmp_path, name), data, weight.astype(dtype)


def weight_of(model):
    (value,) = [info.value for (layer, _), info in model.infos.items()
                if info.value is not None and model.graph.nodes[layer].ref.type == "Convert"]
    return value


def first(outputs):
    return next(iter(outputs.values()))


def plain_model(xml, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(loader, "weights_by_column", lambda graph, infos, budget, weights=None: None)
        return irrun.load(xml)


@pytest.mark.parametrize("data_shape, n, k, dtype, transpose_a", [
    ((4, 512), 1000, 512, np.float32, False),
    ((3, 999), 400, 999, np.float32, False),
    ((1, 128, 96), 384, 96, np.float32, False),
    ((3, 20, 512), 129, 512, np.float32, False),
    ((2, 40, 300), 160, 300, np.float64, False),
    ((1, 300, 30), 160, 300, np.float32, True),
    ((1, None, 512), 1000, 512, np.float32, False),  # tokens not known at load (run with 5)
])
def test_relaid_weight_gives_the_same_bits(tmp_path, monkeypatch, data_shape, n, k, dtype, transpose_a):
    xml, data, weight = linear_model(tmp_path, data_shape, n, k, dtype, transpose_a)
    model = irrun.load(xml)
    relaid = weight_of(model)
    assert relaid.flags.f_contiguous and not relaid.flags.c_contiguous and relaid.shape == (n, k)
    got = first(model.run({"x": data}))
    plain = plain_model(xml, monkeypatch)
    assert weight_of(plain).flags.c_contiguous
    np.testing.assert_array_equal(got, first(plain.run({"x": data})))
    rows = np.swapaxes(data, -1, -2) if transpose_a else data
    expected = rows.astype(np.float64) @ weight.astype(np.float64).T
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.sqrt(k))


@pytest.mark.parametrize("data_shape, also_added", [
    ((1, 300), False),        # one row: a matrix-vector product, whose bits the layout would change
    ((16, 300), False),       # 16 x 200 x 300: OpenBLAS's small-matrix kernels, likewise
    ((None, 300), False),     # rows not known at load on 2-D data (a classifier head over a dynamic batch)
    ((1, None, 300), True),   # rows not known on 3-D data, but the weight is also read by an Add
    ((4, 300), True),         # the weight has a reader other than a MatMul's transposed input
])
def test_weights_that_keep_their_layout(tmp_path, data_shape, also_added):
    xml, data, _ = linear_model(tmp_path, data_shape, 200, 300, also_added=also_added)
    model = irrun.load(xml)
    assert weight_of(model).flags.c_contiguous
    model.run({"x": data})


def test_small_weights_keep_their_layout(tmp_path):
    xml, _, _ = linear_model(tmp_path, (4, 16), 16, 16)
    assert weight_of(irrun.load(xml)).flags.c_contiguous


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_openblas_bits_do_not_depend_on_the_weight_layout_past_small_products(dtype):
    """What the module relies on, on this machine's BLAS: products past SMALL_PRODUCT give the same bits on the
    C-ordered and the Fortran-ordered weight (odd sizes, few and many rows, short and long sums)."""
    rng = np.random.default_rng(7)
    for rows, n, k in [(2, 1000, 501), (3, 577, 600), (7, 383, 375), (49, 97, 211), (128, 768, 768), (197, 96, 97),
                       (1100, 31, 30), (64, 3072, 33)]:
        assert rows * n * k > weight_layout.SMALL_PRODUCT
        data, weight = rng.standard_normal((rows, k)).astype(dtype), rng.standard_normal((n, k)).astype(dtype)
        np.testing.assert_array_equal(data @ weight.T, data @ np.asfortranarray(weight).T, err_msg=str((rows, n, k)))
