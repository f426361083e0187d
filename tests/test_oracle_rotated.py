"""ROIAlignRotated-15 and NMSRotated-13 against OpenVINO's CPU plugin (no reference evaluate() in 2026.4):
seeded sweeps over pooled sizes, sampling ratios, spatial scales, clockwise modes, boxes reaching past the
feature map, and for NMSRotated over thresholds, max outputs, sort_result_descending, output types and
tied scores."""
import math

import numpy as np
import pytest
from openvino import opset1, opset13, opset15
from oracle import assert_same, build, run_cpu

import irrun
from irrun.tools.check import check


def verify(built, context, atol=None):
    report = check(built.xml)
    assert not report.errors, f"{context}\n" + "\n".join(report.lines())
    model = irrun.load(built.xml)
    names, expected = run_cpu(built)
    assert_same(model.run(built.feed_dict), expected, names, atol=atol, context=context)
    return expected


# ---------------------------------------------------------------- ROIAlignRotated

@pytest.mark.parametrize("seed", range(10))
def test_roi_align_rotated(seed, tmp_path):
    rng = np.random.default_rng(3000 + seed)
    batch, channels, height, width = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(4, 12)), \
        int(rng.integers(4, 12))
    count = int(rng.integers(1, 7))
    scale = float(rng.choice([1.0, 0.5, 0.25]))
    rois = np.stack([rng.random(count) * width / scale, rng.random(count) * height / scale,
                     rng.random(count) * width / scale * 0.8 + 0.1, rng.random(count) * height / scale * 0.8 + 0.1,
                     (rng.random(count) - 0.5) * 2 * math.pi], axis=1).astype(np.float32)
    inputs = {"data": rng.standard_normal((batch, channels, height, width)).astype(np.float32), "rois": rois,
              "batch_indices": rng.integers(0, batch, count).astype(np.int32 if seed % 2 else np.int64)}
    attrs = dict(pooled_h=int(rng.integers(1, 4)), pooled_w=int(rng.integers(1, 4)),
                 sampling_ratio=int(rng.choice([0, 1, 2])), spatial_scale=scale, clockwise_mode=bool(seed % 3 == 0))
    built = build(lambda p: opset15.roi_align_rotated(p["data"], p["rois"], p["batch_indices"], **attrs), inputs,
                  tmp_path)
    verify(built, f"seed {seed}: {attrs}", atol=2e-6)


# ---------------------------------------------------------------- NMSRotated

@pytest.mark.parametrize("seed", range(14))
def test_nms_rotated(seed, tmp_path):
    rng = np.random.default_rng(3100 + seed)
    batches, classes, count = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 14))
    boxes = np.stack([rng.random((batches, count)) * 20, rng.random((batches, count)) * 20,
                      rng.random((batches, count)) * 12 + 1, rng.random((batches, count)) * 12 + 1,
                      (rng.random((batches, count)) - 0.5) * 2 * math.pi], axis=2).astype(np.float32)
    if seed % 4 == 1:
        boxes[..., 4] = 0.0  # axis-aligned
    scores = rng.random((batches, classes, count)).astype(np.float32)
    if seed % 5 == 4:
        scores = (np.round(scores * 3) / 3).astype(np.float32)  # ties: lower box index first
    inputs = {"boxes": boxes, "scores": scores}
    max_out, iou, score = int(rng.integers(1, 8)), float(rng.choice([0.1, 0.3, 0.5, 0.8])), \
        float(rng.choice([0.0, 0.2, 0.5]))
    attrs = dict(sort_result_descending=bool(seed % 3 != 2), output_type=["i64", "i32"][seed % 2],
                 clockwise=bool(seed % 2 == 0))
    built = build(lambda p: opset13.nms_rotated(p["boxes"], p["scores"], opset1.constant(np.int64(max_out)),
                                                opset1.constant(np.float32(iou)),
                                                opset1.constant(np.float32(score)), **attrs), inputs, tmp_path)
    verify(built, f"seed {seed}: {batches}x{classes}x{count} max {max_out} iou {iou} score {score} {attrs}")


def test_nms_rotated_max_output_zero(tmp_path):
    """max_output_boxes_per_class 0: nothing is selected and valid_outputs is 0 (the CPU plugin returns the
    empty selections but leaves valid_outputs unwritten)."""
    inputs = {"boxes": np.array([[[1, 1, 2, 2, 0.3], [5, 5, 2, 2, 0.1]]], np.float32),
              "scores": np.array([[[0.9, 0.8]]], np.float32)}
    built = build(lambda p: opset13.nms_rotated(p["boxes"], p["scores"], opset1.constant(np.int64(0)),
                                                opset1.constant(np.float32(0.5)), opset1.constant(np.float32(0))),
                  inputs, tmp_path)
    got = list(irrun.load(built.xml).run(built.feed_dict).values())
    _, expected = run_cpu(built)
    assert_same(got[:2], expected[:2])
    assert got[2].tolist() == [0]


def test_rotated_iou_hand_values():
    """Two unit squares offset by half a side overlap by 1/2 (IoU 1/3); a square rotated by 45 degrees about
    the same centre overlaps an equal square by 2*(sqrt(2)-1) (area of the regular octagon)."""
    from irrun.ops.rotated import rotated_intersection

    square = np.array([0, 0, 1, 1, 0], np.float32)
    others = np.array([[0.5, 0, 1, 1, 0], [0, 0, 1, 1, math.pi / 4], [5, 5, 1, 1, 0.3]], np.float32)
    np.testing.assert_allclose(rotated_intersection(square, others), [0.5, 2 * (math.sqrt(2) - 1), 0], rtol=1e-6)


def test_rotated_ops_f16(tmp_path):
    """f16 inputs: both compute in f32; NMSRotated's selected_scores are f32 whatever the input type."""
    rng = np.random.default_rng(3200)
    data = rng.standard_normal((1, 2, 6, 6)).astype(np.float16)
    rois = np.array([[3, 3, 2, 3, 0.5], [1, 2, 4, 2, -1]], np.float16)
    built = build(lambda p: opset15.roi_align_rotated(p["data"], p["rois"], p["ids"], 2, 2, 2, 1.0, False),
                  {"data": data, "rois": rois, "ids": np.zeros(2, np.int32)}, tmp_path / "align")
    verify(built, "ROIAlignRotated f16", atol=1e-3)
    boxes = np.concatenate([rng.random((1, 6, 2)) * 10, rng.random((1, 6, 2)) * 5 + 1, rng.random((1, 6, 1))],
                           axis=2).astype(np.float16)
    built = build(lambda p: opset13.nms_rotated(p["boxes"], p["scores"], opset1.constant(np.int64(5)),
                                                opset1.constant(np.float16(0.3)), opset1.constant(np.float16(0.0))),
                  {"boxes": boxes, "scores": rng.random((1, 2, 6)).astype(np.float16)}, tmp_path / "nms")
    expected = verify(built, "NMSRotated f16")
    assert expected[1].dtype == np.float32
