"""SpecialTokensSplit and RegexSplit: cut each string of a ragged string tensor into pieces by a PCRE2 pattern.

Both take (ragged begins, ragged ends, begins, ends, chars[, skips], pattern) and give the pieces as a ragged
string tensor over the same chars, plus `skips`: which pieces later ops pass through untouched (special tokens).
"""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .attrs import Bool, Int, Str
from .registry import TensorInfo, extension_op
from .tokenizer_base import (
    BOOL,
    BoundedCache,
    TokenizerOp,
    compile_pcre,
    const_string,
    expect_ragged_strings,
    expect_scalar_string,
    expect_strings,
    expect_type,
    i32,
    match_bounds,
    match_spans,
    ragged_strings_out,
    unpack,
)


def _skips_in(inputs: list[np.ndarray], has_skips: bool) -> np.ndarray:
    if has_skips:
        return np.asarray(inputs[5]).reshape(-1).astype(bool)
    return np.zeros(np.asarray(inputs[2]).size, dtype=bool)


def _ragged_pieces(inputs, has_skips: bool, split_one):
    """Apply `split_one(string bytes) -> int64 array [pieces, 3]` of (begin, end, skip) offsets within the string
    to every element not skipped; returns the new ragged string tensor and skips."""
    ragged_begins, ragged_ends, begins, ends, chars = (np.asarray(a) for a in inputs[:5])
    skips = _skips_in(inputs, has_skips)
    data = chars.tobytes()
    row_begins, row_ends = ragged_begins.reshape(-1).astype(np.int64), ragged_ends.reshape(-1).astype(np.int64)
    row_sizes = np.maximum(row_ends - row_begins, 0)
    columns = np.repeat(row_begins - (np.cumsum(row_sizes) - row_sizes), row_sizes) + np.arange(int(row_sizes.sum()))
    column_begins = begins.reshape(-1).astype(np.int64)[columns]
    column_ends = ends.reshape(-1).astype(np.int64)[columns]
    pieces = [np.array([[0, end - begin, 1]]) if skip else split_one(data[begin:end])
              for begin, end, skip in zip(column_begins.tolist(), column_ends.tolist(), skips[columns].tolist())]
    counts = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    table = np.concatenate(pieces) if pieces else np.zeros((0, 3), dtype=np.int64)
    shift = np.repeat(column_begins, counts)
    bounds = np.concatenate(([0], np.cumsum(counts)))
    first_column = np.cumsum(row_sizes) - row_sizes
    shape = ragged_begins.shape
    return [i32(bounds[first_column]).reshape(shape), i32(bounds[first_column + row_sizes]).reshape(shape),
            i32(table[:, 0] + shift), i32(table[:, 1] + shift), chars, table[:, 2].astype(bool)]


class _SplitOp(TokenizerOp):
    libraries = ("regex",)

    def _has_skips(self, count: int) -> bool:
        return count == 7

    def output_infos(self, inputs):
        expect_ragged_strings(inputs)
        has_skips = self._has_skips(len(inputs))
        if has_skips:
            expect_type(inputs, 5, "boolean")
        expect_scalar_string(inputs, 5 + has_skips)
        return [*ragged_strings_out(inputs[0].shape), TensorInfo((None,), BOOL)]

    def cached(self, split_one):
        """split_one with its results kept per string (the same words recur)."""
        cache = self.__dict__.setdefault("_pieces", BoundedCache())

        def split(data: bytes) -> np.ndarray:
            pieces = cache.get(data)
            if pieces is None:
                pieces = cache.put(data, np.asarray(split_one(data), dtype=np.int64).reshape(-1, 3))
            return pieces

        return split

    def pattern(self, array: np.ndarray):
        key = const_string(array)
        cache = self.__dict__.setdefault("_patterns", {})
        if key not in cache:
            cache[key] = compile_pcre(self.prepare(key))
        return cache[key]

    def prepare(self, pattern: bytes) -> bytes:
        return pattern


@extension_op("SpecialTokensSplit")
class SpecialTokensSplit(_SplitOp):
    """Pieces between matches, and each match's capture group (a special token) marked as a skip."""

    num_inputs = (6, 7)

    def compute(self, arrays):
        pattern = self.pattern(arrays[-1])

        def split_one(data: bytes):
            pieces, start = [], 0
            for match_start, match_end, group_start, group_end in match_spans(pattern, data):
                if start < match_start:
                    pieces.append((start, match_start, False))
                pieces.append((group_start, group_end, True))
                start = match_end
            if start < len(data):
                pieces.append((start, len(data), False))
            return pieces

        return _ragged_pieces(arrays, len(arrays) == 7, self.cached(split_one))


_MODES = ("remove", "isolate", "contiguous", "mergedwithprevious", "mergedwithnext")


@extension_op("RegexSplit")
class RegexSplit(_SplitOp):
    """Hugging Face's Split pre-tokenizer behaviours: matches removed, isolated, merged with the previous or the
    next piece; `invert` swaps the roles of matches and the text between them; after `max_splits` pieces the
    next piece runs to the end of the string (as the extension does, later pieces still follow it)."""

    behaviour = Str(*_MODES, default="remove")
    invert = Bool(default=False)
    max_splits = Int(default=-1)
    num_inputs = (6, 9)

    def _has_skips(self, count):
        if count == 8:
            raise ShapeError("has 8 inputs, expects 6, 7 or 9", rule="port.count")
        return count == 7

    def output_infos(self, inputs):
        if self.max_splits != -1 and self.max_splits <= 0:
            raise ShapeError(f"max_splits must be -1 or positive, got {self.max_splits}", rule="attr.range")
        if len(inputs) == 9:
            expect_strings(inputs, 6)
        infos = super().output_infos(inputs)
        return infos if len(inputs) == 7 else infos[:5]

    def prepare(self, pattern):
        if self.behaviour == "contiguous" and not pattern.endswith(b"+"):
            return b"(" + pattern + b")+"
        return pattern

    def compute(self, arrays):
        has_skips = len(arrays) == 7
        pattern = self.pattern(arrays[5 + has_skips])
        skip_tokens = set()
        if len(arrays) == 9 and np.asarray(arrays[6]).size:
            skip_tokens = set(unpack(arrays[6], arrays[7], arrays[8]))
        mode = "isolate" if self.behaviour == "contiguous" else self.behaviour

        def split_one(data: bytes):
            if skip_tokens and data in skip_tokens:
                return [(0, len(data), False)]
            return self._split(pattern, data, mode)

        if not np.asarray(arrays[4]).size:
            # The extension's shortcut for inputs without a single byte: one empty row, whatever the batch.
            empty_row = np.zeros(1, dtype=np.int32)
            return [empty_row, empty_row.copy(), *arrays[2:5], *arrays[5:6 if has_skips else 5]]
        outputs = _ragged_pieces(arrays, has_skips, self.cached(split_one))
        return outputs if has_skips else outputs[:5]

    def _split(self, pattern, data: bytes, mode: str):
        if mode in ("isolate", "remove") and self.max_splits == -1:
            return _isolate_or_remove(match_bounds(pattern, data), len(data),
                                      keep_gaps=mode == "isolate" or not self.invert,
                                      keep_matches=mode == "isolate" or self.invert)
        pieces = []
        length = len(data)
        state = {"splits": 0, "last_begin": -1}

        def add(begin, end, invert):
            if mode == "remove":
                if invert:
                    return
            elif mode == "mergedwithprevious":
                if not invert and end != length:
                    state["last_begin"] = begin
                    return
                if invert:
                    begin = state["last_begin"]
            elif mode == "mergedwithnext":
                if not invert:
                    if state["last_begin"] != -1:
                        begin = state["last_begin"]
                else:
                    state["last_begin"] = begin
                    return
            begin, end = max(0, begin), min(length, end)
            if state["splits"] == self.max_splits:
                end = length
            pieces.append((begin, end, False))
            state["splits"] += 1

        start = 0
        for match_start, match_end, _, _ in match_spans(pattern, data):
            if match_start != start:
                add(start, match_start, self.invert)
            add(match_start, match_end, not self.invert)
            start = match_end
        if start < length:
            add(start, length, self.invert)
        elif mode == "mergedwithnext" and state["last_begin"] != length:
            add(state["last_begin"], length, self.invert)
        return pieces



def _isolate_or_remove(bounds: np.ndarray, length: int, keep_gaps: bool, keep_matches: bool):
    """RegexSplit's isolate (matches and the text between them) and remove (the text between matches, or with
    invert the matches) without a split limit, from the matches' byte bounds, in string order."""
    starts, ends = bounds[:, 0], bounds[:, 1]
    gap_starts, gap_ends = np.concatenate(([0], ends)), np.concatenate((starts, [length]))
    pieces = []
    if keep_gaps:
        gaps = np.stack([gap_starts, gap_ends, np.arange(0, 2 * len(gap_starts), 2)], axis=1)
        pieces.append(gaps[gap_starts < gap_ends])
    if keep_matches:
        pieces.append(np.stack([starts, ends, np.arange(1, 2 * len(starts), 2)], axis=1))
    if not pieces:
        return []
    ordered = np.concatenate(pieces)
    ordered = ordered[np.argsort(ordered[:, 2], kind="stable")]
    return [(begin, end, False) for begin, end in ordered[:, :2].tolist()]
