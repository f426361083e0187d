"""Comparisons of a run, layer by layer, with OpenVINO, saved outputs or a layer dump.

OpenVINO is imported only by `openvino_layer_outputs` (and `import_openvino`), and only when called;
compare_openvino.py puts the comparison with OpenVINO together.
"""
from __future__ import annotations

import math
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..engine.graph import Node
from .dumps import GIVEN, Observer, chain, output_arrays, read_dump_index
from .tables import text_table


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
            lines += text_table([header] + [_row(d, d.layer_id, d.name, f"{d.type}-{d.version}", str(d.port))
                                        for d in self.layers], right={6, 7, 8})
            lines.append("")
        if self.outputs:
            lines.append("Outputs:")
            lines += text_table([("", "output", "shape", "max_abs", "max_rel", "mismatch", "nan/inf", "ref nan/inf")]
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
    `sampler(diff, got, reference)`, when given, sees every compared layer tensor (tools/report.py)."""
    directory = Path(directory)
    entries = read_dump_index(directory)
    wanted = {(str(e["name"]), int(e["port"])): e for e in entries}
    comparison = Comparison(str(model.path), str(directory), rtol, atol)
    seen = set()
    finals = {model.graph.nodes[r].inputs[0]: desc.name for desc, r in zip(model.outputs, model.graph.results)}
    final_diffs = {}

    def observe(node, outputs, seconds):
        for port, array in enumerate(output_arrays(node, outputs)):
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


def import_openvino():
    try:
        import openvino
    except ImportError:
        raise InputError("--against openvino needs the openvino package (pip install openvino)") from None
    return openvino


def openvino_layer_outputs(model, feeds: dict, threads: int = 1):
    """Run the model file in OpenVINO's CPU plugin with a Result added on every node output (f32 inference
    precision, `threads` threads). Returns ({(friendly name, output index): array}, [final output arrays in
    the model's output order])."""
    ov = import_openvino()
    core = ov.Core()
    try:
        ov_model = core.read_model(str(model.path))
    except Exception as exc:  # noqa: BLE001 - OpenVINO raises RuntimeError subclasses
        raise InputError(f"OpenVINO cannot read {model.path}: {_first_line(exc)}") from None
    originals = len(ov_model.outputs)
    results, keys = [], []
    for node in ov_model.get_ordered_ops():
        if node.get_type_name() in GIVEN:
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


# OpenVINO CPU plugin settings that make it compute in f32 everywhere: no bf16 inference, no f16/u8 KV cache, no
# dynamic quantization of activations.
OPENVINO_F32_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32",
                       "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}


def openvino_config(threads: int = 1) -> dict:
    return dict(OPENVINO_F32_CONFIG, INFERENCE_NUM_THREADS=int(threads))


def _first_line(exc) -> str:
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # OpenVINO's messages start with source locations; the last line usually says what went wrong.
    return (lines[-1] if lines else type(exc).__name__)[:300]
