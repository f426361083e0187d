"""NonMaxSuppression's windowed hard selection (irrun/ops/nms_windowed.py) against the box-by-box kernel it
stands in for (tests/nms_reference.py): identical positions and scores on SSD-like anchors with tied scores
(the zoo SSDlite's case: classes moved apart as torchvision's batched NMS does), chains longer than its rounds,
windows computed in several row chunks, and the fall back to greedy_nms when the windows would be too wide.
tests/test_greedy_nms.py's adversarial cases reach it too (max_out = every box)."""
import numpy as np
import pytest
from nms_reference import hard_nms

from irrun.ops import detection, nms_windowed

F32 = np.float32


def anchors(classes, seed):
    """[classes * 300, 4] (y1, x1, y2, x2) SSD-style anchors: 6 shapes on a 10x5 grid, moved apart per class."""
    rng = np.random.default_rng(seed)
    cy, cx = np.meshgrid((np.arange(10) + 0.5) / 10, (np.arange(5) + 0.5) / 5, indexing="ij")
    shapes = np.array([[0.1, 0.1], [0.2, 0.2], [0.14, 0.28], [0.28, 0.14], [0.12, 0.36], [0.36, 0.12]])
    centres = np.stack([cy.ravel(), cx.ravel()], axis=1)[:, None, :].repeat(6, axis=1).reshape(-1, 2)
    sizes = np.tile(shapes, (50, 1)) * (1 + 0.05 * rng.random((300, 1)))
    one = np.concatenate([centres - sizes / 2, centres + sizes / 2], axis=1) * 320
    offsets = np.arange(classes)[:, None, None] * 321.0
    return (one[None] + offsets).reshape(-1, 4).astype(F32)


def compare(boxes, scores, iou, expect_windowed=True):
    corners = detection._corners(boxes, False)
    args = (corners, scores, len(boxes), F32(iou), F32(0.0))
    calls = []
    original = nms_windowed.windowed_selection

    def spy(*a):
        calls.append(original(*a))
        return calls[-1]
    detection.windowed_selection = spy
    try:
        got = detection._hard_nms(*args)
    finally:
        detection.windowed_selection = original
    expected = hard_nms(*args)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    assert calls and (calls[0] is not None) == expect_windowed
    return got


@pytest.mark.parametrize("ties", [True, False])
def test_tied_anchors_of_a_batched_nms(ties):
    boxes = anchors(4, seed=1)
    rng = np.random.default_rng(2)
    scores = np.full(len(boxes), 1 / 91, F32) if ties else rng.random(len(boxes)).astype(F32)
    for iou in (0.55, 0.3, 0.9):
        compare(boxes, scores, iou)


def test_rows_in_chunks_and_chains_past_the_rounds(monkeypatch):
    monkeypatch.setattr(nms_windowed, "ROWS_ELEMENTS", 7)
    monkeypatch.setattr(nms_windowed, "ROUNDS", 2)
    count = 150  # each box overlaps the next: a chain of 150 needs 75 rounds
    boxes = np.stack([np.zeros(count), np.arange(count) * 0.4, np.ones(count), np.arange(count) * 0.4 + 1], axis=1)
    scores = np.linspace(1, 0.5, count).astype(F32)
    compare(boxes.astype(F32), scores, 0.2)
    boxes = anchors(2, seed=3)
    scores = np.full(len(boxes), 0.5, F32)
    scores[::7] = 0.75
    compare(boxes, scores, 0.5)


def test_wide_windows_fall_back_to_greedy_nms(monkeypatch):
    boxes = anchors(2, seed=4)
    boxes[:, 2:] += 400  # every box covers every other's centre
    scores = np.full(len(boxes), 0.5, F32)
    compare(boxes, scores, 0.5, expect_windowed=True)
    monkeypatch.setattr(nms_windowed, "WINDOW_LIMIT", 1000)
    compare(boxes, scores, 0.5, expect_windowed=False)
