"""The `irrun` command: one module per command family, errors.py shared by all of them."""
from .main import main  # noqa: F401  (the console script's entry point, irrun.cli:main)
