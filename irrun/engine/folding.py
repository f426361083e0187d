"""Constants computed at load, with the precision OpenVINO's ConstantFolding gives them.

OpenVINO folds every constant subgraph before it runs a model (core `ov::pass::ConstantFolding`, which
every plugin's pipeline runs). Its reference kernels have no f16/bf16 arithmetic, so the pass clones each
foldable op that has an f16 or bf16 input or output with those inputs converted to f32, and the clone's
f32 result is what its consumers see: along a folded chain f16/bf16 values stay in f32, unrounded. A value
is rounded to its declared type only where that type is forced on it:

- by a Convert (the pass leaves Convert, ConvertLike, ConvertPromoteTypes, FakeConvert, Ceiling,
  RandomUniform, ReadValue/Assign and the sub-graph ops alone; a Convert then converts the f32 value,
  so `f16 -> Convert(f32)` is exact and `-> Convert(f16)` rounds; the others read the rounded value),
- where the folded value leaves the folded region: a layer computed at run time, or a Result.

So a weight decompression chain `u4 -> Convert(f16) -> Subtract(zp) -> Multiply(f16 scale) -> Reshape ->
Convert(f32)` is computed in f32 throughout, exactly like the CPU plugin's fused FullyConnected computes
it; op by op (as `Node.evaluate` and irrun at run time compute) the Subtract and Multiply results would
each be rounded to f16. docs/semantics.md ("Constant folding") lists the measurements.
"""
from __future__ import annotations

import numpy as np

from ..ir.types import ELEMENT_TYPES
from ..ops.conversion import convert_array
from ..ops.registry import TensorInfo

NARROW_FLOATS = ("f16", "bf16")  # the types ConstantFolding computes in f32
F32 = ELEMENT_TYPES["f32"]
# Ops the pass does not convert to f32 (its whitelist); of these only Convert reads the unrounded value.
KEEP_PRECISION = {"Convert", "ConvertLike", "ConvertPromoteTypes", "FakeConvert", "Ceiling", "RandomUniform",
                  "ReadValue", "Assign", "TensorIterator", "Loop", "If"}


class WideValues:
    """The unrounded f32 values of folded f16/bf16 tensors, by (layer id, output index).

    `fold` computes one foldable layer whose inputs are all known; `forget` drops a value nothing folded
    will read again. The rounded values, in the declared types, stay in the TensorInfos as before."""

    # Code types whose Convert to f16/bf16 passes on the unrounded f32 value, as the CPU plugin's fused
    # compressed-weight path reads them; empty (OpenVINO's reference semantics) except while
    # tools/openvino_fusion.py emulates the plugin to explain a difference.
    unrounded_codes: frozenset = frozenset()

    def __init__(self):
        self.values: dict[tuple[str, int], np.ndarray] = {}

    def fold(self, node, in_infos: list[TensorInfo], out_infos: list[TensorInfo], execute) -> list[TensorInfo]:
        """`execute(in_arrays, in_infos, out_infos) -> arrays` runs the layer's kernel (with the runtime's
        checks). Returns the layer's output infos carrying their (declared-type) values."""
        wide_in = [self.values.get(source) for source in node.inputs]
        kind = node.ref.type
        if kind == "Convert":
            if wide_in[0] is not None:
                in_infos = [TensorInfo(in_infos[0].shape, F32, wide_in[0])]
            result = self._plain(node, in_infos, out_infos, execute)
            if in_infos[0].type.name in self.unrounded_codes and out_infos[0].type.name in NARROW_FLOATS:
                self.values[(node.id, 0)] = convert_array(in_infos[0].value, in_infos[0].type, F32)
            return result
        narrow = any(i.type.name in NARROW_FLOATS for i in list(in_infos) + list(out_infos))
        if kind in KEEP_PRECISION or not narrow:
            return self._plain(node, in_infos, out_infos, execute)
        promoted = [TensorInfo(i.shape, F32, w if w is not None else i.value.astype(np.float32))
                    if i.type.name in NARROW_FLOATS else i for i, w in zip(in_infos, wide_in)]
        try:
            promoted_out = node.op.infer(promoted)
        except Exception:  # noqa: BLE001 - an op that refuses f32 here keeps its own precision
            return self._plain(node, in_infos, out_infos, execute)
        if not _promotes(out_infos, promoted_out):
            return self._plain(node, in_infos, out_infos, execute)
        arrays = execute([i.value for i in promoted], promoted, promoted_out)
        result = []
        for index, (declared, array) in enumerate(zip(out_infos, arrays)):
            if declared.type.name in NARROW_FLOATS:
                self.values[(node.id, index)] = array
                array = convert_array(array, F32, declared.type)
            result.append(TensorInfo(declared.shape, declared.type, array))
        return result

    def forget(self, source: tuple[str, int]) -> None:
        self.values.pop(source, None)

    @staticmethod
    def _plain(node, in_infos, out_infos, execute):
        arrays = execute([i.value for i in in_infos], in_infos, out_infos)
        return [TensorInfo(info.shape, info.type, value) for info, value in zip(out_infos, arrays)]


def _promotes(declared: list[TensorInfo], promoted: list[TensorInfo]) -> bool:
    """The f32 clone gives f32 exactly where the layer declares f16/bf16, and the same types elsewhere."""
    return len(declared) == len(promoted) and all(
        p.type is F32 if d.type.name in NARROW_FLOATS else p.type == d.type for d, p in zip(declared, promoted))
