"""oracle.run_cpu_many when the CPU plugin refuses one of the cases: the others still run together."""
import numpy as np
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
