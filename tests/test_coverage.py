"""Every op version OpenVINO's opsets name is implemented, or listed with its reason in NOT_IMPLEMENTED."""
import json

from click.testing import CliRunner

from irrun.cli.main import cli
from irrun.ir.opsets import opset_op_versions
from irrun.ops import REGISTRY, coverage


def test_every_opset_op_version_is_implemented_or_explained():
    unexplained = [f"{t}-{v}" for t, v, _, reason in coverage.missing_ops() if not reason]
    assert not unexplained, f"op versions in OpenVINO's opsets with no implementation and no reason: {unexplained}"


def test_no_stale_reasons():
    listed = opset_op_versions()
    for key, reason in coverage.NOT_IMPLEMENTED.items():
        assert key in listed, f"{key} is not in any opset"
        assert key not in REGISTRY, f"{key} is implemented: drop it from NOT_IMPLEMENTED"
        assert reason.strip()


def test_opset_table_knows_the_counts():
    """OpenVINO 2026.4's opsets 1-17 name 245 (type, version) pairs; the reader refuses Xor in opset2/3 only."""
    versions = opset_op_versions()
    assert len(versions) == 245
    assert versions[("Xor", 1)] == ["opset1"]
    assert versions[("MaxPool", 8)] == [f"opset{n}" for n in range(8, 14)]


def test_info_ops_missing_lists_what_is_missing(monkeypatch):
    monkeypatch.delitem(REGISTRY, ("Abs", 1))
    monkeypatch.setitem(coverage.NOT_IMPLEMENTED, ("Abs", 1), "removed for this test")
    result = CliRunner().invoke(cli, ["info", "--ops", "--missing"])
    assert result.exit_code == 0
    assert "Abs-1 (opset1..opset16): removed for this test" in result.output.splitlines()
    result = CliRunner().invoke(cli, ["info", "--ops", "--missing", "--format", "json"])
    assert {"type": "Abs", "version": 1, "opsets": [f"opset{n}" for n in range(1, 17)],
            "reason": "removed for this test"} in json.loads(result.output)


def test_missing_needs_ops():
    result = CliRunner().invoke(cli, ["info", "--missing"])
    assert result.exit_code == 2
