"""Soft-NMS (NonMaxSuppression with soft_nms_sigma > 0) in one vectorised step per selected box.

OpenVINO's CPU plugin re-scores lazily: candidates wait in a heap ordered by (score desc, box index); a popped
candidate is decayed by the boxes selected since it was last scored (newest first, one f32 product per box,
dropped once its score is no longer above the threshold); it is selected when that leaves its score unchanged,
else pushed back with the decayed score (tests/nms_reference.py keeps that loop, one Python step per pop).

Decay only lowers scores, so the box that loop selects next is the candidate whose decayed score ranks first, and
the candidates it pops on the way are exactly those whose stored score ranks ahead of that box's decayed score:
they keep their decayed score and remember how many boxes were selected then (the products, and so the bits,
depend on where each candidate's decay was cut). A step decays the top of the ranking in growing chunks until
the next stored score ranks behind the best decayed one, and applies that to all candidates ranked ahead of it.

A score that decays to NaN (from NaN or infinite coordinates) is not above the threshold, so its candidate is
dropped (the heap loop would push it back forever)."""
from __future__ import annotations

import numpy as np

F32 = np.float32
PAIRS = 1 << 20  # candidate/selected pairs decayed at once, at most (bounds the temporaries)
FIRST = 1  # candidates decayed first in a step; the chunks double from there


def soft_nms(scores, iou, max_out, score_threshold, scale):
    """(selected box indices in selection order, their f32 scores) for one batch and class.

    scores: f32 [boxes]; iou(boxes, others): f32 IoU of two equally long arrays of box indices;
    scale: -0.5 / sigma (f32), the Gaussian decay exp(scale * iou^2)."""
    threshold = F32(score_threshold)
    stored = scores.astype(F32)  # each candidate's score as last decayed, by box index
    since = np.zeros(len(scores), dtype=np.int64)  # the selection count when it was last decayed
    ranked = np.nonzero(stored > threshold)[0]
    keys = _rank_keys(stored[ranked], ranked)
    order = np.argsort(keys, kind="stable")
    ranked, keys = ranked[order], keys[order]
    chosen = np.zeros(max(0, min(max_out, len(ranked))), dtype=np.int64)
    chosen_scores = np.zeros(len(chosen), dtype=F32)
    count = 0
    while count < len(chosen) and len(ranked):
        step = _next_selection(ranked, keys, stored, since, chosen[:count], iou, scale, threshold)
        if step is None:  # the heap would pop and drop every candidate
            break
        winner, score, ahead, decayed, alive = step
        chosen[count], chosen_scores[count] = winner, score
        if not ahead and winner == ranked[0]:  # the top candidate kept its score: nothing else was popped
            ranked, keys = ranked[1:], keys[1:]
            count += 1
            continue
        popped = ranked[:ahead]
        kept = alive[:ahead] & (popped != winner)
        stored[popped[kept]] = decayed[:ahead][kept]
        since[popped[kept]] = count
        count += 1
        rest = np.ones(len(ranked), dtype=bool)
        rest[:ahead] = False
        rest[np.searchsorted(keys, _rank_keys(stored[[winner]], np.array([winner])))] = False
        ranked, keys = _merge(ranked[rest], keys[rest], popped[kept], stored)
    return chosen[:count], chosen_scores[:count]


def _next_selection(ranked, keys, stored, since, chosen, iou, scale, threshold):
    """(winner, its score, how many ranked candidates the heap pops before it, decayed scores and aliveness of
    the ranked candidates decayed so far), or None when every candidate drops.

    Candidates are decayed in ranking order, in chunks growing from FIRST, until the next one's stored score
    ranks behind the best decayed score found: so at most about as many beyond the popped ones as were popped."""
    parts, alives = [], []
    done, chunk, best_key = 0, FIRST, None
    while done < len(ranked):
        top = ranked[done:done + chunk]
        decayed, alive = _decay(top, stored, since, chosen, iou, scale, threshold)
        parts.append(decayed)
        alives.append(alive)
        done += len(top)
        if alive.any():
            candidate_keys = _rank_keys(decayed[alive], top[alive])
            best = int(np.argmin(candidate_keys))
            if best_key is None or candidate_keys[best] < best_key:
                best_key, winner, score = candidate_keys[best], top[alive][best], decayed[alive][best]
        if best_key is not None and (done == len(ranked) or keys[done] > best_key):
            ahead = int(np.searchsorted(keys, best_key, side="left"))
            return winner, score, ahead, np.concatenate(parts), np.concatenate(alives)
        chunk *= 2
    return None


def _decay(top, stored, since, chosen, iou, scale, threshold):
    """Each candidate's stored score times the decays of the boxes selected since (newest first, f32 products in
    that order), and whether every partial product stayed above the threshold."""
    lengths = len(chosen) - since[top]
    width = int(lengths.max(initial=0))
    if not width:
        return stored[top], np.ones(len(top), dtype=bool)
    rows = max(1, PAIRS // width)
    if len(top) > rows:
        parts = [_decay(top[low:low + rows], stored, since, chosen, iou, scale, threshold)
                 for low in range(0, len(top), rows)]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    row, column = np.nonzero(np.arange(width) < lengths[:, None])
    ious = iou(top[row], chosen[len(chosen) - 1 - column])
    factors = np.ones((len(top), width + 1), dtype=F32)
    factors[:, 0] = stored[top]
    factors[row, column + 1] = np.exp(F32(scale) * ious * ious).astype(F32)
    partial = np.multiply.accumulate(factors, axis=1)
    return partial[:, -1], (partial > threshold).all(axis=1)


def _rank_keys(scores, boxes):
    """int64 keys sorting (score desc, box index asc) as the heap pops them; -0.0 ranks with 0.0."""
    bits = (scores.astype(F32) + F32(0)).view(np.int32).astype(np.int64)
    ascending = np.where(bits < 0, bits ^ 0x7FFFFFFF, bits)  # order-preserving for non-NaN floats
    return (-ascending << 32) | boxes.astype(np.int64)


def _merge(ranked, keys, boxes, stored):
    """The ranking with `boxes` (at their stored scores) inserted in place."""
    if not len(boxes):
        return ranked, keys
    new_keys = _rank_keys(stored[boxes], boxes)
    order = np.argsort(new_keys, kind="stable")
    boxes, new_keys = boxes[order], new_keys[order]
    at = np.searchsorted(keys, new_keys)
    return np.insert(ranked, at, boxes), np.insert(keys, at, new_keys)
