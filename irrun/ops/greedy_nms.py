"""Greedy non-maximum suppression without a Python step per selected box.

Every greedy NMS in the ops (NonMaxSuppression, MulticlassNms, the Detectron and GenerateProposals ones) is the
same selection: candidates are visited best first and one is selected unless an already selected candidate
suppresses it. Only the pairwise test differs, so the ops hand it in as `suppresses(a, b)`: for arrays of
candidate positions, whether selected a suppresses later candidate b, computed with the op's own f32 formula
(so selections are bit for bit those of a box-by-box loop).

Candidates are taken in blocks of the ranking. A block's candidates are first tested against everything
selected before it; the survivors are then resolved among themselves from their pairwise suppressions, in
rounds: a candidate that no undecided one suppresses is kept and drops those it suppresses (a few rounds in
practice; a step per candidate if they do not settle). At most PAIRS pairs are tested at once.

With `bounds` (x_lo, x_hi, y_lo, y_hi per candidate, f64, finite) a pair is tested only when its closed
boxes intersect: the ops pass bounds only when a pair of disjoint boxes can never suppress. Pairs are found by
sorting on x_lo (within a block on x_lo or y_lo, whichever keeps the windows shorter), so the work follows the
number of overlapping pairs rather than its square."""
from __future__ import annotations

import numpy as np

BLOCK = 1024
PAIRS = 1 << 20  # pairs tested in one call of `suppresses`, at most (bounds its temporaries)
ROUNDS = 12  # fixed-point rounds before resolving a block candidate by candidate

_EMPTY = np.zeros(0, dtype=np.int64)


def greedy_nms(count, suppresses, limit, bounds=None, dead=None):
    """Positions (0..count-1, best first) selected greedily, at most `limit` of them."""
    block = BLOCK
    alive = np.ones(count, dtype=bool) if dead is None else ~dead
    if bounds is not None and not all(np.isfinite(b).all() for b in bounds):
        bounds = None
    earlier = _Selected(bounds)
    for start in range(0, count, block):
        if earlier.count >= limit:
            break
        candidates = start + np.nonzero(alive[start:start + block])[0]
        if earlier.count and len(candidates):
            candidates = candidates[~earlier.suppress(candidates, suppresses)]
        if not len(candidates):
            continue
        kept = _resolve(candidates, _pairs_within(candidates, bounds), suppresses)
        earlier.add(candidates[kept][:limit - earlier.count])
    return earlier.in_order()


class _Selected:
    """The candidates selected so far, in selection order and (with bounds) sorted by x_lo."""

    def __init__(self, bounds):
        self.bounds = bounds
        self.parts = []
        self.count = 0
        self.by_x = _EMPTY
        self.sorted_bounds = tuple(np.zeros(0) for _ in range(4))
        self.widest = 0.0

    def add(self, positions):
        self.parts.append(positions)
        self.count += len(positions)
        if self.bounds is None or not len(positions):
            return
        x_lo, x_hi = self.bounds[0][positions], self.bounds[1][positions]
        self.widest = max(self.widest, float((x_hi - x_lo).max()))
        positions = positions[np.argsort(x_lo, kind="stable")]
        at = np.searchsorted(self.sorted_bounds[0], self.bounds[0][positions], side="right")
        self.sorted_bounds = tuple(np.insert(s, at, b[positions]) for s, b in zip(self.sorted_bounds, self.bounds))
        self.by_x = np.insert(self.by_x, at, positions)

    def in_order(self):
        return np.concatenate(self.parts) if self.parts else _EMPTY

    def suppress(self, candidates, suppresses):
        """Which candidates a selected one suppresses."""
        hit = np.zeros(len(candidates), dtype=bool)
        if self.bounds is None:
            selected = self.in_order()
            step = max(1, PAIRS // len(candidates))
            for first in range(0, len(selected), step):
                part = selected[first:first + step]
                pairs = suppresses(np.repeat(part, len(candidates)), np.tile(candidates, len(part)))
                hit |= pairs.reshape(len(part), len(candidates)).any(axis=0)
            return hit
        rows = tuple(b[candidates] for b in self.bounds)
        reach = self.widest + 1e-12 * (np.abs(rows[0]) + self.widest)  # f64 rounding margin: a superset
        first = np.searchsorted(self.sorted_bounds[0], rows[0] - reach, side="left")
        stop = np.searchsorted(self.sorted_bounds[0], rows[1], side="right")
        step = max(1, PAIRS // max(1, int((stop - first).max())))
        for low in range(0, len(candidates), step):
            part = slice(low, low + step)
            b, slot = _touching(tuple(r[part] for r in rows), self.sorted_bounds, first[part], stop[part])
            found = suppresses(self.by_x[slot], candidates[part][b])
            hit[low + b[found]] = True
        return hit


def _touching(rows, table, first, stop):
    """(row, slot) for every slot in [first[row], stop[row]) of the table whose closed box intersects the row's.
    Boxes are (x_lo, x_hi, y_lo, y_hi) arrays."""
    lengths = np.maximum(stop - first, 0)
    width = int(lengths.max(initial=0))
    total = int(lengths.sum())
    if not total:
        return _EMPTY, _EMPTY
    if len(first) * width <= 2 * total:  # ranges of similar lengths: a window per row, as wide as the widest
        slots = first[:, None] + np.arange(width)
        inside = slots < stop[:, None]
        slots = np.minimum(slots, len(table[0]) - 1)
        row_bounds = tuple(r[:, None] for r in rows)
    else:
        row = np.repeat(np.arange(len(first)), lengths)
        slots = first[row] + np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        inside = True
        row_bounds = tuple(r[row] for r in rows)
    x_lo, x_hi, y_lo, y_hi = (t[slots] for t in table)
    r_x_lo, r_x_hi, r_y_lo, r_y_hi = row_bounds
    touch = np.nonzero(inside & (x_lo <= r_x_hi) & (r_x_lo <= x_hi) & (y_lo <= r_y_hi) & (r_y_lo <= y_hi))
    if slots.ndim == 2:
        return touch[0], slots[touch]
    return row[touch], slots[touch]


def _pairs_within(candidates, bounds):
    """(i, j) indices into candidates, i < j (i ranked first), for every pair to test."""
    n = len(candidates)
    if bounds is None:
        return np.triu_indices(n, 1)
    # sorted on x_lo, box p can only touch the boxes after it up to the first whose x_lo is past its x_hi; the same
    # holds in y: the sorted axis is the one where that reach is shorter (lo, hi below), the other is checked
    width, order, table = min((_reach(candidates, bounds, axis) for axis in (0, 2)), key=lambda found: found[0])
    if width <= 0:
        return _EMPTY, _EMPTY
    proper = bool((table[0] <= table[1]).all())  # then lo[p] <= lo[q] <= hi[q] for every q after p
    table = _widened_f32(table)  # a superset of the touching pairs, compared at half the width
    lo, hi, other_lo, other_hi = (np.lib.stride_tricks.sliding_window_view(  # [p, k]: box p + 1 + k
        np.concatenate([t[1:], np.full(width, fill, dtype=t.dtype)]), width)
        for t, fill in zip(table, _NEVER_TOUCHING))
    touch = np.less_equal(lo, table[1][:, None])
    touch &= np.less_equal(other_lo, table[3][:, None])
    touch &= np.less_equal(table[2][:, None], other_hi)
    if not proper:
        touch &= np.less_equal(table[0][:, None], hi)
    p, k = np.divmod(np.flatnonzero(touch), width)
    i, j = order[p], order[p + 1 + k]
    return np.minimum(i, j), np.maximum(i, j)


def _reach(candidates, bounds, axis):
    """(window width, order, bounds in that order with `axis`'s first) for candidates sorted on the low end of
    `axis` (0: x, 2: y)."""
    order = np.argsort(bounds[axis][candidates], kind="stable")
    table = tuple(b[candidates[order]] for b in bounds)
    if axis:
        table = table[2:] + table[:2]
    width = int((np.searchsorted(table[0], table[1], side="right") - np.arange(1, len(order) + 1)).max(initial=0))
    return width, order, table


def _widened_f32(table):
    """(x_lo, x_hi, y_lo, y_hi) f64 bounds as f32 rounded outwards (low ends down, high ends up)."""
    with np.errstate(over="ignore"):
        rounded = [t.astype(np.float32) for t in table]
    for at, (exact, near) in enumerate(zip(table, rounded)):
        outward = near < exact if at % 2 else near > exact
        rounded[at] = np.where(outward, np.nextafter(near, np.float32(np.inf if at % 2 else -np.inf)), near)
    return rounded


_NEVER_TOUCHING = (np.inf, -np.inf, np.inf, -np.inf)  # (x_lo, x_hi, y_lo, y_hi) of a box that touches none


def _resolve(candidates, pairs, suppresses):
    """Which candidates (best first, none suppressed by earlier blocks) the greedy selection keeps.

    Decided in rounds: a candidate that no undecided candidate can suppress is kept, and whatever it
    suppresses is dropped; the decided ones leave the graph. Each round decides at least the best undecided
    candidate; past ROUNDS the rest is decided candidate by candidate."""
    i, j = pairs
    hit = suppresses(candidates[i], candidates[j])
    return resolve_hits(len(candidates), i[hit], j[hit])


def resolve_hits(n, i, j, rounds=ROUNDS):
    """_resolve's rounds on n candidates (best first) given every suppression among them: i[k] < j[k] and the
    k-th pair suppresses (i[k] suppresses j[k] when i[k] is kept). Which candidates are kept."""
    decided = np.zeros(n, dtype=bool)
    kept = np.zeros(n, dtype=bool)
    for _ in range(rounds):
        threatened = np.zeros(n, dtype=bool)
        threatened[j] = True
        new = ~(decided | threatened)
        kept |= new
        decided |= new
        if decided.all():
            return kept
        decided[j[new[i]]] = True  # dropped: a new one suppresses them (none of them is new: they are threatened)
        live = ~(decided[i] | decided[j])
        i, j = i[live], j[live]
    order = np.argsort(i, kind="stable")
    i, j = i[order], j[order]
    starts = np.searchsorted(i, np.arange(n + 1))
    for k in np.nonzero(~decided)[0]:
        if not decided[k]:
            kept[k] = decided[k] = True
            decided[j[starts[k]:starts[k + 1]]] = True
    return kept


def box_bounds(x1, y1, x2, y2, pad=0.0, iou_at_least=0.0):
    """Bounds for greedy_nms: the closed boxes [x1, x2 + pad] x [y1, y2 + pad] in f64, widened by a relative
    margin so that f32 rounding in an op's overlap test never reaches outside them.

    With iou_at_least = t > 0 (pairs below IoU t never suppress), each box shrinks by t/2 of its size on every
    side: IoU >= t needs an overlap of at least t times the larger width (and height), so the shrunk boxes of
    such a pair still intersect (t is taken 1e-5 smaller to cover the ops' f32 rounding)."""
    shrink = min(float(iou_at_least), 1.0) / 2 * (1 - 1e-5) if iou_at_least > 0 else 0.0

    def span(low, high):
        low, high = low.astype(np.float64), high.astype(np.float64) + pad
        inset = shrink * np.maximum(high - low, 0.0)
        margin = 1e-9 * (np.abs(low) + np.abs(high) + 1.0)
        return low + inset - margin, high - inset + margin
    x_lo, x_hi = span(x1, x2)
    y_lo, y_hi = span(y1, y2)
    return x_lo, x_hi, y_lo, y_hi
