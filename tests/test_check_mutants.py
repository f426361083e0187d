"""`irrun check` against OpenVINO's reader on single mutations of real IRs (a sample of the corpus made by
tools/mutate_corpus.py, stored as recipes in tests/data/check_mutants.json: a seed file under models/ or
tests/data/llm/ and one edit of its XML; the .bin is the seed's).

For each mutant: when OpenVINO's reader refuses it, irrun reports an error; with openvino_compatible, irrun
reports an error exactly when OpenVINO refuses it. OpenVINO's verdict is taken here, live."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import irrun
from oracle import reader_refuses

ROOT = Path(__file__).parents[1]
CASES = json.loads((ROOT / "tests" / "data" / "check_mutants.json").read_text())

# OpenVINO refuses these and irrun does not yet: it lacks OpenVINO's bound propagation through shape
# arithmetic (irrun/ops/partial.py), or the check itself.
MISSED: dict[str, str] = {}


def _mutant(case: dict, directory: Path) -> Path:
    seed = ROOT / case["seed"]
    text = seed.read_text()
    start = case["offset"]
    assert text[start:start + len(case["old"])] == case["old"], "the seed changed: regenerate the recipes"
    directory.mkdir()
    path = directory / "model.xml"
    path.write_text(text[:start] + case["new"] + text[start + len(case["old"]):])
    os.symlink(seed.with_suffix(".bin"), directory / "model.bin")
    return path


def _param(case):
    reason = MISSED.get(case["case"])
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, id=f'{case["case"]}-{case["mutation"].split(":")[0]}', marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_compatible_mode_fails_exactly_when_openvino_refuses(case, tmp_path):
    path = _mutant(case, tmp_path / "m")
    refused = reader_refuses(path)
    default = irrun.check(path)
    compatible = irrun.check(path, openvino_compatible=True)
    if refused:
        assert default.errors, f"OpenVINO refuses {case['mutation']}; irrun finds nothing"
    assert bool(compatible.errors) == refused, (
        f"{case['mutation']}: OpenVINO {'refuses' if refused else 'reads'} it; irrun --openvino-compatible: "
        + ("; ".join(compatible.lines()) or "no errors"))


def test_the_sample_has_both_verdicts_and_the_issue_kinds():
    mutations = " ".join(c["mutation"] for c in CASES)
    assert "special_zero true -> false" in mutations and "Const offset" in mutations
    assert {"m2_00557", "m1_00347", "m1_00209"} <= {c["case"] for c in CASES}  # ReadValue, Assign, axis
