"""The oracle's own harness: run_cpu_many when the CPU plugin refuses one of the cases (the others still run
together), and read_back against Core.read_model."""
import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset9

import oracle as O
from oracle import OracleUnsupported, build, run_cpu_many


def _cases():
    """Five Relu cases and, third, an RDFT with signal size -1, which the CPU plugin cannot compile."""
    rng = np.random.default_rng(3)
    builts = [build(lambda p: opset1.relu(p["x"]), {"x": rng.standard_normal((2, 3)).astype(np.float32)})
              for _ in range(5)]
    refused = build(lambda p: opset9.rdft(p["x"], O.constant(np.array([1], np.int64)),
                                          O.constant(np.array([-1], np.int64))), {"x": np.ones((3, 6), np.float32)})
    return builts[:2] + [refused] + builts[2:]


def test_run_cpu_many_keeps_a_refusal_in_its_place():
    builts = _cases()
    results = run_cpu_many(builts, keep_refusals=True)
    assert isinstance(results[2], OracleUnsupported)
    for k, built in enumerate(builts):
        if k != 2:
            names, (out,) = results[k]
            assert names == built.output_names
            np.testing.assert_array_equal(out, np.maximum(built.feeds[0], 0))
    with pytest.raises(OracleUnsupported):  # by default the refusal is raised, as run_cpu raises it
        run_cpu_many(builts[1:3])


def _serialized(model, directory):
    ov.save_model(model, str(directory / "again.xml"), compress_to_fp16=False)
    return (directory / "again.xml").read_bytes(), (directory / "again.bin").read_bytes()


def _types(ports):
    return [port.get_element_type() for port in ports]


@pytest.mark.parametrize("version", ["11", "10"])
def test_read_back_reads_what_core_reads(tmp_path, version):
    """oracle.read_back (the IR frontend, kept) gives the model Core.read_model gives. IR v11: the same file
    once saved again. IR v10, to which Core adds legacy inputs and outputs (an f16 input and output read as f32),
    goes through Core (whose added Converts are numbered anew at each read)."""
    def make(p):
        return [opset1.add(p["x"], O.constant(np.arange(6, dtype=np.float16).reshape(2, 3))), opset1.relu(p["i"])]

    built = build(make, {"x": np.ones((2, 3), np.float16), "i": np.ones(4, np.int64)}, tmp_path / "built",
                  patch=lambda xml: xml.replace('<net name="oracle" version="11">',
                                                f'<net name="oracle" version="{version}">'))
    by_core, by_frontend = O.core().read_model(str(built.xml)), O.read_back(built.xml)
    legacy = version == "10"
    assert _types(by_frontend.inputs) == _types(by_core.inputs) == [O.ov_type("f32" if legacy else "f16"),
                                                                    O.ov_type("i64")]
    assert _types(by_frontend.outputs) == _types(by_core.outputs) == [O.ov_type("f32" if legacy else "f16"),
                                                                      O.ov_type("i32" if legacy else "i64")]
    if not legacy:
        assert _serialized(by_frontend, tmp_path) == _serialized(by_core, tmp_path)
