"""`irrun check --target RELEASE` and `irrun info`'s oldest release against the older OpenVINO releases
themselves: tools/release_compat.py saved small models using newer features (tests/data/release_compat/,
written by OpenVINO 2026.4) and recorded whether each tested release's reader refuses them (expected.json)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from irrun.cli.main import cli
from irrun.ir.xml import read_xml
from irrun.tools.target import oldest_release, release_key

DATA = Path(__file__).parent / "data" / "release_compat"
EXPECTED = json.loads((DATA / "expected.json").read_text())


def _check(*args):
    return CliRunner().invoke(cli, ["check", *map(str, args)])


def test_at_least_three_older_releases_refuse_something():
    refusing = {release for verdicts in EXPECTED.values() for release, refused in verdicts.items() if refused}
    assert len(refusing) >= 3


@pytest.mark.parametrize("feature", sorted(EXPECTED))
def test_target_agrees_with_each_release(feature):
    path = DATA / feature / "model.xml"
    for release, refused in EXPECTED[feature].items():
        result = _check("--format", "json", "--target", release, path)
        rules = [d["rule"] for d in json.loads(result.output)["diagnostics"] if d["severity"] == "error"]
        assert any(r.startswith("target.") for r in rules) == refused, (feature, release, result.output)
        assert result.exit_code == int(refused), (feature, release, result.output)


@pytest.mark.parametrize("feature", sorted(EXPECTED))
def test_oldest_release_is_the_first_that_reads_it_and_every_later_one(feature):
    verdicts = EXPECTED[feature]
    oldest = oldest_release(read_xml(DATA / feature / "model.xml"))
    readers = [r for r, refused in verdicts.items() if not refused and release_key(r) >= release_key(oldest)]
    assert readers == [r for r in verdicts if release_key(r) >= release_key(oldest)]
    older = [r for r in verdicts if release_key(r) < release_key(oldest)]
    assert all(verdicts[r] for r in older[-1:])  # the release just before it refuses the file


def test_target_message_names_the_first_release(tmp_path):
    result = _check("--target", "2023.0", DATA / "squeeze15" / "model.xml")
    line = next(line for line in result.output.splitlines() if "target.op" in line)
    assert "op Squeeze-15" in line and "OpenVINO 2023.0 cannot read" in line and "first tested release" in line


def test_info_shows_the_oldest_release():
    result = CliRunner().invoke(cli, ["info", str(DATA / "opset1_only" / "model.xml")])
    assert result.exit_code == 0, result.output
    assert "Oldest OpenVINO release that reads it: 2023.0" in result.output


@pytest.mark.parametrize("target", ["2022.3", "latest", "2024"])
def test_a_target_before_2023_or_unreadable_is_a_usage_error(target):
    result = _check("--target", target, DATA / "opset1_only" / "model.xml")
    assert result.exit_code == 2 and "--target" in result.output


DROPPED = json.loads((DATA / "dropped.json").read_text())


@pytest.mark.parametrize("feature", sorted(DROPPED))
def test_target_warns_exactly_where_the_release_dropped_the_attribute(feature):
    """dropped.json: the attributes each release kept or dropped after reading the file (tools/release_compat.py)."""
    path = DATA / feature / "model.xml"
    for release, dropped in DROPPED[feature].items():
        result = _check("--format", "json", "--target", release, path)
        warned = sorted(re.search(r"drops attribute (\w+)=", d["message"]).group(1)
                        for d in json.loads(result.output)["diagnostics"] if d["rule"] == "target.attr.dropped")
        assert warned == dropped, (feature, release, result.output)
        assert result.exit_code == 0, result.output


def test_dropped_attribute_message_names_the_first_release_that_keeps_it():
    result = _check("--target", "2024.2", DATA / "random_uniform_pytorch" / "model.xml")
    assert ("target.attr.dropped: warning: OpenVINO 2024.2 reads RandomUniform-8 but drops attribute "
            'alignment="pytorch" (first kept in release 2024.3)') in result.output
