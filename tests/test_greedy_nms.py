"""The vectorised greedy NMS selections against the box-by-box kernels they replaced (tests/nms_reference.py):
identical positions and scores on random and adversarial inputs (tied scores, zero-area and inverted boxes,
all boxes overlapping, chains of overlaps, thresholds at 0, 1 and NaN, NaN and huge coordinates, more
candidates than one block)."""
import numpy as np
import pytest
from nms_reference import detectron_nms, hard_nms, multiclass_select, proposal_nms

from irrun.ops import detection, experimental_detectron, greedy_nms, nms_family

F32 = np.float32
pytestmark = pytest.mark.filterwarnings("ignore:overflow")


def random_boxes(rng, count, kind):
    """[count, 4] f32 (x1, y1, x2, y2)-style boxes of one adversarial kind."""
    corner = rng.random((count, 2)).astype(F32) * 10
    size = rng.random((count, 2)).astype(F32) * 3
    if kind == "overlapping":  # every box covers the centre
        corner, size = (5 - size).astype(F32), (2 * size + 0.5).astype(F32)
    elif kind == "grid":  # integer coordinates: touching edges, equal boxes
        corner, size = np.floor(corner).astype(F32), np.ceil(size).astype(F32)
    elif kind == "degenerate":  # zero-area, inverted and duplicated boxes
        size[rng.random(count) < 0.3] = 0
        size[rng.random(count) < 0.2] *= -1
        corner[count // 2:] = corner[:count - count // 2]
    elif kind == "chain":  # each box overlaps the next: long suppression chains
        corner = np.stack([np.arange(count) * 0.4, np.zeros(count)], axis=1).astype(F32)
        size = np.ones((count, 2), F32)
    elif kind == "wide":  # a few boxes spanning everything beside small ones
        size[rng.random(count) < 0.05] = 1e4
    elif kind == "nan":
        corner[rng.random(count) < 0.1, 0] = np.nan
    elif kind == "huge":
        corner = (corner * 1e30).astype(F32)
        size = (size * 1e30).astype(F32)
    return np.concatenate([corner, corner + size], axis=1).astype(F32)


def random_scores(rng, count, ties):
    scores = rng.random(count).astype(F32)
    return (np.round(scores * 5) / 5).astype(F32) if ties else scores


KINDS = ["random", "overlapping", "grid", "degenerate", "chain", "wide", "nan", "huge"]
CASES = [(kind, seed) for kind in KINDS for seed in range(2)]


def case(kind, seed, count=None):
    rng = np.random.default_rng(seed + 17 * KINDS.index(kind))
    count = count or int(rng.choice([1, 7, 60, 200]))
    return rng, random_boxes(rng, count, kind), random_scores(rng, count, seed % 2 == 0)


@pytest.mark.parametrize("kind,seed", CASES)
def test_hard_nms(kind, seed):
    rng, boxes, scores = case(kind, seed)
    for center in (False, True):
        corners = detection._corners(boxes, center)
        for iou in (0.5, 0.0, 1.0, 0.2, np.nan):
            score = F32(rng.choice([0.0, 0.4]))
            max_out = int(rng.choice([1, 5, len(boxes)]))
            args = (corners, scores, max_out, F32(iou), score)
            expected, got = hard_nms(*args), detection._hard_nms(*args)
            np.testing.assert_array_equal(got[0], expected[0], err_msg=f"{kind} {iou} {score} {max_out}")
            np.testing.assert_array_equal(got[1], expected[1])


@pytest.mark.parametrize("kind,seed", CASES)
def test_multiclass_select(kind, seed):
    rng, boxes, scores = case(kind, seed)
    for normalized in (True, False):
        for eta in (1.0, 0.7):
            for iou in (0.5, 0.0, 0.3):
                top_k = int(rng.choice([-1, 9]))
                op = nms_family.MulticlassNms8.__new__(nms_family.MulticlassNms8)
                op.nms_top_k, op.score_threshold, op.iou_threshold = top_k, 0.4, iou
                op.nms_eta, op.normalized = eta, normalized
                expected = multiclass_select(boxes, scores, top_k, 0.4, iou, eta, normalized)
                got = op._select(boxes, scores)
                np.testing.assert_array_equal(got[0], expected[0], err_msg=f"{kind} {iou} {eta} {normalized}")
                np.testing.assert_array_equal(got[1], expected[1])


@pytest.mark.parametrize("kind,seed", CASES)
def test_proposal_nms(kind, seed):
    rng, boxes, scores = case(kind, seed)
    ranked = boxes[np.argsort(-scores, kind="stable")]
    dead = rng.random(len(boxes)) < 0.2
    for threshold in (0.7, 0.0, -0.5):
        for offset in (F32(0), F32(1)):
            for limit in (0, len(boxes)):
                expected = proposal_nms(ranked, F32(threshold), limit, offset, dead)
                got = experimental_detectron.proposal_nms(ranked, F32(threshold), limit, offset, dead)
                np.testing.assert_array_equal(got, expected, err_msg=f"{kind} {threshold} {offset} {limit}")


@pytest.mark.parametrize("kind,seed", CASES)
def test_detectron_nms(kind, seed):
    _, boxes, scores = case(kind, seed)
    ranked = boxes[np.argsort(-scores, kind="stable")]
    areas = ((ranked[:, 2] - ranked[:, 0] + 1) * (ranked[:, 3] - ranked[:, 1] + 1)).astype(F32)
    for threshold in (0.5, 0.0, -0.1, 1.0):
        np.testing.assert_array_equal(experimental_detectron._detectron_nms(ranked, areas, F32(threshold)),
                                      detectron_nms(ranked, areas, F32(threshold)), err_msg=f"{kind} {threshold}")


def test_blocks_and_rounds(monkeypatch):
    """More candidates than a block, and a block that does not settle in the rounds."""
    monkeypatch.setattr(greedy_nms, "BLOCK", 64)
    rng, boxes, scores = case("chain", 0, count=3 * 64 + 5)
    corners = detection._corners(boxes, False)
    args = (corners, scores, len(boxes), F32(0.3), F32(0))
    expected, got = hard_nms(*args), detection._hard_nms(*args)
    np.testing.assert_array_equal(got[0], expected[0])
    ordered = np.arange(len(boxes), 0, -1).astype(F32)  # the chain in score order: one long dependency
    args = (corners, ordered, len(boxes), F32(0.3), F32(0))
    np.testing.assert_array_equal(detection._hard_nms(*args)[0], hard_nms(*args)[0])
    for kind in KINDS:  # every kind across blocks
        rng, boxes, scores = case(kind, 1, count=150)
        args = (detection._corners(boxes, False), scores, len(boxes), F32(0.5), F32(0))
        np.testing.assert_array_equal(detection._hard_nms(*args)[0], hard_nms(*args)[0], err_msg=kind)


@pytest.mark.parametrize("iou", [0.5, np.nan])  # bounds, and every pair tested
def test_pairs_tested_in_chunks(monkeypatch, iou):
    monkeypatch.setattr(greedy_nms, "PAIRS", 7)
    rng, boxes, scores = case("random", 1, count=200)
    corners = detection._corners(boxes, False)
    args = (corners, scores, len(boxes), F32(iou), F32(0))
    np.testing.assert_array_equal(detection._hard_nms(*args)[0], hard_nms(*args)[0])


def test_f32_window_bounds_round_outwards():
    """_pairs_within compares f32 copies of the f64 bounds: low ends never rise, high ends never fall, past the
    f32 range too; near f32's largest boxes the selection is still the box-by-box one."""
    rng = np.random.default_rng(4)
    values = np.concatenate([rng.standard_normal(500) * 10.0 ** rng.integers(-40, 40, 500), [3.5e38, -3.5e38, 1e39]])
    x_lo, x_hi, y_lo, y_hi = greedy_nms._widened_f32((values, values, -values, -values))
    assert (x_lo <= values).all() and (x_hi >= values).all() and (y_lo <= -values).all() and (y_hi >= -values).all()
    corner = (rng.random((80, 2)) * 2 - 1) * 3.4e38
    boxes = np.concatenate([corner, corner + rng.random((80, 2)) * 1e37], axis=1).astype(F32)
    boxes[:40] = np.clip(boxes[:40], -3.4e38, 3.4e38)
    corners = detection._corners(boxes, False)
    scores = random_scores(rng, 80, True)
    for iou in (0.5, 0.05):
        args = (corners, scores, 80, F32(iou), F32(0))
        np.testing.assert_array_equal(detection._hard_nms(*args)[0], hard_nms(*args)[0])
