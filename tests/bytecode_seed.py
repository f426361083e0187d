"""A private bytecode folder (PYTHONPYCACHEPREFIX, see conftest) hides the bytecode pip wrote beside the installed
packages: on a machine where the folder is new, each xdist worker compiled openvino, distributed, numpy and the
rest again for itself (about 8 s of CPU a worker). Before the workers start, the modules they import are imported
here once, from the installed bytecode, and that bytecode is copied into the folder."""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import shutil
import sys
from pathlib import Path

WORKER_IMPORTS = ("numpy", "lxml.etree", "click", "openvino", "distributed", "jsonschema", "psutil", "regex",
                  "sentencepiece", "yaml", "execnet", "xdist.remote", "pytest_timeout")


def _compiled_path(source: str, prefix: str | None) -> Path:
    saved, sys.pycache_prefix = sys.pycache_prefix, prefix
    try:
        return Path(importlib.util.cache_from_source(source))
    finally:
        sys.pycache_prefix = saved


def seed(folder: Path, repository: Path) -> None:
    """Copies the installed bytecode of what the workers import into ``folder``, once per interpreter."""
    stamp = folder / f"seeded-{sys.implementation.cache_tag}-{hashlib.sha1(sys.prefix.encode()).hexdigest()[:12]}"
    if stamp.exists():
        return
    for name in WORKER_IMPORTS:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional package missing or broken: its workers compile it
            continue
    for module in list(sys.modules.values()):
        source = getattr(module, "__file__", None)
        if not source or not source.endswith(".py") or Path(source).is_relative_to(repository):
            continue
        installed, private = _compiled_path(source, None), _compiled_path(source, str(folder))
        if installed.is_file() and not private.exists():
            private.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(installed, private)
    folder.mkdir(parents=True, exist_ok=True)
    stamp.touch()
