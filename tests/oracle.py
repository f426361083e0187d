"""OpenVINO as a test oracle for irrun.

The ``openvino`` pip package is used here only as the source of truth; irrun never
imports it. A test builds a single-layer model with an ``openvino.opsetN`` factory,
saves it as IR (``model.xml`` + ``model.bin``), optionally patches the XML text, and
then *reads the saved file back* with OpenVINO. Every oracle result comes from that
read-back model, so OpenVINO and irrun always execute exactly the same file. (It is the
suite's largest single cost after compiling: 9,145 read-backs, 29 s of its CPU, measured
for issue 18; the plugin's 802 compilations take 40 s.)

Two executors are offered:

* ``run_reference``: OpenVINO's core reference kernels, reached through
  ``Node.evaluate(output_tensors, input_tensors)`` for each node in topological order.
  This is the primary truth. Not every op has one: in 2026.4 MaxPool-1/8/14 do,
  AdaptiveMaxPool-8 and ROIPooling-2 do not (``evaluate`` returns False), and some
  element types are missing (see ``REFERENCE_TYPES``).
* ``run_cpu``: the CPU plugin (``compile_model(..., "CPU", f32 precision hint)``), a
  second check and the only executable oracle for ops without a reference kernel.
  Known CPU limits (measured, see tests/test_oracle_pooling.py):
    - AdaptiveMaxPool with i64 indices does not compile ("CPU plugin does not support
      i64 for use with oneDNN"); ``run_cpu(..., i64_index_twin=True)`` compiles a twin
      with i32 indices instead and widens the result to int64.
    - i64/u64/u32 tensors are narrowed to i32 inside the plugin: MaxPool on i64 values
      beyond the i32 range (or equal to INT64_MIN) gives wrong values/indices.
    - MaxPool-1 (no indices output, oneDNN path) on i32 computes through f32, so
      values with |x| > 2**24 lose precision.
    - AdaptiveMaxPool is computed in f32 for every input type.
    - ROIPooling treats batch_id == -1 as "end of ROI list" (zeros for the rest).
"""

from __future__ import annotations

import functools
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import openvino as ov
from openvino import opset1
from openvino.frontend import FrontEndManager

__all__ = [
    "core",
    "ov_type",
    "np_dtype",
    "type_name",
    "parameter",
    "constant",
    "Built",
    "build",
    "read_back",
    "patch_layer",
    "reader_refuses",
    "run_reference",
    "evaluate_node",
    "run_cpu",
    "run_cpu_many",
    "cpu_config",
    "cpu_threads",
    "cpu_reports_run_time_errors",
    "run_irrun",
    "OracleUnsupported",
    "assert_same",
    "compare_outputs",
    "REFERENCE_TYPES",
]

# Element types for which OpenVINO 2026.4.1's reference evaluate() works
# (measured with Model/Node.evaluate on the read-back model; f16/bf16 are
# converted to f32 inside evaluate and back).
REFERENCE_TYPES = {
    "MaxPool-1": {"f32", "f16", "bf16", "i32", "u32", "i64", "u64"},
    "MaxPool-8": {"f32", "f16", "bf16", "i8", "u8", "i32", "u32", "i64", "u64"},
    "MaxPool-14": {"f32", "f16", "bf16", "i8", "u8", "i32", "u32", "i64", "u64"},
    "AdaptiveMaxPool-8": set(),
    "ROIPooling-2": set(),
}

_CORE: ov.Core | None = None


def core() -> ov.Core:
    """One shared ``openvino.Core`` (creating cores is slow)."""
    global _CORE
    if _CORE is None:
        _CORE = ov.Core()
    return _CORE


_NP_TO_OV = {
    np.dtype(np.float32): ov.Type.f32,
    np.dtype(np.float16): ov.Type.f16,
    np.dtype(np.float64): ov.Type.f64,
    np.dtype(np.int8): ov.Type.i8,
    np.dtype(np.uint8): ov.Type.u8,
    np.dtype(np.int16): ov.Type.i16,
    np.dtype(np.uint16): ov.Type.u16,
    np.dtype(np.int32): ov.Type.i32,
    np.dtype(np.uint32): ov.Type.u32,
    np.dtype(np.int64): ov.Type.i64,
    np.dtype(np.uint64): ov.Type.u64,
    np.dtype(np.bool_): ov.Type.boolean,
}


@functools.lru_cache(maxsize=1)
def _ir_frontend():
    return FrontEndManager().load_by_framework("ir")


def read_back(xml) -> ov.Model:
    """``core().read_model(xml)`` for the IR v11 files ``save_model`` writes, without its fixed cost: Core makes
    a FrontEndManager and asks every frontend whether it reads the file at each call (0.5 of its 1.4 ms for a
    one-layer model); the IR frontend then loads and converts it as here. Core adds legacy inputs and outputs
    to IR v10 models, so those are read by Core."""
    frontend = _ir_frontend()
    model = frontend.convert(frontend.load(str(xml)))
    if model.has_rt_info("version") and model.get_rt_info("version").astype(int) == 10:
        return core().read_model(str(xml))
    return model


def reader_refuses(xml) -> bool:
    """OpenVINO's verdict on an IR file as `irrun check` is measured against it: `read_model`, then
    `validate_nodes_and_infer_types`; any exception is a refusal."""
    try:
        core().read_model(str(xml)).validate_nodes_and_infer_types()
    except Exception:  # noqa: BLE001 - any refusal is the verdict
        return True
    return False


def ov_type(dtype) -> ov.Type:
    """numpy dtype (or 'f32'-style name) -> openvino.Type."""
    if isinstance(dtype, ov.Type):
        return dtype
    if isinstance(dtype, str) and hasattr(ov.Type, dtype):
        return getattr(ov.Type, dtype)
    return _NP_TO_OV[np.dtype(dtype)]


def np_dtype(t) -> np.dtype:
    """openvino.Type or 'f32'-style name -> numpy dtype."""
    t = ov_type(t)
    for k, v in _NP_TO_OV.items():
        if v == t:
            return k
    raise KeyError(f"no numpy dtype for {t}")


def type_name(t) -> str:
    """'f32', 'i64', ... (irrun's TensorDesc.element_type spelling)."""
    return ov_type(t).get_type_name()


def parameter(name: str, shape: Sequence[int], dtype) -> ov.Node:
    return opset1.parameter(list(shape), ov_type(dtype), name=name)


def constant(value, dtype=None) -> ov.Node:
    arr = np.asarray(value if dtype is None else np.asarray(value, dtype=dtype))
    return opset1.constant(arr)


class OracleUnsupported(RuntimeError):
    """The chosen OpenVINO executor cannot run this model."""


@dataclass
class Built:
    """A saved single-layer model plus what OpenVINO reads back from it."""

    xml: Path
    model: ov.Model  # read back from ``xml``
    input_names: list[str]
    feeds: list[np.ndarray]  # in model input order
    output_names: list[str]  # OpenVINO's Output.get_any_name(), in model output order
    output_types: list[str]  # 'f32', 'i64', ... in model output order
    info: dict = field(default_factory=dict)

    @property
    def feed_dict(self) -> dict[str, np.ndarray]:
        return dict(zip(self.input_names, self.feeds))


def _any_name(output, i: int) -> str:
    names = output.get_names()
    return output.get_any_name() if names else f"output{i}"


def patch_layer(xml_text: str, layer_type: str, attrs: Mapping[str, str | None]) -> str:
    """Rewrite the ``<data>`` attributes of every layer of ``layer_type``.

    ``attrs`` maps attribute name -> new string value; ``None`` removes the
    attribute. Missing attributes are appended.
    """

    def fix_layer(m: re.Match) -> str:
        block = m.group(0)

        def fix_data(dm: re.Match) -> str:
            data = dm.group(0)
            for k, v in attrs.items():
                pat = re.compile(r'\s%s="[^"]*"' % re.escape(k))
                if v is None:
                    data = pat.sub("", data)
                elif pat.search(data):
                    data = pat.sub(' %s="%s"' % (k, v), data)
                else:
                    data = data.replace("<data", '<data %s="%s"' % (k, v), 1)
            return data

        return re.sub(r"<data\b(?:[^>\"]|\"[^\"]*\")*/>", fix_data, block, count=1)

    pattern = re.compile(
        r'<layer\b[^>]*\btype="%s"[^>]*>.*?</layer>' % re.escape(layer_type), re.S
    )
    new, n = pattern.subn(fix_layer, xml_text)
    if n == 0:
        raise ValueError(f"no layer of type {layer_type!r} in the XML")
    return new


def build(
    make: Callable[[dict[str, ov.Node]], object],
    inputs: Mapping[str, np.ndarray],
    directory: str | os.PathLike | None = None,
    *,
    patch: Callable[[str], str] | None = None,
    output_names: Sequence[str] | None = None,
    info: dict | None = None,
) -> Built:
    """Build, save and read back a model.

    ``inputs`` maps Parameter name -> example array (its shape and dtype define the
    Parameter; the array becomes the feed). ``make(params)`` returns the op node (or
    a list of outputs) using ``params[name]`` and any ``constant(...)`` it likes.
    ``patch(xml_text) -> xml_text`` may edit the saved XML before it is read back.
    ``output_names`` optionally sets tensor names on the outputs.
    """
    if directory is None:
        directory = tempfile.mkdtemp(prefix="irrun_oracle_")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    feeds = {k: np.require(v, requirements="C") for k, v in inputs.items()}
    params = {k: parameter(k, v.shape, v.dtype) for k, v in feeds.items()}
    node = make(params)
    outputs = node.outputs() if isinstance(node, ov.Node) else list(node)
    if output_names is not None:
        for out, name in zip(outputs, output_names):
            out.get_tensor().set_names({name})
    model = ov.Model(outputs, list(params.values()), "oracle")
    xml = directory / "model.xml"
    ov.save_model(model, str(xml), compress_to_fp16=False)
    if patch is not None:
        xml.write_text(patch(xml.read_text()))
    back = read_back(xml)
    in_names = [_any_name(o, i) for i, o in enumerate(back.inputs)]
    ordered = [feeds[n] for n in in_names]
    return Built(
        xml=xml,
        model=back,
        input_names=in_names,
        feeds=ordered,
        output_names=[_any_name(o, i) for i, o in enumerate(back.outputs)],
        output_types=[type_name(o.get_element_type()) for o in back.outputs],
        info=dict(info or {}),
    )


def _alloc(output) -> ov.Tensor:
    ps = output.get_partial_shape()
    et = output.get_element_type()
    if ps.is_static:
        return ov.Tensor(et, output.get_shape())
    return ov.Tensor(et, ov.Shape([0] * (ps.rank.get_length() if ps.rank.is_static else 1)))


def evaluate_node(node: ov.Node, inputs: Sequence[ov.Tensor | np.ndarray]) -> list[np.ndarray]:
    """Run one node's core reference kernel: ``node.evaluate(outs, ins)``."""
    ins = [t if isinstance(t, ov.Tensor) else ov.Tensor(np.require(t, requirements="C")) for t in inputs]
    outs = [_alloc(o) for o in node.outputs()]
    ok = node.evaluate(outs, ins)
    if not ok:
        raise OracleUnsupported(
            f"{node.get_type_info().name}-{node.get_type_info().version_id}: "
            f"evaluate() returned False for inputs "
            f"{[i.get_element_type().get_type_name() for i in ins]}"
        )
    results = []
    for out, tensor in zip(node.outputs(), outs):
        array = np.array(tensor.data, copy=True)
        if out.get_partial_shape().is_static:  # evaluate() hands a scalar back as shape (1,)
            shape = tuple(out.get_shape())
            array = array.reshape(shape) if array.size == math.prod(shape) else np.zeros(shape, array.dtype)
        results.append(array)
    return results


def run_reference(built: Built | ov.Model, feeds: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
    """Evaluate the read-back model node by node with the core reference kernels
    (``Node.evaluate``), in topological order.

    Returns the outputs in model output order, with the model's declared dtypes.
    Raises OracleUnsupported when some node has no reference kernel for its types.
    """
    if isinstance(built, Built):
        model = built.model
        feeds = built.feeds if feeds is None else feeds
    else:
        model = built
    assert feeds is not None
    values: dict[tuple[int, int], ov.Tensor] = {}
    for p, f in zip(model.get_parameters(), feeds):
        values[(p.get_instance_id(), 0)] = ov.Tensor(np.require(f, requirements="C"))
    for node in model.get_ordered_ops():
        tname = node.get_type_name()
        if tname == "Parameter":
            continue
        ins = []
        for inp in node.inputs():
            src = inp.get_source_output()
            ins.append(values[(src.get_node().get_instance_id(), src.get_index())])
        if tname == "Result":
            values[(node.get_instance_id(), 0)] = ins[0]
            continue
        outs = evaluate_node(node, ins)
        for k, (o, arr) in enumerate(zip(node.outputs(), outs)):
            t = ov.Tensor(np.require(arr, requirements="C"))
            if t.get_element_type() != o.get_element_type():
                raise OracleUnsupported(f"cannot hold {o.get_element_type()} in numpy")
            values[(node.get_instance_id(), k)] = t
    return [
        np.array(values[(r.get_instance_id(), 0)].data, copy=True) for r in model.get_results()
    ]


# The CPU plugin's thread count, pinned for every oracle: IRRUN_ORACLE_THREADS (default 2; 0 leaves the plugin its
# own default, every core this process may use). The plugin caps it at those cores (a 1-core machine runs 1 thread).
# Some of the plugin's results depend on it (measured with 2026.4.1, docs/semantics.md "The CPU plugin's thread
# count"): on one thread it does not raise the errors its kernels find while inferring. Pinned, a 64-core machine
# computes what this 2-core one does; the suite passes at IRRUN_ORACLE_THREADS=1, 2 and 0.
ORACLE_THREADS = int(os.environ.get("IRRUN_ORACLE_THREADS") or 2)


def cpu_config(**extra) -> dict:
    """The CPU plugin's configuration for an oracle: f32 inference precision, ORACLE_THREADS threads, and
    ``extra`` (an LLM's: irrun.tools.compare.OPENVINO_F32_CONFIG)."""
    config = {"INFERENCE_PRECISION_HINT": "f32", **extra}
    if ORACLE_THREADS:
        config["INFERENCE_NUM_THREADS"] = ORACLE_THREADS
    return config


@functools.lru_cache(maxsize=None)
def cpu_threads() -> int:
    """The threads the CPU plugin runs an oracle on (ORACLE_THREADS as the plugin caps it)."""
    x = opset1.parameter([1], ov.Type.f32)
    compiled = core().compile_model(ov.Model([opset1.relu(x)], [x]), "CPU", cpu_config())
    return int(compiled.get_property("INFERENCE_NUM_THREADS"))


def cpu_reports_run_time_errors() -> bool:
    """Whether the CPU plugin raises the errors its kernels find while inferring (an index out of range, no box
    left, an uninitialised variable): on two threads or more it does; on one, infer() returns as if nothing
    happened, with outputs partly unwritten, after reading and writing past its buffers (later tests of the
    process then crash). A test that expects such a refusal runs the plugin only where this is True."""
    return cpu_threads() > 1


# A capped ISA on a CPU that has more is not a CPU that has only that ISA: some of the plugin's JIT kernels then
# fail to compile ("evex is invalid", "jit_load_emitter: have unexpected number of elements") or crash.
_CAPPED_ISA = (f" (ONEDNN_MAX_CPU_ISA={os.environ['ONEDNN_MAX_CPU_ISA']}: the capped plugin fails where a CPU with only"
               " that ISA may not)" if os.environ.get("ONEDNN_MAX_CPU_ISA") else "")


def _compile_on_cpu(model: ov.Model, i64_index_twin: bool) -> tuple[ov.CompiledModel, set[int]]:
    """The model compiled for the CPU plugin (f32 inference precision), and the outputs to widen to i64: with
    ``i64_index_twin`` AdaptiveMaxPools with i64 indices (which the plugin refuses) become i32 ones."""
    widen: set[int] = set()
    twins = i64_index_twin and any(op.get_type_name() == "AdaptiveMaxPool" and op.get_output_element_type(1) == ov.Type.i64
                                   for op in model.get_ordered_ops())
    if twins:
        original, model = model, model.clone()
        for op in model.get_ordered_ops():
            if op.get_type_name() == "AdaptiveMaxPool":
                op.set_attribute("index_element_type", "i32")
        model.validate_nodes_and_infer_types()
        widen = {i for i, o in enumerate(original.outputs)
                 if o.get_element_type() == ov.Type.i64 and model.outputs[i].get_element_type() == ov.Type.i32}
    return core().compile_model(model, "CPU", cpu_config()), widen


def _infer_on_cpu(compiled: ov.CompiledModel, widen: set[int], feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
    res = compiled.create_infer_request().infer([np.require(f, requirements="C") for f in feeds])
    return [np.array(res[o], dtype=np.int64 if i in widen else None, copy=True) for i, o in enumerate(compiled.outputs)]


def run_cpu(
    built: Built,
    feeds: Sequence[np.ndarray] | None = None,
    *,
    i64_index_twin: bool = True,
) -> tuple[list[str], list[np.ndarray]]:
    """Run the read-back model on the CPU plugin (f32 inference precision).

    Returns (output names as the compiled model reports them, outputs in order).
    With ``i64_index_twin`` an AdaptiveMaxPool with i64 indices (which the CPU
    plugin refuses) is compiled as a clone with i32 indices; that output is then
    widened to int64.
    """
    feeds = built.feeds if feeds is None else feeds
    try:
        compiled, widen = _compile_on_cpu(built.model, i64_index_twin)
    except Exception as e:  # noqa: BLE001
        raise OracleUnsupported("CPU plugin: " + str(e).strip().splitlines()[-1] + _CAPPED_ISA) from e
    outs = _infer_on_cpu(compiled, widen, feeds)
    names = [_any_name(o, i) for i, o in enumerate(compiled.outputs)]
    return names, outs


def run_cpu_many(builts: Sequence[Built], *, keep_refusals: bool = False) -> list:
    """``[run_cpu(b) for b in builts]`` from one compiled model that holds them all side by side: compiling
    costs a fixed 0.1-0.3 s a model, most of a sweep's time, and independent subgraphs compile and run as they
    do alone (nothing fuses across them). When the merged model does not compile, each half is tried alone,
    down to one model each, so a case the plugin refuses fails alone, as before. With ``keep_refusals`` a
    refused case's OracleUnsupported takes its place in the list instead of being raised."""
    builts = list(builts)
    if len(builts) < 2:
        return [_run_cpu_or_refusal(b, keep_refusals) for b in builts]
    results, params, feeds = [], [], []
    for b in builts:
        results += b.model.get_results()
        params += b.model.get_parameters()
        feeds += b.feeds
    try:
        compiled, widen = _compile_on_cpu(ov.Model(results, params, "oracle_cases"), True)
    except Exception:  # noqa: BLE001 - find the case the plugin refuses, half at a time
        half = len(builts) // 2
        return (run_cpu_many(builts[:half], keep_refusals=keep_refusals)
                + run_cpu_many(builts[half:], keep_refusals=keep_refusals))
    outs, names = iter(_infer_on_cpu(compiled, widen, feeds)), iter(compiled.outputs)
    per_model = []
    for b in builts:
        mine = [next(names) for _ in b.model.outputs]
        per_model.append(([_any_name(o, i) for i, o in enumerate(mine)], [next(outs) for _ in mine]))
    return per_model


def _run_cpu_or_refusal(built: Built, keep_refusals: bool):
    try:
        return run_cpu(built)
    except OracleUnsupported as e:
        if keep_refusals:
            return e
        raise


def run_irrun(built: Built, context: str = "") -> dict[str, np.ndarray]:
    """Load the saved file with irrun, check its input and output names and output types against what
    OpenVINO read from the same file, and run it on the feeds."""
    import irrun  # imported here: the oracle module itself needs only openvino

    model = irrun.load(str(built.xml))
    assert [t.name for t in model.inputs] == built.input_names, context
    assert [t.name for t in model.outputs] == built.output_names, context
    assert [t.element_type for t in model.outputs] == built.output_types, context
    return model.run(built.feed_dict)


def assert_cpu_many(cases: Sequence[tuple[Built, str]], **compare) -> None:
    """``assert_same(run_irrun(built, context), <CPU plugin>, names, context=context, **compare)`` for each
    (built, context) case, the cases compiled as one model (run_cpu_many). Build each case inside the loop
    that makes it: a factory lambda reads the loop's variables when it runs."""
    cases = list(cases)
    for (built, context), (_, expected) in zip(cases, run_cpu_many([built for built, _ in cases])):
        assert_same(run_irrun(built, context), expected, built.output_names, context=context, **compare)


# ----------------------------------------------------------------- comparison


def _mismatch_report(got: np.ndarray, exp: np.ndarray, bad: np.ndarray, limit: int = 6) -> str:
    idx = np.argwhere(bad)
    lines = [f"{len(idx)} of {bad.size} elements differ"]
    for pos in idx[:limit]:
        p = tuple(int(x) for x in pos)
        lines.append(f"  at {p}: expected {exp[p]!r}, got {got[p]!r}")
    return "\n".join(lines)


def compare_outputs(
    got: np.ndarray,
    exp: np.ndarray,
    atol: float | None = None,
    *,
    f16_ulp: bool = False,
    zero_sign: bool = True,
) -> str | None:
    """None if equal, else a description. Exact means bit-exact except that any
    NaN equals any NaN; ``zero_sign=False`` also lets -0.0 equal +0.0 (for ops
    where OpenVINO's own implementations break ties differently). ``atol``
    compares floats with an absolute tolerance (NaN positions must still agree);
    ``f16_ulp`` adds one f16 ulp of the expected value to it."""
    got = np.asarray(got)
    exp = np.asarray(exp)
    if got.dtype != exp.dtype:
        return f"dtype: expected {exp.dtype}, got {got.dtype}"
    if got.shape != exp.shape:
        return f"shape: expected {exp.shape}, got {got.shape}"
    if exp.dtype.kind == "f":
        gn, en = np.isnan(got), np.isnan(exp)
        if atol is None:
            w = {2: np.uint16, 4: np.uint32, 8: np.uint64}[exp.dtype.itemsize]
            bad = (got.view(w) != exp.view(w)) & ~(gn & en)
            if not zero_sign:
                bad &= ~((got == 0) & (exp == 0))
        else:
            tol = np.full(exp.shape, atol, dtype=np.float64)
            if f16_ulp:
                tol = tol + np.spacing(np.abs(exp).astype(np.float16)).astype(np.float64)
            with np.errstate(invalid="ignore"):
                diff = np.abs(got.astype(np.float64) - exp.astype(np.float64))
                bad = (gn != en) | (~gn & ~en & ~(diff <= tol))
                # equal infinities
                bad &= ~(np.isinf(got) & (got == exp))
    else:
        bad = got != exp
    if bad.any():
        return _mismatch_report(got, exp, bad)
    return None


def assert_same(
    got: Sequence[np.ndarray] | Mapping[str, np.ndarray],
    expected: Sequence[np.ndarray],
    names: Sequence[str] | None = None,
    *,
    atol: Sequence[float | None] | float | None = None,
    f16_ulp: bool = False,
    zero_sign: bool = True,
    context: str = "",
    who: str = "irrun",
) -> None:
    """Assert outputs match positionally (and by name when ``got`` is a dict)."""
    if isinstance(got, Mapping):
        keys = list(got.keys())
        if names is not None:
            assert keys == list(names), (
                f"{context}\n{who} output names {keys} != OpenVINO's {list(names)}"
            )
        got = [got[k] for k in keys]
    got = list(got)
    assert len(got) == len(expected), f"{context}\n{who} returned {len(got)} outputs, expected {len(expected)}"
    if not isinstance(atol, (list, tuple)):
        atol = [atol] * len(expected)
    problems = []
    for i, (g, e, tol) in enumerate(zip(got, expected, atol)):
        msg = compare_outputs(g, e, tol, f16_ulp=f16_ulp, zero_sign=zero_sign)
        if msg:
            label = names[i] if names is not None else f"#{i}"
            problems.append(f"output {i} ({label}): {msg}")
    assert not problems, f"{context}\n{who} vs oracle:\n" + "\n".join(problems)
