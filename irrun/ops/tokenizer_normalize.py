"""The normalization ops: RegexNormalization (PCRE2 substitution), CharsMapNormalization, NormalizeUnicode and
CaseFold. Each maps every string of a string tensor (begins, ends, chars[, skips]) to a new one; strings marked
in skips (special tokens) pass unchanged.

Unicode normalization and case folding go through sentencepiece's character maps as the extension applies them
(irrun/ops/tokenizer_charsmap.py).
"""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError
from .attrs import Bool, Str
from .registry import TensorInfo, extension_op
from .tokenizer_base import (
    BOOL,
    TokenizerOp,
    compile_pcre,
    const_string,
    decode_escaped,
    expect_scalar_string,
    expect_strings,
    expect_type,
    pack,
    strings_out,
    unpack,
)
from .tokenizer_charsmap import CharsMap, PrecompiledCharsMap, normalizer


class _NormalizeOp(TokenizerOp):
    """Subclasses say where the skips input is (`has_skips`) and give `normalize(bytes) -> bytes`."""

    def has_skips(self, count: int) -> bool:
        return count == 4

    def output_infos(self, inputs):
        expect_strings(inputs, 0)
        infos = strings_out(inputs[0].shape)
        if self.has_skips(len(inputs)):
            expect_type(inputs, 3, "boolean")
            infos.append(TensorInfo(inputs[3].shape, BOOL))
        return infos

    def compute(self, arrays):
        self.prepare(arrays)
        has_skips = self.has_skips(len(arrays))
        strings = unpack(*arrays[:3])
        skips = np.asarray(arrays[3]).reshape(-1).tolist() if has_skips else [False] * len(strings)
        normalize = self.normalize
        begins, ends, chars = pack([s if skip else normalize(s) for s, skip in zip(strings, skips)])
        shape = np.asarray(arrays[0]).shape
        outputs = [begins.reshape(shape), ends.reshape(shape), chars]
        return outputs + [np.asarray(arrays[3])] if has_skips else outputs

    def prepare(self, arrays) -> None:
        """Read what the constant inputs configure (patterns), once."""

    def normalize(self, data: bytes) -> bytes:
        raise NotImplementedError


# Patterns old converters wrote, which the extension rewrites before compiling them.
_PATTERN_REWRITES = {
    rb" ([\\.\\?\\!,])| ('[ms])| (') | ('[rv]e)| (n't)": rb"(?| ([\\.\\?\\!,])| ('[ms])| (') | ('[rv]e)| (n't))",
    rb"(^)(.)": rb"(^)([\s\S])",
    rb"(^)(.+)": rb"(^)([\s\S])",
}


def _replacement(template: str):
    """PCRE2's substitution syntax ($n, ${n}, $$; the converter's \\n written as $n) for regex's sub: a literal
    template, or a function of the match."""
    parts, i = [], 0
    template = template.replace("$$", "\0")
    for digit in "123456789":
        template = template.replace("\\" + digit, "$" + digit)
    while i < len(template):
        if template[i] == "$" and i + 1 < len(template):
            if template[i + 1].isdigit():
                parts.append(int(template[i + 1]))
                i += 2
                continue
            if template[i + 1] == "{" and "}" in template[i:]:
                close = template.index("}", i)
                if template[i + 2:close].isdigit():
                    parts.append(int(template[i + 2:close]))
                    i = close + 1
                    continue
        parts.append(template[i].replace("\0", "$"))
        i += 1
    if all(isinstance(p, str) for p in parts):  # a literal: a template with its backslashes escaped
        return "".join(parts).replace("\\", "\\\\")
    return lambda match: "".join(p if isinstance(p, str) else (match.group(p) or "") for p in parts)


@extension_op("RegexNormalization")
class RegexNormalization(_NormalizeOp):
    """Replace matches of a PCRE2 pattern (input 3, or 4 with skips) by a replacement (the next input);
    global_replace replaces every match, else the first."""

    libraries = ("regex",)
    global_replace = Bool(default=True)
    num_inputs = (5, 6)

    def has_skips(self, count):
        return count == 6

    def output_infos(self, inputs):
        has_skips = self.has_skips(len(inputs))
        expect_scalar_string(inputs, 3 + has_skips)
        expect_scalar_string(inputs, 4 + has_skips)
        return super().output_infos(inputs)

    def prepare(self, arrays):
        if "_pattern" in self.__dict__:
            return
        at = 3 + self.has_skips(len(arrays))
        pattern = const_string(arrays[at])
        self._pattern = compile_pcre(_PATTERN_REWRITES.get(pattern, pattern))
        self._replace = _replacement(const_string(arrays[at + 1]).decode("utf-8", "surrogateescape"))

    def normalize(self, data):
        text = decode_escaped(data)
        if self._pattern.search(text) is None:
            return data
        return self._pattern.sub(self._replace, text, count=0 if self.global_replace else 1).encode(
            "utf-8", "surrogateescape")


_FORMS = ("nfc", "nfd", "nfkc", "nfkd", "identity")


@extension_op("CharsMapNormalization")
class CharsMapNormalization(_NormalizeOp):
    """sentencepiece's normalizer: a Unicode form with optional case folding named by attributes, or the
    precompiled character map of a sentencepiece model given as an input, with sentencepiece's whitespace
    options."""

    add_dummy_prefix = Bool(default=False)
    remove_extra_whitespaces = Bool(default=True)
    escape_whitespaces = Bool(default=False)
    normalization_form = Str(default="")
    case_fold = Bool(default=False)
    nmt = Bool(default=False)
    num_inputs = (3, 5)

    def has_skips(self, count):
        return count == 5 or (count == 4 and self.normalization_form != "")

    def prepare(self, arrays):
        if "_normalize" in self.__dict__:
            return
        if self.normalization_form:
            if self.normalization_form.lower() not in _FORMS:
                raise ExecutionError(f"unknown normalization_form {self.normalization_form!r}", rule="attr.value")
            chars_map = CharsMap(self.normalization_form, self.case_fold)
        else:
            blob = const_string(arrays[3 + self.has_skips(len(arrays))])
            try:
                chars_map = PrecompiledCharsMap(blob)
            except ValueError as exc:
                raise ExecutionError(f"the precompiled character map input is malformed: {exc}",
                                     rule="input.value") from None
        self._normalize = normalizer(chars_map, self.add_dummy_prefix, self.remove_extra_whitespaces,
                                     self.escape_whitespaces)

    def normalize(self, data):
        return self._normalize(data)


@extension_op("NormalizeUnicode")
class NormalizeUnicode(_NormalizeOp):
    normalization_form = Str("NFC", "NFD", "NFKC", "NFKD", default="NFD")
    num_inputs = (3, 4)

    def prepare(self, arrays):
        if "_normalize" not in self.__dict__:
            self._normalize = normalizer(CharsMap(self.normalization_form, False))

    def normalize(self, data):
        return self._normalize(data)


@extension_op("CaseFold")
class CaseFold(_NormalizeOp):
    """encoding "utf-8": Unicode lower-casing; encoding "": ASCII letters only, to lower (lower) or upper case."""

    encoding = Str("", "utf-8", default="utf-8")
    lower = Bool(default=True)
    num_inputs = (3, 4)

    def output_infos(self, inputs):
        if self.encoding == "utf-8" and not self.lower:
            raise ExecutionError("CaseFold with encoding utf-8 supports only lower = true", rule="attr.value")
        return super().output_infos(inputs)

    def prepare(self, arrays):
        if "_normalize" in self.__dict__:
            return
        if self.encoding:
            self._normalize = normalizer(CharsMap("identity", True))
        elif self.lower:
            self._normalize = bytes.lower
        else:
            self._normalize = bytes.upper

    def normalize(self, data):
        return self._normalize(data)
