"""The tokenizer models: BPETokenizer, WordpieceTokenizer, UnigramTokenizer, TrieTokenizer (ragged strings -> ragged
ids), and the vocabulary look-ups VocabEncoder and EqualStr (SentencePiece's are in tokenizer_sentencepiece.py).

Each model is built once per layer from its constant vocabulary inputs and caches the ids of words it has seen.
"""
from __future__ import annotations

import heapq
import struct

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool, Float, Int, Str
from .registry import TensorInfo, extension_op
from .tokenizer_base import (
    I32,
    BoundedCache,
    TokenizerOp,
    expect_ragged_strings,
    expect_strings,
    expect_type,
    i32,
    ragged_out,
    unpack,
)


def _longest(vocab: dict, longest: int, data: bytes, start: int):
    """(id, end) of the longest vocabulary entry that `data` holds at `start`; (-1, start) when none does."""
    for end in range(min(len(data), start + longest), start, -1):
        token = vocab.get(data[start:end])
        if token is not None:
            return token, end
    return -1, start


def _map_words(arrays, tokenize_word):
    """Apply `tokenize_word(bytes) -> list of ids` to every string of a ragged string tensor."""
    ragged_begins, ragged_ends = (np.asarray(a).reshape(-1).tolist() for a in arrays[:2])
    words = unpack(*arrays[2:5])
    ids, row_begins, row_ends = [], [], []
    for row_begin, row_end in zip(ragged_begins, ragged_ends):
        row_begins.append(len(ids))
        for col in range(row_begin, row_end):
            ids += tokenize_word(words[col])
        row_ends.append(len(ids))
    shape = np.asarray(arrays[0]).shape
    return [i32(row_begins).reshape(shape), i32(row_ends).reshape(shape), i32(ids)]


class _ModelOp(TokenizerOp):
    def model(self, arrays):
        if "_model" not in self.__dict__:
            self._model = self.build(arrays)
            self._cache = BoundedCache(getattr(self, "cache_capacity", 20000))
        return self._model

    def tokenize(self, arrays, word_ids):
        self.model(arrays)
        cache = self._cache

        def cached(word):
            ids = cache.get(word)
            return ids if ids is not None else cache.put(word, word_ids(word))

        return _map_words(arrays, cached)


@extension_op("BPETokenizer")
class BPETokenizer(_ModelOp):
    """Byte-pair encoding: each word starts as the longest-matching vocabulary entries that no merge produces
    (byte_fallback <0xNN> tokens, else unk_token, else nothing for unmatched bytes), then the lowest-ranked
    known merge of adjacent symbols is applied until none applies (ties: the pair queued first)."""

    unk_token = Str(default="")
    fuse_unk = Bool(default=False)
    suffix_indicator = Str(default="")
    end_suffix = Str(default="")
    byte_fallback = Bool(default=False)
    cache_capacity = Int(default=20000)
    num_inputs = (11, 18)

    def output_infos(self, inputs):
        count = len(inputs)
        if count not in (11, 14, 15, 18):
            raise ShapeError(f"has {count} inputs, expects 11, 14, 15 or 18", rule="port.count")
        expect_ragged_strings(inputs)
        expect_strings(inputs, 5)
        expect_strings(inputs, 8)
        if count in (14, 18):
            expect_strings(inputs, 11)
        if count in (15, 18):
            expect_strings(inputs, count - 4)
            expect_type(inputs, count - 1, "i32")
        return ragged_out(inputs[0].shape, I32)

    def build(self, arrays):
        count = len(arrays)
        vocab = {token: index for index, token in enumerate(unpack(*arrays[5:8]))}
        if count in (15, 18):
            added = unpack(*arrays[count - 4:count - 1])
            for token, index in zip(added, np.asarray(arrays[count - 1]).reshape(-1).tolist()):
                vocab.setdefault(token, index)
        if count in (11, 15):
            pairs = [tuple(merge.split(b" ", 1)) if b" " in merge else (merge, b"")
                     for merge in unpack(*arrays[8:11])]
        else:
            pairs = list(zip(unpack(*arrays[8:11]), unpack(*arrays[11:14])))
        merges = {}
        for rank, (left, right) in enumerate(pairs):
            try:
                key = (vocab[left], vocab[right])
                merged = vocab[left + right]
            except KeyError:
                raise ExecutionError(f"merge {rank} ({left!r} {right!r}) names a token missing from the vocabulary",
                                     rule="input.value") from None
            merges.setdefault(key, (rank, merged))
        unk = vocab.get(self.unk_token.encode(), -1)
        for left, right in pairs:
            vocab.pop(left + right, None)
        longest = max(map(len, vocab), default=0)
        return vocab, longest, merges, unk

    def compute(self, arrays):
        return self.tokenize(arrays, self.word_ids)

    def word_ids(self, word: bytes) -> list[int]:
        vocab, longest, merges, unk = self._model
        data = word + self.end_suffix.encode()
        ids, start = [], 0
        while start < len(data):
            token, end = _longest(vocab, longest, data, start)
            if token != -1:
                ids.append(token)
                start = end
                continue
            fallback = vocab.get(b"<0x%02X>" % data[start], -1) if self.byte_fallback else -1
            if fallback != -1:
                ids.append(fallback)
            elif unk != -1:
                ids.append(unk)
            start += 1
        return _merge(ids, merges)


def _merge(ids: list[int], merges: dict) -> list[int]:
    if len(ids) < 2:
        return ids
    symbols = list(ids)
    prev = list(range(-1, len(ids) - 1))
    nxt = list(range(1, len(ids))) + [-1]
    alive = [True] * len(ids)
    queue, order = [], 0
    for a in range(len(ids) - 1):
        merge = merges.get((symbols[a], symbols[a + 1]))
        if merge is not None:
            queue.append((merge[0], order, a, a + 1, merge[1]))
        order += 1
    heapq.heapify(queue)
    head, live = 0, len(ids)
    while queue and live >= 2:
        _, _, first, second, merged_id = heapq.heappop(queue)
        if not (alive[first] and alive[second] and nxt[first] == second):
            continue
        before, after = prev[first], nxt[second]
        merged = len(symbols)
        symbols.append(merged_id)
        prev.append(before)
        nxt.append(after)
        alive.append(True)
        alive[first] = alive[second] = False
        if before != -1:
            nxt[before] = merged
        else:
            head = merged
        if after != -1:
            prev[after] = merged
        live -= 1
        order += 1
        for a, b in ((before, merged), (merged, after)):
            if a != -1 and b != -1:
                merge = merges.get((symbols[a], symbols[b]))
                if merge is not None:
                    heapq.heappush(queue, (merge[0], order, a, b, merge[1]))
    out, index = [], head
    while index != -1:
        out.append(symbols[index])
        index = nxt[index]
    return out


@extension_op("WordpieceTokenizer")
class WordpieceTokenizer(_ModelOp):
    """WordPiece: the longest word-initial vocabulary entry, then the longest continuations (entries that start
    with suffix_indicator, matched without it); a word with an unmatched rest, or longer than
    max_bytes_per_word bytes, is the unknown token (9th input)."""

    suffix_indicator = Str(default="##")
    max_bytes_per_word = Int(default=100)
    num_inputs = (9, 9)

    def output_infos(self, inputs):
        expect_ragged_strings(inputs)
        expect_strings(inputs, 5)
        expect_type(inputs, 8, "i32", "i64")
        return ragged_out(inputs[0].shape, I32)

    def build(self, arrays):
        suffix = self.suffix_indicator.encode()
        roots, subwords = {}, {}
        for index, word in enumerate(unpack(*arrays[5:8])):
            if word.startswith(suffix):
                subwords[word[len(suffix):]] = index
            else:
                roots[word] = index
        return roots, max(map(len, roots), default=0), subwords, max(map(len, subwords), default=0)

    def compute(self, arrays):
        unk = int(np.asarray(arrays[8]).reshape(-1)[0])
        return self.tokenize(arrays, lambda word: self.word_ids(word, unk))

    def word_ids(self, word: bytes, unk: int) -> list[int]:
        if len(word) > self.max_bytes_per_word or not word:
            return [unk]
        roots, roots_longest, subwords, subwords_longest = self._model
        token, start = _longest(roots, roots_longest, word, 0)
        if token == -1:
            return [unk]
        ids = [token]
        while start < len(word):
            token, start = _longest(subwords, subwords_longest, word, start)
            if token == -1:
                return [unk]
            ids.append(token)
        return ids


_UNK_PENALTY = 10.0


def _f32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


@extension_op("UnigramTokenizer")
class UnigramTokenizer(_ModelOp):
    """Unigram (Viterbi) segmentation in float32 scores; a character no entry starts with costs the lowest score
    minus 10 as the unknown token, and runs of unknown tokens are fused into one."""

    byte_fallback = Bool(default=False)
    unk_token_id = Int(default=0)
    fuse_unk = Bool(default=False)
    min_score = Float(default=float("inf"))
    num_inputs = (9, 9)

    def output_infos(self, inputs):
        expect_ragged_strings(inputs)
        expect_strings(inputs, 5)
        expect_type(inputs, 8, "f32")
        return ragged_out(inputs[0].shape, I32)

    def build(self, arrays):
        scores = [_f32(s) for s in np.asarray(arrays[8], dtype=np.float32).reshape(-1).tolist()]
        vocab = {}
        for index, token in enumerate(unpack(*arrays[5:8])):
            vocab.setdefault(token, index)
        return vocab, max(map(len, vocab), default=0), scores, _f32(min(scores, default=0.0) - _UNK_PENALTY)

    def compute(self, arrays):
        return self.tokenize(arrays, self.word_ids)

    def word_ids(self, text: bytes) -> list[int]:
        if not text:
            return []
        vocab, longest, scores, unk_score = self._model
        unk = self.unk_token_id
        size = len(text)
        best = [0.0] * (size + 1)
        starts = [-1] * (size + 1)
        tokens = [unk] * (size + 1)
        start = 0
        while start < size:
            base = best[start]
            char_length = min(_char_length(text[start]), size - start)
            found = False
            for end in range(start + 1, min(size, start + longest) + 1):
                token = vocab.get(text[start:end])
                if token is None:
                    continue
                score = _f32(scores[token] + base)
                if starts[end] == -1 or score > best[end]:
                    best[end], starts[end], tokens[end] = score, start, token
                if end - start == char_length:
                    found = True
            if not found:
                end = start + char_length
                score = _f32(unk_score + base)
                if starts[end] == -1 or score > best[end]:
                    best[end], starts[end], tokens[end] = score, start, unk
            start += char_length
        out, end, previous = [], size, -1
        while end > 0:
            token = tokens[end]
            end = starts[end]
            if token == unk and previous == unk:
                continue
            out.append(token)
            previous = token
        return out[::-1]


def _char_length(lead: int) -> int:
    return (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4)[lead >> 4]


@extension_op("VocabEncoder")
class VocabEncoder(TokenizerOp):
    """strings (begins, ends, chars) -> the id of each in a vocabulary (strings, ids), or the default id."""

    num_inputs = (8, 8)

    def output_infos(self, inputs):
        expect_strings(inputs, 0)
        expect_strings(inputs, 3)
        expect_type(inputs, 6, "i32", "i64")
        if inputs[7].type != inputs[6].type:
            raise ShapeError(f"the default id is {inputs[7].type}, the ids {inputs[6].type}", rule="port.type",
                             port=7)
        return [TensorInfo(inputs[0].shape, inputs[6].type)]

    def compute(self, arrays):
        if "_vocab" not in self.__dict__:
            self._vocab = {}
            for token, index in zip(unpack(*arrays[3:6]), np.asarray(arrays[6]).reshape(-1).tolist()):
                self._vocab.setdefault(token, index)
        default = np.asarray(arrays[7]).reshape(-1)[0].item()
        ids = [self._vocab.get(s, default) for s in unpack(*arrays[:3])]
        return [np.asarray(ids, dtype=np.asarray(arrays[6]).dtype).reshape(np.asarray(arrays[0]).shape)]


@extension_op("EqualStr")
class EqualStr(TokenizerOp):
    """Two string tensors compared element by element (a one-string side repeats): 1 where equal, else 0."""

    num_inputs = (6, 6)

    def output_infos(self, inputs):
        expect_strings(inputs, 0)
        expect_strings(inputs, 3)
        return [TensorInfo((None,), I32)]

    def compute(self, arrays):
        first, second = unpack(*arrays[:3]), unpack(*arrays[3:])
        count = 0 if not first or not second else max(len(first), len(second))
        equal = [(first[i] if i < len(first) else first[0]) == (second[i] if i < len(second) else second[0])
                 for i in range(count)]
        return [np.asarray(equal, dtype=np.int32)]


@extension_op("TrieTokenizer")
class TrieTokenizer(_ModelOp):
    """Greedy longest match of vocabulary entries (strings with their ids) along each string; a position no
    entry matches is an error (the extension loops there forever)."""

    num_inputs = (9, 9)

    def output_infos(self, inputs):
        expect_ragged_strings(inputs)
        expect_strings(inputs, 5)
        expect_type(inputs, 8, "i32")
        return ragged_out(inputs[0].shape, I32)

    def build(self, arrays):
        vocab = dict(zip(unpack(*arrays[5:8]), np.asarray(arrays[8]).reshape(-1).tolist()))
        return vocab, max(map(len, vocab), default=0)

    def compute(self, arrays):
        return self.tokenize(arrays, self.word_ids)

    def word_ids(self, word: bytes) -> list[int]:
        vocab, longest = self._model
        ids, start = [], 0
        while start < len(word):
            token, end = _longest(vocab, longest, word, start)
            if token == -1:
                raise ExecutionError(f"no vocabulary entry matches {word[start:start + 8]!r} (byte {start} of a "
                                     f"{len(word)}-byte string)", rule="input.value")
            ids.append(token)
            start = end
        return ids
