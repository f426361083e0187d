"""What the openvino-tokenizers extension ops (layers with version="extension") share.

The extension passes strings between its ops decomposed: a 1-D string tensor as (begins i32, ends i32, chars u8),
string i being chars[begins[i]:ends[i]]; a ragged tensor as (ragged begins, ragged ends, elements), row r holding
elements[ragged_begins[r]:ragged_ends[r]]; a ragged tensor of strings as (ragged begins, ragged ends, begins,
ends, chars). Output sizes follow from the input values, so each op computes its outputs during inference once
every input value is known (ValueDependentOp); `output_infos` gives the types and shapes known before that.

Strings are Python bytes objects; the per-string work of these ops is Python by nature (regular expressions,
vocabulary look-ups), the offset arithmetic around it NumPy.
"""
from __future__ import annotations

import importlib
from typing import ClassVar

import numpy as np

from ..errors import ExecutionError, ShapeError, UnsupportedOpError
from ..ir.types import ELEMENT_TYPES
from .registry import TensorInfo, ValueDependentOp

I32, I64, U8, BOOL, F32 = (ELEMENT_TYPES[name] for name in ("i32", "i64", "u8", "boolean", "f32"))
STRING = ELEMENT_TYPES["string"]
EXTRA = "pip install 'irrun[text]'"


def text_library(name: str):
    """The optional library `name` (regex, sentencepiece, jinja2), or one line saying which extra installs it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise UnsupportedOpError(f"needs the '{name}' package of irrun's optional text extra: {EXTRA}",
                                 rule="layer.extra") from None


class TokenizerOp(ValueDependentOp):
    """An extension op: `output_infos` (types and shapes before values are known) and `compute` (the values)."""

    libraries: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def bind(cls, layer, context):
        for name in cls.libraries:
            text_library(name)
        return super().bind(layer, context)

    def output_infos(self, inputs: list[TensorInfo]) -> list[TensorInfo]:
        raise NotImplementedError

    def compute(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError

    def infer(self, inputs):
        infos = self.output_infos(inputs)
        if any(info.value is None for info in inputs):
            return infos
        arrays = self.compute([np.asarray(info.value) for info in inputs])
        return [TensorInfo(array.shape, info.type, array) for array, info in zip(arrays, infos)]


# ---------------------------------------------------------------- port checks

def expect_type(inputs, port: int, *names: str) -> None:
    info = inputs[port]
    if info.type.name not in names:
        raise ShapeError(f"input {port} must be {' or '.join(names)}, got {info.type}", rule="port.type", port=port)


def expect_offsets(inputs, port: int) -> None:
    """A ragged tensor's (begins i32, ends i32) at ports port, port+1, over the elements at port+2 (when the op
    has that input); their values, once known, must pick elements of it (check_offsets)."""
    expect_type(inputs, port, "i32")
    expect_type(inputs, port + 1, "i32")
    check_offsets(inputs, port)


def check_offsets(inputs, port: int) -> None:
    """Known (begins, ends) at ports port, port+1: the same shape, and 0 <= begin <= end <= the number of elements
    at port+2 (bytes of a string's chars, strings of a ragged tensor of strings, elements of a ragged tensor)."""
    begins, ends = inputs[port].value, inputs[port + 1].value
    if begins is None or ends is None:
        return
    try:  # a one-row segment (a special token) may have begins of shape [] and ends of shape [1]
        begins, ends = np.broadcast_arrays(np.asarray(begins), np.asarray(ends))
    except ValueError:
        raise ShapeError(f"ends have shape {list(np.shape(ends))}, begins (port {port}) {list(np.shape(begins))}:"
                         " a ragged or string tensor needs one of each per row", rule="input.value",
                         port=port + 1) from None
    elements = inputs[port + 2].value if port + 2 < len(inputs) else None
    limit = None if elements is None else np.asarray(elements).shape[0] if np.ndim(elements) else 1
    if begins.size and begins.min() < 0:
        raise ShapeError(f"begin {int(begins.min())} is negative", rule="input.value", port=port)
    if begins.size and (ends < begins).any():
        row = int(np.argmax((ends < begins).reshape(-1)))
        raise ShapeError(f"row {row} ends at {int(ends.reshape(-1)[row])}, before its begin "
                         f"{int(begins.reshape(-1)[row])} (port {port})", rule="input.value", port=port + 1)
    if limit is not None and ends.size and ends.max() > limit:
        raise ShapeError(f"end {int(ends.max())} is past the {limit} elements of port {port + 2}",
                         rule="input.value", port=port + 1)


def expect_strings(inputs, port: int) -> None:
    """A decomposed string tensor (begins i32, ends i32, chars u8) at ports port .. port+2."""
    expect_offsets(inputs, port)
    expect_type(inputs, port + 2, "u8")


def expect_ragged_strings(inputs, port: int = 0) -> None:
    """A ragged string tensor (ragged begins, ragged ends, begins, ends, chars) at ports port .. port+4."""
    expect_offsets(inputs, port)
    expect_strings(inputs, port + 2)


def expect_scalar_string(inputs, port: int) -> None:
    """A pattern or option string: a u8 tensor holding its bytes."""
    expect_type(inputs, port, "u8")
    if inputs[port].rank not in (None, 1):
        raise ShapeError(f"input {port} must be 1-D (a string's bytes), got rank {inputs[port].rank}",
                         rule="port.rank", port=port)


def strings_out(shape) -> list[TensorInfo]:
    return [TensorInfo(shape, I32), TensorInfo(shape, I32), TensorInfo((None,), U8)]


def ragged_strings_out(shape) -> list[TensorInfo]:
    return [TensorInfo(shape, I32), TensorInfo(shape, I32), *strings_out((None,))]


def ragged_out(shape, element_type) -> list[TensorInfo]:
    return [TensorInfo(shape, I32), TensorInfo(shape, I32), TensorInfo((None,), element_type)]


# ---------------------------------------------------------------- strings

def unpack(begins: np.ndarray, ends: np.ndarray, chars: np.ndarray) -> list[bytes]:
    data = np.asarray(chars).tobytes()
    return [data[b:e] for b, e in zip(np.asarray(begins).reshape(-1).tolist(), np.asarray(ends).reshape(-1).tolist())]


def pack(items: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(begins, ends, chars) of strings laid end to end."""
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    ends = np.cumsum(lengths)
    chars = np.frombuffer(b"".join(items), dtype=np.uint8).copy()
    return (ends - lengths).astype(np.int32), ends.astype(np.int32), chars


def const_string(array: np.ndarray) -> bytes:
    return np.asarray(array).tobytes()


def i32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int32).reshape(-1)


def decode_escaped(data: bytes) -> str:
    """The text of `data`, each byte of an invalid UTF-8 sequence as a lone surrogate U+DC80..U+DCFF (the
    extension's PCRE2 matches with JIT, which does not check UTF-8: such bytes are matched as they come)."""
    return data.decode("utf-8", "surrogateescape")


# PCRE2 10.46 in UCP mode: \w is letters, numbers, non-spacing marks and connector punctuation; the `regex`
# package's \w also takes spacing and enclosing marks, Other_Alphabetic symbols and the join controls (ZWJ),
# and leaves out other numbers (², ½). \d (Nd) and \s (White_Space) agree.
_PCRE_WORD = r"\p{L}\p{N}\p{Mn}\p{Pc}"
_REWRITES = {"w": f"[{_PCRE_WORD}]", "W": f"[^{_PCRE_WORD}]",
             "b": f"(?:(?<=[{_PCRE_WORD}])(?![{_PCRE_WORD}])|(?<![{_PCRE_WORD}])(?=[{_PCRE_WORD}]))",
             "B": f"(?:(?<=[{_PCRE_WORD}])(?=[{_PCRE_WORD}])|(?<![{_PCRE_WORD}])(?![{_PCRE_WORD}]))"}


def pcre_to_regex(pattern: str) -> str:
    r"""The `regex` package's spelling of a PCRE2 pattern: \x{hhh} as \Uhhhhhhhh, and \w \W \b \B as PCRE2's
    UCP word characters (inside a character class, \w only; \W there is left as the `regex` package reads it)."""
    out, i, size, in_class = [], 0, len(pattern), False
    while i < size:
        char = pattern[i]
        if char == "\\" and i + 1 < size:
            escaped = pattern[i + 1]
            close = pattern.find("}", i + 3) if escaped == "x" and pattern[i + 2:i + 3] == "{" else -1
            digits = pattern[i + 3:close] if close != -1 else ""
            if digits and len(digits) <= 8 and all(c in "0123456789abcdefABCDEF" for c in digits):
                out.append(f"\\U{int(digits, 16):08X}")
                i = close + 1
                continue
            if escaped == "w" and in_class:
                out.append(_PCRE_WORD)
            elif escaped in _REWRITES and not in_class:
                out.append(_REWRITES[escaped])
            else:
                out.append(char + escaped)
            i += 2
            continue
        if not in_class and char == "[":
            in_class = True
            out.append(char)
            i += 1
            for lead in ("^", "]"):  # a leading ^ negates; a ] right after [ or [^ is a literal
                if pattern[i:i + 1] == lead:
                    out.append(lead)
                    i += 1
            continue
        if in_class and char == "[" and pattern[i + 1:i + 2] == ":":  # a POSIX class [:alpha:]
            end = pattern.find(":]", i + 2)
            if end != -1:
                out.append(pattern[i:end + 2])
                i = end + 2
                continue
        if in_class and char == "]":
            in_class = False
        out.append(char)
        i += 1
    return "".join(out)


def compile_pcre(pattern: bytes):
    """A PCRE2 pattern (as the extension compiles it: UTF and Unicode properties) in the `regex` package (see
    pcre_to_regex); a pattern it cannot compile is an error (PCRE2 would leave the strings unmatched)."""
    regex = text_library("regex")
    try:
        return regex.compile(pcre_to_regex(pattern.decode("utf-8")), flags=regex.VERSION0)
    except (regex.error, UnicodeDecodeError, ValueError) as exc:
        raise ExecutionError(f"the pattern {pattern[:80]!r} does not compile in the regex package: {exc}",
                             rule="input.value") from None


def match_spans(pattern, data: bytes) -> list[tuple[int, int, int, int]]:
    """Byte spans (start, end, group start, group end) of the successive non-empty matches of `pattern` in
    `data`, stopping at the first empty match as the extension's loops do; the group is the last participating
    capture group inside the match (or the match itself)."""
    text = decode_escaped(data)
    groups = pattern.groups
    spans = []
    for match in pattern.finditer(text):
        start, end = match.span()
        if start == end:
            break
        group_start, group_end = start, end
        for index in range(1, groups + 1):
            g_start, g_end = match.span(index)
            if g_start != -1 and start <= g_start and g_end <= end:
                group_start, group_end = g_start, g_end
        if group_start == group_end:
            group_start, group_end = start, end
        spans.append((start, end, group_start, group_end))
    if len(text) == len(data) or not spans:
        return spans
    offsets = utf8_offsets(text)
    return [(offsets[a], offsets[b], offsets[c], offsets[d]) for a, b, c, d in spans]


def match_bounds(pattern, data: bytes) -> np.ndarray:
    """Byte (start, end) rows of the successive non-empty matches of `pattern` in `data`, stopping at the first
    empty match (match_spans without the capture groups)."""
    text = decode_escaped(data)
    spans = []
    for match in pattern.finditer(text):
        span = match.span()
        if span[0] == span[1]:
            break
        spans.append(span)
    bounds = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    if len(text) != len(data) and bounds.size:
        bounds = np.asarray(utf8_offsets(text), dtype=np.int64)[bounds]
    return bounds


def utf8_offsets(text: str) -> list[int]:
    """The UTF-8 byte offset of each character index of `text` (0 .. len(text)); an escaped byte is one."""
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    widths = 1 + (points >= 0x80).astype(np.int64) + (points >= 0x800) + (points >= 0x10000)
    widths[(points >= 0xDC80) & (points <= 0xDCFF)] = 1
    return [0, *np.cumsum(widths).tolist()]


class BoundedCache(dict):
    """A dict that stops taking new entries at `capacity` (as the extension's BPE cache does)."""

    def __init__(self, capacity: int = 20000):
        super().__init__()
        self.capacity = capacity

    def put(self, key, value):
        if len(self) < self.capacity:
            self[key] = value
        return value
