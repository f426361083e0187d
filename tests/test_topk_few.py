"""TopK of a few of many in one row (irrun/ops/reduction.py: partition, then sort only the values at least as good
as the k-th) gives the full stable sort's values and indices: ties (all equal, -0.0 beside 0.0, at the k-th value),
infinities, integers, f16, both modes and every sort, written out with Python's sort; rows with NaN, several
rows and large K keep the full sort."""
import numpy as np
import pytest

from irrun.ops import reduction


def full_sort(x, k, largest, sort):
    """The spec's order written out: best value first, the lower index first among equal values."""
    row = x.reshape(-1)
    sign = -1.0 if largest else 1.0
    chosen = sorted(range(len(row)), key=lambda i: (sign * float(row[i]), i))[:k]
    if sort == "index":
        chosen = sorted(chosen)
    chosen = np.array(chosen, dtype=np.int64)
    return row[chosen], chosen


def rows(rng):
    yield "tied", np.full(3234, 1 / 91, dtype=np.float32)
    yield "random", rng.standard_normal(1000).astype(np.float32)
    few = rng.integers(-3, 4, 801).astype(np.float32)  # many ties at the k-th value
    yield "few values", few
    zeros = np.where(rng.random(400) < 0.5, np.float32(-0.0), np.float32(0.0))
    zeros[::37] = 1.0
    yield "signed zeros", zeros
    inf = rng.standard_normal(500).astype(np.float32)
    inf[::50], inf[7::50] = np.inf, -np.inf
    yield "infinities", inf
    yield "f16", rng.integers(0, 9, 640).astype(np.float16)
    yield "i32", rng.integers(-5, 5, 999).astype(np.int32)
    yield "u8", rng.integers(0, 3, 300).astype(np.uint8)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("sort", ["value", "index", "none"])
def test_few_of_many_equal_the_full_sort(largest, sort):
    rng = np.random.default_rng(7)
    for name, row in rows(rng):
        order = full_sort(row, len(row), largest, "value")[1]
        for k in (1, 2, 37, len(row) // 4, len(row) // 4 + 1):
            chosen = np.sort(order[:k]) if sort == "index" else order[:k]
            for shape in ((len(row),), (1, len(row)), (1, 1, len(row))):
                x = row.reshape(shape)
                values, indices = reduction.topk(x, k, x.ndim - 1, largest, sort)
                np.testing.assert_array_equal(indices.reshape(-1), chosen, err_msg=f"{name} k={k} {shape}")
                np.testing.assert_array_equal(values.reshape(-1), row[chosen], err_msg=f"{name} k={k} {shape}")
                assert indices.shape == shape[:-1] + (k,)
                assert values.dtype == row.dtype


def test_tied_row_by_hand():
    values, indices = reduction.topk(np.array([2, 5, 5, 1, 5, 0, 5, 5], dtype=np.float32), 2, 0, True, "value")
    np.testing.assert_array_equal(indices, [1, 2])
    np.testing.assert_array_equal(values, [5, 5])
    values, indices = reduction.topk(np.array([3, 1, 2, 1, 9, 1, 7, 8], dtype=np.int64), 2, 0, False, "value")
    np.testing.assert_array_equal(indices, [1, 3])
