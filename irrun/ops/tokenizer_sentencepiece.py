"""The SentencePiece ops, run by the `sentencepiece` package (the extension's own backend) on the serialized model
constant: SentencepieceTokenizer (strings -> sparse ids), SentencepieceDetokenizer and
SentencepieceStreamDetokenizer (ids -> strings)."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool, Float, Int
from .registry import TensorInfo, extension_op
from .strings import as_bytes_list
from .tokenizer_base import (
    I32,
    I64,
    TokenizerOp,
    compile_pcre,
    expect_strings,
    expect_type,
    i32,
    match_spans,
    pack,
    strings_out,
    text_library,
    unpack,
)
from .tokenizer_decode import byte_of_piece


def sentencepiece_processor(op, model: np.ndarray):
    """The layer's sentencepiece processor, loaded once from the serialized model constant."""
    if "_processor" not in op.__dict__:
        spm = text_library("sentencepiece")
        processor = spm.SentencePieceProcessor()
        try:
            processor.LoadFromSerializedProto(np.asarray(model).tobytes())
        except (RuntimeError, OSError) as exc:
            raise ExecutionError(f"the sentencepiece model does not load: {exc}", rule="input.value") from None
        op._processor = processor
    return op._processor


def _quote(token: bytes) -> bytes:
    return b"".join(b"\\" + bytes([c]) if c in b".^$*+?()[]{}|\\" else bytes([c]) for c in token)


@extension_op("SentencepieceTokenizer")
class SentencepieceTokenizer(TokenizerOp):
    """(serialized model, strings[, special tokens begins, ends, chars, ids]) -> sparse ids (indices [n, 2],
    values, dense shape), encoded by the sentencepiece library; with special tokens, the text between them is
    encoded piece by piece (each piece getting bos when add_bos) and eos is appended once."""

    libraries = ("sentencepiece", "regex")
    nbest_size = Int(default=0)
    alpha = Float(default=1.0)
    add_bos = Bool(default=False)
    add_eos = Bool(default=False)
    reverse = Bool(default=False)
    num_inputs = (2, 8)

    def output_infos(self, inputs):
        count = len(inputs)
        expect_type(inputs, 0, "u8")
        if count in (2, 6):
            expect_type(inputs, 1, "string")
        elif count in (4, 8):
            expect_strings(inputs, 1)
        else:
            raise ShapeError(f"has {count} inputs, expects 2, 4, 6 or 8", rule="port.count")
        if count in (6, 8):
            expect_strings(inputs, count - 4)
            expect_type(inputs, count - 1, "i32")
        return [TensorInfo((None, 2), I64), TensorInfo((None,), I32), TensorInfo((2,), I64)]

    def compute(self, arrays):
        count = len(arrays)
        processor = sentencepiece_processor(self, arrays[0])
        if self.nbest_size not in (0, 1):
            raise ExecutionError("sampling (nbest_size other than 0 or 1) is not reproducible; irrun encodes "
                                 "greedily only", rule="attr.value")
        options = {"add_bos": self.add_bos, "add_eos": self.add_eos and count < 5, "reverse": self.reverse and count < 5}
        if count in (2, 6):
            sentences = as_bytes_list(np.asarray(arrays[1]))
        else:
            sentences = unpack(*arrays[1:4])
        special = self._special(arrays) if count > 5 else None
        indices, values, longest = [], [], 0
        for row, sentence in enumerate(sentences):
            ids = self._encode(processor, sentence, special, options)
            indices += [(row, col) for col in range(len(ids))]
            values += ids
            longest = max(longest, len(ids))
        return [np.asarray(indices, dtype=np.int64).reshape(-1, 2), i32(values),
                np.asarray([len(sentences), longest], dtype=np.int64)]

    def _special(self, arrays):
        count = len(arrays)
        tokens = unpack(*arrays[count - 4:count - 1])
        ids = np.asarray(arrays[count - 1]).reshape(-1).tolist()
        parts = []
        for token in tokens:
            quoted = _quote(token)
            parts.append(b"\\b" + quoted + b"|" + quoted + b"\\b" if token.isalpha() else quoted)
        mapping = {}
        for token, index in zip(tokens, ids):
            mapping.setdefault(token, index)
        return compile_pcre(b"|".join(parts)), mapping

    def _encode(self, processor, sentence: bytes, special, options: dict) -> list[int]:
        def encode(text: bytes) -> list[int]:
            # sentencepiece's extra options in the order the extension gives them: bos, eos, then reverse
            ids = processor.Encode(text, out_type=int, add_bos=False, add_eos=False, reverse=False)
            ids = [processor.bos_id()] * options["add_bos"] + ids + [processor.eos_id()] * options["add_eos"]
            return ids[::-1] if options["reverse"] else ids

        if special is None:
            return encode(sentence)
        pattern, mapping = special
        ids, cursor = [], 0
        for match_start, match_end, _, _ in match_spans(pattern, sentence):
            if match_start < cursor:
                continue
            if cursor < match_start:
                ids += encode(sentence[cursor:match_start])
            token = sentence[match_start:match_end]
            ids += [mapping[token]] if token in mapping else encode(sentence[cursor:match_start])
            cursor = match_end
        if cursor < len(sentence):
            ids += encode(sentence[cursor:])
        if self.add_eos:
            ids.append(processor.eos_id())
        if self.reverse and len(ids) > 1:
            ids.reverse()
        return ids


@extension_op("SentencepieceDetokenizer")
class SentencepieceDetokenizer(TokenizerOp):
    """(serialized sentencepiece model u8, ids [batch, length] i32) -> strings: each row's ids below the
    model's piece count decoded by the sentencepiece library."""

    libraries = ("sentencepiece",)
    num_inputs = (2, 2)

    def output_infos(self, inputs):
        expect_type(inputs, 0, "u8")
        expect_type(inputs, 1, "i32")
        if inputs[1].rank not in (None, 2):
            raise ShapeError(f"input 1 (ids) must be 2-D, got rank {inputs[1].rank}", rule="port.rank", port=1)
        return strings_out(None if inputs[1].shape is None else (inputs[1].shape[0],))

    def compute(self, arrays):
        processor = sentencepiece_processor(self, arrays[0])
        size = processor.GetPieceSize()
        texts = []
        for row in np.asarray(arrays[1]).tolist():
            kept = [i for i in row if i < size]
            texts.append(processor.Decode(kept, out_type=bytes) if kept else b"")
        return list(pack(texts))



@extension_op("SentencepieceStreamDetokenizer")
class SentencepieceStreamDetokenizer(SentencepieceDetokenizer):
    """(serialized sentencepiece model, ids [batch, length]) -> strings: each row's pieces as they are (▁ kept),
    <0xNN> pieces as their byte, ids not below the piece count skipped (a negative id is an error: sentencepiece
    has no such piece)."""

    def compute(self, arrays):
        processor = sentencepiece_processor(self, arrays[0])
        size = processor.GetPieceSize()
        texts = []
        for row in np.asarray(arrays[1]).tolist():
            if any(i < 0 for i in row):
                raise ExecutionError(f"token id {min(row)} is negative", rule="input.value")
            pieces = [processor.IdToPiece(i).encode("utf-8") for i in row if i < size]
            texts.append(b"".join(byte_of_piece(p) if len(p) == 6 and p.startswith(b"<0x") and p.endswith(b">") else p
                                  for p in pieces))
        return list(pack(texts))
