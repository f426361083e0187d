"""BytesToChars and CharsToBytes: GPT-2's byte-level alphabet (every byte as a printable character: printable
Latin-1 bytes as themselves, the others as U+0100 onwards in byte order), forwards and back."""
from __future__ import annotations

import numpy as np

from .registry import TensorInfo, extension_op
from .tokenizer_base import (
    BOOL,
    TokenizerOp,
    expect_ragged_strings,
    expect_type,
    pack,
    ragged_strings_out,
    strings_out,
    unpack,
)


def _byte_alphabet() -> list[bytes]:
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[byte] = chr(byte)
        else:
            chars[byte] = chr(256 + extra)
            extra += 1
    return [chars[byte].encode("utf-8") for byte in range(256)]


BYTE_CHARS = _byte_alphabet()
# Each alphabet character's UTF-8 form -> its byte (all are one or two bytes long).
CHAR_BYTES = {char: bytes([byte]) for byte, char in enumerate(BYTE_CHARS)}


@extension_op("BytesToChars")
class BytesToChars(TokenizerOp):
    """Every byte of every string not skipped becomes its byte-level alphabet character."""

    num_inputs = (5, 6)

    def output_infos(self, inputs):
        expect_ragged_strings(inputs)
        infos = ragged_strings_out(inputs[0].shape)
        if len(inputs) == 6:
            expect_type(inputs, 5, "boolean")
            infos.append(TensorInfo(inputs[5].shape, BOOL))
        return infos

    def compute(self, arrays):
        strings = unpack(*arrays[2:5])
        skips = np.asarray(arrays[5]).reshape(-1).tolist() if len(arrays) == 6 else [False] * len(strings)
        table = BYTE_CHARS
        mapped = [s if skip else b"".join(table[b] for b in s) for s, skip in zip(strings, skips)]
        begins, ends, chars = pack(mapped)
        shape = np.asarray(arrays[2]).shape
        return [np.asarray(arrays[0]), np.asarray(arrays[1]), begins.reshape(shape), ends.reshape(shape), chars,
                *([np.asarray(arrays[5])] if len(arrays) == 6 else [])]


@extension_op("CharsToBytes")
class CharsToBytes(TokenizerOp):
    """Each row of a ragged string tensor as one string, its byte-level alphabet characters turned back into
    bytes (a byte below 0x80 stands for itself; any other starts a two-byte character)."""

    num_inputs = (5, 5)

    def output_infos(self, inputs):
        expect_ragged_strings(inputs)
        return strings_out(inputs[0].shape)

    def compute(self, arrays):
        strings = unpack(*arrays[2:5])
        rows = []
        for begin, end in zip(np.asarray(arrays[0]).reshape(-1).tolist(), np.asarray(arrays[1]).reshape(-1).tolist()):
            rows.append(b"".join(_to_bytes(strings[i]) for i in range(begin, end)))
        begins, ends, chars = pack(rows)
        shape = np.asarray(arrays[0]).shape
        return [begins.reshape(shape), ends.reshape(shape), chars]


def _to_bytes(text: bytes) -> bytes:
    out, k = [], 0
    while k < len(text):
        if text[k] < 0x80:
            out.append(text[k:k + 1])
            k += 1
        else:
            out.append(CHAR_BYTES.get(text[k:k + 2], b"\x00"))
            k += 2
    return b"".join(out)
