"""Interpolate-1 (OpenVINO's v0 class), run the way OpenVINO runs it: its ConvertInterpolate1ToInterpolate4
transformation rewrites the op as Interpolate-4 with sizes = the target shape (shape_calculation_mode sizes, so
Interpolate-4 takes its scales as sizes / the padded dims and ignores the scales input), nearest_mode simple, cube_coeff -0.75, and: mode linear -> linear_onnx for rank < 5, linear
for rank 5; coordinate_transformation_mode align_corners when align_corners, else half_pixel for the linear
modes with zero pads unless the input is 4-D resized on axes {2, 3}, else asymmetric. Mode "area" (and
linear above rank 5) has no such rewrite, and OpenVINO cannot run it: irrun refuses it."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..ir.types import ELEMENT_TYPES
from .attrs import Bool, Enum, Ints
from .interpolate import InterpolateBase
from .registry import TensorInfo, op


@op("Interpolate", 1)
class Interpolate1(InterpolateBase):
    axes = Ints(min=0)
    mode = Enum("nearest", "linear", "cubic", "area", "linear_onnx")
    align_corners = Bool(default=False)
    antialias = Bool(default=False)
    pads_begin = Ints(default=(0,))
    pads_end = Ints(default=(0,))
    num_inputs = (2, 2)
    sizes_port, scales_port, axes_port = 1, None, None
    sizes_types = None  # any integer type
    shape_calculation_mode = "sizes"
    nearest_mode = "simple"
    cube_coeff = -0.75

    def __init__(self, values, context, layer=None):
        super().__init__(values, context, layer)
        self.v1_mode = self.mode

    def ports(self, inputs):
        axes = np.array(self.axes, dtype=np.int64)
        return inputs[1], None, TensorInfo(axes.shape, ELEMENT_TYPES["i64"], axes)

    def geometry(self, inputs):
        data = inputs[0]
        if data.rank is not None:
            self.mode, self.coordinate_transformation_mode = self.as_v4(data.rank)
        return super().geometry(inputs)

    def as_v4(self, rank):
        mode = self.v1_mode
        if mode == "linear":
            if rank > 5:
                raise ShapeError(f"mode linear on a rank-{rank} input has no Interpolate-4 form in OpenVINO",
                                 rule="attr.value")
            mode = "linear_onnx" if rank < 5 else "linear"
        elif mode == "area":
            raise ShapeError("mode area is not supported (OpenVINO has no kernel for it)", rule="attr.value")
        if self.align_corners:
            transform = "align_corners"
        elif (mode in ("linear", "linear_onnx") and not any(self.pads_begin) and not any(self.pads_end)
              and not (rank == 4 and sorted(self.axes) == [2, 3] and len(self.axes) == 2)):
            transform = "half_pixel"
        else:
            transform = "asymmetric"
        return mode, transform


Interpolate1.attributes = {name: attr for name, attr in Interpolate1.attributes.items()
                           if name in ("axes", "mode", "align_corners", "antialias", "pads_begin", "pads_end")}
