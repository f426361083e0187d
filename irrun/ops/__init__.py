"""Every op irrun implements; importing this package registers them all."""
from . import conversion, infrastructure, pooling  # noqa: F401
from .registry import REGISTRY, Op, TensorInfo, lookup, supported_ops  # noqa: F401
