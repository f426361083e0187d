"""RandomUniform-8 and Multinomial-13 against OpenVINO, bit for bit.

RandomUniform: OpenVINO's reference kernel (Node.evaluate on the read-back model, a fresh node each
time, so its generator starts from the seeds) for f16, f32, f64, i32, i64 through saved models, and bf16
through evaluate on raw tensors; both alignments (tensorflow: Philox 4x32-10; pytorch: MT19937), many
seeds (64-bit ones too), shapes (empty, odd sizes that leave part of a Philox block unused) and ranges
(negative, full int32, int64 beyond 32 bits).
Multinomial: the pip package has no reference kernel (evaluate returns False), so the oracle is the CPU
plugin with f32 inference precision (std::mt19937 seeded by std::seed_seq{global_seed, op_seed}); only
well-defined cases are compared (each row has positive mass and, without replacement, at least as many
classes with positive probability as samples: otherwise OpenVINO leaves outputs unwritten).
"""
from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset8, opset13

import oracle as O
from narrow_values import from_tensor
from irrun.errors import IRError
from irrun.ir.types import ELEMENT_TYPES
from irrun.ops.random import Multinomial13, RandomUniform8
from irrun.ops.registry import Context, TensorInfo

NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}
RANGES = {"f16": [(0, 1), (-2.5, 7)], "f32": [(0, 1), (-3.5, 100.25)], "f64": [(0, 1), (-1e3, 5.5)],
          "i32": [(0, 10), (-100, 2 ** 31 - 1), (-2 ** 31, 2 ** 31 - 1)],
          "i64": [(0, 10), (-5, 2 ** 40), (-2 ** 62, 2 ** 62), (3, 2 ** 32 - 1)], "bf16": [(0, 1), (-2.5, 7)]}
SEEDS = [(1, 2), (0, 5), (7, 0), (123456789, 987654321), (2 ** 40 + 3, 2 ** 33 + 7)]
SHAPES = [(0,), (1,), (3,), (2, 3), (5, 7), (4, 1, 9)]


@pytest.mark.parametrize("alignment", ["tensorflow", "pytorch"])
@pytest.mark.parametrize("name", ["f16", "f32", "f64", "i32", "i64"])
def test_random_uniform_reference(tmp_path, alignment, name):
    """One saved model per type and alignment, one RandomUniform per (range, seeds, shape) case."""
    dtype = NP[name]
    cases = [(low, high, seeds, SHAPES[i % len(SHAPES)]) for i, (low, high, seeds) in enumerate(
        (low, high, seeds) for low, high in RANGES[name] for seeds in SEEDS)]

    def make(p):
        nodes = []
        for low, high, (global_seed, op_seed), shape in cases:
            node = opset8.random_uniform(O.constant(np.array(shape, np.int64)), O.constant(np.array(low, dtype)),
                                         O.constant(np.array(high, dtype)), name, global_seed, op_seed)
            node.set_attribute("alignment", alignment)
            nodes.append(node.output(0))
        return nodes

    built = O.build(make, {}, tmp_path)
    O.assert_same(O.run_irrun(built), O.run_reference(built), built.output_names, context=f"{alignment} {name}")


def evaluate_random_uniform(count, name, low, high, global_seed, op_seed, alignment):
    ov_type = getattr(ov.Type, name)
    node = opset8.random_uniform(opset8.parameter([1], ov.Type.i64), opset8.parameter([], ov_type),
                                 opset8.parameter([], ov_type), name, global_seed, op_seed)
    node.set_attribute("alignment", alignment)
    bounds = []
    for value in (low, high):
        tensor = ov.Tensor(ov.Type.bf16, ov.Shape([]))
        np.asarray(tensor.data).view(np.uint16).reshape(-1)[:] = np.array([value], np.float32).view(np.uint32) >> 16
        bounds.append(tensor)
    out = ov.Tensor(ov_type, ov.Shape([count]))
    assert node.evaluate([out], [ov.Tensor(np.array([count], np.int64))] + bounds)
    return from_tensor(out, name, count)


@pytest.mark.parametrize("alignment", ["tensorflow", "pytorch"])
def test_random_uniform_bf16(alignment):
    for low, high in RANGES["bf16"]:
        for global_seed, op_seed in SEEDS:
            for count in (1, 5, 64):
                expected = evaluate_random_uniform(count, "bf16", low, high, global_seed, op_seed, alignment)
                op = RandomUniform8({"output_type": ELEMENT_TYPES["bf16"], "global_seed": global_seed,
                                     "op_seed": op_seed, "alignment": alignment}, Context())
                got = op.run([np.array([count]), np.float32(low), np.float32(high)], None,
                             [TensorInfo((count,), ELEMENT_TYPES["bf16"])])[0]
                assert O.compare_outputs(got, expected) is None, (alignment, low, high, global_seed, op_seed, count)


def test_random_uniform_dynamic_shape_input(tmp_path):
    """The output shape comes from a Parameter: irrun infers it at run time."""
    built = O.build(lambda p: opset8.random_uniform(p["shape"], O.constant(np.float32(-1)), O.constant(np.float32(1)),
                                                    "f32", 11, 13),
                    {"shape": np.array([3, 4], np.int32)}, tmp_path)
    import irrun
    model = irrun.load(str(built.xml))
    assert model.outputs[0].shape == (None, None)
    O.assert_same(O.run_irrun(built), O.run_reference(built), built.output_names)


RU_CASES = [  # (shape input, shape dtype, min, max, output type, seeds) -> OpenVINO accepts?
    ([2, 3], np.int64, np.float32(2), np.float32(1), "f32", (1, 2)),
    ([2, 3], np.int64, np.float32(1), np.float32(1), "f32", (1, 2)),
    ([2, 3], np.int64, np.int32(1), np.int32(1), "i32", (1, 2)),
    ([2, 3], np.int64, np.array([0], np.float32), np.array([1], np.float32), "f32", (1, 2)),
    ([2, 3], np.int64, np.array([0, 0], np.float32), np.array([1], np.float32), "f32", (1, 2)),
    ([2, 3], np.int64, np.float16(0), np.float16(1), "f32", (1, 2)),
    ([2, 3], np.int32, np.float32(0), np.float32(1), "f32", (1, 2)),
    ([[2, 3]], np.int64, np.float32(0), np.float32(1), "f32", (1, 2)),
    ([2, 3], np.float32, np.float32(0), np.float32(1), "f32", (1, 2)),
    ([-2, 3], np.int64, np.float32(0), np.float32(1), "f32", (1, 2)),
]


@pytest.mark.parametrize("case", range(len(RU_CASES)))
def test_random_uniform_validation_matches_openvino(case):
    shape, shape_dtype, low, high, name, (gs, os_) = RU_CASES[case]
    shape = np.array(shape, shape_dtype)
    try:
        node = opset8.random_uniform(O.constant(shape), O.constant(low), O.constant(high), name, gs, os_)
        expected = tuple(node.get_output_partial_shape(0).to_shape())
    except RuntimeError:
        expected = None
    infos = [TensorInfo(shape.shape, ELEMENT_TYPES[O.type_name(shape.dtype)], shape)]
    infos += [TensorInfo(np.shape(v), ELEMENT_TYPES[O.type_name(np.asarray(v).dtype)], np.asarray(v)) for v in (low, high)]
    try:
        got = RandomUniform8({"output_type": ELEMENT_TYPES[name], "global_seed": gs, "op_seed": os_,
                              "alignment": "tensorflow"}, Context()).infer(infos)[0].shape
    except IRError:
        got = None
    assert got == expected, RU_CASES[case]


# ---------------------------------------------------------------- Multinomial

def probs_case(rng, batch, classes, samples, replacement, log_probs, dtype):
    probs = rng.random((batch, classes)).astype(np.float32)
    probs[rng.random((batch, classes)) < 0.2] = 0
    probs[:, 0] += 0.01
    if not replacement:
        probs[probs == 0] = 0.001
    if log_probs:
        probs = np.log(probs)
    return probs.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("log_probs", [False, True])
def test_multinomial_cpu(tmp_path, dtype, replacement, log_probs):
    """One model per parameter set, one Multinomial per case (compiled once)."""
    rng = np.random.default_rng(int(replacement) * 4 + int(log_probs) * 2 + (dtype == np.float16))
    convert_type = "i64" if log_probs else "i32"
    feeds, cases = {}, []
    for case, (batch, classes, samples) in enumerate([(1, 5, 3), (3, 4, 4), (2, 10, 7), (4, 3, 3), (2, 100, 50),
                                                      (3, 1, 1), (1, 6, 0)]):
        samples = min(samples, classes) if not replacement else samples * 2
        feeds[f"probs{case}"] = probs_case(rng, batch, classes, samples, replacement, log_probs, dtype)
        cases.append((samples, *SEEDS[case % len(SEEDS)]))

    def make(p):
        return [opset13.multinomial(p[f"probs{i}"], O.constant(np.int64(n)), convert_type, replacement, log_probs,
                                    gs, os_).output(0) for i, (n, gs, os_) in enumerate(cases)]

    built = O.build(make, feeds, tmp_path)
    names, expected = O.run_cpu(built)
    O.assert_same(O.run_irrun(built), expected, names, context=f"{dtype.__name__} {cases}")


def test_multinomial_bf16_probs_computes_in_f32():
    """bf16 probs: irrun computes on their exact f32 values, which is the plugin's f32 path fed the same values.
    The plugin fed raw bf16 takes that path only on CPUs without native bf16; with AVX512-BF16 or AMX it sums
    the cdf in bf16 and can pick another class at a boundary (docs/semantics.md), so it is not the oracle."""
    rng = np.random.default_rng(3)
    bf16, f32 = ELEMENT_TYPES["bf16"], ELEMENT_TYPES["f32"]
    from irrun.ops.conversion import round_to_bf16
    for replacement in (True, False):
        probs = round_to_bf16(probs_case(rng, 3, 8, 6, replacement, False, np.float32))
        param = opset13.parameter([3, 8], ov.Type.f32)
        node = opset13.multinomial(param, O.constant(np.int64(6)), "i64", replacement, False, 5, 9)
        compiled = O.core().compile_model(ov.Model([node], [param]), "CPU", O.cpu_config())
        expected = compiled.create_infer_request().infer([probs])[0]
        op = Multinomial13({"convert_type": ELEMENT_TYPES["i64"], "with_replacement": replacement, "log_probs": False,
                            "global_seed": 5, "op_seed": 9}, Context())
        outs = [TensorInfo((3, 6), ELEMENT_TYPES["i64"])]
        samples = TensorInfo((), ELEMENT_TYPES["i64"])
        got = op.run([probs, np.array(6)], [TensorInfo((3, 8), bf16), samples], outs)[0]
        as_f32 = op.run([probs, np.array(6)], [TensorInfo((3, 8), f32), samples], outs)[0]
        assert np.array_equal(got, expected), (replacement, got, expected)
        assert np.array_equal(got, as_f32)


MN_CASES = [  # (probs shape, probs type, num_samples value, num_samples dtype) -> OpenVINO accepts?
    ([2, 5], "f32", np.int64(3), None), ([5], "f32", np.array([3], np.int32), None),
    ([1, 2, 5], "f32", np.int64(3), None), ([2, 5], "f32", np.array([3, 4], np.int64), None),
    ([2, 5], "f32", np.float32(3), None), ([2, 5], "i32", np.int64(3), None), ([2, 5], "f16", np.int64(3), None),
    ([2, 5], "f64", np.int64(7), None), ([2, 5], "f32", np.int64(-1), None),
]


@pytest.mark.parametrize("case", range(len(MN_CASES)))
def test_multinomial_validation_matches_openvino(case):
    shape, ptype, samples, _ = MN_CASES[case]
    try:
        node = opset13.multinomial(opset13.parameter(shape, getattr(ov.Type, ptype)), O.constant(samples), "i64",
                                   True, False, 1, 2)
        partial = node.get_output_partial_shape(0)
        expected = tuple(d.get_length() if d.is_static else None for d in partial)
    except RuntimeError:
        expected = "rejected"
    infos = [TensorInfo(tuple(shape), ELEMENT_TYPES[ptype]),
             TensorInfo(np.shape(samples), ELEMENT_TYPES[O.type_name(np.asarray(samples).dtype)], np.asarray(samples))]
    try:
        got = Multinomial13({"convert_type": ELEMENT_TYPES["i64"], "with_replacement": True, "log_probs": False,
                             "global_seed": 1, "op_seed": 2}, Context()).infer(infos)[0].shape
    except IRError:
        got = "rejected"
    assert got == expected, MN_CASES[case]
