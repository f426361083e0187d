"""Op versions that are only OpenVINO's naming of another: ScatterNDUpdate-4 is ov::op::v3::ScatterNDUpdate,
first listed in opset4. `irrun info --ops` and the checker's messages say so."""
from __future__ import annotations

import json
import re

import numpy as np
from click.testing import CliRunner
from openvino import opset4

import oracle as O
from oracle import build

from irrun.tools.check import check
from irrun.cli.main import cli
from irrun.errors import LayerRef
from irrun.ir.opsets import CLASS_VERSIONS, resolve


def test_class_versions_are_the_six_renamed_ops():
    assert CLASS_VERSIONS == {("Acosh", 4): 3, ("Asinh", 4): 3, ("Atanh", 4): 3, ("BatchToSpace", 2): 1,
                              ("SpaceToBatch", 2): 1, ("ScatterNDUpdate", 4): 3}
    assert resolve("ScatterNDUpdate", "opset4") == ("ScatterNDUpdate", 4)
    assert resolve("ScatterNDUpdate", "opset14") == ("ScatterNDUpdate", 4)
    assert resolve("ScatterNDUpdate", "opset15") == ("ScatterNDUpdate", 15)


def test_messages_name_the_openvino_class():
    assert str(LayerRef("7", "upd", "ScatterNDUpdate", 4)) == "layer 7 (upd, ScatterNDUpdate-4, OpenVINO's v3 class)"
    assert str(LayerRef("7", "upd", "ScatterNDUpdate", 15)) == "layer 7 (upd, ScatterNDUpdate-15)"


def test_info_ops_says_which_versions_are_renamed():
    runner = CliRunner()
    text = runner.invoke(cli, ["info", "--ops"]).output
    assert re.search(r"^\s*ScatterNDUpdate +4 \(OpenVINO's v3 class\), 15$", text, re.M), text
    table = json.loads(runner.invoke(cli, ["info", "--ops", "--format", "json"]).output)["supported_ops"]
    record = next(r for r in table if r["type"] == "ScatterNDUpdate")
    assert record == {"type": "ScatterNDUpdate", "versions": [4, 15], "openvino_class_versions": {"4": 3}}


def test_checker_explains_an_opset3_scatter_nd_update(tmp_path):
    """OpenVINO reads ScatterNDUpdate from opset4 on; an opset3 layer is refused, and the checker says where the
    type is first listed."""
    data = np.zeros((2, 2), np.float32)
    built = build(lambda p: opset4.scatter_nd_update(p["d"], O.constant(np.array([[0]])), p["u"]),
                  {"d": data, "u": np.ones((1, 2), np.float32)})
    xml = tmp_path / "model.xml"
    xml.write_text(built.xml.read_text().replace('type="ScatterNDUpdate" version="opset4"',
                                                 'type="ScatterNDUpdate" version="opset3"'))
    (tmp_path / "model.bin").write_bytes(built.xml.with_suffix(".bin").read_bytes())
    messages = check(xml).lines()
    assert any("type 'ScatterNDUpdate' is not in opset3 (first listed in opset4, OpenVINO's v3 class)" in m
               for m in messages), messages
