"""Tensors OpenVINO gives the element type `dynamic`, which the checker's inference does not carry (issue 22).

A Convert to dynamic, a Parameter or a Const of element type dynamic are stricter-class errors in irrun
(attr.value.spec, const.type.spec), and the checker goes on with their declared ports. OpenVINO goes on with a
tensor of dynamic type, which merges with any other type (a MatMul, Concat or Add of it and an f32 tensor is f32),
and refuses it in two places only (measured with openvino 2026.4.1, tests/test_check_compat_followups.py):

- a ReadValue-6 whose variable_type is not dynamic, given such an init ("The type specified in the Variable has
  to extend (relax) the type inferred from the initializing subgraph"); an Assign of it is read;
- the value of a Const of type dynamic (or of a constant converted to dynamic), read by shape inference directly
  (Unsqueeze axes, Reshape target, ...) or through ops OpenVINO folds to get it (a Convert, a Concat with other
  constants): "Element not supported" or "Tensor was not initialized".
  Where nothing reads the value (a Gather's indices, an Add with a Parameter) the file is read.

`DynamicTypes.visit`, called for every layer in inference order, follows both kinds of outputs and returns
those refusals.
"""
from __future__ import annotations

import numpy as np

from ..errors import IRError, ShapeError
from ..ir.types import ElementType, element_type
from ..ops.registry import TensorInfo
from ..ops.shapes import numel
from ..ops.stricter import collected

DYNAMIC = "dynamic"
VALUE_LIMIT = 1 << 16  # elements: shape inference reads small values; a larger one is not tried


def _other_type(t: ElementType) -> ElementType:
    """A second type of the same kind as `t`: an op whose output type changes with it passes its input's on."""
    if t.is_float:
        return element_type("f16" if t.name == "f32" else "f32")
    if t.name == "boolean":
        return element_type("u8")
    if t.is_signed:
        return element_type("i32" if t.name == "i64" else "i64")
    return element_type("u16" if t.name == "u8" else "u8")


def _inferred(op, in_infos):
    """(shape, type) of each output, or the rule of the error that refuses the inputs."""
    with collected():  # stricter-class errors do not matter here
        try:
            return [(out.shape, out.type) for out in op.infer(in_infos)]
        except IRError as exc:
            return exc.rule
        except Exception:  # noqa: BLE001 - an op's own bug: the layer is not followed
            return None


class DynamicTypes:
    def __init__(self):
        self.typed: set[tuple[str, int]] = set()   # outputs of type dynamic in OpenVINO
        # values OpenVINO cannot compute (from a Const of type dynamic): the id of the layer each comes from
        self.unread: dict[tuple[str, int], str] = {}
        self.const_shapes: dict[tuple[str, int], tuple] = {}  # the shapes of those, where the checker may not know it

    def visit(self, node, in_infos) -> list[IRError]:
        """Follow `node`, given its inputs' infos as the checker has them; returns what OpenVINO refuses there."""
        op = node.op
        if op is None:
            return []
        source_type = getattr(op, "element_type", None) if node.ref.type in ("Constant", "Parameter") else \
            getattr(op, "destination_type", None) if node.ref.type == "Convert" else None
        if source_type is not None and source_type.name == DYNAMIC:
            self.typed.add((node.id, 0))
            if node.ref.type == "Constant":
                self.unread[(node.id, 0)] = node.id
                self.const_shapes[(node.id, 0)] = tuple(op.shape)  # its port may declare none
            elif node.ref.type == "Convert" and in_infos and in_infos[0] is not None and (
                    in_infos[0].value is not None or node.inputs[0] in self.unread):
                self.unread[(node.id, 0)] = self.unread.get(node.inputs[0], node.id)  # OpenVINO would fold it
                self.const_shapes[(node.id, 0)] = self.const_shapes.get(node.inputs[0], in_infos[0].shape)
            return []
        if any(info is None for info in in_infos):
            return []
        problems = self._read_values(node, in_infos)
        typed = [i for i, source in enumerate(node.inputs) if source in self.typed]
        if typed:
            problems += self._follow_type(node, in_infos, typed)
        return problems

    def _follow_type(self, node, in_infos, typed) -> list[IRError]:
        if node.ref.type == "ReadValue" and node.op.version == 6 and getattr(node.op, "variable_type", None) \
                is not None and node.op.variable_type.name != DYNAMIC:
            return [ShapeError(f"variable_type {node.op.variable_type} does not relax (extend) the init input's type "
                               f"dynamic, which its producer (layer {node.inputs[0][0]}) gives in OpenVINO",
                               rule="variable.type", port=0)]
        first = [TensorInfo(info.shape, info.type) if i in typed else info for i, info in enumerate(in_infos)]
        second = [TensorInfo(info.shape, _other_type(info.type)) if i in typed else info
                  for i, info in enumerate(in_infos)]
        a, b = _inferred(node.op, first), _inferred(node.op, second)
        if isinstance(a, list) and isinstance(b, list):
            self.typed.update((node.id, index) for index, (x, y) in enumerate(zip(a, b)) if x[1] != y[1])
        return []

    def _read_values(self, node, in_infos) -> list[IRError]:
        """A refusal where the op reads the value of an input computed from a Const of type dynamic: inferred
        with a value there (zeros) and without, the outputs differ. Otherwise the outputs are such values too
        when OpenVINO would fold the op (every other input has a value)."""
        unread = [i for i, source in enumerate(node.inputs) if source in self.unread]
        if not unread:
            return []
        for i in unread:
            info = in_infos[i]
            info = TensorInfo(self.const_shapes.get(node.inputs[i], info.shape), info.type)
            if not info.is_static or info.type.storage is None or numel(info.shape) > VALUE_LIMIT:
                continue
            valued = list(in_infos)
            valued[i] = TensorInfo(info.shape, info.type, np.zeros(info.shape, info.type.storage))
            without = list(in_infos)
            without[i] = info
            if _inferred(node.op, valued) != _inferred(node.op, without):
                const = self.unread[node.inputs[i]]
                return [ShapeError(f"reads the value of input {i}, computed from layer {const} of element type "
                                   f"dynamic, which OpenVINO cannot compute (\"Element not supported\")",
                                   rule="const.type", port=i)]
        if node.op.foldable and node.ref.type != "ShapeOf" and all(
                i in unread or info.value is not None for i, info in enumerate(in_infos)):
            const = self.unread[node.inputs[unread[0]]]
            self.unread.update({(node.id, index): const for index in range(len(node.layer.outputs))})
        return []
