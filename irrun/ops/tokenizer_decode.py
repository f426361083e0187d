"""The detokenizer ops: VocabDecoder (ids to token strings), ByteFallback (<0xNN> tokens to bytes) and UTF8Validate
(invalid UTF-8 replaced or dropped); SentencePiece's are in tokenizer_sentencepiece.py."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .attrs import Bool, Ints
from .registry import extension_op
from .tokenizer_base import (
    TokenizerOp,
    expect_strings,
    expect_type,
    i32,
    pack,
    ragged_strings_out,
    strings_out,
    unpack,
)


@extension_op("VocabDecoder")
class VocabDecoder(TokenizerOp):
    """ids [batch, length] -> ragged strings: row b holds the `length` token strings of its ids (one empty string
    when length is 0); ids outside the vocabulary, negative ones and the skip tokens (5th input, else the
    skip_tokens attribute) give empty strings."""

    skip_tokens = Ints(default=())
    num_inputs = (4, 5)
    # False: no token is skipped (openvino_genai's skip_special_tokens=false); set by irrun.text, not the IR.
    skip_special: bool = True

    def output_infos(self, inputs):
        expect_type(inputs, 0, "i32")
        if inputs[0].rank not in (None, 2):
            raise ShapeError(f"input 0 (ids) must be 2-D, got rank {inputs[0].rank}", rule="port.rank", port=0)
        expect_strings(inputs, 1)
        if len(inputs) == 5:
            expect_type(inputs, 4, "i32")
        batch = None if inputs[0].shape is None else (inputs[0].shape[0],)
        return ragged_strings_out(batch)

    def compute(self, arrays):
        ids = np.asarray(arrays[0]).astype(np.int64)
        batch, length = ids.shape
        vocab_begins, vocab_ends = (np.asarray(a).reshape(-1).astype(np.int64) for a in arrays[1:3])
        chars = np.asarray(arrays[3]).reshape(-1)
        skip = np.asarray(arrays[4]).reshape(-1) if len(arrays) == 5 else np.asarray(self.skip_tokens, np.int64)
        if not self.skip_special:
            skip = skip[:0]
        per_row = max(length, 1)
        flat = ids.reshape(-1) if length else np.full(batch, -1, dtype=np.int64)
        known = (flat >= 0) & (flat < vocab_begins.size) & ~np.isin(flat, skip)
        token = np.where(known, flat, 0)
        lengths = np.where(known, vocab_ends[token] - vocab_begins[token], 0)
        ends = np.cumsum(lengths)
        source = np.repeat(vocab_begins[token] - (ends - lengths), lengths) + np.arange(int(ends[-1]) if ends.size else 0)
        rows = np.arange(batch, dtype=np.int64) * per_row
        return [i32(rows), i32(rows + per_row), i32(ends - lengths), i32(ends), chars[source]]


@extension_op("ByteFallback")
class ByteFallback(TokenizerOp):
    """Each six-byte string <...> becomes the byte its <0xNN> piece names (upper-case hex; any other six-byte
    <...> string becomes 0xFF, as sentencepiece's PieceToByte -1 written to a byte); others pass."""

    num_inputs = (3, 3)

    def output_infos(self, inputs):
        expect_strings(inputs, 0)
        return strings_out(inputs[0].shape)

    def compute(self, arrays):
        out = [byte_of_piece(token) if len(token) == 6 and token[:1] == b"<" and token[5:] == b">" else token
               for token in unpack(*arrays)]
        begins, ends, chars = pack(out)
        shape = np.asarray(arrays[0]).shape
        return [begins.reshape(shape), ends.reshape(shape), chars]


def byte_of_piece(piece: bytes) -> bytes:
    hexa = piece[3:5]
    if piece[1:3] == b"0x" and all(c in b"0123456789ABCDEF" for c in hexa):
        return bytes([int(hexa, 16)])
    return b"\xff"


@extension_op("UTF8Validate")
class UTF8Validate(TokenizerOp):
    """Invalid UTF-8 sequences replaced by U+FFFD (replace_mode) or dropped, by the extension's decoder: it
    accepts surrogates and lead bytes F5..F7 that Python's decoder refuses, and gives one U+FFFD per byte of an
    overlong form."""

    replace_mode = Bool(default=False)
    num_inputs = (3, 3)

    def output_infos(self, inputs):
        expect_strings(inputs, 0)
        return strings_out(inputs[0].shape)

    def compute(self, arrays):
        out = [_validate(s, self.replace_mode) for s in unpack(*arrays)]
        begins, ends, chars = pack(out)
        shape = np.asarray(arrays[0]).shape
        return [begins.reshape(shape), ends.reshape(shape), chars]


_REPLACEMENT = "\ufffd".encode()
_FIRST_CODE_POINT = (0, 0x80, 0x800, 0x10000)


def _validate(data: bytes, replace: bool) -> bytes:
    try:
        data.decode("utf-8")
        return data
    except UnicodeDecodeError:
        pass
    bad = _REPLACEMENT if replace else b""
    out = bytearray()
    pending, size, code, j = 0, 0, 0, 0
    while j < len(data):
        byte = data[j]
        if not pending:
            if byte < 0x80:
                out.append(byte)
            elif byte >> 5 == 0b110:
                size, pending, code = 2, 1, (byte & 0x1F) << 6
            elif byte >> 4 == 0b1110:
                size, pending, code = 3, 2, (byte & 0x0F) << 12
            elif byte >> 3 == 0b11110:
                size, pending, code = 4, 3, (byte & 0x07) << 18
            else:
                out += bad
            j += 1
            continue
        if byte >> 6 != 0b10:
            pending = 0
            out += bad
            continue  # the byte is read again as a new start
        pending -= 1
        code |= (byte & 0x3F) << (6 * pending)
        if not pending:
            if code < _FIRST_CODE_POINT[size - 1]:
                out += bad * size
            else:
                out += data[j + 1 - size:j + 1]
            code = 0
        j += 1
    if pending:
        out += bad
    return bytes(out)
