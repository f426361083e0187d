"""The debugging tools on the shipped models: layer dumps, compare (OpenVINO, saved outputs, dumps), info,
profile, random inputs and shape overrides, progress and error reporting."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import irrun
from irrun.tools import profile as profiling
from irrun.tools.compare import diff_arrays
from irrun.tools.dumps import safe_file_stem
from irrun.tools.info import model_info
from irrun.tools.inputs import fill_inputs, parse_shape_overrides
from irrun.cli.main import cli
from irrun.errors import InputError

ROOT = Path(__file__).parents[1]
MODELS = sorted(p.parent for p in (ROOT / "models").glob("*/model.xml"))
ids = lambda p: p.name


def input_args(model_dir: Path) -> list[str]:
    npy = model_dir / "input.npy"
    return ["-i", str(npy if npy.exists() else model_dir / "inputs.npz")]


def model_inputs(model_dir: Path) -> dict:
    npz = model_dir / "inputs.npz"
    return dict(np.load(npz)) if npz.exists() else {"input": np.load(model_dir / "input.npy")}


def invoke(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def assert_one_line_error(result, code=1, text=None):
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("irrun: error: "), result.stderr
    assert "Traceback" not in result.stderr
    if text:
        assert text in lines[0]


def copy_model(model_dir: Path, tmp_path: Path, *replacements) -> Path:
    """A copy of a shipped model with text replacements in its XML."""
    xml = (model_dir / "model.xml").read_text()
    for old, new in replacements:
        assert old in xml
        xml = xml.replace(old, new)
    (tmp_path / "model.xml").write_text(xml)
    (tmp_path / "model.bin").write_bytes((model_dir / "model.bin").read_bytes())
    return tmp_path / "model.xml"


# ---------------------------------------------------------------- --dump-layers

@pytest.mark.parametrize("model_dir", MODELS, ids=ids)
def test_dump_layers_every_output_of_every_layer(model_dir, tmp_path):
    dump, out = tmp_path / "dump", tmp_path / "out.npz"
    result = invoke("run", model_dir / "model.xml", *input_args(model_dir), "-o", out, "--dump-layers", dump)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # no progress bar when stderr is not a terminal
    entries = json.loads((dump / "index.json").read_text())
    model = irrun.load(model_dir / "model.xml")
    live = [model.graph.nodes[i] for i in model.graph.order if model.graph.nodes[i].ref.type != "Result"]
    assert [(e["layer_id"], e["port"]) for e in entries] == [
        (n.id, p) for n in live for p in range(len(n.layer.outputs))]
    assert sorted(p.name for p in dump.iterdir()) == sorted([e["file"] for e in entries] + ["index.json"])
    by_key = {}
    for entry, node in zip(entries, (n for n in live for _ in n.layer.outputs)):
        assert set(entry) == {"layer_id", "name", "type", "version", "port", "shape", "dtype", "file"}
        assert (entry["name"], entry["type"], entry["version"]) == (node.ref.name, node.ref.type, node.ref.version)
        array = np.load(dump / entry["file"])
        assert list(array.shape) == entry["shape"] and str(array.dtype) == entry["dtype"]
        by_key[(entry["layer_id"], entry["port"])] = array
    saved = np.load(out)
    for desc, result_id in zip(model.outputs, model.graph.results):
        source = model.graph.nodes[result_id].inputs[0]
        np.testing.assert_array_equal(by_key[source], saved[desc.name])


def test_dump_filter_by_type_and_name(tmp_path):
    model = ROOT / "models" / "torch_lstm" / "model.xml"
    args = ["run", model, *input_args(model.parent)]
    assert invoke(*args, "--dump-layers", tmp_path / "t", "--dump-filter", "LSTMSequence").exit_code == 0
    entries = json.loads((tmp_path / "t" / "index.json").read_text())
    assert [(e["type"], e["port"]) for e in entries] == [("LSTMSequence", p) for p in (0, 1, 2)] * 2
    assert invoke(*args, "--dump-layers", tmp_path / "v", "--dump-filter", "Transpose-1").exit_code == 0
    assert {e["type"] for e in json.loads((tmp_path / "v" / "index.json").read_text())} == {"Transpose"}
    assert invoke(*args, "--dump-layers", tmp_path / "n", "--dump-filter", "*lstm*Split*").exit_code == 0
    names = {e["name"] for e in json.loads((tmp_path / "n" / "index.json").read_text())}
    assert names and all("lstm" in n and "Split" in n for n in names)
    assert invoke(*args, "--dump-layers", tmp_path / "e", "--dump-filter", "NoSuchThing").exit_code == 0
    assert json.loads((tmp_path / "e" / "index.json").read_text()) == []
    result = invoke(*args, "--dump-filter", "*")
    assert result.exit_code == 2 and "--dump-layers" in result.output


def test_dump_file_names_cannot_leave_the_directory(tmp_path):
    xml = copy_model(ROOT / "models" / "maxpool_example1", tmp_path, ('name="maxpool"', 'name="../../evil/ma\\x"'))
    dump = tmp_path / "sub" / "dump"
    assert invoke("run", xml, *input_args(ROOT / "models" / "maxpool_example1"), "--dump-layers", dump).exit_code == 0
    entries = json.loads((dump / "index.json").read_text())
    assert entries[1]["name"] == "../../evil/ma\\x"
    for entry in entries:
        assert "/" not in entry["file"] and "\\" not in entry["file"] and ".." not in entry["file"]
        assert (dump / entry["file"]).is_file()
    assert not (tmp_path / "evil").exists()
    for hostile in ("../../etc/passwd", "a/b\\c", "..", "", "\x00", ".hidden", "x" * 500):
        stem = safe_file_stem(hostile)
        assert stem and "/" not in stem and "\\" not in stem and not stem.startswith(".") and len(stem) <= 80


# ---------------------------------------------------------------- compare

@pytest.mark.parametrize("model_dir", MODELS, ids=ids)
def test_compare_against_openvino_on_every_model(model_dir):
    result = invoke("compare", model_dir / "model.xml", *input_args(model_dir), "--against", "openvino",
                    "--format", "json")
    report = json.loads(result.output)
    assert result.exit_code == 0 and report["passed"], report["outputs"]
    model = irrun.load(model_dir / "model.xml")
    assert [o["name"] for o in report["outputs"]] == [d.name for d in model.outputs]
    computed = [model.graph.nodes[i] for i in model.graph.order
                if model.graph.nodes[i].ref.type not in ("Parameter", "Constant", "Result")]
    assert [(d["layer_id"], d["port"]) for d in report["layers"]] == [
        (n.id, p) for n in computed for p in range(len(n.layer.outputs))]
    assert report["missing"] == []
    for row in report["layers"]:
        assert row["nan"] == row["ref_nan"] == 0 and row["shape"] == row["ref_shape"]


def test_compare_against_openvino_names_first_divergence():
    model_dir = ROOT / "models" / "torch_resnet"
    text = invoke("compare", model_dir / "model.xml", *input_args(model_dir), "--against", "openvino",
                  "--rtol", 0, "--atol", 0)
    assert text.exit_code == 1
    assert "FAIL: 1 of 1 outputs differ" in text.output
    result = invoke("compare", model_dir / "model.xml", *input_args(model_dir), "--against", "openvino",
                    "--rtol", 0, "--atol", 0, "--format", "json")
    report = json.loads(result.output)
    assert result.exit_code == 1 and not report["passed"]
    first = report["first_divergence"]
    failing = [r for r in report["layers"] if not r["ok"]]
    assert first == {k: failing[0][k] for k in ("layer_id", "name", "type", "version", "port")}
    assert f"first divergence: layer {first['layer_id']} ({first['name']}, {first['type']}-{first['version']})" \
        in text.output
    assert failing[0]["mismatches"] > 0 and failing[0]["max_abs"] > 0


def test_compare_without_openvino_installed(monkeypatch):
    model_dir = ROOT / "models" / "maxpool_example1"
    monkeypatch.setitem(sys.modules, "openvino", None)  # import openvino raises ImportError
    result = invoke("compare", model_dir / "model.xml", *input_args(model_dir), "--against", "openvino")
    assert_one_line_error(result, 1, "needs the openvino package")


def test_compare_against_saved_outputs(tmp_path):
    model_dir = ROOT / "models" / "torch_lstm"
    args = ["compare", model_dir / "model.xml", *input_args(model_dir), "--against"]
    result = invoke(*args, model_dir / "expected.npz")
    assert result.exit_code == 0 and "PASS: all 3 outputs match" in result.output
    expected = dict(np.load(model_dir / "expected.npz"))
    expected["h_n"] = expected["h_n"].copy()
    expected["h_n"][1, 0, 3] += 0.01
    expected["h_n"][0, 1, 2] = np.nan
    np.savez(tmp_path / "bad.npz", **expected)
    result = invoke(*args, tmp_path / "bad.npz", "--format", "json")
    report = json.loads(result.output)
    assert result.exit_code == 1 and report["layers"] == [] and report["first_divergence"] is None
    h_n = {o["name"]: o for o in report["outputs"]}["h_n"]
    assert (h_n["mismatches"], h_n["ref_nan"], h_n["nan"], h_n["ok"]) == (2, 1, 0, False)
    assert [o["ok"] for o in report["outputs"]] == [True, False, True]
    del expected["c_n"]
    np.savez(tmp_path / "short.npz", **expected)
    result = invoke(*args, tmp_path / "short.npz")
    assert result.exit_code == 1 and "output 'c_n' is not in" in result.output
    assert_one_line_error(invoke(*args, tmp_path / "none.npz"), 1, "does not exist")


def test_compare_against_a_dump_layer_by_layer(tmp_path):
    model_dir = ROOT / "models" / "torch_resnet"
    dump = tmp_path / "dump"
    assert invoke("run", model_dir / "model.xml", *input_args(model_dir), "--dump-layers", dump).exit_code == 0
    args = ["compare", model_dir / "model.xml", *input_args(model_dir), "--against", dump, "--format", "json"]
    report = json.loads(invoke(*args).output)
    entries = json.loads((dump / "index.json").read_text())
    assert report["passed"] and len(report["layers"]) == len(entries)
    assert all(r["max_abs"] == 0 for r in report["layers"])
    # corrupt an intermediate layer: it is named as the first divergence, the outputs still match
    relu = next(e for e in entries if e["type"] == "Relu")
    array = np.load(dump / relu["file"])
    array.flat[7] += 1.0
    np.save(dump / relu["file"], array)
    result = invoke(*args)
    report = json.loads(result.output)
    assert result.exit_code == 0 and report["first_divergence"]["layer_id"] == relu["layer_id"]
    assert [r["mismatches"] for r in report["layers"] if not r["ok"]] == [1]
    # corrupt the final output: exit 1
    model = irrun.load(model_dir / "model.xml")
    final = model.graph.nodes[model.graph.results[0]].inputs[0]
    last = next(e for e in entries if (e["layer_id"], e["port"]) == final)
    np.save(dump / last["file"], np.load(dump / last["file"]) * 2)
    result = invoke(*args[:-2])
    assert result.exit_code == 1 and "FAIL: 1 of 1 outputs differ" in result.output
    assert f"first divergence: layer {relu['layer_id']}" in result.output


def test_compare_rejects_a_dump_index_pointing_outside(tmp_path):
    model_dir = ROOT / "models" / "maxpool_example1"
    (tmp_path / "index.json").write_text(json.dumps([{"name": "maxpool", "port": 0, "file": "../secret.npy"}]))
    result = invoke("compare", model_dir / "model.xml", *input_args(model_dir), "--against", tmp_path)
    assert_one_line_error(result, 1, "outside the dump directory")
    assert_one_line_error(invoke("compare", model_dir / "model.xml", *input_args(model_dir), "--against",
                                 tmp_path / "nothing"), 1, "no such file or directory")


def test_diff_arrays_rules():
    d = diff_arrays(np.array([1.0, np.nan, np.inf, 2.0, 0.0], np.float32),
                          np.array([1.00005, np.nan, np.inf, 2.1, 1e-5]), 1e-4, 1e-4, layer_id=None, name="x",
                          type=None, version=None, port=None)
    assert (d.mismatches, d.nan, d.inf, d.ref_nan, d.ref_inf) == (1, 1, 1, 1, 1)
    assert d.max_abs == pytest.approx(0.1) and d.max_rel == pytest.approx(1.0)
    d = diff_arrays(np.array([np.nan, 1.0]), np.array([0.0, 1.0]), 1e-4, 1e-4, layer_id=None, name="x",
                          type=None, version=None, port=None)
    assert d.mismatches == 1 and d.max_abs == np.inf and not d.ok
    d = diff_arrays(np.zeros((2, 3)), np.zeros((3, 2)), 0, 0, layer_id=None, name="x", type=None,
                          version=None, port=None)
    assert not d.ok and d.note == "shape differs"
    d = diff_arrays(np.array([True, False]), np.array([True, True]), 0, 0, layer_id=None, name="x",
                          type=None, version=None, port=None)
    assert d.mismatches == 1


# ---------------------------------------------------------------- info

@pytest.mark.parametrize("model_dir", MODELS, ids=ids)
def test_info_on_every_model(model_dir):
    result = invoke("info", model_dir / "model.xml", "--format", "json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    model = irrun.load(model_dir / "model.xml")
    assert info["ir_version"] == 11 and info["unsupported_ops"] == []
    assert [i["name"] for i in info["inputs"]] == [d.name for d in model.inputs]
    assert [o["name"] for o in info["outputs"]] == [d.name for d in model.outputs]
    assert sum(info["ops"].values()) == info["layers"] == len(model.graph.nodes)
    assert info["ops"]["Parameter-1"] == len(model.inputs) and info["ops"]["Result-1"] == len(model.outputs)
    assert info["weights"]["bin_bytes"] == (model_dir / "model.bin").stat().st_size
    assert info["weights"]["const_bytes"] <= info["weights"]["bin_bytes"]
    assert info["checker"]["conformant"] is True
    text = invoke("info", model_dir / "model.xml")
    assert text.exit_code == 0 and "Inputs:" in text.output and "Opsets: opset1" in text.output
    assert "Checker: conformant" in text.output


def test_info_histogram_matches_the_model_readme():
    info = model_info(ROOT / "models" / "torch_resnet" / "model.xml")
    assert info["ops"] == {"Add-1": 12, "Constant-1": 20, "Convert-1": 18, "Convolution-1": 8, "MatMul-1": 1,
                           "MaxPool-14": 1, "Parameter-1": 1, "ReduceMean-1": 1, "Relu-1": 7, "Reshape-1": 1,
                           "Result-1": 1}
    assert info["opsets"] == ["opset1", "opset14"]
    assert info["inputs"][0]["shape"] == "[?,3,64,64]" and info["outputs"][0]["shape"] == "[?,10]"
    assert set(info["weights"]["const_bytes_by_type"]) == {"f16", "i64"}


def test_info_on_a_model_irrun_cannot_run(tmp_path):
    xml = copy_model(ROOT / "models" / "maxpool_example1", tmp_path, ('type="MaxPool" version="opset8"',
                                                                       'type="MaxPool" version="opset99"'))
    info = json.loads(invoke("info", xml, "--format", "json").output)
    assert "unknown opset" in info["load_error"] and info["checker"]["conformant"] is False
    assert [i["name"] for i in info["inputs"]] == ["input"]


def test_info_ops_lists_every_implemented_op():
    result = invoke("info", "--ops")
    assert result.exit_code == 0
    rows = {line.split()[0]: line.split(None, 1)[1] for line in result.output.splitlines()[1:-1]}
    assert rows["MaxPool"] == "1, 8, 14"
    table = json.loads(invoke("info", "--ops", "--format", "json").output)["supported_ops"]
    from irrun.ops.registry import supported_ops
    assert sorted((t["type"], v) for t in table for v in t["versions"]) == supported_ops()
    assert invoke("info").exit_code == 2
    assert_one_line_error(invoke("info", "no/such/model.xml"))


# ---------------------------------------------------------------- --profile

def test_profile_report():
    model_dir = ROOT / "models" / "torch_mobilenetv3"
    result = invoke("run", model_dir / "model.xml", *input_args(model_dir), "--profile")
    assert result.exit_code == 0
    out = result.output
    for heading in ("Per-layer times (execution order):", "Top 10 layers by time:", "Time by op type:", "Total: "):
        assert heading in out
    assert "GroupConvolution-1" in out and "EXECUTED" in out
    model = irrun.load(model_dir / "model.xml")
    profiler = profiling.Profiler(model)
    model.run(model_inputs(model_dir), observer=profiler)
    report = profiler.to_dict(top=5)
    assert len(report["layers"]) == len(model.graph.order)
    assert len(report["top"]) == 5 and report["top"][0]["ms"] >= report["top"][-1]["ms"]
    statuses = {t.layer_id: t.status for t in profiler.times}
    assert statuses[model.graph.parameters[0]] == "INPUT"
    assert all(statuses[i] == "AT_LOAD" for i in model.graph.order if model.graph.nodes[i].ref.type == "Constant")
    by_type = {row["type"]: row["count"] for row in report["by_type"]}
    assert by_type["GroupConvolution-1"] == 5 and by_type["HSwish-4"] == 7
    assert sum(row["percent"] for row in report["by_type"] + report["outside_layers"]) == pytest.approx(100)


# ---------------------------------------------------------------- --random-input and --shape

@pytest.mark.parametrize("model_dir", MODELS, ids=ids)
def test_random_input_runs_every_model(model_dir, tmp_path):
    args = ["run", model_dir / "model.xml", "--random-input", "--seed", 3]
    first, second = invoke(*args, "-o", tmp_path / "a.npz"), invoke(*args, "-o", tmp_path / "b.npz")
    assert first.exit_code == 0 and second.exit_code == 0, first.output
    a, b = np.load(tmp_path / "a.npz"), np.load(tmp_path / "b.npz")
    model = irrun.load(model_dir / "model.xml")
    assert list(a.files) == [d.name for d in model.outputs]
    for name in a.files:
        np.testing.assert_array_equal(a[name], b[name])


def test_random_input_fills_only_missing_inputs_and_follows_shape():
    model = irrun.load(ROOT / "models" / "torch_lstm" / "model.xml")
    given = np.ones((2, 20, 16), np.float32)
    feeds, notes = fill_inputs(model, {"input": given}, random=True, overrides={None: (2, 2, 32)}, seed=0)
    assert feeds["input"] is given
    assert feeds["h0"].shape == feeds["c0"].shape == (2, 2, 32) and feeds["h0"].dtype == np.float32
    assert notes == []
    with pytest.raises(InputError, match="given with shape"):
        fill_inputs(model, {"input": given}, random=True, overrides={"input": (3, 20, 16)})
    decoder = irrun.load(ROOT / "models" / "torch_causal_decoder" / "model.xml")
    feeds, notes = fill_inputs(decoder, {}, random=True, seed=1)
    ids_ = feeds["input_ids"]
    assert ids_.dtype == np.int64 and ids_.min() >= 0 and ids_.max() < 10
    assert len(notes) == 1 and "--shape input_ids[...]" in notes[0]


def test_shape_override_on_the_command_line(tmp_path):
    model_dir = ROOT / "models" / "torch_resnet"
    run = ["run", model_dir / "model.xml", "--random-input", "--seed", 0]
    result = invoke(*run, "--shape", "input[3,3,64,64]", "-o", tmp_path / "o.npz")
    assert result.exit_code == 0 and result.stderr == ""
    assert np.load(tmp_path / "o.npz")["logits"].shape == (3, 10)
    result = invoke(*run, "-o", tmp_path / "o.npz")
    assert "using shape [1,3,64,64]" in result.stderr and np.load(tmp_path / "o.npz")["logits"].shape == (1, 10)
    assert_one_line_error(invoke(*run, "--shape", "input[1,3,32,32]"), 1, "does not fit the declared shape")
    assert_one_line_error(invoke(*run, "--shape", "image[1,3,64,64]"), 1, "no model input")
    assert invoke(*run, "--shape", "input[1,3,?,64]").exit_code == 2
    assert invoke(*run, "--shape", "input(1,3)").exit_code == 2


def test_shape_override_within_declared_ranges(tmp_path):
    xml = copy_model(ROOT / "models" / "maxpool_example1", tmp_path, ('shape="1,1,3,3"', 'shape="1..4,1,?,3"'))
    run = ["run", xml, "--random-input", "-o", tmp_path / "o.npz"]
    assert invoke(*run, "--shape", "input[4,1,5,3]").exit_code == 0
    assert np.load(tmp_path / "o.npz")["values"].shape == (4, 1, 6, 4)
    assert invoke(*run, "--shape", "[2,1,3,3]").exit_code == 0
    assert np.load(tmp_path / "o.npz")["values"].shape == (2, 1, 4, 4)
    assert_one_line_error(invoke(*run, "--shape", "input[5,1,3,3]"), 1, "[1..4,1,?,3]")
    assert_one_line_error(invoke(*run, "--shape", "input[1,3,3]"), 1, "does not fit")
    result = invoke(*run)
    assert result.exit_code == 0 and "using shape [1,1,1,3]" in result.stderr


def test_parse_shape_overrides():
    assert parse_shape_overrides(["input[1,3,224,224]"]) == {"input": (1, 3, 224, 224)}
    assert parse_shape_overrides(["a[1,3],b[2]", "c[]"]) == {"a": (1, 3), "b": (2,), "c": ()}
    assert parse_shape_overrides(["[1, 2]"]) == {None: (1, 2)}
    assert parse_shape_overrides(["x:0/y[4]"]) == {"x:0/y": (4,)}
    for bad in ("input", "a[1..4]", "a[-1]", "a[1],a[2]", "a[1]b[2]", ""):
        with pytest.raises(InputError):
            parse_shape_overrides([bad])


# ---------------------------------------------------------------- progress and errors

def test_progress_only_on_a_terminal(monkeypatch):
    model_dir = ROOT / "models" / "pooling_mix"
    args = ["run", model_dir / "model.xml", *input_args(model_dir)]
    assert invoke(*args).stderr == ""
    monkeypatch.setattr(profiling, "on_terminal", lambda: True)
    result = invoke(*args)
    assert result.exit_code == 0 and "running" in result.stderr
    assert "running" not in result.stdout
    result = invoke("compare", model_dir / "model.xml", *input_args(model_dir), "--against",
                    model_dir / "expected.npz", "--atol", 1e-6)
    assert result.exit_code == 0 and "comparing" in result.stderr


def test_missing_inputs_still_an_error_without_random_input():
    model_dir = ROOT / "models" / "torch_lstm"
    result = invoke("run", model_dir / "model.xml", "-i", f"input={model_dir / 'inputs.npz'}")
    assert result.exit_code == 1
    result = invoke("compare", model_dir / "model.xml", "--against", "openvino")
    assert_one_line_error(result, 1, "no value given for input(s)")
