"""Observers of a run and layer dumps: every live layer's outputs written to .npy files with an index."""
from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..engine.graph import Node


Observer = Callable[[Node, list, float], None]

# Layers whose values are given, not computed: not worth comparing against another runtime.
GIVEN = ("Parameter", "Constant", "Result", "Assign")  # no Result can be added on an Assign (a sink)


def chain(*observers: Observer | None) -> Observer | None:
    """One observer calling each of `observers` (None entries are skipped); None when there are none. It
    passes the run's marks (engine/timeline.py) to the observers that take them."""
    active = [o for o in observers if o is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]

    def observe(node, outputs, seconds):
        for observer in active:
            observer(node, outputs, seconds)

    observe.sees_plain_run = all(getattr(o, "sees_plain_run", False) for o in active)
    timelines = [o.mark for o in active if hasattr(o, "mark")]
    if timelines:
        def mark(label, node=None):
            for each in timelines:
                each(label, node)
        observe.mark = mark
    return observe


def _versioned(node_or_ref) -> str:
    ref = getattr(node_or_ref, "ref", node_or_ref)
    return f"{ref.type}-{ref.version}" if ref.version is not None else ref.type


def output_arrays(node: Node, outputs: list) -> list:
    """The arrays of a layer's output ports (a Result has none: the runtime hands it its input)."""
    return [] if node.ref.type == "Result" else list(outputs)[: max(len(node.layer.outputs), 0)]


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_stem(text: str, limit: int = 80) -> str:
    """A file name part made from a layer name: only [A-Za-z0-9._-], no leading dots, bounded length.
    Layer names are untrusted ("../../etc/x", "a/b", NUL): the result can never leave its directory."""
    stem = re.sub(r"\.{2,}", "_", _UNSAFE.sub("_", text)).lstrip(".")[:limit].strip("_")
    return stem or "layer"


@dataclass
class DumpEntry:
    layer_id: str
    name: str
    type: str
    version: int | None
    port: int          # output index (0-based), as OpenVINO's node.output(i)
    shape: list
    dtype: str
    file: str          # relative to the dump directory


class LayerDumper:
    """An observer writing every output of every layer (or those whose name or Type matches `pattern`, a
    glob such as `*conv*` or `Convolution`) as .npy files, and DIR/index.json listing them."""

    INDEX = "index.json"

    def __init__(self, directory, pattern: str | None = None):
        self.directory = Path(directory)
        self.pattern = pattern
        self.entries: list[DumpEntry] = []
        self._count = 0
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create dump directory {directory}: {exc.strerror or exc}") from None

    def wants(self, node: Node) -> bool:
        if self.pattern is None:
            return True
        ref = node.ref
        candidates = (ref.name, ref.type, _versioned(ref))
        return any(fnmatch.fnmatchcase(c, self.pattern) for c in candidates)

    def __call__(self, node: Node, outputs, seconds) -> None:
        arrays = output_arrays(node, outputs)
        if not arrays or not self.wants(node):
            return
        self._count += 1
        stem = f"{self._count:05d}_{safe_file_stem(node.ref.name)}"
        for port, array in enumerate(arrays):
            array = np.asarray(array)
            file = f"{stem}_{port}.npy"
            try:
                np.save(self.directory / file, array, allow_pickle=False)
            except OSError as exc:
                raise InputError(f"cannot write {self.directory / file}: {exc.strerror or exc}") from None
            self.entries.append(DumpEntry(node.ref.id, node.ref.name, node.ref.type, node.ref.version, port,
                                          list(array.shape), str(array.dtype), file))

    def finish(self) -> Path:
        """Write index.json (also after a failed run: it lists what was dumped before the failure)."""
        path = self.directory / self.INDEX
        try:
            path.write_text("[\n" + ",\n".join(" " + json.dumps(asdict(e)) for e in self.entries) + "\n]\n")
        except OSError as exc:
            raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
        return path


def read_dump_index(directory) -> list[dict]:
    """A dump directory's index.json entries, checked (each file stays inside the directory)."""
    directory = Path(directory)
    path = directory / LayerDumper.INDEX
    try:
        entries = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{directory} is not a layer dump: it has no {LayerDumper.INDEX}") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    if not isinstance(entries, list):
        raise InputError(f"{path}: expected a list of entries")
    root = directory.resolve()
    for entry in entries:
        if not isinstance(entry, dict) or not {"name", "port", "file"} <= set(entry):
            raise InputError(f"{path}: an entry lacks name, port or file: {str(entry)[:80]}")
        target = (directory / str(entry["file"])).resolve()
        if root not in target.parents:
            raise InputError(f"{path}: file {entry['file']!r} is outside the dump directory")
    return entries
