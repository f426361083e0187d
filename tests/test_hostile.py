"""Hostile and broken inputs: every failure is an IRError with one line; nothing is expanded, leaked
or exhausted; the CLI never prints a traceback."""
import functools
import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import irrun
from irbuild import IRBuilder
from irrun.cli.main import cli
from irrun.errors import GraphError, InputError, MemoryBudgetError, ParseError, WeightsError

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
import fuzz  # noqa: E402
import fuzz_corpus as fuzz_corpus_tool  # noqa: E402

MODELS = Path(__file__).parents[1] / "models"
REGRESSIONS = Path(__file__).parent / "data" / "fuzz_regressions"


def maxpool_ir(tmp_path, **data):
    b = IRBuilder()
    p = b.parameter([1, 1, 4, 4], name="x")
    attrs = dict(strides="1,1", pads_begin="0,0", pads_end="0,0", kernel="2,2")
    attrs.update(data)
    layer = b.op("MaxPool", "opset8", [(p, 0)], attrs, [([1, 1, 3, 3], "f32"), ([1, 1, 3, 3], "i64")])
    b.result((layer, 0))
    b.result((layer, 1))
    return b.save(tmp_path)


def const_ir(tmp_path, array, **overrides):
    b = IRBuilder()
    c = b.const(array)
    b.layers[c].attrs.update({k: str(v) for k, v in overrides.items()})
    b.result((c, 0))
    return b.save(tmp_path)


def expect_error(path, kind, *fragments, **load_args):
    with pytest.raises(kind) as info:
        model = irrun.load(path, **load_args)
        model.run([])
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


# ------------------------------------------------------------------ XML

def write(tmp_path, text, name="model.xml"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_external_entity_is_refused_and_never_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    xml = (f'<?xml version="1.0"?><!DOCTYPE net [<!ENTITY x SYSTEM "file://{secret}">]>'
           '<net name="&x;" version="11"><layers/></net>')
    message = expect_error(write(tmp_path, xml), ParseError, "DOCTYPE")
    assert "TOPSECRET" not in message


def test_billion_laughs_is_refused_without_expansion(tmp_path):
    entities = '<!ENTITY a0 "lol">' + "".join(f'<!ENTITY a{i} "{("&a%d;" % (i - 1)) * 10}">' for i in range(1, 10))
    xml = f'<?xml version="1.0"?><!DOCTYPE net [{entities}]><net name="&a9;" version="11"><layers/></net>'
    expect_error(write(tmp_path, xml), ParseError, "DOCTYPE")


def test_network_dtd_is_refused(tmp_path):
    xml = '<?xml version="1.0"?><!DOCTYPE net SYSTEM "http://127.0.0.1:9/x.dtd"><net version="11"><layers/></net>'
    expect_error(write(tmp_path, xml), ParseError, "DOCTYPE")


@pytest.mark.parametrize("content,fragment", [
    (b"", "empty"),
    (b"   \n", "empty"),
    (b'<?xml version="1.0"?><net version="11"><layers>', "not well-formed"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not well-formed"),
    ('<?xml version="1.0" encoding="utf-8"?><net name="\xe9" version="11"><layers/></net>'.encode("latin-1"),
     "not well-formed"),
    (b'<net version="12"><layers/></net>', "IR version 12"),
    (b'<net version="x"><layers/></net>', "IR version"),
    (b'<model version="11"/>', "<net>"),
    (b'<net version="11"></net>', "<layers>"),
])
def test_broken_xml_files(tmp_path, content, fragment):
    expect_error(write(tmp_path, content), ParseError, fragment)


def test_excessive_depth_is_refused(tmp_path):
    xml = '<net version="11"><layers>' + "<a>" * 100000 + "</a>" * 100000 + "</layers></net>"
    expect_error(write(tmp_path, xml), ParseError, "not well-formed")


def test_missing_model_file_and_directory(tmp_path):
    expect_error(tmp_path / "nope.xml", ParseError, "cannot read")
    expect_error(tmp_path, ParseError)


# ------------------------------------------------------------------ weights

def test_missing_bin_names_the_layer(tmp_path):
    path = const_ir(tmp_path, np.ones(4, np.float32))
    path.with_suffix(".bin").unlink()
    expect_error(path, WeightsError, "layer 0", "Const", "cannot read the weights file")


def test_short_bin_names_the_layer(tmp_path):
    path = const_ir(tmp_path, np.ones(4, np.float32))
    path.with_suffix(".bin").write_bytes(b"\0" * 8)
    expect_error(path, WeightsError, "layer 0", "past the end")


@pytest.mark.parametrize("field,value,fragment", [
    ("offset", "-1", "below the minimum"),
    ("size", "-16", "below the minimum"),
    ("offset", str(2 ** 64), "past the end"),
    ("size", "4", "too small"),
    ("shape", "1000000000000,1000000000000", "too small"),
    ("element_type", "string", "holds 1065353216 strings"),  # f32 1.0 read as a string count
])
def test_const_fields_are_checked_with_python_integers(tmp_path, field, value, fragment):
    expect_error(const_ir(tmp_path, np.ones(4, np.float32), **{field: value}), irrun.IRError, "layer 0", fragment)


def test_const_over_the_budget_is_refused_before_reading(tmp_path):
    path = const_ir(tmp_path, np.ones(1 << 16, np.float32))
    expect_error(path, MemoryBudgetError, "layer 0", "memory budget", max_memory=1 << 16)


# ------------------------------------------------------------------ memory budget

def test_huge_intermediate_fails_at_once_naming_the_layer(tmp_path):
    b = IRBuilder()
    p = b.parameter([1, 1, 4, 4], name="x")
    layer = b.op("MaxPool", "opset8", [(p, 0)], dict(strides="1,1", pads_begin="1000000,1000000",
                                                     pads_end="1000000,1000000", kernel="1,1"),
                 [([1, 1, 3, 3], "f32"), ([1, 1, 3, 3], "i64")])
    b.result((layer, 0))
    model = irrun.load(b.save(tmp_path))
    with pytest.raises(MemoryBudgetError) as info:
        model.run([np.zeros((1, 1, 4, 4), np.float32)])
    assert "layer 1" in str(info.value) and "MaxPool-8" in str(info.value)


def test_huge_parameter_dims_fail_at_once(tmp_path):
    b = IRBuilder()
    p = b.parameter([1, 1, 10 ** 12, 10 ** 12], name="x")
    layer = b.op("MaxPool", "opset1", [(p, 0)], dict(strides="1,1", pads_begin="0,0", pads_end="0,0", kernel="1,1"),
                 [([1, 1, 10 ** 12, 10 ** 12], "f32")])
    b.result((layer, 0))
    model = irrun.load(b.save(tmp_path))  # nothing is allocated at load
    with pytest.raises(InputError):
        model.run([np.zeros((1, 1, 2, 2), np.float32)])


# ------------------------------------------------------------------ inputs

def test_inputs_wrong_shape_dtype_and_rank(tmp_path):
    model = irrun.load(maxpool_ir(tmp_path))
    with pytest.raises(InputError, match=r"shape \[1, 1, 5, 4\], expected 1,1,4,4"):
        model.run([np.zeros((1, 1, 5, 4), np.float32)])
    with pytest.raises(InputError, match="rank|shape"):
        model.run([np.zeros((4, 4), np.float32)])
    with pytest.raises(InputError, match="dtype float64, expected f32"):
        model.run([np.zeros((1, 1, 4, 4), np.float64)])
    model.run([np.zeros((1, 1, 4, 4), np.float16)])  # lossless conversions are made
    with pytest.raises(InputError, match="no model input is named"):
        model.run({"y": np.zeros((1, 1, 4, 4), np.float32)})
    with pytest.raises(InputError, match="missing"):
        model.run({})


def test_cli_input_files_never_unpickle(tmp_path):
    model = maxpool_ir(tmp_path)
    pickled = tmp_path / "evil.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    garbage = write(tmp_path, b"\x00garbage" * 10, "garbage.npy")
    for path in (pickled, garbage, tmp_path / "missing.npy"):
        result = CliRunner().invoke(cli, [str(model), "-i", str(path)])
        assert result.exit_code == 1
        assert "Traceback" not in result.output and result.output.count("\n") == 1, result.output


# ------------------------------------------------------------------ graph

def test_graph_defects(tmp_path):
    text = maxpool_ir(tmp_path).read_text()
    cases = {
        "cycle": (text.replace('from-layer="0" from-port="0" to-layer="1"', 'from-layer="1" from-port="1" to-layer="1"'),
                  GraphError, "cycle"),
        # OpenVINO ignores an edge into a missing layer and refuses the input it left unfed: that comes first
        "dangling": (text.replace('to-layer="2"', 'to-layer="9"'), GraphError, "not connected"),
        "from nowhere": (text.replace('from-layer="0" from-port="0"', 'from-layer="9" from-port="0"'), GraphError,
                         "missing layer"),
        "bad port": (text.replace('from-port="1" to-layer="2"', 'from-port="7" to-layer="2"'), GraphError, "port 7"),
        "no results": (text.replace('type="Result"', 'type="Relu"'), GraphError, "no Result"),
    }
    for name, (xml, kind, fragment) in cases.items():
        directory = tmp_path / name.replace(" ", "_")
        directory.mkdir()
        expect_error(write(directory, xml), kind, fragment)


def test_long_chain_has_no_recursion_limit(tmp_path):
    """A 5,000-layer chain (5 times Python's recursion limit, which irrun never raises) loads and runs."""
    length = 5_000
    lines = ['<?xml version="1.0"?><net name="chain" version="11"><layers>',
             '<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1,1,2" element_type="f32"/>'
             '<output><port id="0" precision="FP32"><dim>1</dim><dim>1</dim><dim>2</dim></port></output></layer>']
    port = '<port id="{}" precision="FP32"><dim>1</dim><dim>1</dim><dim>2</dim></port>'
    for i in range(1, length):
        lines.append(f'<layer id="{i}" name="p{i}" type="MaxPool" version="opset1"><data strides="1" pads_begin="0" '
                     f'pads_end="0" kernel="1"/><input>{port.format(0)}</input><output>{port.format(1)}</output></layer>')
    lines.append(f'<layer id="{length}" name="out" type="Result" version="opset1"><input>{port.format(0)}</input></layer>')
    lines.append("</layers><edges>")
    lines += [f'<edge from-layer="{i}" from-port="{0 if i == 0 else 1}" to-layer="{i + 1}" to-port="0"/>'
              for i in range(length)]
    lines.append("</edges></net>")
    path = write(tmp_path, "".join(lines))
    out = irrun.load(path).run([np.array([[[3.0, -1.0]]], np.float32)])
    np.testing.assert_array_equal(next(iter(out.values())), [[[3.0, -1.0]]])


# ------------------------------------------------------------------ fuzzing

# The fuzz run's cases are FUZZ_CASES mutations of the small models in models/ (tools/fuzz_corpus.py draws them,
# in chunks that parallel workers share); the suite runs those of them that take every branch of irrun the whole
# run takes, twice over (tests/data/fuzz_corpus.json, which that tool writes). Any half of the 2,520 cases missed
# 148-185 of the branches; these cases miss none, at a twelfth of the CPU time.
@functools.lru_cache(maxsize=1)
def fuzz_corpus():
    return json.loads(fuzz_corpus_tool.CORPUS_FILE.read_text())


@functools.lru_cache(maxsize=1)
def small_model_seeds():
    return fuzz_corpus_tool.small_model_seeds()


def test_the_fuzz_corpus_keeps_every_chunks_cases_in_order():
    corpus = fuzz_corpus()
    assert len(corpus["chunks"]) == fuzz_corpus_tool.FUZZ_CHUNKS and corpus["fuzz_cases"] == fuzz_corpus_tool.FUZZ_CASES
    per_chunk = fuzz_corpus_tool.FUZZ_CASES // fuzz_corpus_tool.FUZZ_CHUNKS
    for chunk in corpus["chunks"]:
        assert chunk["cases"] == sorted(set(chunk["cases"])) and all(0 <= c < per_chunk for c in chunk["cases"])
    assert sum(len(chunk["cases"]) for chunk in corpus["chunks"]) >= 100


@pytest.mark.parametrize("chunk", range(fuzz_corpus_tool.FUZZ_CHUNKS))
def test_fuzzed_models_give_success_or_irerror(tmp_path, chunk):
    seeds = small_model_seeds()
    assert len(seeds) >= 10
    kept = fuzz_corpus()["chunks"][chunk]
    cases = list(fuzz_corpus_tool.chunk_cases(chunk, seeds))
    assert fuzz_corpus_tool.chunk_digest(cases) == kept["digest"], (
        "the fuzz run's cases changed (tools/fuzz.py's mutations or the seeds in models/): run "
        "tools/fuzz_corpus.py to choose the cases again")
    outcomes = {}
    for case, kind, xml_bytes, bin_bytes in (cases[i] for i in kept["cases"]):
        try:
            outcome = fuzz.run_case(xml_bytes, bin_bytes, tmp_path, fuzz_corpus_tool.inputs_rng(chunk, case))
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"chunk {chunk} case {case} ({kind}): {type(exc).__name__}: {exc}")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert outcomes.get("ok") and outcomes.get("irerror")  # the mutations reach both outcomes


FUZZ_NEW_SEED_CASES = 60
# The seeds beyond models/: every weight format of the LLM exports, stateful and stateless decoders, seq2seq
# encoders and decoders (run on their recorded steps), compressed MatMul blocks, string-typed IRs, the tokenizer
# corpus (tokenizers, detokenizers, single extension ops, run on strings: tools/fuzz_strings.py).
NEW_SEED_DIRS = [directory for directory in fuzz.SEED_DIRS if directory != MODELS and directory.is_dir()]


def test_fuzzed_new_seeds_give_success_or_irerror(tmp_path):
    seeds = fuzz.load_seeds(NEW_SEED_DIRS)
    assert any(seed.feeds for seed in seeds) and any(b"string" in seed.xml for seed in seeds)
    assert any(b'version="extension"' in seed.xml and seed.feeds for seed in seeds)  # the tokenizer corpus
    rng, nprng = random.Random(20261126), np.random.default_rng(20261126)
    outcomes = {}
    for case in range(FUZZ_NEW_SEED_CASES):
        seed = rng.choice(seeds)
        xml_bytes, bin_bytes, feeds, kind = fuzz.make_case(seed, rng)
        try:
            outcome = fuzz.run_case(xml_bytes, bin_bytes, tmp_path, nprng, feeds)
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"case {case} ({kind} of {seed.name}): {type(exc).__name__}: {exc}")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert outcomes.get("ok") and outcomes.get("irerror")


@pytest.mark.parametrize("case", sorted(p.name for p in REGRESSIONS.iterdir()))
def test_fuzz_regressions(case, tmp_path):
    directory = REGRESSIONS / case
    feeds = fuzz.read_feeds(directory / "feeds.npz") if (directory / "feeds.npz").exists() else None
    fuzz.run_case((directory / "model.xml").read_bytes(), (directory / "model.bin").read_bytes(), tmp_path,
                  np.random.default_rng(0), feeds)


def test_cli_never_prints_a_traceback(tmp_path):
    bad = write(tmp_path, b"<net")
    result = CliRunner().invoke(cli, [str(bad)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith("irrun: error: ") and result.output.count("\n") == 1
    result = CliRunner().invoke(cli, [str(bad), "--debug"])
    assert result.exit_code == 1 and "Traceback" in result.output


def test_only_the_model_and_its_weights_are_opened(tmp_path, monkeypatch):
    import builtins
    import io
    import os

    opened = []
    real_open, real_os_open = builtins.open, os.open

    def recording_open(file, *args, **kwargs):
        opened.append(os.path.abspath(os.fspath(file)))
        return real_open(file, *args, **kwargs)

    def recording_os_open(path, *args, **kwargs):
        opened.append(os.path.abspath(os.fspath(path)))
        return real_os_open(path, *args, **kwargs)

    model_dir = MODELS / "torch_resnet"
    x = np.load(model_dir / "input.npy")
    monkeypatch.setattr(builtins, "open", recording_open)
    monkeypatch.setattr(io, "open", recording_open)
    monkeypatch.setattr(os, "open", recording_os_open)
    model = irrun.load(model_dir / "model.xml")
    model.run([x])
    irrun.check(model_dir / "model.xml")
    allowed = {str((model_dir / "model.xml").resolve()), str((model_dir / "model.bin").resolve())}
    # the thread policy reads the machine's load and finds this process's OpenBLAS (engine/blas_threads.py,
    # ops/blas.py): the kernel's files about this process and machine, never a user's
    machine_load = {path for path in opened if path == "/proc/loadavg" or path.startswith("/proc/self/")}
    assert opened and set(opened) - machine_load <= allowed, set(opened) - machine_load - allowed
