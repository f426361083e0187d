"""Every op irrun implements; importing this package registers them all."""
from . import (  # noqa: F401
    activation,
    arithmetic,
    attention,
    avg_pooling,
    conversion,
    convolution,
    detection,
    embedding,
    infrastructure,
    interpolate,
    matrix,
    movement,
    normalization,
    pooling,
    reduction,
    roi_pooling,
    sampling,
    scatter,
    sequence,
    shape_ops,
)
from .registry import REGISTRY, Op, TensorInfo, lookup, supported_ops  # noqa: F401
