"""Compressed weights that are never expanded whole: decompression chains feeding a MatMul or a Gather.

NNCF-compressed models store a weight as a chain of layers on a low-precision Const, for example

    u4 Const -> Convert(f16) -> Subtract(zero point) -> Multiply(scale) -> Reshape -> Convert(f32) -> MatMul

Folding that chain at load gives an f32 copy eight times the size of the u4 codes. Here the chain is
matched once at load and kept as a `CompressedWeight`: the packed codes stay in the mapped .bin, and any
rows of the weight are decompressed on demand into a bounded scratch block. The rewritten steps
(`FusedMatMul`, `FusedGather`) compute the consumer block by block; the decompressed weight is cached
whole when the memory budget has room for it (`Decompression.plan_cache`).

Values: rows are computed by the chain's own op kernels with the folding rule of `irrun.engine.folding` (f16
intermediates kept in f32, as OpenVINO's ConstantFolding and CPU plugin compute them). Because every
chain layer before the optional Reshape is elementwise in the weight codes, and the zero points and
scales are constant along the innermost axis (one per group), the chain is evaluated once per group on
the code alphabet (16 values for 4-bit types, 256 for 8-bit) and the weight is a table lookup of its
codes: the same arithmetic on the same operands, so the same bits as folding the whole chain.

What is matched (anything else is folded at load as before):
- the head: `Convert(C)` or the codebook form `Gather(table, C or Convert(C), axis 0)`, C a Const of rank
  2 or more, of an integer or float type of at most 8 bits (u8 i8 u4 i4 u2 u3 u6 nf4 f4e2m1 f8e4m3 ...),
- then any of `Convert`, `Subtract`, `Multiply`, `Add` whose other input is a constant side input that
  is the same along the codes' innermost axis (zero points and scales per group or per channel), then at
  most one `Reshape` that keeps the leading (row) axis, then `Convert`s,
- every layer of the chain read only by the next one; the chain's output read only by `MatMul` (as its
  second input, with transpose_b, a 2-D weight) or `Gather` (as its data, axis 0, batch_dims 0).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .folding import F32, NARROW_FLOATS as NARROW, WideValues
from ..ir.types import ElementType
from ..ir.weights import decode
from ..ops.conversion import convert_array
from ..ops.registry import TensorInfo
from .chains import ELEMENTWISE, Chain, find_chains
from .plan import KERNEL, REWRITES, Step

LOOKUP_ELEMENTS = 1 << 18  # weight elements decompressed per table lookup (tables stay cache-sized)


# ---------------------------------------------------------------- the compressed weight

@dataclass
class CompressedWeight:
    """One matched chain, bound to the loaded model: its codes in the .bin, its side inputs' values, the
    shapes and types inference gave each layer. `rows(index)` decompresses some rows of the output."""

    chain: Chain
    graph: object
    codes_type: ElementType
    codes_shape: tuple
    raw: memoryview                  # the codes' bytes in the mapped .bin
    infos: dict                      # (layer id, output) -> TensorInfo for the chain's layers and side inputs
    uses: int = 0
    cached: np.ndarray | None = None
    table: tuple | None = None       # the kept lookup table and its declared type (streamed weights)
    affine: list | None = None       # [(ufunc, side per row and group)]: the chain as arithmetic, checked equal

    @property
    def shape(self) -> tuple:
        return tuple(self.infos[self.chain.output].shape)

    @property
    def dtype(self):
        return self.infos[self.chain.output].type.storage

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize

    @property
    def num_rows(self) -> int:
        return self.codes_shape[0]

    def row_bytes_ok(self) -> bool:
        per_row = int(np.prod(self.codes_shape[1:]))
        return self.codes_type.nbytes(per_row) * self.num_rows == self.codes_type.nbytes(per_row * self.num_rows) \
            and (per_row * self.codes_type.bits) % 8 == 0

    def full(self) -> np.ndarray:
        """The whole decompressed weight (the cached copy when there is one)."""
        if self.cached is not None:
            return self.cached
        return self.rows(slice(0, self.num_rows))

    def rows(self, index) -> np.ndarray:
        """Rows `index` (a slice or an index array, along the leading axis) of the chain's output."""
        if self.cached is not None:
            return self.cached[index]
        if isinstance(index, slice):
            start, stop, _ = index.indices(self.num_rows)
            step = max(1, LOOKUP_ELEMENTS // max(1, int(np.prod(self.codes_shape[1:]))))
            if stop - start > step:  # sub-blocks whose tables stay in the processor's cache
                out = np.empty((stop - start,) + self.shape[1:], dtype=self.dtype)
                for first in range(start, stop, step):
                    last = min(stop, first + step)
                    self._rows(slice(first, last), out[first - start:last - start])
                return out
        return self._rows(index)

    def _rows(self, index, out=None) -> np.ndarray:
        """Rows `index`, written into `out` (a C-contiguous block of the output) when given."""
        codes = self._codes(index)
        if self.affine is not None:
            return self._affine_rows(codes, index, out)
        table, table_type = self._table(index)           # [rows, groups..., alphabet]
        count = table.shape[-1]
        table = np.broadcast_to(table, codes.shape[:-1] + (count,))
        groups = int(np.prod(table.shape[:-1]))
        offsets = np.arange(0, groups * count, count, dtype=np.intp)[:, None]
        flat = np.add(codes.reshape(groups, -1), offsets, dtype=np.intp)  # take() wants intp indices
        table = np.ascontiguousarray(table).reshape(-1)
        if out is not None and self._plain_tail(table_type):  # nothing to convert: look up in place
            np.take(table, flat, out=out.reshape(flat.shape), mode="clip")  # in range: "clip" skips buffering out
            return out
        values = self._tail(np.take(table, flat, mode="clip").reshape(codes.shape), table_type)
        if out is not None:
            out[...] = values
        return values

    def _plain_tail(self, table_type) -> bool:
        """The chain's output is the table's f32 values unchanged (only a Reshape and Converts to f32)."""
        if self.dtype != np.float32 or not (table_type.name in NARROW or table_type.storage == np.float32):
            return False
        after = self.chain.layers[self.chain.layers.index(self.chain.reshape):] if self.chain.reshape else []
        return all(self.graph.nodes[layer_id].ref.type == "Reshape" or
                   self.graph.nodes[layer_id].op.destination_type.name == "f32" for layer_id in after)

    # -- the chain as arithmetic

    def _affine_rows(self, codes: np.ndarray, index, out=None) -> np.ndarray:
        """Rows `index` computed by `affine` from their codes (shaped [rows, codes_shape[1:]])."""
        count = codes.shape[0]
        if out is None:
            out = np.empty((count,) + self.shape[1:], dtype=self.dtype)
        groups = self.affine_groups()
        self._affine(codes.reshape(count, groups, -1), index, out.reshape(count, groups, -1))
        return out

    def _affine(self, source: np.ndarray, index, target: np.ndarray) -> None:
        """`affine` on codes [rows, groups, n] of rows `index`, into f32 `target` of the same shape."""
        if not self.affine:
            np.copyto(target, source, casting="unsafe")
        for ufunc, side in self.affine:
            ufunc(source, side[index], out=target, dtype=np.float32)
            source = target

    def affine_groups(self) -> int:
        return int(np.prod(self.codes_shape[1:-1], dtype=np.int64)) if len(self.codes_shape) > 2 else 1

    def affine_bytes(self) -> int:
        return 0 if not self.affine else sum(side.nbytes for _, side in self.affine)

    def make_affine(self) -> None:
        """Set `affine` when the chain up to its Reshape is `Convert(codes)` then Subtract/Multiply/Add of
        f16/f32 zero points and scales per group, its output the f32 values of the lookup table, and the codes'
        values are their numbers (u4, u8): every weight element is then `(code - zero point) * scale` evaluated
        elementwise in f32. It is kept only when that arithmetic gives the lookup table's bits for every code
        value of every group (the folded chain is the definition), so it gives them for every element."""
        chain, graph = self.chain, self.graph
        before = chain.layers[:chain.layers.index(chain.reshape)] if chain.reshape else chain.layers
        alphabet = _alphabet(self.codes_type)
        if graph.nodes[before[0]].ref.type != "Convert" or alphabet.dtype.kind not in "ui" or \
                not np.array_equal(alphabet, np.arange(alphabet.size)) or \
                not self._plain_tail(self.infos[(before[-1], 0)].type):
            return
        rows, groups = self.num_rows, self.affine_groups()
        ops = []
        for layer_id in before[1:]:
            node = graph.nodes[layer_id]
            if node.ref.type == "Convert":
                if not node.op.destination_type.is_float:
                    return
                continue
            sides = [source for source in node.inputs if source[0] not in chain.layers]
            info = self.infos[sides[0]] if len(sides) == 1 else None
            if info is None or info.value is None or info.type.name not in ("f16", "f32") or \
                    info.value.ndim > len(self.codes_shape):
                return
            side = np.broadcast_to(info.value.astype(np.float32), self.codes_shape[:-1] + (1,))
            ops.append(({"Subtract": np.subtract, "Multiply": np.multiply, "Add": np.add}[node.ref.type],
                        np.ascontiguousarray(side).reshape(rows, groups, 1)))
        self.affine = ops
        step = max(1, (1 << 21) // max(1, groups * alphabet.size))  # rows per check: tables of about 8 MB
        codes = np.arange(alphabet.size, dtype=np.uint8 if alphabet.size <= 256 else np.uint16)
        for first in range(0, rows, step):
            index = slice(first, min(rows, first + step))
            table, _ = self._table(index)
            count = table.shape[0]
            expected = np.ascontiguousarray(table, dtype=np.float32).reshape(count, groups, alphabet.size)
            got = np.empty_like(expected)
            self._affine(np.broadcast_to(codes, got.shape), index, got)
            if not np.array_equal(got.view(np.uint32), expected.view(np.uint32)):
                self.affine = None
                return

    # -- pieces

    def _codes(self, index) -> np.ndarray:
        et, shape = self.codes_type, self.codes_shape
        per_row = int(np.prod(shape[1:]))
        row_bytes = et.nbytes(per_row)
        raw = np.frombuffer(self.raw, dtype=np.uint8, count=row_bytes * shape[0]).reshape(shape[0], row_bytes)
        picked = raw[index]
        count = picked.shape[0] * per_row
        codes = _code_numbers(np.ascontiguousarray(picked).reshape(-1), et, count)
        return codes.reshape((picked.shape[0],) + tuple(shape[1:]))

    def table_bytes(self) -> int:
        """Bytes of the whole lookup table (rows x groups x code values, f32)."""
        sides = [info.value.shape for source, info in self.infos.items()
                 if info.value is not None and source[0] not in self.chain.layers and info.value.ndim]
        rank = len(self.codes_shape)
        groups = 1
        for axis in range(rank - 1):
            groups *= max([self.codes_shape[axis] if axis == 0 else 1] + [
                shape[axis - rank + len(shape)] for shape in sides if axis - rank + len(shape) >= 0])
        return groups * (1 << self.codes_type.bits) * 4

    def keep_table(self) -> None:
        """Compute the lookup table once and keep it (streaming then only unpacks and looks up)."""
        self.table = self._table(slice(0, self.num_rows))

    def _table(self, index) -> tuple[np.ndarray, object]:
        """The chain (up to its Reshape) evaluated on every code value, per row and group: the values
        (unrounded f32 where the declared type is f16/bf16) and the declared type."""
        if self.table is not None:
            return self.table[0][index], self.table[1]
        alphabet = _alphabet(self.codes_type)
        count = len(alphabet)
        shape = self.codes_shape
        rows = np.arange(shape[0])[index].size
        head = alphabet.reshape((1,) * (len(shape) - 1) + (count,))
        values = {(self.chain.codes, 0): TensorInfo(head.shape, self.codes_type, head)}
        wide = WideValues()
        last = None
        for layer_id in self.chain.layers:
            if layer_id == self.chain.reshape:
                break
            node = self.graph.nodes[layer_id]
            in_infos = [values[source] if source in values else
                        _side_rows(self.infos[source], index, len(shape), self.num_rows) for source in node.inputs]
            out = wide.fold(node, in_infos, node.op.infer(in_infos), node.op.run)
            values[(layer_id, 0)] = out[0]
            last = (layer_id, 0)
        declared = values[last]
        table = wide.values.get(last)
        if table is None:
            table = declared.value.astype(np.float32) if declared.type.name in NARROW else declared.value
        return np.broadcast_to(table, (rows,) + tuple(table.shape[1:])), declared.type

    def _tail(self, values: np.ndarray, table_type) -> np.ndarray:
        """The Reshape and the Converts after it on the looked-up values, then the rounding of an f16/bf16
        result where the chain ends (the folded value's boundary)."""
        rows = values.shape[0]
        after = self.chain.layers[self.chain.layers.index(self.chain.reshape):] if self.chain.reshape else []
        current, wide = table_type, table_type.name in NARROW
        for layer_id in after:
            node = self.graph.nodes[layer_id]
            if node.ref.type == "Reshape":
                values = values.reshape((rows,) + tuple(self.infos[(layer_id, 0)].shape[1:]))
                continue
            values = _cast(values, F32 if wide else current, node.op.destination_type)
            current, wide = node.op.destination_type, False
        if wide:
            values = _cast(values, F32, current)
        return np.ascontiguousarray(values, dtype=self.dtype)


def _cast(values: np.ndarray, src, dst) -> np.ndarray:
    """Convert, without the copy when the values already have the destination's float storage."""
    if dst.is_float and dst.name != "bf16" and values.dtype == dst.storage:
        return values
    return convert_array(values, src, dst)


def _side_rows(info: TensorInfo, index, rank: int, num_rows: int) -> TensorInfo:
    """A side input restricted to the chosen rows when it spans the row axis."""
    value = info.value
    if value.ndim == rank and value.shape[0] == num_rows and num_rows != 1:
        value = value[index]
    return TensorInfo(value.shape, info.type, value)


def _alphabet(et: ElementType) -> np.ndarray:
    """Every value a Const of type `et` can hold, by code, decoded as irrun decodes Consts."""
    count = 1 << et.bits
    if et.bits == 8:
        raw = np.arange(256, dtype=np.uint8)
    elif et.bits == 4:
        raw = (np.arange(0, 16, 2, dtype=np.uint8) | (np.arange(1, 16, 2, dtype=np.uint8) << 4))
    else:
        raw = None
    if raw is not None:
        return decode(memoryview(raw.tobytes()), et, count)
    return _code_values(np.arange(count, dtype=np.uint8), et)


def _code_numbers(raw: np.ndarray, et: ElementType, count: int) -> np.ndarray:
    """The code (0 .. 2**bits - 1) of each element, as indices into `_alphabet`."""
    if et.bits == 8:
        return raw[:count]
    if et.bits == 4:  # byte b -> u16 (b & 15) | (b >> 4) << 8, whose little-endian bytes are its two codes in order
        pairs = raw.astype("<u2")
        high = pairs >> 4
        high <<= 8
        pairs &= 15
        pairs |= high
        return pairs.view(np.uint8)[:count]
    values = decode(memoryview(raw), et, count)
    return _value_codes(values, et)


def _code_values(codes: np.ndarray, et: ElementType) -> np.ndarray:
    """Values of codes for types whose codes are their values (u1, u2, u3, u6)."""
    return codes.astype(et.storage)


def _value_codes(values: np.ndarray, et: ElementType) -> np.ndarray:
    return values.astype(np.uint8)


# ---------------------------------------------------------------- binding, caching, fused steps

ENABLED = True                # False: chains are folded at load like any constant subgraph (for tests)
BLOCK_BYTES = 2 << 20         # decompressed rows per block in a streamed MatMul (read back from the L3 cache)
SCRATCH_FACTOR = 3            # a block's temporaries: table, looked-up values, converted copy
AFFINE = True                 # False: every chain is a table lookup (CompressedWeight.make_affine)


class Decompression:
    """The chains of one model: found from the graph before load, bound to the loaded values after it,
    and run in place of their readers (`run`). Layers of a chain are computed by nobody else."""

    def __init__(self, graph):
        self.graph = graph
        self.chains = find_chains(graph) if ENABLED else []
        self.absorbed = {layer_id for chain in self.chains for layer_id in chain.absorbed}
        self.codes = {chain.codes for chain in self.chains}
        self.readers = {r: chain for chain in self.chains for r, _ in chain.consumers}
        self.weights: dict[tuple[str, int], CompressedWeight] = {}

    def codes_info(self, node) -> TensorInfo:
        """A codes Const's shape and type, its bytes checked but not decoded."""
        op = node.op
        et, count = op.element_type, int(np.prod(op.shape))
        if et.storage is None or op.size < et.nbytes(count):
            return op.infer([])[0]  # raises the Const's own error
        op.context.weights.slice(op.offset, op.size)
        return TensorInfo(tuple(op.shape), et)

    def bind(self, infos: dict, budget) -> None:
        """Make each chain's CompressedWeight; a chain the streaming kernels cannot take is folded now."""
        for chain in self.chains:
            codes_node = self.graph.nodes[chain.codes]
            op = codes_node.op
            known = {source: infos[source] for layer_id in chain.layers
                     for source in self.graph.nodes[layer_id].inputs + [(layer_id, 0)]}
            weight = CompressedWeight(chain, self.graph, op.element_type, tuple(op.shape),
                                      op.context.weights.slice(op.offset, op.size), known,
                                      uses=len(chain.consumers))
            if not _streamable(weight):
                weight.cached = fold_chain(weight, budget)
            elif AFFINE:
                weight.make_affine()
            self.weights[chain.output] = weight
        self.plan_cache(budget)

    def plan_cache(self, budget) -> None:
        """Spend the cache allowance (half of what the budget leaves beside the mapped .bin; the rest is
        for activations and scratch): first the lookup tables every streamed weight needs (about an eighth
        of the f32 weight for 4-bit codes in groups of 128), then whole decompressed copies of the
        most-read weights (smallest first among equals) while they fit; the rest streams."""
        allowance = max(0, (budget.limit - _bin_size(self.graph)) // 2)
        open_weights = [w for w in self.weights.values() if w.cached is None]
        tables = {id(w): w.table_bytes() if w.affine is None else w.affine_bytes() for w in open_weights}
        used = sum(tables.values())
        keep_tables = used <= allowance
        if not keep_tables:
            used, tables = 0, {key: 0 for key in tables}
        for weight in sorted(open_weights, key=lambda w: (-w.uses, w.nbytes)):
            extra = weight.nbytes - tables[id(weight)]
            if used + extra <= allowance:
                weight.cached = weight.full()
                weight.affine = None  # its sides are not needed any more
                used += extra
            elif keep_tables and weight.affine is None:
                weight.keep_table()
        self.cached_bytes = used

    def kernel(self, node, budget):
        """The kernel of a fused step: reader `node` computed from its compressed weight (its input from
        the chain is an empty slot)."""
        chain = self.readers[node.id]
        weight = self.weights[chain.output]
        index = node.inputs.index(chain.output)
        w_info = TensorInfo(weight.shape, weight.infos[chain.output].type)

        def run(arrays, in_infos, out_infos):
            in_infos = list(in_infos)
            in_infos[index] = w_info
            if node.ref.type == "Gather":
                return fused_gather(node.op, weight, arrays, in_infos, out_infos)
            return fused_matmul(node.op, weight, arrays[0], in_infos, out_infos, budget)

        return run


def fuse_readers(plan) -> None:
    """The plan rewrite: each MatMul/Gather reading a decompression chain becomes a fused step."""
    decompression = getattr(plan.model, "decompression", None)
    if not decompression or not decompression.readers:
        return
    for step in list(plan.steps):
        if step.kind == KERNEL and step.node.id in decompression.readers:
            weight = decompression.weights[decompression.readers[step.node.id].output]
            how = "cached" if weight.cached is not None else "streamed"
            fused = Step(KERNEL, step.node, step.inputs, step.outputs, step.in_infos, step.out_infos,
                         kernel=decompression.kernel(step.node, plan.model.budget), dynamic=step.dynamic,
                         label=f"{step.name} + decompression ({weight.codes_type.name}, {how})")
            plan.replace([step], fused)


fuse_readers.reusable = True  # one step of the same layer and slots for one, whatever the shapes (irrun/engine/replan.py)
REWRITES.append(fuse_readers)


def _bin_size(graph) -> int:
    try:
        import os
        return os.path.getsize(graph.doc.bin_path)
    except (OSError, TypeError):
        return 0


def _streamable(weight: CompressedWeight) -> bool:
    chain, infos = weight.chain, weight.infos
    shape = weight.shape
    n = weight.num_rows
    if shape is None or not shape or shape[0] != n or not weight.row_bytes_ok():
        return False
    if any(weight.graph.nodes[r].ref.type == "MatMul" for r, _ in chain.consumers) and len(shape) != 2:
        return False
    rank = len(weight.codes_shape)
    for layer_id in chain.layers:
        node = weight.graph.nodes[layer_id]
        info = infos[(layer_id, 0)]
        if info.shape is None or None in info.shape:
            return False
        if layer_id != chain.reshape and node.ref.type in ELEMENTWISE[1:]:
            for source in node.inputs:
                if source in infos and (source[0] not in chain.layers) and source[0] != chain.codes:
                    side = infos[source]
                    if side.value is None or side.value.ndim > rank:
                        return False
                    if side.value.ndim and side.value.shape[-1] != 1:
                        return False
                    if side.value.ndim == rank and side.value.shape[0] not in (1, n):
                        return False
        if layer_id == chain.reshape:
            before = infos[node.inputs[0]]
            if before.shape[0] != n or info.shape[0] != n:
                return False
    looked_up = chain.layers[:chain.layers.index(chain.reshape)] if chain.reshape else chain.layers
    return all(tuple(infos[(layer_id, 0)].shape) == tuple(weight.codes_shape) for layer_id in looked_up)


def fold_chain(weight: CompressedWeight, budget) -> np.ndarray:
    """The chain folded whole, as load-time folding computes it (for chains that cannot stream)."""
    codes_node = weight.graph.nodes[weight.chain.codes]
    values = {(weight.chain.codes, 0): codes_node.op.infer([])[0]}
    wide = WideValues()
    for layer_id in weight.chain.layers:
        node = weight.graph.nodes[layer_id]
        in_infos = [values.get(source) or weight.infos[source] for source in node.inputs]
        out_infos = node.op.infer(in_infos)
        for info in out_infos:
            budget.check(int(np.prod(info.shape)) * info.type.storage.itemsize, "a decompressed weight")
        values[(layer_id, 0)] = wide.fold(node, in_infos, out_infos, node.op.run)[0]
        for source in node.inputs:
            values.pop(source, None)
            wide.forget(source)
    return values[weight.chain.output].value


def fused_matmul(op, weight: CompressedWeight, x, in_infos, out_infos, budget) -> list[np.ndarray]:
    """MatMul(x, W, transpose_b) with W decompressed block of rows by block of rows (output columns)."""
    out_info = out_infos[0]
    if weight.cached is not None:
        return op.run([x, weight.cached], in_infos, out_infos)
    n, k = weight.shape
    rows = max(1, min(n, BLOCK_BYTES // max(1, k * 4)))
    budget.check(SCRATCH_FACTOR * rows * k * 4, "a decompression block")
    out = np.empty(out_info.shape, dtype=out_info.type.storage)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        block = weight.rows(slice(start, stop))
        block_infos = [in_infos[0], TensorInfo(block.shape, in_infos[1].type)]
        block_out = TensorInfo(tuple(out_info.shape[:-1]) + (stop - start,), out_info.type)
        out[..., start:stop] = op.run([x, block], block_infos, [block_out])[0]
    return [out]


def fused_gather(op, weight: CompressedWeight, in_arrays, in_infos, out_infos) -> list[np.ndarray]:
    """Gather(W, indices, axis 0) decompressing only the rows the indices name."""
    _, indices, axis = in_arrays
    if weight.cached is not None:
        return op.run([weight.cached, indices, axis], in_infos, out_infos)
    n = weight.num_rows
    flat = indices.astype(np.int64)
    flat = np.where(flat < 0, flat + n, flat)
    valid = (flat >= 0) & (flat < n)
    needed = np.unique(flat[valid])
    compact = weight.rows(needed)
    remapped = np.where(valid, np.searchsorted(needed, np.where(valid, flat, 0)), needed.size)
    remapped = remapped.astype(indices.dtype)
    infos = [TensorInfo(compact.shape, in_infos[0].type), in_infos[1], in_infos[2]]
    return op.run([compact, remapped, axis], infos, out_infos)
