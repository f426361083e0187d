"""Input and output array files: .npy/.npz read without pickle, bound to a model's inputs; outputs saved as .npz."""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from ..errors import InputError


def load_array_file(path: str):
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"input file {path} does not exist") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"cannot read input file {path} as .npy/.npz: {' '.join(str(exc).split())}") from None


def bind_inputs(model, specs, allow_missing: bool = False) -> dict:
    """Resolve -i options to {input name: array} following the model's input order (with `allow_missing`,
    inputs left unbound are left out rather than an error: --random-input fills them)."""
    names = {name: desc.name for desc in model.inputs for name in desc.names}
    feeds: dict[str, np.ndarray] = {}

    def bind(name, array, source):
        if name in feeds:
            raise InputError(f"input {name!r} is given twice (again by {source})")
        feeds[name] = array

    for spec in specs:
        name, path = None, spec
        if "=" in spec:
            left, right = spec.split("=", 1)
            if left in names or not Path(spec).exists():
                name, path = left, right
        loaded = load_array_file(path)
        if isinstance(loaded, np.lib.npyio.NpzFile):
            with loaded:
                if name is not None:
                    raise InputError(f"{path}: a .npz binds arrays by their keys; drop '{name}='")
                for key in loaded.files:
                    if key not in names:
                        raise InputError(f"{path}: array {key!r} matches no model input "
                                         f"(inputs: {', '.join(d.name for d in model.inputs)})")
                    bind(names[key], loaded[key], path)
            continue
        if name is None:
            free = [d.name for d in model.inputs if d.name not in feeds]
            if not free:
                raise InputError(f"{path}: every model input is already bound")
            name = free[0]
        elif name not in names:
            raise InputError(f"no model input is named {name!r} (inputs: {', '.join(d.name for d in model.inputs)})")
        bind(names[name], loaded, path)
    missing = [d.name for d in model.inputs if d.name not in feeds]
    if missing and not allow_missing:
        raise InputError(f"no value given for input(s) {', '.join(map(repr, missing))}; use -i NAME=file.npy")
    return feeds


def save_outputs(path, results: dict) -> None:
    """Save outputs as a .npz keyed by output name; written beside and renamed, so a reader never sees half a
    file."""
    partial = f"{path}.partial"
    try:
        with open(partial, "wb") as f:
            np.savez(f, **{name: _without_objects(array) for name, array in results.items()})
        os.replace(partial, path)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _without_objects(array: np.ndarray) -> np.ndarray:
    """String tensors (object arrays of bytes) as fixed-width bytes arrays: .npz files are read without pickle.
    NumPy's bytes type drops trailing NUL bytes."""
    return array.astype(np.bytes_) if array.dtype == object else array
