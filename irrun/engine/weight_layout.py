"""Load-time layout of constant MatMul weights: a weight read only as input 1 of MatMuls with transpose_b
(a Linear layer's (N, K) weight) is kept with its K axis outermost in memory (Fortran order): the same values,
shape and dtype, so every reader sees the same tensor, but the product then hands OpenBLAS a row-major K x N
operand instead of a transposed one, which its single-thread GEMM runs 5-10% faster on transformer shapes
(M = 49-200 rows) and up to 1.7x faster for 2-8 rows (benchmarks/transformer_kernels.py). The result bits are
the same either way for OpenBLAS's blocked GEMM (measured, tests/test_weight_layout.py); its small-matrix kernels
(rows x N x K up to 100^3, separate kernels per operand layout) and matrix-vector products sum in another order
on the other layout. So a weight keeps its layout (and the bits) where a reader's rows (the data's second-last
dim) are known and make a product that small, or are not known on 2-D data (a classifier head over a dynamic
batch, mostly one row). Rows not known on data of rank 3 or more (a transformer's tokens) are relaid: the
products stay bit-identical when large, small ones (one-token steps, say) may differ in their last bits
(docs/semantics.md).

Values run-time layers read are also made aligned to their element size (`aligned_for_run_time`): NumPy hands
only aligned arrays to BLAS and its SIMD loops, and the .bin leaves many Consts unaligned."""
from __future__ import annotations

import dataclasses

import numpy as np

MIN_BYTES = 1 << 16  # smaller weights: the layout makes no measurable difference
SMALL_PRODUCT = 100 ** 3  # rows x N x K up to which OpenBLAS (0.3.x, x86-64) runs its small-matrix kernels
RELAY_ROWS = 128  # rows of a weight copied to Fortran order at a time


def weights_by_column(graph, infos: dict, budget, weights=None) -> None:
    """Replace, in `infos`, each such weight computed at load by its Fortran-ordered copy (one weight at a time,
    the C-ordered one then freed; a weight whose copy would not fit the memory budget keeps its layout).
    `weights`: the WeightsFile, told of every copy (which may have read the mapping)."""
    readers: dict[tuple[str, int], list] = {}
    for layer_id in graph.order:
        node = graph.nodes[layer_id]
        for port, source in enumerate(node.inputs):
            readers.setdefault(source, []).append((node, port))
    for source, reading in readers.items():
        info = infos.get(source)
        value = None if info is None else info.value
        if not (isinstance(value, np.ndarray) and _relayable(value, budget) and all(
                _weight_of_rows(node, port, infos, value.shape) for node, port in reading)):
            continue
        infos[source] = dataclasses.replace(info, value=_copy(value, "F", weights))


def aligned_for_run_time(graph, infos: dict, weights=None, absorbed=frozenset()) -> None:
    """Replace, in `infos`, each value a layer computed at run time reads (a Const's view of the .bin above all)
    that is not aligned to its element size by an aligned copy. The .bin packs Consts back to back, so one after
    an odd-sized u8 or boolean Const starts at an odd offset, and NumPy hands only aligned arrays to BLAS and its
    SIMD loops: an unaligned f32 weight made a matrix-vector product 20-30 times slower. Values read only while
    loading (an f16 weight converted to f32) stay views of the mapping, which the loader releases, as do those
    of the `absorbed` layers (decompression chains: engine/decompression.py reads them once, at load)."""
    for layer_id in graph.order:
        if layer_id in absorbed:
            continue
        node = graph.nodes[layer_id]
        outputs = [infos.get((layer_id, port)) for port in range(len(node.layer.outputs))]
        if outputs and all(info is not None and info.value is not None for info in outputs):
            continue  # computed at load
        for source in node.inputs:
            info = infos.get(source)
            if info is not None and isinstance(info.value, np.ndarray) and not info.value.flags.aligned:
                infos[source] = dataclasses.replace(info, value=_copy(info.value, "C", weights))


def _copy(value: np.ndarray, order: str, weights) -> np.ndarray:
    copy = _fortran_copy(value) if order == "F" else np.array(value)
    copy.flags.writeable = False
    if weights is not None:
        weights.read_through(value.nbytes)
    return copy


def _fortran_copy(value: np.ndarray) -> np.ndarray:
    """A 2-D array in Fortran order, RELAY_ROWS rows at a time: each block's transposing copy stays in the cache
    (3-4 times faster than np.asfortranarray on tall weights, measured: 32000 x 1024 f32 in 78 ms, not 256)."""
    copy = np.empty(value.shape, value.dtype, order="F")
    by_column = copy.T
    for start in range(0, value.shape[0], RELAY_ROWS):
        by_column[:, start:start + RELAY_ROWS] = value[start:start + RELAY_ROWS].T
    return copy


def _relayable(value: np.ndarray, budget) -> bool:
    # only arrays computed at load (an f16 weight's Convert, say) or to be copied anyway (aligned_for_run_time): a
    # Const read from the weights file stays a view of the file, which the loader releases from memory as it goes
    return (value.ndim == 2 and value.dtype in (np.float32, np.float64) and value.flags.c_contiguous
            and (value.flags.owndata or not value.flags.aligned)
            and MIN_BYTES <= value.nbytes <= budget.limit - budget.live and min(value.shape) > 1)


def _weight_of_rows(node, port: int, infos: dict, weight_shape) -> bool:
    """Input `port` of `node` is the transposed weight of a MatMul whose data's shape is dynamic or gives products
    (of one matrix of a batch, as when the data is not contiguous) past OpenBLAS's small-matrix kernels."""
    if node.ref.type != "MatMul" or port != 1 or not node.op.transpose_b or node.inputs[0] not in infos:
        return False
    shape = infos[node.inputs[0]].shape
    if shape is None or len(shape) < 2:
        return shape is None
    rows = shape[-1] if node.op.transpose_a else shape[-2]
    if not isinstance(rows, int):
        return len(shape) > 2
    return rows >= 2 and rows * weight_shape[0] * weight_shape[1] > SMALL_PRODUCT
