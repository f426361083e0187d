"""Parameter, Constant and Result."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError, WeightsError
from ..ir.types import ElementType
from ..ir.weights import decode
from .attrs import Int, Ints, Str, Type
from .registry import Op, TensorInfo, op
from .shapes import numel, parse_partial_shape, static_dims


class PartialShape(Str):
    kind = "partial shape"

    def parse(self, text):
        try:
            return parse_partial_shape(text)
        except ValueError as exc:
            raise ValueError(f"{text!r} is not a shape: {exc}") from None


@op("Parameter", 1)
class Parameter(Op):
    shape = PartialShape()
    element_type = Type()
    num_inputs = (0, 0)
    foldable = False

    def infer(self, inputs):
        if self.element_type.storage is None:
            # OpenVINO reads an input of dynamic type; irrun cannot feed one
            raise ShapeError(f"element type {self.element_type} is not supported for inputs", rule="attr.value.spec")
        return [TensorInfo(static_dims(self.shape), self.element_type)]


@op("Constant", 1)
class Constant(Op):
    element_type = Type()
    shape = Ints(min=0)
    offset = Int(min=0, exact=True)
    size = Int(min=0, exact=True)
    num_inputs = (0, 0)

    def infer(self, inputs):
        return [TensorInfo(self.shape, self.element_type, self.load(), literal=True)]

    def load(self) -> np.ndarray:
        et: ElementType = self.element_type
        count = numel(self.shape)
        needed = et.nbytes(count)
        if et.storage is None:
            # OpenVINO reads such a Const (its data then has no type): it cannot be computed with.
            self.context.weights.slice(self.offset, self.size)  # but it refuses bytes beyond the file
            raise WeightsError(f"Const element type {et.name} has no data type to compute with", rule="const.type.spec")
        if self.size < needed:
            raise WeightsError(
                f"size {self.size} is too small for {count} elements of {et.name} ({needed} bytes)", rule="const.size")
        if self.context.budget is not None:
            self.context.budget.check(count * et.storage.itemsize, f"Const of shape {list(self.shape)} {et.name}")
        raw = self.context.weights.slice(self.offset, self.size)
        return decode(raw, et, count).reshape(self.shape)

    def run(self, inputs, in_infos, out_infos):
        return [out_infos[0].value]


@op("Result", 1)
class Result(Op):
    foldable = False

    def infer(self, inputs):
        return [inputs[0]]

    def run(self, inputs, in_infos, out_infos):
        return [inputs[0]]
