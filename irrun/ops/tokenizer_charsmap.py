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

import numpy as np

_HANGUL = range(0xAC00, 0xD7A4)


@functools.cache
def _second_elements(decompose: str) -> frozenset:
    """Characters that can compose with a preceding one (the second character of a primary composite, Hangul
    vowel and trailing jamo), and those that decompose to one of them alone: a rule of several characters always
    holds one, so text without any is normalized character by character."""
    found = {chr(cp) for cp in (*range(0x1161, 0x1176), *range(0x11A8, 0x11C3))}
    for cp in range(1, 0x110000):
        parts = unicodedata.decomposition(chr(cp)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            pair = "".join(chr(int(part, 16)) for part in parts)
            if unicodedata.normalize("NFC", pair) == chr(cp):
                found.add(pair[1])
    for cp in range(1, 0x110000):
        if unicodedata.decomposition(chr(cp)):
            parts = unicodedata.normalize(decompose, chr(cp))
            if len(parts) == 1 and parts in found:
                found.add(chr(cp))
    return frozenset(found)


class _SingleCharacterRules(dict):
    """str.translate's table: each character to its one-character rule's result, or itself (computed once)."""

    def __init__(self, rule):
        super().__init__()
        self.rule = rule

    def __missing__(self, code: int) -> str:
        char = chr(code)
        value = self.rule(char)
        self[code] = char if value is None else value
        return self[code]


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
        self.second_elements = _second_elements(self.decompose) if self.composed else frozenset()
        self._single = _SingleCharacterRules(self.rule)

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
    def _pieces(rule, text: str, longest: int):
        """Greedy longest match of rules of at most `longest` characters: each rule's result, or the character
        no rule starts with."""
        i, size = 0, len(text)
        while i < size:
            for length in range(min(longest, size - i), 0, -1):
                value = rule(text[i:i + length])
                if value is not None:
                    yield value
                    i += length
                    break
            else:
                yield text[i]
                i += 1

    @classmethod
    def _apply(cls, rule, text: str, longest: int) -> str:
        return "".join(cls._pieces(rule, text, longest))

    def pieces(self, data: bytes):
        return self._pieces(self.rule, _decode(data), self.longest)

    def text(self, data: bytes) -> str:
        """The pieces joined; text no rule of several characters can match goes through str.translate."""
        text = _decode(data)
        if self.longest == 1 or self.second_elements.isdisjoint(text):
            return text.translate(self._single)
        return self._apply(self.rule, text, self.longest)


class PrecompiledCharsMap:
    """A serialized sentencepiece character map (normalizer_spec.precompiled_charsmap): a little-endian u32 size,
    a darts-clone double-array trie of that many bytes whose values are offsets into the NUL-terminated
    replacement strings that follow."""

    def __init__(self, blob: bytes):
        if len(blob) < 4:
            raise ValueError("a precompiled character map needs at least 4 bytes")
        size = int.from_bytes(blob[:4], "little")
        if size % 4 or 4 + size > len(blob):
            raise ValueError(f"its trie size {size} does not fit the {len(blob)}-byte map")
        self.units = np.frombuffer(blob[4:4 + size], dtype="<u4").tolist()
        self.replacements = blob[4 + size:]

    def longest_match(self, data: bytes, start: int) -> tuple[int, bytes | None]:
        """(length, replacement) of the longest key at data[start:], or (0, None): the double-array walk."""
        units, node = self.units, 0
        if not units:
            return 0, None
        node ^= _offset(units[0])
        found = (0, None)
        for i in range(start, len(data)):
            byte = data[i]
            node ^= byte
            if node >= len(units):
                break
            unit = units[node]
            if unit & 0x800000FF != byte:
                break
            node ^= _offset(unit)
            if (unit >> 8) & 1:
                value = units[node] & 0x7FFFFFFF
                end = self.replacements.find(b"\0", value)
                found = (i + 1 - start, self.replacements[value:end if end != -1 else len(self.replacements)])
        return found

    def _walk(self, key: bytes) -> int | None:
        """The trie node after `key`, or None when no key starts with it."""
        units, node = self.units, _offset(self.units[0]) if self.units else 0
        for byte in key:
            node ^= byte
            if node >= len(units) or units[node] & 0x800000FF != byte:
                return None
            node ^= _offset(units[node])
        return node

    def _char_rule(self, char: str) -> tuple[str, bool]:
        """(what the character alone normalizes to, whether a longer key may start with it), once per character."""
        cache = self.__dict__.setdefault("_chars", {})
        if char not in cache:
            encoded = char.encode("utf-8")
            length, replacement = self.longest_match(encoded, 0)
            node = self._walk(encoded)
            extends = node is not None and any(
                (node ^ b) < len(self.units) and self.units[node ^ b] & 0x800000FF == b for b in range(1, 256))
            cache[char] = (replacement.decode("utf-8", "replace") if length == len(encoded) else char, extends)
        return cache[char]

    def pieces(self, data: bytes) -> list[str]:
        """sentencepiece's NormalizePrefix along the bytes: a key's replacement, else one UTF-8 character, else
        U+FFFD for one byte. Characters no longer key starts with are looked up once each."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return list(self._byte_pieces(data, 0))
        rules = {char: self._char_rule(char) for char in set(text)}
        if not any(extends for _, extends in rules.values()):
            return [rules[char][0] for char in text]
        pairs = self.__dict__.setdefault("_pairs", {})  # two characters -> whether a key starts with them
        pieces, position, skip_to = [], 0, 0
        for index, char in enumerate(text):
            start, position = position, position + len(char.encode("utf-8"))
            if start < skip_to:
                continue
            replacement, extends = rules[char]
            if extends:
                pair = text[index:index + 2]
                if pair not in pairs:
                    pairs[pair] = len(pair) == 2 and self._walk(pair.encode("utf-8")) is not None
                extends = pairs[pair]
            length, value = self.longest_match(data, start) if extends else (0, None)
            if length:
                pieces.append(value.decode("utf-8", "replace"))
                skip_to = start + length
            else:
                pieces.append(replacement)
        return pieces

    def _byte_pieces(self, data: bytes, i: int):
        while i < len(data):
            length, replacement = self.longest_match(data, i)
            if length:
                yield replacement.decode("utf-8", "replace")
                i += length
                continue
            char = _decode(data[i:i + _utf8_length(data[i])])
            if len(char) == 1 and char != "\ufffd":
                yield char
                i += len(char.encode("utf-8"))
            else:
                yield "\ufffd"
                i += 1


def _offset(unit: int) -> int:
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)


def _utf8_length(lead: int) -> int:
    return 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def _decode(data: bytes) -> str:
    """Characters of valid UTF-8; each byte that starts no valid character becomes U+FFFD (one per byte)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "surrogateescape")
    return "".join("\ufffd" if "\udc80" <= c <= "\udcff" else c for c in text)


def normalizer(chars_map, add_dummy_prefix=False, remove_extra_whitespaces=False, escape_whitespaces=False):
    """bytes -> bytes, as sentencepiece's Normalizer::Normalize with that spec; `chars_map` has pieces(bytes)."""
    space = "\u2581" if escape_whitespaces else " "

    def normalize(data: bytes) -> bytes:
        if not (add_dummy_prefix or remove_extra_whitespaces or escape_whitespaces) and hasattr(chars_map, "text"):
            return chars_map.text(data).encode("utf-8")
        pieces = list(chars_map.pieces(data))
        first = 0
        if remove_extra_whitespaces:
            while first < len(pieces) and pieces[first] == " ":
                first += 1
        if first == len(pieces):
            return b""
        out = [space] if add_dummy_prefix else []
        previous_space = remove_extra_whitespaces
        for piece in pieces[first:]:
            if previous_space:
                piece = piece.lstrip(" ")
            if piece:
                out.append(piece.replace(" ", "\u2581") if escape_whitespaces else piece)
                previous_space = piece.endswith(" ")
            if not remove_extra_whitespaces:
                previous_space = False
        text = "".join(out)
        if remove_extra_whitespaces:
            while text.endswith(space):
                text = text[:-1]
        return text.encode("utf-8")

    return normalize
