"""`irrun check` for CI: rule classes and --openvino-compatible, SARIF 2.1.0 (validated against the official
schema, tests/data/sarif) and JUnit XML."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import jsonschema
from click.testing import CliRunner
from lxml import etree

from irrun.cli.main import cli
from test_check import run_cli, tiny_maxpool

SCHEMA = Path(__file__).parent / "data" / "sarif" / "sarif-schema-2.1.0.json"


def _negative_stride(directory: Path) -> Path:
    """A MaxPool with a negative stride: OpenVINO reads it (as a huge unsigned stride), irrun is stricter."""
    path = tiny_maxpool(directory, 4)
    path.write_text(re.sub(r'strides="\d, \d"', 'strides="-1, 1"', path.read_text()))
    return path


def _layer_line(path: Path, layer_id: str) -> int:
    lines = path.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if f'<layer id="{layer_id}"' in line)


def test_stricter_errors_are_marked_and_warnings_in_compatible_mode(tmp_path):
    path = _negative_stride(tmp_path)
    default = run_cli(path)
    assert default.exit_code == 1
    assert "attr.range.spec: (stricter than OpenVINO) strides [-1, 1]" in default.output
    compatible = run_cli("--openvino-compatible", path)
    assert compatible.exit_code == 0, compatible.output
    assert "attr.range.spec: warning: (stricter than OpenVINO)" in compatible.output
    shared = run_cli("--openvino-compatible", tiny_maxpool(tmp_path / "kernel", 1, defect="kernel"))
    assert shared.exit_code == 1 and "attr.range: attribute 'kernel'" in shared.output


def test_json_gives_each_diagnostics_class(tmp_path):
    documents = json.loads(run_cli("--format", "json", _negative_stride(tmp_path / "a"),
                                   tiny_maxpool(tmp_path / "b", 1, defect="kernel")).output)
    # the MaxPool's own error; its outputs (inferred on with the stride as OpenVINO reads it) differ from the
    # declared dims too, also of the stricter class
    stricter = next(d for d in documents[0]["diagnostics"] if d["rule"] == "attr.range.spec")
    assert {d["class"] for d in documents[0]["diagnostics"]} == {"stricter"}
    (shared,) = documents[1]["diagnostics"]
    assert stricter["class"] == "stricter" and "specification" in stricter["class_reason"]
    assert (shared["class"], shared["class_reason"]) == ("openvino", None)


def test_sarif_validates_against_the_schema_and_places_results_on_the_layer(tmp_path):
    bad = tiny_maxpool(tmp_path / "bad", 1, defect="kernel")
    good = tiny_maxpool(tmp_path / "good", 2)
    warned = tiny_maxpool(tmp_path / "warned", 3, defect="unknown attribute")
    result = run_cli("--format", "sarif", bad, good, warned)
    assert result.exit_code == 1
    document = json.loads(result.output)
    jsonschema.Draft4Validator(json.loads(SCHEMA.read_text())).validate(document)
    (run,) = document["runs"]
    error, warning = run["results"]
    assert (error["ruleId"], error["level"]) == ("attr.range", "error")
    assert (warning["ruleId"], warning["level"]) == ("attr.unknown", "warning")
    location = error["locations"][0]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == bad.as_uri()
    assert location["physicalLocation"]["region"]["startLine"] == _layer_line(bad, "1")
    assert location["logicalLocations"][0]["fullyQualifiedName"] == "layer 1 (pool, MaxPool-8)"
    rules = run["tool"]["driver"]["rules"]
    assert [rules[r["ruleIndex"]]["id"] for r in run["results"]] == ["attr.range", "attr.unknown"]
    assert "informationUri" not in run["tool"]["driver"]  # optional, and irrun has no public home page


def test_sarif_of_an_unreadable_file_validates(tmp_path):
    garbage = tmp_path / "garbage.xml"
    garbage.write_text("<net")
    document = json.loads(run_cli("--format", "sarif", garbage).output)
    jsonschema.Draft4Validator(json.loads(SCHEMA.read_text())).validate(document)
    (result,) = document["runs"][0]["results"]
    assert result["ruleId"] == "file.xml" and "region" not in result["locations"][0]["physicalLocation"]


def test_junit_has_a_case_per_file_and_a_failure_per_error(tmp_path):
    bad = tiny_maxpool(tmp_path / "bad", 1, defect="kernel")
    good = tiny_maxpool(tmp_path / "good", 2)
    result = run_cli("--format", "junit", bad, good)
    assert result.exit_code == 1
    suites = etree.fromstring(result.output.encode())
    (suite,) = suites
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [str(bad), str(good)]
    (failure,) = cases[0].findall("failure")
    assert failure.get("type") == "attr.range" and "layer 1 (pool, MaxPool-8)" in failure.text
    assert cases[1].findall("failure") == []


def test_pre_commit_hooks_run_the_checker_on_xml_files():
    hooks = (Path(__file__).parents[1] / ".pre-commit-hooks.yaml").read_text()
    assert re.search(r"- id: irrun-check\n(.*\n)*?\s+entry: irrun check\n", hooks)
    assert "files: \\.xml$" in hooks


def test_the_readme_pre_commit_hook_runs_as_written(tmp_path):
    """The README's local hook, run the way pre-commit runs it: its entry with the matching files appended."""
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    hook = re.search(r"```yaml\n(repos:\n  - repo: local\n.*?)```", readme, re.S).group(1)
    entry = re.search(r"entry: ([^#\n]*?)\s*(#|\n)", hook).group(1)
    files = re.compile(re.search(r"files: (.*)\n", hook).group(1))
    assert "language: system" in hook
    good, bad = tiny_maxpool(tmp_path / "good", 2), tiny_maxpool(tmp_path / "bad", 1, defect="kernel")
    lenient = _negative_stride(tmp_path / "lenient")
    changed = [p for p in (good, bad, good.with_suffix(".bin")) if files.search(str(p))]
    assert changed == [good, bad]
    program, *arguments = shlex.split(entry)
    assert program == "irrun"  # the console script of irrun.cli.main's group
    run = lambda paths: CliRunner().invoke(cli, [*arguments, *map(str, paths)])  # noqa: E731
    failed = run(changed)
    assert failed.exit_code == 1 and "attr.range" in failed.output
    assert run([good, lenient]).exit_code == 0
