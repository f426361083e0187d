"""irrun: read OpenVINO IR models, check them against the op specification, run them with NumPy."""
from .errors import IRError
from .runtime import Model, Session, TensorDesc, load
from .check import Report, check

__all__ = ["IRError", "Model", "Report", "Session", "TensorDesc", "check", "load"]
__version__ = "0.1.0"
