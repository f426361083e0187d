"""Debugging tools over a loaded model: layer dumps, comparisons (with OpenVINO, saved outputs or a dump),
model information, per-layer profiles, random inputs and input shape overrides.

Everything here works through `Model.run(inputs, observer=...)`, which shows each live layer's outputs in
execution order. The `irrun` commands (irrun/cli_debug.py) are thin wrappers over these functions.
OpenVINO is imported only by `compare_with_openvino`, and only when it is called.
"""
from __future__ import annotations

import fnmatch
import json
import math
import os
import re
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import names as naming
from .errors import InputError, IRError
from .graph import Node, layer_ref
from .ir.opsets import CLASS_VERSIONS, openvino_class_note
from .ops.registry import supported_ops
from .ops.shapes import parse_partial_shape, shape_str

Observer = Callable[[Node, list, float], None]

# Layers whose values are given, not computed: not worth comparing against another runtime.
_GIVEN = ("Parameter", "Constant", "Result", "Assign")  # no Result can be added on an Assign (a sink)


def chain(*observers: Observer | None) -> Observer | None:
    """One observer calling each of `observers` (None entries are skipped); None when there are none."""
    active = [o for o in observers if o is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]

    def observe(node, outputs, seconds):
        for observer in active:
            observer(node, outputs, seconds)

    return observe


def _versioned(node_or_ref) -> str:
    ref = getattr(node_or_ref, "ref", node_or_ref)
    return f"{ref.type}-{ref.version}" if ref.version is not None else ref.type


def _output_arrays(node: Node, outputs: list) -> list:
    """The arrays of a layer's output ports (a Result has none: the runtime hands it its input)."""
    return [] if node.ref.type == "Result" else list(outputs)[: max(len(node.layer.outputs), 0)]


# ---------------------------------------------------------------- layer dumps

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
        arrays = _output_arrays(node, outputs)
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


# ---------------------------------------------------------------- profile

@dataclass
class LayerTime:
    layer_id: str
    name: str
    type: str
    version: int | None
    status: str        # EXECUTED, AT_LOAD (constant, computed once at load) or INPUT
    seconds: float


class Profiler:
    """An observer recording each layer's kernel time; `report()` is benchmark_app's counters report:
    every executed layer, the slowest ones and time by op type."""

    def __init__(self, model):
        self.times: list[LayerTime] = []
        # layers whose values were computed when the model was loaded (Constants, constant subgraphs)
        self._at_load = {lid for (lid, _), info in model.infos.items() if info.value is not None}

    def __call__(self, node: Node, outputs, seconds) -> None:
        if node.ref.type == "Parameter":
            status = "INPUT"
        elif node.id in self._at_load:
            status = "AT_LOAD"
        else:
            status = "EXECUTED"
        ref = node.ref
        self.times.append(LayerTime(ref.id, ref.name, ref.type, ref.version, status, seconds))

    @property
    def executed(self) -> list[LayerTime]:
        return [t for t in self.times if t.status == "EXECUTED"]

    def by_type(self) -> list[tuple[str, int, float]]:
        totals: dict[str, list] = {}
        for t in self.executed:
            key = f"{t.type}-{t.version}"
            entry = totals.setdefault(key, [0, 0.0])
            entry[0] += 1
            entry[1] += t.seconds
        return sorted(((k, n, s) for k, (n, s) in totals.items()), key=lambda row: -row[2])

    def to_dict(self, top: int = 10) -> dict:
        total = sum(t.seconds for t in self.executed)
        return {
            "total_ms": total * 1e3,
            "layers": [dict(asdict(t), ms=t.seconds * 1e3) for t in self.times],
            "top": [dict(asdict(t), ms=t.seconds * 1e3) for t in self.top(top)],
            "by_type": [{"type": k, "count": n, "ms": s * 1e3, "percent": _percent(s, total)}
                        for k, n, s in self.by_type()],
        }

    def top(self, count: int = 10) -> list[LayerTime]:
        return sorted(self.executed, key=lambda t: -t.seconds)[:count]

    def report(self, top: int = 10) -> str:
        executed = self.executed
        total = sum(t.seconds for t in executed)
        lines = ["Per-layer times (execution order):"]
        lines += _table([("id", "layer", "type", "status", "ms", "%")] + [
            (t.layer_id, t.name, f"{t.type}-{t.version}", t.status, f"{t.seconds * 1e3:.3f}",
             f"{_percent(t.seconds, total):.1f}") for t in executed], right={4, 5})
        lines += ["", f"Top {min(top, len(executed))} layers by time:"]
        lines += _table([("id", "layer", "type", "ms", "%")] + [
            (t.layer_id, t.name, f"{t.type}-{t.version}", f"{t.seconds * 1e3:.3f}",
             f"{_percent(t.seconds, total):.1f}") for t in self.top(top)], right={3, 4})
        lines += ["", "Time by op type:"]
        lines += _table([("type", "layers", "ms", "%")] + [
            (k, str(n), f"{s * 1e3:.3f}", f"{_percent(s, total):.1f}") for k, n, s in self.by_type()], right={1, 2, 3})
        skipped = Counter(t.status for t in self.times if t.status != "EXECUTED")
        lines += ["", (f"Total: {total * 1e3:.3f} ms in {len(executed)} executed layers "
                       f"({skipped.get('AT_LOAD', 0)} computed at load, {skipped.get('INPUT', 0)} inputs)")]
        return "\n".join(lines)


def _percent(part: float, total: float) -> float:
    return 100.0 * part / total if total > 0 else 0.0


def _table(rows, right=frozenset()) -> list[str]:
    if len(rows) == 1:
        return ["  (none)"]
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                             for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in rows]


# ---------------------------------------------------------------- progress

class Progress:
    """An observer advancing a click progress bar on stderr, one step per layer. Only meant to be used
    when stderr is a terminal (see `on_terminal`); `close()` clears it."""

    def __init__(self, model, label: str = "running"):
        import sys

        import click

        self._bar = click.progressbar(length=len(model.graph.order), label=label, file=sys.stderr,
                                      show_pos=True, item_show_func=lambda name: name)
        self._bar.__enter__()

    def __call__(self, node, outputs, seconds):
        self._bar.update(1, node.ref.name[:40])

    def close(self):
        self._bar.__exit__(None, None, None)


def on_terminal() -> bool:
    import sys

    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


# ---------------------------------------------------------------- shape overrides and random inputs

_SHAPE_ITEM = re.compile(r"\s*([^\[\],]*?)\s*\[([^\]]*)\]\s*(?:,|$)")


def parse_shape_overrides(texts: Iterable[str]) -> dict[str | None, tuple[int, ...]]:
    """benchmark_app's `-shape` syntax: "input[1,3,224,224]", "a[1,3],b[2,8]" or "[1,3,8,8]" (no name:
    every input not named elsewhere). Dims are static ints. Raises InputError."""
    overrides: dict[str | None, tuple[int, ...]] = {}
    for text in texts:
        position = 0
        text = text.strip()
        if not text:
            raise InputError("--shape: empty value; expected NAME[d0,d1,...]")
        while position < len(text):
            match = _SHAPE_ITEM.match(text, position)
            if not match or match.end() == position:
                raise InputError(f"--shape {text!r}: expected NAME[d0,d1,...] (e.g. input[1,3,224,224])")
            name, dims_text = match.group(1) or None, match.group(2).strip()
            try:
                dims = tuple(int(d) for d in dims_text.split(",")) if dims_text else ()
            except ValueError:
                raise InputError(f"--shape {text!r}: dims must be non-negative integers; '?' and ranges are "
                                 f"for the model's declared shape, an override is static") from None
            if any(d < 0 for d in dims):
                raise InputError(f"--shape {text!r}: negative dim")
            if name in overrides:
                raise InputError(f"--shape: {name or 'the unnamed shape'} is given twice")
            overrides[name] = dims
            position = match.end()
    return overrides


def _declared(model, layer_id: str):
    """The Parameter's declared shape as (low, high) bounds (None: any rank) and its text."""
    node = model.graph.nodes[layer_id]
    text = node.layer.attrs.get("shape", "")
    try:
        bounds = parse_partial_shape(text)
    except ValueError:
        bounds = node.op.shape if node.op is not None else None
    return bounds, "[" + text.strip().strip("[]") + "]" if bounds is not None else "[...]"


def _fits(dims, bounds) -> bool:
    return bounds is None or (len(dims) == len(bounds) and all(
        low <= d and (high is None or d <= high) for d, (low, high) in zip(dims, bounds)))


def resolve_input_shapes(model, overrides: dict, given=()) -> tuple[dict[str, tuple], list[str]]:
    """The shape each input gets: its override, else its declared shape with every dynamic dim set to its
    lower bound (at least 1, at most its upper bound). An unnamed override applies to every input not named
    by another one and not in `given` (inputs given with values). Returns {input name: shape} and notes saying where a
    dynamic dim was chosen. Raises InputError for an unknown name, a misfit or an unresolvable dynamic rank."""
    by_name = {}
    for desc in model.inputs:
        for name in desc.names:
            by_name.setdefault(name, desc.name)
    named = {}
    for key, dims in overrides.items():
        if key is None:
            continue
        if key not in by_name:
            raise InputError(f"--shape names {key!r}, which is no model input "
                             f"(inputs: {', '.join(d.name for d in model.inputs)})")
        if by_name[key] in named:
            raise InputError(f"--shape gives input {by_name[key]!r} twice")
        named[by_name[key]] = dims
    shapes, notes = {}, []
    for desc, layer_id in zip(model.inputs, model.graph.parameters):
        bounds, declared = _declared(model, layer_id)
        dims = named.get(desc.name, None if desc.name in given else overrides.get(None))
        if desc.name in given and dims is None:
            continue
        if dims is not None:
            if not _fits(dims, bounds):
                raise InputError(f"--shape {desc.name}{_dims(dims)} does not fit the declared shape {declared} "
                                 f"of input {desc.name!r}")
            shapes[desc.name] = tuple(dims)
            continue
        if bounds is None:
            raise InputError(f"input {desc.name!r} has a dynamic rank; give its shape with --shape "
                             f"{desc.name}[d0,d1,...]")
        chosen = tuple(low if low == high else (min(max(low, 1), high) if high is not None else max(low, 1))
                       for low, high in bounds)
        if any(low != high for low, high in bounds):
            notes.append(f"input {desc.name!r} {declared}: using shape {_dims(chosen)} (choose with "
                         f"--shape {desc.name}[...])")
        shapes[desc.name] = chosen
    return shapes, notes


def _dims(dims) -> str:
    return "[" + ",".join(map(str, dims)) + "]"


def random_array(shape, element_type, rng: np.random.Generator) -> np.ndarray:
    """Random values for one input: floats standard normal, integers uniform in [0, 10) (safe as indices
    and sizes for small dims), booleans fair coin flips."""
    dtype = element_type.storage
    if dtype is None:
        raise InputError(f"cannot make random values of element type {element_type}")
    if element_type.is_float:
        array = rng.standard_normal(shape).astype(dtype)
        if element_type.name == "bf16":  # keep values exactly representable in bf16
            array = (array.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
        return array
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    return rng.integers(0, 10, size=shape).astype(dtype)


def fill_inputs(model, feeds: dict, *, random: bool, overrides: dict | None = None,
                seed: int | None = None) -> tuple[dict, list[str]]:
    """Complete `feeds` ({input name: array}) with random arrays for the inputs it lacks (when `random`),
    shaped by `overrides` (parse_shape_overrides) or the declared shapes; given inputs must agree with an
    override naming them. Returns the feeds and notes for the user."""
    overrides = overrides or {}
    feeds = _named_feeds(model, feeds)
    shapes, notes = resolve_input_shapes(model, overrides, given=set(feeds))
    rng = np.random.default_rng(seed)
    for desc, layer_id in zip(model.inputs, model.graph.parameters):
        if desc.name in feeds:
            given = np.shape(feeds[desc.name])
            if desc.name in shapes and tuple(given) != shapes[desc.name]:
                raise InputError(f"input {desc.name!r} is given with shape {_dims(given)}, but --shape says "
                                 f"{_dims(shapes[desc.name])}")
            continue
        if not random:
            continue
        feeds[desc.name] = random_array(shapes[desc.name], model.infos[(layer_id, 0)].type, rng)
    if not random:
        notes = []
    return feeds, notes


# ---------------------------------------------------------------- comparison

@dataclass
class Diff:
    """How one tensor compares with its reference."""

    layer_id: str | None
    name: str
    type: str | None
    version: int | None
    port: int | None
    shape: list
    dtype: str
    ref_shape: list | None
    ref_dtype: str | None
    size: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    mismatches: int = 0
    nan: int = 0
    inf: int = 0
    ref_nan: int = 0
    ref_inf: int = 0
    ok: bool = True
    note: str = ""

    @property
    def label(self) -> str:
        if self.type is None:
            return self.name
        versioned = f"{self.type}-{self.version}" if self.version is not None else self.type
        return f"layer {self.layer_id} ({self.name}, {versioned}) port {self.port}"


def diff_arrays(got, ref, rtol: float, atol: float, **where) -> Diff:
    """Compare `got` with the reference `ref`, element by element in float64, with np.isclose's rule
    |got - ref| <= atol + rtol * |ref|. NaN equals NaN and an infinity equals the same infinity; any other
    NaN/Inf pair is a mismatch. max_rel is over elements whose reference is non-zero. Dtypes may differ
    (a plugin may compute a tensor in another precision); shapes must agree."""
    got, ref = np.asarray(got), np.asarray(ref)
    diff = Diff(shape=list(got.shape), dtype=str(got.dtype), ref_shape=list(ref.shape), ref_dtype=str(ref.dtype),
                size=int(got.size), **where)
    a, b = _as_float(got), _as_float(ref)
    diff.nan, diff.inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
    diff.ref_nan, diff.ref_inf = int(np.isnan(b).sum()), int(np.isinf(b).sum())
    if got.shape != ref.shape:
        diff.ok, diff.mismatches, diff.note = False, max(got.size, ref.size), "shape differs"
        diff.max_abs = diff.max_rel = math.inf
        return diff
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    finite = np.isfinite(a) & np.isfinite(b)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        error = np.where(finite, np.abs(a - b), 0.0)
        close = same | (finite & (error <= atol + rtol * np.abs(b)))
        nonzero = finite & (b != 0)
        relative = np.where(nonzero, error / np.where(nonzero, np.abs(b), 1.0), 0.0)
    diff.mismatches = int(got.size - np.count_nonzero(close))
    if got.size:
        diff.max_abs = float(error.max())
        diff.max_rel = float(relative.max())
        if np.any(~same & ~finite):  # NaN or Inf on one side only: the error is unbounded
            diff.max_abs = diff.max_rel = math.inf
    diff.ok = diff.mismatches == 0
    return diff


def _as_float(array: np.ndarray) -> np.ndarray:
    if array.dtype == np.bool_:
        return array.astype(np.int8).astype(np.float64)
    if array.dtype.kind in "iufb":
        return array.astype(np.float64)
    if array.dtype.kind == "c":
        return np.abs(array).astype(np.float64)
    raise InputError(f"cannot compare arrays of dtype {array.dtype}")


@dataclass
class Comparison:
    """The result of comparing a run of the model with a reference."""

    model: str
    against: str
    rtol: float
    atol: float
    layers: list[Diff] = field(default_factory=list)     # in execution order
    outputs: list[Diff] = field(default_factory=list)    # in the model's output order
    missing: list[str] = field(default_factory=list)     # what could not be matched, and why
    plain: object | None = None   # openvino_fusion.PlainRun: OpenVINO's unmodified model (--against openvino)

    @property
    def first_divergence(self) -> Diff | None:
        return next((d for d in self.layers if not d.ok), None)

    @property
    def passed(self) -> bool:
        """Every final output matches (with no outputs to compare, every compared layer)."""
        rows = self.outputs or self.layers
        return bool(rows) and all(d.ok for d in rows) and (self.plain is None or self.plain.passed)

    def to_dict(self) -> dict:
        first = self.first_divergence
        return {
            "model": self.model, "against": self.against, "rtol": self.rtol, "atol": self.atol,
            "passed": self.passed,
            "first_divergence": None if first is None else {
                "layer_id": first.layer_id, "name": first.name, "type": first.type, "version": first.version,
                "port": first.port},
            "layers": [_jsonable(asdict(d)) for d in self.layers],
            "outputs": [_jsonable(asdict(d)) for d in self.outputs],
            "missing": self.missing,
            "openvino_unmodified": None if self.plain is None else self.plain.to_dict(),
        }

    def text(self) -> str:
        lines = []
        header = ("", "id", "layer", "type", "port", "shape", "max_abs", "max_rel", "mismatch", "nan/inf", "ref nan/inf")
        if self.layers:
            lines.append(f"Layers compared with {self.against} (rtol={self.rtol:g}, atol={self.atol:g}), "
                         f"in execution order:")
            lines += _table([header] + [_row(d, d.layer_id, d.name, f"{d.type}-{d.version}", str(d.port))
                                        for d in self.layers], right={6, 7, 8})
            lines.append("")
        if self.outputs:
            lines.append("Outputs:")
            lines += _table([("", "output", "shape", "max_abs", "max_rel", "mismatch", "nan/inf", "ref nan/inf")]
                            + [_row(d, d.name) for d in self.outputs], right={3, 4, 5})
            lines.append("")
        for text in self.missing:
            lines.append(f"not compared: {text}")
        first = self.first_divergence
        if self.layers:
            if first is None:
                lines.append(f"every compared layer is within tolerance ({len(self.layers)} tensors)")
            else:
                lines.append(f"first divergence: {first.label}: {first.mismatches} of {first.size} elements "
                             f"exceed tolerance, max abs {_num(first.max_abs)}, max rel {_num(first.max_rel)}"
                             + (f" ({first.note})" if first.note else ""))
        rows = self.outputs or self.layers
        failed = sum(not d.ok for d in rows)
        what = "outputs" if self.outputs else "compared tensors"
        if self.plain is not None:
            lines += self.plain.text()
        if not rows:
            lines.append("FAIL: nothing was compared")
        elif not failed and self.plain is not None and not self.plain.passed:
            lines.append(f"FAIL: all {len(rows)} {what} match OpenVINO with its intermediate outputs exposed, "
                         + ("but its unmodified model could not be run" if self.plain.error is not None
                            else f"but {len(self.plain.affected)} differ from its unmodified model"))
        elif failed:
            lines.append(f"FAIL: {failed} of {len(rows)} {what} differ")
        else:
            lines.append(f"PASS: all {len(rows)} {what} match")
        return "\n".join(lines)


def _row(d: Diff, *cells):
    shape = "x".join(map(str, d.shape)) or "scalar"
    if d.note:
        shape += f" (ref {'x'.join(map(str, d.ref_shape or [])) or 'scalar'})"
    return ("" if d.ok else "!", *cells, shape, _num(d.max_abs), _num(d.max_rel), str(d.mismatches),
            f"{d.nan}/{d.inf}", f"{d.ref_nan}/{d.ref_inf}")


def _num(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.3g}"


def _jsonable(entry: dict) -> dict:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in entry.items()}


def _where(node: Node, port: int) -> dict:
    ref = node.ref
    return {"layer_id": ref.id, "name": ref.name, "type": ref.type, "version": ref.version, "port": port}


def _output_diffs(model, results: dict, reference: dict, rtol, atol, comparison: Comparison) -> None:
    for desc in model.outputs:
        if desc.name not in reference:
            comparison.missing.append(f"output {desc.name!r} is not in {comparison.against}")
            array = results[desc.name]
            comparison.outputs.append(Diff(None, desc.name, None, None, None, list(array.shape), str(array.dtype),
                                           None, None, int(array.size), math.inf, math.inf, int(array.size),
                                           ok=False, note="no reference"))
            continue
        comparison.outputs.append(diff_arrays(results[desc.name], reference[desc.name], rtol, atol,
                                              layer_id=None, name=desc.name, type=None, version=None, port=None))


def compare_with_outputs(model, feeds: dict, path, rtol: float = 1e-4, atol: float = 1e-4,
                         observer: Observer | None = None, sampler=None) -> Comparison:
    """Run the model and compare its final outputs with a .npz saved by `irrun run -o` (keyed by output
    name)."""
    try:
        with np.load(path, allow_pickle=False) as saved:
            reference = {key: saved[key] for key in saved.files}
    except FileNotFoundError:
        raise InputError(f"{path} does not exist") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"cannot read {path} as .npz: {' '.join(str(exc).split())}") from None
    comparison = Comparison(str(model.path), str(path), rtol, atol)
    results = model.run(feeds, observer=observer)
    _output_diffs(model, results, reference, rtol, atol, comparison)
    if sampler is not None:
        for diff in comparison.outputs:
            if diff.name in reference:
                sampler(diff, results[diff.name], reference[diff.name])
    names = {d.name for d in model.outputs}
    comparison.missing += [f"{path} holds {key!r}, which is no model output" for key in reference if key not in names]
    return comparison


def compare_with_dump(model, feeds: dict, directory, rtol: float = 1e-4, atol: float = 1e-4,
                      observer: Observer | None = None, sampler=None) -> Comparison:
    """Run the model and compare every layer output listed in a dump directory (`run --dump-layers`),
    matched by layer name and output index; the final outputs are those of the layers feeding Results.
    `sampler(diff, got, reference)`, when given, sees every compared layer tensor (irrun.report)."""
    directory = Path(directory)
    entries = read_dump_index(directory)
    wanted = {(str(e["name"]), int(e["port"])): e for e in entries}
    comparison = Comparison(str(model.path), str(directory), rtol, atol)
    seen = set()
    finals = {model.graph.nodes[r].inputs[0]: desc.name for desc, r in zip(model.outputs, model.graph.results)}
    final_diffs = {}

    def observe(node, outputs, seconds):
        for port, array in enumerate(_output_arrays(node, outputs)):
            entry = wanted.get((node.ref.name, port))
            if entry is None:
                continue
            seen.add((node.ref.name, port))
            try:
                reference = np.load(directory / str(entry["file"]), allow_pickle=False)
            except (OSError, ValueError, EOFError) as exc:
                raise InputError(f"cannot read {directory / str(entry['file'])}: {exc}") from None
            diff = diff_arrays(array, reference, rtol, atol, **_where(node, port))
            comparison.layers.append(diff)
            if sampler is not None:
                sampler(diff, array, reference)
            if (node.id, port) in finals:
                final_diffs[finals[(node.id, port)]] = diff

    model.run(feeds, observer=chain(observe, observer))
    for desc in model.outputs:
        if desc.name in final_diffs:
            d = final_diffs[desc.name]
            comparison.outputs.append(Diff(**dict(asdict(d), name=desc.name, layer_id=None, type=None,
                                                  version=None, port=None)))
    comparison.missing += [f"{name} port {port}: in the dump, but no live layer of the model has it"
                           for (name, port) in wanted if (name, port) not in seen]
    return comparison


def _import_openvino():
    try:
        import openvino
    except ImportError:
        raise InputError("--against openvino needs the openvino package (pip install openvino)") from None
    return openvino


def openvino_layer_outputs(model, feeds: dict, threads: int = 1):
    """Run the model file in OpenVINO's CPU plugin with a Result added on every node output (f32 inference
    precision, `threads` threads). Returns ({(friendly name, output index): array}, [final output arrays in
    the model's output order])."""
    ov = _import_openvino()
    core = ov.Core()
    try:
        ov_model = core.read_model(str(model.path))
    except Exception as exc:  # noqa: BLE001 - OpenVINO raises RuntimeError subclasses
        raise InputError(f"OpenVINO cannot read {model.path}: {_first_line(exc)}") from None
    originals = len(ov_model.outputs)
    results, keys = [], []
    for node in ov_model.get_ordered_ops():
        if node.get_type_name() in _GIVEN:
            continue
        for index, output in enumerate(node.outputs()):
            results.append(ov.opset1.result(output))
            keys.append((node.get_friendly_name(), index))
    ov_model.add_results(results)
    try:
        compiled = core.compile_model(ov_model, "CPU", openvino_config(threads))
        request = compiled.create_infer_request()
        request.infer(openvino_feeds(model, ov_model, feeds))
        arrays = [np.array(request.get_output_tensor(i).data, copy=True) for i in range(len(compiled.outputs))]
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"OpenVINO failed to run {model.path}: {_first_line(exc)}") from None
    layers = {}
    for key, array in zip(keys, arrays[originals:]):
        layers.setdefault(key, array)
    return layers, arrays[:originals]


def openvino_feeds(model, ov_model, feeds: dict) -> dict:
    """`feeds` (by input name) keyed by the index of OpenVINO's Parameter of the same layer name."""
    params = {p.get_friendly_name(): i for i, p in enumerate(ov_model.get_parameters())}
    by_layer = {model.graph.nodes[lid].layer.name: desc.name for desc, lid in zip(model.inputs, model.graph.parameters)}
    return {params[layer_name]: np.require(feeds[name], requirements="C") for layer_name, name in by_layer.items()
            if layer_name in params and name in feeds}


def openvino_config(threads: int = 1) -> dict:
    """f32 everywhere: no bf16 inference, no f16/u8 KV cache, no dynamic quantization of activations."""
    return {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0,
            "INFERENCE_NUM_THREADS": int(threads)}


def _first_line(exc) -> str:
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # OpenVINO's messages start with source locations; the last line usually says what went wrong.
    return (lines[-1] if lines else type(exc).__name__)[:300]


def compare_with_openvino(model, feeds: dict, rtol: float = 1e-4, atol: float = 1e-4,
                          observer: Observer | None = None, threads: int = 1, unmodified: bool = True,
                          sampler=None) -> Comparison:
    """Run the model in irrun and in OpenVINO's CPU plugin, every layer output exposed, and compare each
    layer output (matched by friendly name = layer name, and output index) and each final output. With
    `unmodified`, also the unmodified compiled model's outputs (irrun.openvino_fusion: exposing outputs
    changes what the plugin fuses)."""
    feeds = _named_feeds(model, feeds)
    reference_layers, reference_outputs = openvino_layer_outputs(model, feeds, threads)
    comparison = Comparison(str(model.path), "openvino", rtol, atol)
    seen = set()

    def observe(node, outputs, seconds):
        if node.ref.type in _GIVEN:
            return
        for port, array in enumerate(_output_arrays(node, outputs)):
            key = (node.ref.name, port)
            if key not in reference_layers:
                comparison.missing.append(f"{node.ref} port {port}: OpenVINO has no output {port} of a node "
                                          f"named {node.ref.name!r}")
                continue
            seen.add(key)
            comparison.layers.append(diff_arrays(array, reference_layers[key], rtol, atol, **_where(node, port)))
            if sampler is not None:
                sampler(comparison.layers[-1], array, reference_layers[key])

    results = model.run(feeds, observer=chain(observe, observer))
    reference = {desc.name: array for desc, array in zip(model.outputs, reference_outputs)}
    _output_diffs(model, results, reference, rtol, atol, comparison)
    if unmodified:
        from .openvino_fusion import check_plain_run

        comparison.plain = check_plain_run(model, feeds, results, reference, rtol, atol, threads)
    return comparison


def _named_feeds(model, feeds: dict) -> dict:
    """Feeds keyed by each input's main name (accepting any of its names), as the CLI binds them."""
    alias = {name: desc.name for desc in model.inputs for name in desc.names}
    return {alias.get(key, key): value for key, value in feeds.items()}


# ---------------------------------------------------------------- info

def model_info(path, with_checker: bool = True) -> dict:
    """What a model file holds: IR version, inputs and outputs, op histogram by Type-version, opsets,
    weights and, when irrun.check is available, the checker's diagnostics. Works on models irrun cannot
    run (inputs/outputs then come from the declared ports and `load_error` says why)."""
    from . import load
    from .ir.xml import read_xml

    doc = read_xml(path)
    info: dict = {"file": str(path), "name": doc.name, "ir_version": doc.ir_version}
    try:
        model = load(path)
    except IRError as exc:
        model, info["load_error"] = None, str(exc)
    if model is not None:
        info["inputs"] = [{"name": d.name, "names": list(d.names), "shape": _declared(model, lid)[1],
                           "element_type": d.element_type} for d, lid in zip(model.inputs, model.graph.parameters)]
        info["outputs"] = [{"name": d.name, "names": list(d.names), "shape": shape_str(d.shape),
                            "element_type": d.element_type} for d in model.outputs]
    else:
        info["inputs"], info["outputs"] = _declared_ports(doc)
    histogram = Counter()
    for layer in doc.layers:
        ref = layer_ref(layer)
        histogram[f"{ref.type}-{ref.version}" if ref.version is not None else f"{layer.type} ({layer.opset})"] += 1
    info["layers"] = len(doc.layers)
    info["ops"] = dict(sorted(histogram.items()))
    info["opsets"] = sorted({layer.opset for layer in doc.layers}, key=_opset_key)
    implemented = set(supported_ops())
    info["unsupported_ops"] = sorted({f"{layer_ref(l).type}-{layer_ref(l).version}" for l in doc.layers
                                      if (layer_ref(l).type, layer_ref(l).version) not in implemented})
    by_type: Counter = Counter()
    constants, regions = 0, set()
    for layer in doc.layers:
        if layer_ref(layer).type == "Constant":
            constants += 1
            try:
                region = (int(layer.attrs.get("offset", 0)), int(layer.attrs.get("size", 0)))
            except ValueError:
                continue
            if region not in regions:  # constants may share their bytes in the .bin: count them once
                regions.add(region)
                by_type[layer.attrs.get("element_type", "?")] += region[1]
    try:
        bin_bytes = os.path.getsize(doc.bin_path)
    except OSError:
        bin_bytes = None
    info["weights"] = {"bin_file": os.path.basename(doc.bin_path), "bin_bytes": bin_bytes, "constants": constants,
                       "const_bytes": sum(by_type.values()), "const_bytes_by_type": dict(sorted(by_type.items()))}
    info["checker"] = _checker_section(path) if with_checker else None
    return info


def _declared_ports(doc) -> tuple[list, list]:
    """Inputs and outputs of a model irrun cannot load, from the declared ports, named as `run` names them."""
    from .ir.types import element_type

    def type_name(text):
        et = element_type(text) if text else None
        return et.name if et is not None else text

    parameters = [l for l in doc.layers if layer_ref(l).type == "Parameter"]
    results = [l for l in doc.layers if layer_ref(l).type == "Result"]
    inputs = []
    for layer in parameters:
        name, all_names = naming.input_name(doc, layer)
        inputs.append({"name": name, "names": list(all_names), "shape": "[" + layer.attrs.get("shape", "") + "]",
                       "element_type": type_name(layer.attrs.get("element_type"))})
    outputs = []
    for (name, all_names), layer in zip(naming.output_names(doc, results, naming.result_sources(doc, results)),
                                        results):
        port = layer.inputs[0] if layer.inputs else None
        outputs.append({"name": name, "names": list(all_names),
                        "shape": "[" + ",".join("?" if d.strip() in ("-1", "?") else d.strip()
                                                for d in port.dims) + "]" if port else "[]",
                        "element_type": type_name(port.precision) if port else None})
    return inputs, outputs


def _opset_key(name: str):
    match = re.match(r"^opset(\d+)$", name)
    return (0, int(match.group(1)), "") if match else (1, 0, name)


def _checker_section(path) -> dict | None:
    try:
        from .check import check
    except ImportError:
        return None
    report = check(path)
    return {"conformant": report.passes(), "errors": len(report.errors), "warnings": len(report.warnings),
            "diagnostics": [d.text(report.file) for d in report.diagnostics]}


def format_info(info: dict) -> str:
    lines = [f"{info['file']}: model {info['name']!r}, IR v{info['ir_version']}, {info['layers']} layers"]
    if "load_error" in info:
        lines.append(f"cannot be run: {info['load_error']}")
    for section in ("inputs", "outputs"):
        lines.append(f"{section.capitalize()}:")
        lines += _table([("name", "shape", "type", "other names")] + [
            (d["name"], d["shape"], str(d["element_type"]), ", ".join(n for n in d["names"] if n != d["name"]))
            for d in info[section]])
    lines.append("Ops (Type-version x count):")
    lines += _wrap([f"{op} x{n}" if n > 1 else op for op, n in info["ops"].items()])
    if info["unsupported_ops"]:
        lines.append(f"Not implemented by irrun: {', '.join(info['unsupported_ops'])}")
    lines.append(f"Opsets: {', '.join(info['opsets'])}")
    w = info["weights"]
    by_type = ", ".join(f"{t} {_size(n)}" for t, n in w["const_bytes_by_type"].items())
    bin_size = "missing" if w["bin_bytes"] is None else _size(w["bin_bytes"])
    lines.append(f"Weights: {w['bin_file']} {bin_size}; {w['constants']} constants, {_size(w['const_bytes'])}"
                 + (f" ({by_type})" if by_type else ""))
    checker = info.get("checker")
    if checker is not None:
        verdict = "conformant" if checker["conformant"] else "not conformant"
        lines.append(f"Checker: {verdict}; {checker['errors']} errors, {checker['warnings']} warnings")
        lines += ["  " + d for d in checker["diagnostics"]]
    return "\n".join(lines)


def _wrap(items: list[str], width: int = 100) -> list[str]:
    lines, current = [], "  "
    for item in items:
        piece = item + ", "
        if len(current) + len(piece) > width and current.strip():
            lines.append(current.rstrip(", "))
            current = "  "
        current += piece
    if current.strip():
        lines.append(current.rstrip(", "))
    return lines


def _size(nbytes: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if nbytes < 1024 or unit == "GB":
            return f"{nbytes} B" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{nbytes} B"


def supported_ops_table() -> dict[str, list[int]]:
    """Every op irrun implements: type -> its versions."""
    table: dict[str, list[int]] = {}
    for op_type, version in supported_ops():
        table.setdefault(op_type, []).append(version)
    return table


def supported_ops_records() -> list[dict]:
    """`info --ops` as JSON: type, versions, and OpenVINO's class version where it differs from the op version."""
    records = []
    for op_type, versions in supported_ops_table().items():
        record = {"type": op_type, "versions": versions}
        classes = {str(v): CLASS_VERSIONS[(op_type, v)] for v in versions if (op_type, v) in CLASS_VERSIONS}
        if classes:
            record["openvino_class_versions"] = classes
        records.append(record)
    return records


def _version_label(op_type: str, version: int) -> str:
    note = openvino_class_note(op_type, version)
    return f"{version} ({note})" if note else str(version)


def format_supported_ops() -> str:
    table = supported_ops_table()
    rows = [("type", "versions")] + [(t, ", ".join(_version_label(t, v) for v in vs)) for t, vs in table.items()]
    count = sum(len(v) for v in table.values())
    return "\n".join(_table(rows) + [f"{count} op versions of {len(table)} types"])
