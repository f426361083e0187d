"""Depthwise GroupConvolution -> activation fused into one step (irrun/engine/conv_activation.py), the activation
applied to each block of the convolution's output as depthwise_direct writes it: the fused plans against the
unfused ones (an observer reading outputs gets those: equal to the bit) and against OpenVINO's CPU plugin, where
the rewrite must not fuse, and what observers and profiles see."""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset1, opset4, opset5

import irrun
import oracle as O
from irrun.ops import depthwise_direct
from irrun.tools.profile import Profiler

FUSED = "activation per block"
ACTIVATIONS = {
    "relu": opset1.relu,
    "relu6": lambda x: opset1.clamp(x, 0.0, 6.0),
    "swish": opset4.swish,
    "swish-beta": lambda x: opset4.swish(x, O.constant(np.float32(0.75))),
    "hswish": opset4.hswish,
    "hsigmoid": opset5.hsigmoid,
    "sigmoid": opset1.sigmoid,
}
# (channels, size, kernel, stride): depthwise_direct with stride 1 and 2, and the channels-last kernel (few positions)
LAYERS = [(6, 13, 3, 1), (5, 12, 5, 2), (160, 7, 3, 1)]


def _model(tmp_path, activation, channels, size, kernel, stride, dtype=np.float32, extra_reader=False):
    rng = np.random.default_rng([channels, size, kernel, stride])
    x = (rng.standard_normal((2, channels, size, size)) * 3).astype(dtype)
    w = rng.standard_normal((channels, 1, 1, kernel, kernel)).astype(dtype)

    def graph(p):
        conv = opset1.group_convolution(p["x"], O.constant(w), strides=[stride] * 2, pads_begin=[kernel // 2] * 2,
                                        pads_end=[kernel // 2] * 2, dilations=[1, 1])
        act = ACTIVATIONS[activation](conv)
        return [act, conv] if extra_reader else act
    built = O.build(graph, {"x": x}, tmp_path)
    return built, x


def _fused_steps(model, x):
    return [line for line in str(model.plan({"x": x.shape})).splitlines() if FUSED in line]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: "x".join(map(str, layer)))
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_fused_equals_unfused_and_the_cpu_plugin(activation, layer, tmp_path, monkeypatch):
    monkeypatch.setattr(depthwise_direct, "BLOCK_BYTES", 64)  # a block per channel: the activation per block
    built, x = _model(tmp_path, activation, *layer)
    model = irrun.load(str(built.xml))
    special = x.copy()
    special[0, 0, 1, 1], special[1, -1, 2, 3], special[1, 0, 0, 0] = np.nan, np.inf, -np.inf
    for data in (x, special):
        fused = model.run([data])
        assert len(_fused_steps(model, data)) == 1
        unfused = model.run([data], observer=lambda node, outputs, seconds: None)
        for a, b in zip(fused.values(), unfused.values()):
            np.testing.assert_array_equal(a, b)
    fused = model.run([x])
    names, expected = O.run_cpu(built)  # (the plugin's ReLU maps NaN to 0, irrun's passes it on: finite data)
    O.assert_same(fused, expected, names, atol=4e-5 * layer[2] ** 2, context=activation)


@pytest.mark.parametrize("case", ["f16", "conv output read twice"])
def test_not_fused(case, tmp_path):
    built, x = _model(tmp_path, "relu", 6, 13, 3, 1, dtype=np.float16 if case == "f16" else np.float32,
                      extra_reader=case != "f16")
    model = irrun.load(str(built.xml))
    got = model.run([x])
    assert _fused_steps(model, x) == []
    names, expected = O.run_cpu(built)
    O.assert_same(got, expected, names, atol=1e-3, f16_ulp=case == "f16", context=case)


def test_observers_reading_outputs_see_both_layers_and_a_profile_sees_the_convolution(tmp_path):
    built, x = _model(tmp_path, "swish", 6, 13, 3, 1)
    model = irrun.load(str(built.xml))
    seen = []
    model.run([x], observer=lambda node, outputs, seconds: seen.append(node.ref.type))
    assert [t for t in seen if t in ("GroupConvolution", "Swish")] == ["GroupConvolution", "Swish"]
    profiler = Profiler(model)
    model.run([x], observer=profiler)
    report = profiler.report()
    assert "GroupConvolution-1" in report and "Swish-4" not in report
