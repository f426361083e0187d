"""irrun: read OpenVINO IR models, check them against the op specification, run them with NumPy."""
from .errors import IRError
from .engine.loader import load
from .engine.runtime import Model, TensorDesc
from .engine.session import Session
from .tools.check import Report, check
from .scale.batch import BatchReport, check_many, input_files, run_batch
from .tools import text  # irrun.text: tokenize, detokenize and generate text from an exported folder

__all__ = ["BatchReport", "IRError", "Model", "Report", "Session", "TensorDesc", "check", "check_many", "input_files",
           "load", "run_batch", "text"]
__version__ = "0.1.0"
