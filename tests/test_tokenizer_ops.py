"""Single openvino-tokenizers extension ops against OpenVINO's committed outputs (tests/data/tokenizer_ops, written
by tools/make_tokenizer_op_corpus.py): normalization forms, case folding, regex splitting behaviours, byte-level
maps, UTF-8 validation, vocabulary look-ups, on the battery plus invalid UTF-8."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.errors import IRError

DATA = Path(__file__).parent / "data" / "tokenizer_ops"
EXPECTED = json.loads((DATA / "cases.json").read_text())
STRINGS = [base64.b64decode(s) for s in EXPECTED["strings"]]


def _decomposed(valid_only: bool):
    """The battery, one string per row; only its valid UTF-8 strings for the regex ops (PCRE2's matching of
    invalid UTF-8 is undefined, see docs/semantics.md)."""
    strings = [s for s, valid in zip(STRINGS, EXPECTED["valid_utf8"]) if valid or not valid_only]
    lengths = np.array([len(s) for s in strings], dtype=np.int32)
    ends = np.cumsum(lengths).astype(np.int32)
    rows = np.arange(len(strings), dtype=np.int32)
    return [rows, rows + 1, ends - lengths, ends, np.frombuffer(b"".join(strings), dtype=np.uint8).copy()]


def _array(entry) -> np.ndarray:
    if entry["type"] == "uint8":
        return np.frombuffer(base64.b64decode(entry["data"]), dtype=np.uint8).reshape(entry["shape"])
    return np.asarray(entry["data"]).astype(entry["type"]).reshape(entry["shape"])


def _pieces(outputs, string_ports):
    """The strings a (begins, ends, chars) triple of outputs names, for a readable failure."""
    begins, ends, chars = (outputs[p] for p in string_ports)
    data = chars.tobytes()
    return [data[b:e] for b, e in zip(begins.reshape(-1).tolist(), ends.reshape(-1).tolist())]


@pytest.mark.parametrize("name", sorted(EXPECTED["cases"]))
def test_op_matches_openvino(name):
    case = EXPECTED["cases"][name]
    model = irrun.load(DATA / name / "model.xml")
    if "inputs" in case:
        inputs = [_array(entry) for entry in case["inputs"]]
    else:
        inputs = _decomposed(case["valid_utf8_only"])[0 if case["ragged"] else 2:]
    got = list(model.run(inputs).values())
    want = [_array(entry) for entry in case["outputs"]]
    assert len(got) == len(want)
    strings_at = 2 if len(want) >= 5 else 0
    if len(want) >= 3 and want[strings_at + 2].dtype == np.uint8:
        assert _pieces(got, range(strings_at, strings_at + 3)) == _pieces(want, range(strings_at, strings_at + 3))
    for index, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), f"output {index}"


def _run_single(op_type: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """One extension op's compute, on arrays (no OpenVINO file for these: expected values are written by hand)."""
    from irrun.ops.registry import EXTENSION_REGISTRY, Context

    op = EXTENSION_REGISTRY[op_type]({}, Context())
    return op.compute(inputs)


def test_ragged_to_ragged_from_sorted_row_ids():
    # rows 0 and 2 to 3 hold elements, rows 1 and 4 none; the extension's rule: begins/ends per row
    begins, ends = _run_single("RaggedToRagged", [np.array([0, 0, 2, 2, 2, 3], np.int32), np.array([5], np.int32)])
    assert begins.tolist() == [0, 2, 2, 5, 6] and ends.tolist() == [2, 2, 5, 6, 6]


def test_ragged_tensor_pack_passes_its_elements():
    (out,) = _run_single("RaggedTensorPack", [np.array([0], np.int32), np.array([2], np.int32),
                                              np.array([7, 8], np.int64)])
    assert out.tolist() == [7, 8] and out.dtype == np.int64


def _ragged_battery():
    """b"hello world", b"ab c", b"" as a ragged tensor of strings, one string per row."""
    strings = [b"hello world", b"ab c", b""]
    lengths = np.array([len(s) for s in strings], dtype=np.int32)
    ends = np.cumsum(lengths).astype(np.int32)
    rows = np.arange(3, dtype=np.int32)
    return [rows, rows + 1, ends - lengths, ends, np.frombuffer(b"".join(strings), dtype=np.uint8).copy()]


@pytest.mark.parametrize("port, values, message", [
    (3, np.array([11, 15], np.int32), "port 3: ends have shape [2], begins (port 2) [3]"),
    (3, np.array([11, 15, 40], np.int32), "port 3: end 40 is past the 15 elements of port 4"),
    (1, np.array([1, 2, 5], np.int32), "port 1: end 5 is past the 3 elements of port 2"),
    (2, np.array([-4, 11, 15], np.int32), "port 2: begin -4 is negative"),
    (0, np.array([2, 1, 2], np.int32), "port 1: row 0 ends at 1, before its begin 2 (port 0)"),
])
def test_mismatched_ragged_inputs_are_one_line_naming_the_port(port, values, message):
    model = irrun.load(DATA / "regex_split_remove" / "model.xml")
    inputs = _ragged_battery()
    model.run(inputs)  # the battery itself runs
    inputs[port] = values
    with pytest.raises(IRError) as error:
        model.run(inputs)
    text = str(error.value)
    assert "\n" not in text and "(RegexSplit_95642, RegexSplit) " + message in text, text
