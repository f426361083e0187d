"""sentencepiece's character-map normalization, as the extension builds and applies it.

The extension normalizes Unicode (CharsMapNormalization with a normalization_form, NormalizeUnicode, CaseFold
utf-8) with sentencepiece character maps built from ICU: a map from character sequences to their normalized
form, applied by greedy longest match, so combining marks are never reordered. irrun derives the same rules from
Python's unicodedata (its Unicode version: characters assigned later normalize differently), following
sentencepiece's builder (builder.cc: BuildMapInternal, BuildNF*Map, MergeUnicodeCaseFoldMap, RemoveRedundantMap)
rule by rule on demand instead of building the whole map (NFKC has over 200,000 rules), and applies them as its
normalizer does (normalizer.cc), whitespace options included.
"""
from __future__ import annotations

import functools
import unicodedata

_HANGUL = range(0xAC00, 0xD7A4)


@functools.cache
def _decompositions(form: str) -> tuple[frozenset, int]:
    """Every multi-character decomposition of a single character in `form` (NFD or NFKD), and the longest."""
    found = set()
    for cp in range(1, 0x110000):
        if unicodedata.decomposition(chr(cp)) or cp in _HANGUL:
            parts = unicodedata.normalize(form, chr(cp))
            if len(parts) > 1:
                found.add(parts)
    return frozenset(found), max(map(len, found), default=1)


def _fold(char: str) -> str:
    """ICU's u_foldCase(c, U_FOLD_CASE_DEFAULT): simple case folding, one character to one character."""
    folded = char.casefold()
    if len(folded) == 1:
        return folded
    lower = char.lower()
    return lower if len(lower) == 1 else char


class CharsMap:
    """The rules of one (normalization form, case folding) map: `rule(key)` is the normalized text of a key the
    pruned map holds, else None."""

    def __init__(self, form: str, case_fold: bool):
        form = form.lower()
        self.composed = form in ("nfc", "nfkc")
        self.compose = form.upper() if self.composed else None
        self.decompose = {"nfc": "NFD", "nfkc": "NFKD", "nfd": "NFD", "nfkd": "NFKD"}.get(form)
        self.case_fold = case_fold
        self.decompositions, self.longest = _decompositions(self.decompose) if self.composed else (frozenset(), 1)
        self._unfolded: dict[str, str | None] = {}
        self._folded: dict[str, str | None] = {}

    def _raw(self, key: str) -> str | None:
        """The builder's rule for `key` before pruning and case folding."""
        if len(key) == 1:
            if self.decompose is None:
                return None
            value = unicodedata.normalize(self.compose or self.decompose, key)
            return value if value != key else None
        parts = [unicodedata.normalize(self.decompose, char) for char in key]
        if any(len(part) != 1 for part in parts):
            return None
        decomposed = "".join(parts)
        if decomposed not in self.decompositions:
            return None
        composed = unicodedata.normalize(self.compose, decomposed)
        return composed if composed != decomposed and composed != key else None

    def _unfolded_rule(self, key: str) -> str | None:
        """After BuildMapInternal's pruning."""
        if key not in self._unfolded:
            value = self._raw(key)
            if value is not None and len(key) > 1 and value == self._apply(self._unfolded_rule, key, len(key) - 1):
                value = None
            self._unfolded[key] = value
        return self._unfolded[key]

    def rule(self, key: str) -> str | None:
        if not self.case_fold:
            return self._unfolded_rule(key)
        if key not in self._folded:
            value = self._unfolded_rule(key)
            if value is not None:
                value = "".join(map(_fold, value))
            elif len(key) == 1 and _fold(key) != key:
                value = _fold(key)
            if value is not None and len(key) > 1 and value == self._apply(self.rule, key, len(key) - 1):
                value = None
            self._folded[key] = value
        return self._folded[key]

    @staticmethod
    def _apply(rule, text: str, longest: int) -> str:
        """Greedy longest match of rules of at most `longest` characters; other characters are kept."""
        out, i, size = [], 0, len(text)
        while i < size:
            for length in range(min(longest, size - i), 0, -1):
                value = rule(text[i:i + length])
                if value is not None:
                    out.append(value)
                    i += length
                    break
            else:
                out.append(text[i])
                i += 1
        return "".join(out)

    def apply(self, text: str) -> str:
        return self._apply(self.rule, text, self.longest)


def _decode(data: bytes) -> str:
    """Characters of valid UTF-8; each byte that starts no valid character becomes U+FFFD (one per byte)."""
    text = data.decode("utf-8", "surrogateescape")
    if not any("\udc80" <= c <= "\udcff" for c in text):
        return text
    return "".join("\ufffd" if "\udc80" <= c <= "\udcff" else c for c in text)


def normalizer(form: str, case_fold: bool, add_dummy_prefix=False, remove_extra_whitespaces=False,
               escape_whitespaces=False):
    """bytes -> bytes, as sentencepiece's Normalizer::Normalize with that spec."""
    chars_map = CharsMap(form, case_fold)

    def normalize(data: bytes) -> bytes:
        text = chars_map.apply(_decode(data))
        if remove_extra_whitespaces:
            text = " ".join(part for part in text.split(" ") if part)
        if not text:
            return b""
        if add_dummy_prefix:
            text = " " + text
        if escape_whitespaces:
            text = text.replace(" ", "\u2581")
        return text.encode("utf-8")

    return normalize
