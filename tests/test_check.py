"""`irrun check`: the Python API, the report formats, exit codes, directory mode and the rule docs.
The corpora (valid IRs written by OpenVINO, planted defects) are in test_check_corpus.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import irrun
from irrun.cli import check as cli_check
from irrun.tools.check import Report, check
from irrun.cli.main import cli
from irrun.errors import GraphError
from irrun.ops.pooling import MaxPool8

from irbuild import IRBuilder

ROOT = Path(__file__).parents[1]
DIAGNOSTIC_KEYS = ["severity", "rule", "layer_id", "layer_name", "layer_type", "op_version", "port", "message",
                   "class", "class_reason"]
LINE = re.compile(r"^(?P<file>[^:]+): (layer (?P<id>\S+) \((?P<name>[^,]*), (?P<type>[A-Za-z]+)(-(?P<v>\d+))?\): )?"
                  r"(?P<rule>[a-z]+(\.[a-z_]+)+): (?P<message>.+)$")


def tiny_maxpool(directory: Path, seed: int, version=11, defect=None) -> Path:
    """Parameter -> MaxPool-8 (values and indices) -> two Results, written by hand; `defect` plants one."""
    rng = np.random.default_rng(seed)
    size, kernel, stride = int(rng.integers(2, 9)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    out = (size - kernel) // stride + 1
    batch = None if seed % 3 == 0 else 1
    b = IRBuilder(version)
    p = b.parameter([batch, 2, size, size], shape_attr=f"{-1 if batch is None else 1},2,{size},{size}")
    attrs = {"strides": f"{stride}, {stride}", "dilations": "1, 1", "pads_begin": "0, 0", "pads_end": "0, 0",
             "kernel": f"{kernel}, {kernel}", "rounding_type": "floor", "auto_pad": "explicit",
             "index_element_type": "i64", "axis": "0"}
    outputs = [([batch, 2, out, out], "f32"), ([batch, 2, out, out], "i64")]
    if defect == "kernel":
        attrs["kernel"] = "0, 1"
    if defect == "unknown attribute":
        attrs["exclude-pad"] = "true"
    pool = b.op("MaxPool", "opset8", [(p, 0)], attrs, outputs, name="pool")
    b.result((pool, 0))
    b.result((pool, 1))
    return b.save(directory)


def run_cli(*args):
    return CliRunner().invoke(cli, ["check", *map(str, args)])


# ---------------------------------------------------------------- the API


def test_api_report_of_a_valid_file(tmp_path):
    report = irrun.check(tiny_maxpool(tmp_path, 1))
    assert isinstance(report, Report) and report.conformant and report.passes(strict=True)
    assert report.ir_version == 11 and report.diagnostics == []
    assert list(report.to_dict()) == ["file", "conformant", "ir_version", "diagnostics"]


def test_api_report_names_rule_layer_and_version(tmp_path):
    report = check(tiny_maxpool(tmp_path, 1, defect="kernel"))
    assert not report.conformant
    (d,) = report.to_dict()["diagnostics"]
    assert list(d) == DIAGNOSTIC_KEYS
    assert (d["severity"], d["rule"], d["layer_id"], d["layer_name"], d["layer_type"], d["op_version"]) == (
        "error", "attr.range", "1", "pool", "MaxPool", 8)


def test_warnings_fail_only_when_strict(tmp_path):
    report = check(tiny_maxpool(tmp_path, 1, defect="unknown attribute"))
    assert report.rules() == [("attr.unknown", "1")]
    assert report.conformant and report.passes() and not report.passes(strict=True)
    assert report.to_dict(strict=True)["conformant"] is False


def test_ir_v10_is_read(tmp_path):
    report = check(tiny_maxpool(tmp_path, 2, version=10))
    assert report.ir_version == 10 and report.diagnostics == []


def test_unreadable_file_is_an_error_not_an_exception(tmp_path):
    path = tmp_path / "model.xml"
    path.write_bytes(b"\x00\x01 not xml")
    report = check(path)
    assert report.rules() == [("file.xml", None)] and report.ir_version is None and not report.conformant


def test_runtime_raises_the_first_problem_the_checker_collects(tmp_path):
    """One code path: build_graph raises for the runtime what it reports to the checker."""
    path = tiny_maxpool(tmp_path, 1)
    text = path.read_text()
    edges = re.findall(r"<edge [^>]*/>", text)
    path.write_text(text.replace(edges[0], edges[0] + edges[0]))  # the MaxPool's input fed twice
    assert ("edge.multiple", "1") in check(path).rules()
    with pytest.raises(GraphError) as raised:
        irrun.load(path)
    assert raised.value.rule == "edge.multiple" and raised.value.layer.id == "1"


def test_an_op_bug_is_a_warning_not_a_false_alarm(tmp_path, monkeypatch):
    def broken(self, inputs):
        raise TypeError("unsupported operand")

    monkeypatch.setattr(MaxPool8, "infer", broken)
    report = check(tiny_maxpool(tmp_path, 1))
    assert report.rules() == [("check.internal", "1")] and report.conformant


def test_dead_layer_of_unknown_type_is_an_error(tmp_path):
    path = tiny_maxpool(tmp_path, 1)
    text = path.read_text().replace("</layers>", '<layer id="9" name="x" type="NoSuchOp" version="opset8"/></layers>')
    path.write_text(text)
    assert set(check(path).rules()) == {("layer.type", "9"), ("graph.dead", "9")}


# ---------------------------------------------------------------- the command


def test_text_format_lines_and_summary(tmp_path):
    bad = tiny_maxpool(tmp_path / "bad", 1, defect="kernel")
    good = tiny_maxpool(tmp_path / "good", 2)
    result = run_cli(bad, good)
    assert result.exit_code == 1, result.output
    *lines, summary = result.output.splitlines()
    (line,) = lines
    match = LINE.match(line)
    assert match and match["file"] == str(bad) and (match["id"], match["name"], match["type"], match["v"]) == (
        "1", "pool", "MaxPool", "8") and match["rule"] == "attr.range", line
    assert summary == "checked 2 files: 1 not conformant; 1 errors, 0 warnings"


def test_json_is_an_object_for_one_file_and_a_list_for_several(tmp_path):
    one, two = tiny_maxpool(tmp_path / "a", 1), tiny_maxpool(tmp_path / "b", 2, defect="kernel")
    single = run_cli("--format", "json", one)
    assert single.exit_code == 0
    assert json.loads(single.output) == {"file": str(one), "conformant": True, "ir_version": 11, "diagnostics": []}
    several = run_cli("--format", "json", one, two)
    assert several.exit_code == 1
    documents = json.loads(several.output)
    assert [d["conformant"] for d in documents] == [True, False]
    assert documents[1]["diagnostics"][0]["rule"] == "attr.range"


def test_exit_codes(tmp_path):
    good = tiny_maxpool(tmp_path / "good", 1)
    warned = tiny_maxpool(tmp_path / "warned", 1, defect="unknown attribute")
    (tmp_path / "empty").mkdir()
    assert run_cli(good).exit_code == 0
    assert run_cli(warned).exit_code == 0
    assert run_cli("--strict", warned).exit_code == 1
    assert run_cli("--strict", good).exit_code == 0
    assert run_cli().exit_code == 2                                   # no PATH
    assert run_cli(tmp_path / "missing.xml").exit_code == 2           # no such path
    assert run_cli("--format", "yaml", good).exit_code == 2           # bad option value
    assert run_cli(tmp_path / "empty").exit_code == 2                 # a directory without models
    garbage = tmp_path / "garbage.xml"
    garbage.write_text("<net")
    assert run_cli(garbage).exit_code == 1                            # unreadable: an error


def test_directory_mode_is_recursive_and_quiet_when_piped(tmp_path):
    tiny_maxpool(tmp_path / "a", 1)
    tiny_maxpool(tmp_path / "b" / "deeper", 2, defect="kernel")
    result = CliRunner().invoke(cli, ["check", "--format", "json", str(tmp_path)])
    assert result.exit_code == 1
    assert [Path(d["file"]).parent.name for d in json.loads(result.stdout)] == ["a", "deeper"]
    assert result.stderr == ""


def test_directory_mode_shows_a_progress_bar_on_a_terminal(tmp_path, monkeypatch):
    tiny_maxpool(tmp_path / "a", 1)
    monkeypatch.setattr(cli_check, "_on_terminal", lambda: True)
    result = CliRunner().invoke(cli, ["check", str(tmp_path)])
    assert result.exit_code == 0 and "checking" in result.stderr
    assert "checking" not in result.stdout


def test_a_thousand_small_irs_in_one_call(tmp_path):
    """Directory mode checks many files in one process (no subprocess per file)."""
    for seed in range(1000):
        tiny_maxpool(tmp_path / f"{seed // 100}" / f"m{seed}", seed)
    result = run_cli(tmp_path)
    assert result.exit_code == 0, result.output[-2000:]
    assert result.output.splitlines()[-1] == "checked 1000 files: conformant; 0 errors, 0 warnings"


# ---------------------------------------------------------------- the rule docs


def test_every_rule_id_is_documented():
    documented = set(re.findall(r"^- `([a-z_.]+)`", (ROOT / "docs" / "rules.md").read_text(), re.M))
    documented |= set(re.findall(r"`([a-z]+(?:\.[a-z_]+)*)`", (ROOT / "docs" / "rules.md").read_text()))
    used = {"edge.dims", "edge.type", "port.dims.declared", "port.type.declared"}  # check.py builds these
    for source in (ROOT / "irrun").rglob("*.py"):
        text = source.read_text()
        used |= set(re.findall(r'\brule="([a-z_.]+)"', text))
        used |= set(re.findall(r'default_rule = "([a-z_.]+)"', text))
        used |= set(re.findall(r'\badd\((?:ERROR|WARNING), "([a-z_.]+)"', text))
        used |= set(re.findall(r'\bmessage, rule = f?"[^"]*", "([a-z_.]+)"', text))
    undocumented = sorted(used - documented)
    assert not undocumented, f"rule ids missing from docs/rules.md: {undocumented}"
