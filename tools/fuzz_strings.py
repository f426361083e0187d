"""String seeds for tools/fuzz.py: the committed tokenizer corpus (openvino-tokenizers' tokenizers, detokenizers
and single extension ops) with inputs to run them on, and mutations of string inputs.

A seed's inputs follow from its Parameters alone: a string Parameter gets a batch of strings (several scripts,
empty, invalid UTF-8); three (i32, i32, u8) Parameters a decomposed string tensor of that batch, five (i32, i32,
i32, i32, u8) a ragged tensor of it (one string per row); a 2-D integer Parameter token ids.
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from lxml import etree

REPO = Path(__file__).resolve().parents[1]
TOKENIZER_DIRS = [REPO / "tests" / "data" / name
                  for name in ("tokenizers", "tokenizer_llm", "tokenizer_ops", "tokenizer_seq2seq")]

STRINGS = [b"Hello world", "H\u00e9llo w\u00f6rld, caf\u00e9".encode(), "\u4f60\u597d\u4e16\u754c".encode(), b"",
           b"  a\tb\n\nc  ", "\U0001f44d\U0001f3fd \U0001f468\u200d\U0001f469".encode(), b"\xff\xfe bad \xc3",
           b"<s>[CLS] 12345 x**2</s>"]
ODD_STRINGS = [b"", b" ", b"\x00\x00", b"\xff" * 9, b"\xc3", b"\xed\xa0\x80", "\u0130\u0131".encode() * 40,
               b"a" * 2000, b"<unk><pad></s><s>", "e\u0301\u0323".encode(), "Hello", 7, None]
TOKEN_IDS = [[1, 2, 3, 10, 40, 7], [5, 9, 0, 0, 0, 0]]


def parameters(xml: bytes) -> list[tuple[str, str, int]]:
    """(layer name, element type, rank) of each Parameter, in the order of the XML (an unreadable XML: none)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        root = etree.fromstring(xml, parser)
    except etree.XMLSyntaxError:
        return []
    found = []
    for layer in root.iter("layer"):
        data = layer.find("data")
        if layer.get("type") == "Parameter" and data is not None:
            shape = data.get("shape") or ""
            found.append((layer.get("name"), data.get("element_type"), len(shape.split(",")) if shape else 0))
    return found


def decomposed(strings: list) -> list[np.ndarray]:
    """(begins, ends, chars) of strings laid end to end."""
    lengths = np.array([len(s) for s in strings], dtype=np.int32)
    ends = np.cumsum(lengths, dtype=np.int32)
    return [ends - lengths, ends, np.frombuffer(b"".join(strings), dtype=np.uint8).copy()]


def tokenizer_feeds(xml_path: Path, xml: bytes) -> list:
    """Scenarios (each one step of inputs by Parameter name) for an IR of the tokenizer corpus; [] for another
    IR or one whose Parameters fit none of the layouts above."""
    if not any(directory in xml_path.parents for directory in TOKENIZER_DIRS):
        return []
    params = parameters(xml)
    names, types = [name for name, _, _ in params], [(kind, rank) for _, kind, rank in params]
    rows = np.arange(len(STRINGS), dtype=np.int32)
    if types and all(kind == "string" for kind, _ in types):
        batches = [STRINGS, STRINGS[:1]]
        return [[{name: np.array(batch, dtype=object) for name in names}] for batch in batches]
    if types == [("i32", 1), ("i32", 1), ("u8", 1)]:
        return [[dict(zip(names, decomposed(STRINGS)))]]
    if types == [("i32", 1)] * 4 + [("u8", 1)]:
        return [[dict(zip(names, [rows, rows + 1, *decomposed(STRINGS)]))]]
    if len(types) == 1 and types[0][1] == 2 and types[0][0] in ("i32", "i64"):
        return [[{names[0]: np.array(TOKEN_IDS, dtype=np.int64 if types[0][0] == "i64" else np.int32)}]]
    return []


def mutate_strings(array: np.ndarray, rng: random.Random) -> np.ndarray:
    """A string (object) input with one change: an odd element (invalid UTF-8, long, a str, not a string at
    all), another shape, or another dtype (numbers, fixed-width bytes or str)."""
    action = rng.randrange(3)
    if action == 0:
        array = array.copy()
        if array.size:
            array.reshape(-1)[rng.randrange(array.size)] = rng.choice(ODD_STRINGS)
        return array
    if action == 1:
        shape = [rng.choice([0, 1, 2, 3])] if rng.random() < 0.6 else [rng.choice([1, 2]), len(array)]
        return np.resize(array, shape)
    kind = rng.choice(["S", "U", np.int64, np.uint8, np.float32])
    if kind in ("S", "U"):
        return np.array([s if kind == "S" else s.decode("utf-8", "replace") for s in array.reshape(-1)],
                        dtype=kind).reshape(array.shape)
    return np.zeros(array.shape, dtype=kind)
