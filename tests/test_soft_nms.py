"""The vectorised Soft-NMS (irrun/ops/soft_nms.py) against the heap loop it replaced (tests/nms_reference.py):
identical boxes and score bits on random and adversarial inputs (tied scores, zero-area, inverted and duplicated
boxes, all boxes overlapping, chains of overlaps, NaN and huge coordinates, sigma from tiny to large, thresholds
that drop most candidates, widths of the first decay step and pair chunks down to one)."""
import functools

import numpy as np
import pytest
from nms_reference import soft_nms as reference_soft_nms
from test_greedy_nms import KINDS, case

from irrun.ops import detection, soft_nms

F32 = np.float32
pytestmark = pytest.mark.filterwarnings("ignore:overflow", "ignore:invalid value")


def both(boxes, scores, max_out, score_threshold, sigma, center=False):
    corners = detection._corners(boxes, center)
    scale = F32(-0.5) / F32(sigma)
    expected = reference_soft_nms(corners, scores, max_out, F32(score_threshold), scale)
    got = soft_nms.soft_nms(scores, functools.partial(detection._iou, corners), max_out, F32(score_threshold), scale)
    return expected, got


def assert_identical(expected, got, context):
    np.testing.assert_array_equal(got[0], expected[0], err_msg=context)
    assert got[1].dtype == np.float32
    np.testing.assert_array_equal(got[1].view(np.int32), expected[1].view(np.int32), err_msg=context)


@pytest.mark.parametrize("kind", KINDS)
def test_soft_nms_matches_the_heap_loop(kind):
    for seed in range(3):
        rng, boxes, scores = case(kind, seed)
        for sigma in (0.5, 0.05, 5.0):
            for score_threshold in (0.0, 0.3, -1.0):
                max_out = int(rng.choice([1, 5, len(boxes), len(boxes) + 3]))
                center = bool(rng.integers(0, 2))
                context = f"{kind} seed={seed} sigma={sigma} threshold={score_threshold} max_out={max_out}"
                assert_identical(*both(boxes, scores, max_out, score_threshold, sigma, center), context)


def test_many_overlapping_candidates_and_small_steps(monkeypatch):
    """Many candidates popped again and again (what the heap loop is slow at), with the first decay step and the
    pair chunks at their smallest."""
    rng = np.random.default_rng(5)
    corner = (rng.random((400, 2)) * 8).astype(F32)
    boxes = np.concatenate([corner, corner + F32(3)], axis=1)
    scores = rng.random(400).astype(F32)
    assert_identical(*both(boxes, scores, 400, 0.05, 0.5), "default widths")
    monkeypatch.setattr(soft_nms, "FIRST", 1)
    monkeypatch.setattr(soft_nms, "PAIRS", 3)
    assert_identical(*both(boxes[:120], scores[:120], 120, 0.05, 0.5), "FIRST=1, PAIRS=3")


def test_nan_scores_are_dropped_not_pushed_back_forever():
    boxes = np.array([[0, 0, 1, 1], [0, 0, np.nan, 1], [2, 2, 3, 3]], dtype=F32)
    scores = np.array([0.9, 0.8, 0.7], dtype=F32)
    expected, got = both(boxes, scores, 10, 0.0, 0.5)
    assert_identical(expected, got, "nan")
    np.testing.assert_array_equal(got[0], [0, 2])


def test_signed_zero_scores_tie():
    boxes = np.array([[0, 0, 1, 1], [5, 5, 6, 6], [9, 9, 10, 10]], dtype=F32)
    scores = np.array([-0.0, 0.0, -0.0], dtype=F32)
    expected, got = both(boxes, scores, 3, -1.0, 0.5)
    assert_identical(expected, got, "signed zeros")
    np.testing.assert_array_equal(got[0], [0, 1, 2])
