"""MulticlassNms-8/9 and MatrixNms-8 against OpenVINO's CPU plugin (no reference evaluate() in 2026.4).

Seeded sweeps over sort_result_type, sort_result_across_batch, background_class, nms_top_k, keep_top_k,
normalized, nms_eta and the decay functions, with tied scores in some cases. Selection order, indices and
counts must match exactly; scores exactly for MulticlassNms, within 1e-6 for MatrixNms (decayed scores:
the plugin's expf)."""
import numpy as np
import pytest
from openvino import opset8, opset9
from oracle import assert_same, build, cpu_reports_run_time_errors, run_cpu, run_cpu_many

import irrun
from irrun.tools.check import check


def make_boxes(rng, batches, count, normalized):
    scale = 1.0 if normalized else 40.0
    corner = rng.random((batches, count, 2)).astype(np.float32) * scale
    size = rng.random((batches, count, 2)).astype(np.float32) * scale * 0.6
    return np.concatenate([corner, corner + size], axis=2).astype(np.float32)


def make_scores(rng, shape, ties):
    scores = rng.random(shape).astype(np.float32)
    if ties:
        scores = (np.round(scores * 4) / 4).astype(np.float32)
    return scores


def verify(built, context, score_atol=None, cpu=None):
    """irrun vs the CPU plugin's outputs (``cpu``: a run_cpu_many result computed before, else run now)."""
    report = check(built.xml)
    assert not report.errors, f"{context}\n" + "\n".join(report.lines())
    model = irrun.load(built.xml)
    assert model.outputs[0].shape == (None, 6)
    if isinstance(cpu, Exception):  # the plugin refused this case (keep_refusals)
        raise cpu
    names, expected = cpu or run_cpu(built)
    got = model.run(built.feed_dict)
    assert_same(got, expected, names, atol=[score_atol, None, None], context=context)
    return expected


def common_attrs(rng, seed):
    return dict(sort_result_type=["none", "score", "classid"][seed % 3], sort_result_across_batch=bool(seed // 3 % 2),
                output_type=["i64", "i32"][seed % 2], score_threshold=float(rng.choice([0.0, 0.2, 0.5])),
                nms_top_k=int(rng.choice([-1, 3, 20])), keep_top_k=int(rng.choice([-1, 4, 50])),
                background_class=int(rng.choice([-1, 0, 2])), normalized=bool(seed % 4 != 1))


# ---------------------------------------------------------------- MulticlassNms-8 / 9 (shared boxes)

@pytest.fixture(scope="module")
def multiclass_cpu(tmp_path_factory):
    """Every MulticlassNms case of this module with the CPU plugin's outputs, the cases compiled as one model
    (alone, each costs a compile of 0.1-0.3 s): {(version or "rois", seed): (built, context, outputs)}."""
    root = tmp_path_factory.mktemp("multiclass")
    cases = {(version, seed): multiclass_case(version, seed, root / f"v{version}_{seed}")
             for version in (8, 9) for seed in range(12)}
    cases.update({("rois", seed): rois_num_case(seed, root / f"rois{seed}") for seed in range(8)})
    results = run_cpu_many([built for built, _ in cases.values()], keep_refusals=True)
    return {key: (built, context, result) for (key, (built, context)), result in zip(cases.items(), results)}


def multiclass_case(version, seed, path):
    rng = np.random.default_rng(1000 + seed + 100 * version)
    batches, classes, count = int(rng.integers(1, 4)), int(rng.integers(1, 5)), int(rng.integers(1, 16))
    attrs = common_attrs(rng, seed)
    attrs.update(iou_threshold=float(rng.choice([0.3, 0.5, 0.7, 1.0])), nms_eta=float(rng.choice([1.0, 0.9, 0.6])))
    normalized = attrs["normalized"]
    inputs = {"boxes": make_boxes(rng, batches, count, normalized),
              "scores": make_scores(rng, (batches, classes, count), seed % 5 == 4)}
    factory = opset8.multiclass_nms if version == 8 else opset9.multiclass_nms
    built = build(lambda p: factory(p["boxes"], p["scores"], **attrs), inputs, path)
    return built, f"v{version} seed {seed}: {batches}x{classes}x{count} {attrs}"


@pytest.mark.parametrize("version", [8, 9])
@pytest.mark.parametrize("seed", range(12))
def test_multiclass_nms(version, seed, multiclass_cpu):
    built, context, cpu = multiclass_cpu[version, seed]
    verify(built, context, cpu=cpu)


def rois_num_case(seed, path):
    """boxes [C, M, 4], scores [C, M] and roisnum [N]: image i owns roisnum[i] consecutive boxes (0 allowed)."""
    rng = np.random.default_rng(1300 + seed)
    classes = int(rng.integers(1, 4))
    rois = rng.integers(0, 6, size=int(rng.integers(1, 4)))
    if rois.sum() == 0:
        rois[0] = 3
    count = int(rois.sum())
    attrs = common_attrs(rng, seed)
    attrs.update(iou_threshold=float(rng.choice([0.3, 0.5, 0.7])), nms_eta=float(rng.choice([1.0, 0.8])))
    inputs = {"boxes": make_boxes(rng, classes, count, attrs["normalized"]),
              "scores": make_scores(rng, (classes, count), seed % 4 == 3),
              "roisnum": rois.astype(np.int32 if seed % 2 else np.int64)}
    built = build(lambda p: opset9.multiclass_nms(p["boxes"], p["scores"], p["roisnum"], **attrs), inputs, path)
    return built, f"seed {seed}: {classes} classes roisnum {rois.tolist()} {attrs}"


@pytest.mark.parametrize("seed", range(8))
def test_multiclass_nms9_rois_num(seed, multiclass_cpu):
    built, context, cpu = multiclass_cpu["rois", seed]
    verify(built, context, cpu=cpu)


# ---------------------------------------------------------------- MatrixNms-8

@pytest.mark.parametrize("seed", range(14))
def test_matrix_nms(seed, tmp_path):
    rng = np.random.default_rng(1500 + seed)
    batches, classes, count = int(rng.integers(1, 4)), int(rng.integers(1, 5)), int(rng.integers(1, 16))
    attrs = common_attrs(rng, seed)
    attrs.update(decay_function=["linear", "gaussian"][seed % 2], gaussian_sigma=float(rng.choice([2.0, 0.5])),
                 post_threshold=float(rng.choice([0.0, 0.1, 0.3])))
    # no tied scores: the plugin orders candidates with an unstable partial sort, and the order of tied
    # candidates changes the decay of the others
    inputs = {"boxes": make_boxes(rng, batches, count, attrs["normalized"]),
              "scores": make_scores(rng, (batches, classes, count), False)}
    built = build(lambda p: opset8.matrix_nms(p["boxes"], p["scores"], **attrs), inputs, tmp_path)
    context = f"seed {seed}: {batches}x{classes}x{count} {attrs}"
    got = list(irrun.load(built.xml).run(built.feed_dict).values())
    if not got[0].size and not cpu_reports_run_time_errors():  # the plugin would not refuse (below): it runs on
        assert got[2].tolist() == [0] * batches, context      # with garbage counts, past its buffers
        return
    try:
        verify(built, context, score_atol=1e-6)
    except RuntimeError as exc:  # the plugin refuses to give no selection at all; irrun gives empty outputs
        assert "Total number of boxes is less or equal than 0" in str(exc), context
        assert got[0].shape == (0, 6) and got[2].tolist() == [0] * batches, context


def test_matrix_nms_nothing_selected(tmp_path):
    """No score above score_threshold: irrun returns empty selections and zero counts (the CPU plugin
    raises 'Total number of boxes is less or equal than 0' instead)."""
    inputs = {"boxes": np.array([[[0, 0, 1, 1], [0, 0, 0.5, 0.5]]], np.float32),
              "scores": np.array([[[0.1, 0.2]]], np.float32)}
    built = build(lambda p: opset8.matrix_nms(p["boxes"], p["scores"], score_threshold=0.5), inputs, tmp_path)
    got = list(irrun.load(built.xml).run(built.feed_dict).values())
    assert [g.shape for g in got] == [(0, 6), (0, 1), (1,)] and got[2].tolist() == [0]


def test_multiclass_nms_hand_example(tmp_path):
    """Two overlapping boxes of one class: the lower-scored one is suppressed at iou_threshold 0.5."""
    inputs = {"boxes": np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]], np.float32),
              "scores": np.array([[[0.9, 0.8, 0.7]]], np.float32)}
    built = build(lambda p: opset8.multiclass_nms(p["boxes"], p["scores"], iou_threshold=0.5), inputs, tmp_path)
    outputs, indices, counts = irrun.load(built.xml).run(built.feed_dict).values()
    np.testing.assert_array_equal(indices[:, 0], [0, 2])
    np.testing.assert_allclose(outputs[:, :2], [[0, 0.9], [0, 0.7]])
    assert counts.tolist() == [2]


def test_f16_inputs(tmp_path):
    """f16 boxes and scores: computed in f32, selected_outputs in f16."""
    rng = np.random.default_rng(1700)
    boxes = make_boxes(rng, 2, 8, True).astype(np.float16)
    scores = rng.random((2, 3, 8)).astype(np.float16)
    inputs = {"boxes": boxes, "scores": scores}
    built = build(lambda p: opset8.multiclass_nms(p["boxes"], p["scores"], iou_threshold=0.5), inputs,
                  tmp_path / "multiclass")
    verify(built, "MulticlassNms f16")
    built = build(lambda p: opset8.matrix_nms(p["boxes"], p["scores"]), inputs, tmp_path / "matrix")
    verify(built, "MatrixNms f16", score_atol=1e-3)
