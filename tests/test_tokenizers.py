"""Tokenizer and detokenizer IRs (openvino-tokenizers extension ops) against OpenVINO's committed outputs.

tests/data/tokenizers/<tokenizer>/<variant> was written by tools/make_tokenizer_corpus.py: the IRs that
openvino_tokenizers.convert_tokenizer made and OpenVINO's outputs on the battery of strings in expected.json.
These tests need neither OpenVINO nor its extension: irrun's results are compared with the committed outputs.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.errors import IRError

DATA = Path(__file__).parent / "data" / "tokenizers"
FOLDERS = sorted(p.parent for p in DATA.glob("*/*/expected.json"))
DETOKENIZER_FOLDERS = [f for f in FOLDERS if (f / "openvino_detokenizer.xml").exists()]


def _expected(folder: Path) -> dict:
    return json.loads((folder / "expected.json").read_text(encoding="utf-8"))


def _ids(folder: Path) -> str:
    return f"{folder.parent.name}/{folder.name}"


def _as_lists(outputs: dict, names) -> dict:
    return {name: np.asarray(outputs[name]).tolist() for name in names}


def test_corpus_covers_every_family_and_variant():
    families = {f.parent.name for f in FOLDERS}
    assert {"bpe_bytelevel", "bpe_llama3", "bpe_suffix", "wordpiece", "sp_unigram", "sp_unigram_fast", "sp_bpe", "sp_bpe_fast",
            "hf_unigram"} <= families
    assert {f.name for f in FOLDERS} == {"default", "no_special", "left_trunc", "pair"}


@pytest.mark.parametrize("folder", FOLDERS, ids=_ids)
def test_tokenizer_matches_openvino_on_each_string(folder):
    expected = _expected(folder)
    model = irrun.load(folder / "openvino_tokenizer.xml")
    for index, want in enumerate(expected["single"]):
        if want is None:  # OpenVINO fails on it alone (bpe_suffix, docs/semantics.md); the batch test has it
            continue
        if expected["inputs"] == 1:
            feeds = [np.array([expected["battery"][index]], dtype=object)]
        else:
            feeds = [np.array([text], dtype=object) for text in expected["pairs"][index]]
        got = _as_lists(model.run(feeds), want)
        assert got == want, f"battery string {index}: {expected['battery'][index][:40]!r}"


@pytest.mark.parametrize("folder", FOLDERS, ids=_ids)
def test_tokenizer_matches_openvino_on_a_batch(folder):
    expected = _expected(folder)
    model = irrun.load(folder / "openvino_tokenizer.xml")
    if expected["inputs"] == 1:
        feeds = [np.array(expected["battery"][:-1], dtype=object)]
    else:
        pairs = expected["pairs"][:-1]
        feeds = [np.array([a for a, _ in pairs], dtype=object), np.array([b for _, b in pairs], dtype=object)]
    want = expected["batch"]
    assert _as_lists(model.run(feeds), want) == want


@pytest.mark.parametrize("folder", DETOKENIZER_FOLDERS, ids=_ids)
def test_detokenizer_matches_openvino(folder):
    expected = _expected(folder)
    model = irrun.load(folder / "openvino_detokenizer.xml")
    for row, want in zip(expected["detok_ids"], expected["detok_text"]):
        (text,) = model.run([np.asarray([row], dtype=np.int64).reshape(1, len(row))]).values()
        assert text.reshape(-1)[0].decode("utf-8") == want, f"ids {row[:10]}"


def test_string_inputs_may_be_bytes_and_named_like_the_converter():
    folder = DATA / "bpe_bytelevel" / "default"
    expected = _expected(folder)
    model = irrun.load(folder / "openvino_tokenizer.xml")
    (name,) = [d.name for d in model.inputs]
    got = model.run({name: np.array([expected["battery"][1].encode("utf-8")], dtype=object)})
    assert np.asarray(got["input_ids"]).tolist() == expected["single"][1]["input_ids"]
    as_lists = model.run([[expected["battery"][1]]])  # a plain list of str, by position
    assert np.asarray(as_lists["input_ids"]).tolist() == expected["single"][1]["input_ids"]


@pytest.mark.parametrize("folder", [DATA / "wordpiece" / "default", DATA / "sp_unigram" / "default",
                                    DATA / "bpe_llama3" / "pair"], ids=_ids)
def test_checker_validates_tokenizer_ops(folder):
    """No errors; the only warning is the converter's one-byte constant for an empty string."""
    for xml in folder.glob("*.xml"):
        report = irrun.check(xml)
        assert report.passes(), [str(d) for d in report.diagnostics]
        assert {d.rule for d in report.warnings} <= {"const.size.extra"}


def _copy_with(folder: Path, tmp_path: Path, old: str, new: str) -> Path:
    text = (folder / "openvino_tokenizer.xml").read_text()
    assert old in text
    (tmp_path / "openvino_tokenizer.xml").write_text(text.replace(old, new, 1))
    shutil.copy(folder / "openvino_tokenizer.bin", tmp_path / "openvino_tokenizer.bin")
    return tmp_path / "openvino_tokenizer.xml"


def test_checker_reports_a_bad_extension_attribute(tmp_path):
    xml = _copy_with(DATA / "bpe_bytelevel" / "default", tmp_path, 'behaviour="isolate"', 'behaviour="sideways"')
    report = irrun.check(xml)
    assert [d.rule for d in report.errors] == ["attr.value"]
    assert "RegexSplit" in str(report.errors[0])


def test_checker_reports_a_wrongly_typed_extension_input(tmp_path):
    xml = _copy_with(DATA / "bpe_bytelevel" / "default", tmp_path, 'type="RaggedToDense"', 'type="FuzeRagged"')
    report = irrun.check(xml)
    assert "port.count" in [d.rule for d in report.errors]


def test_an_unknown_extension_op_is_a_warning(tmp_path):
    xml = _copy_with(DATA / "bpe_bytelevel" / "default", tmp_path, 'type="Truncate"', 'type="NoSuchTokenizerOp"')
    report = irrun.check(xml)
    assert "layer.unimplemented" in [d.rule for d in report.warnings]
    with pytest.raises(IRError, match="unsupported extension op NoSuchTokenizerOp"):
        irrun.load(xml)


def test_missing_text_extra_is_one_line(tmp_path):
    """Without the `regex` package, loading a tokenizer IR says in one line which extra to install."""
    blocker = tmp_path / "regex.py"
    blocker.write_text("raise ImportError('blocked for the test')\n")
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import irrun\n"
              "try:\n    irrun.load(sys.argv[2])\nexcept irrun.IRError as exc:\n    print(exc)\n")
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path),
                             str(DATA / "bpe_bytelevel" / "default" / "openvino_tokenizer.xml")],
                            capture_output=True, text=True, timeout=60, check=False)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout + result.stderr
    assert "pip install 'irrun[text]'" in lines[0] and "SpecialTokensSplit" in lines[0]


def test_info_counts_extension_ops_as_implemented(tmp_path):
    from click.testing import CliRunner

    from irrun.cli.main import cli

    known = CliRunner().invoke(cli, ["info", str(DATA / "bpe_bytelevel" / "default" / "openvino_tokenizer.xml")])
    assert known.exit_code == 0 and "Not implemented by irrun" not in known.output
    xml = _copy_with(DATA / "bpe_bytelevel" / "default", tmp_path, 'type="Truncate"', 'type="NoSuchTokenizerOp"')
    unknown = CliRunner().invoke(cli, ["info", str(xml)])
    assert "Not implemented by irrun: NoSuchTokenizerOp (extension)" in unknown.output
