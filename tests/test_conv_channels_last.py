"""Convolutions that hand on channels-last views (irrun/ops/depthwise_nhwc.py): the depthwise einsum's result
and the 1x1 product on such a view, against the plain definition of tests/test_conv_fast_paths.py, and a
MobileNet/ConvNeXt-style chain (depthwise -> activation -> 1x1 -> squeeze-excite -> residual -> depthwise ->
Transpose -> LayerNorm) against OpenVINO's CPU plugin, with and without the channels-last kernels."""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset1, opset6, opset8

import oracle as O
from irrun.ops import convolution as C
from irrun.ops import depthwise_nhwc
from test_conv_fast_paths import plain_conv


def channels_last(x):
    """x [N, C, *S] as a view of a C-contiguous [N, *S, C] copy."""
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)


def values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-20, 20, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32])
@pytest.mark.parametrize("spatial", [(7,), (5, 6), (3, 4, 2)])
def test_pointwise_on_a_channels_last_view(spatial, dtype):
    rng = np.random.default_rng([len(spatial), np.dtype(dtype).num])
    for n in (1, 2):
        x = channels_last(values(rng, (n, 6, *spatial), dtype))
        w = values(rng, (1, 5, 6, *(1,) * len(spatial)), dtype)
        ones, zeros = [1] * len(spatial), [0] * len(spatial)
        assert depthwise_nhwc.pointwise_on_channels_last(x, w, ones, zeros, list(spatial))
        got = C.conv_forward(x, w, ones, ones, zeros, list(spatial))
        assert depthwise_nhwc.channels_last_view(got)
        want = plain_conv(x, w, ones, ones, zeros, list(spatial))
        if x.dtype.kind == "f":
            tol = 1e-12 if x.dtype == np.float64 else 1e-5
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(got, want)
    # channels-first input, strides, pads or groups: the usual kernels
    x = values(rng, (1, 6, *spatial), dtype)
    assert not depthwise_nhwc.pointwise_on_channels_last(x, w, ones, zeros, list(spatial))
    view = channels_last(x)
    assert not depthwise_nhwc.pointwise_on_channels_last(view, w, [2] * len(spatial), zeros, list(spatial))
    assert not depthwise_nhwc.pointwise_on_channels_last(view, w, ones, [1] * len(spatial), list(spatial))
    assert not depthwise_nhwc.pointwise_on_channels_last(view, w.reshape(5, 1, 6, *w.shape[3:]), ones, zeros,
                                                         list(spatial))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_depthwise_reads_and_returns_channels_last_views(dtype, monkeypatch):
    """The depthwise einsum on channels-first and channels-last inputs (strides, dilations, negative pads)
    gives the plain definition's values and a channels-last view."""
    monkeypatch.setattr(depthwise_nhwc, "usable", lambda groups, out_per_group, *sizes: out_per_group == 1)
    rng = np.random.default_rng(np.dtype(dtype).num)
    for strides, dil, begins, ends in (([1, 1], [1, 1], [1, 1], [1, 1]), ([2, 1], [1, 2], [2, -1], [0, 1])):
        x = values(rng, (2, 9, 11, 10), dtype)
        w = values(rng, (9, 1, 1, 3, 3), dtype)
        out, begins_used, _ = C.forward_geometry(x.shape[2:], (3, 3), strides, dil, begins, ends, "explicit")
        want = plain_conv(x, w, strides, dil, begins_used, out)
        for source in (x, channels_last(x)):
            got = C.conv_forward(source, w, strides, dil, begins_used, out)
            assert depthwise_nhwc.channels_last_view(got)
            if x.dtype.kind == "f":
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
            else:
                np.testing.assert_array_equal(got, want)


def chain(p, rng):
    """depthwise 3x3 -> Relu -> 1x1 -> HSwish -> squeeze-excite (ReduceMean, 1x1, HSigmoid, Multiply) ->
    + residual -> depthwise 5x5 stride 2 -> Transpose to channels-last -> LayerNorm (MVN over C); the first
    depthwise output is also a model output."""
    channels = 128

    def weights(*shape):
        return O.constant((rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32))

    dw = opset1.group_convolution(p["x"], weights(channels, 1, 1, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1])
    act = opset1.relu(dw)
    pw = opset8.hswish(opset1.convolution(act, weights(channels, channels, 1, 1), [1, 1], [0, 0], [0, 0], [1, 1]))
    pooled = opset1.reduce_mean(pw, O.constant(np.int64([2, 3])), True)
    scale = opset8.hsigmoid(opset1.convolution(pooled, weights(channels, channels, 1, 1), [1, 1], [0, 0], [0, 0],
                                               [1, 1]))
    block = opset1.add(opset1.multiply(pw, scale), p["x"])
    down = opset1.group_convolution(block, weights(channels, 1, 1, 5, 5), [2, 2], [2, 2], [2, 2], [1, 1])
    nhwc = opset1.transpose(down, O.constant(np.int64([0, 2, 3, 1])))
    norm = opset6.mvn(nhwc, O.constant(np.int64([3])), True, 1e-6, "inside_sqrt")
    return [dw, norm]


@pytest.mark.parametrize("kernels", ["channels-last", "channels-first"])
def test_mobile_block_chain_matches_the_cpu_plugin(kernels, tmp_path, monkeypatch):
    if kernels == "channels-first":
        monkeypatch.setattr(depthwise_nhwc, "usable", lambda *args: False)
    taken = []

    def spy(name):
        kernel = getattr(depthwise_nhwc, name)

        def recorded(*args):
            taken.append(name)
            return kernel(*args)
        monkeypatch.setattr(depthwise_nhwc, name, recorded)

    spy("depthwise_channels_last")
    spy("pointwise_channels_last")
    x = np.random.default_rng(3).standard_normal((2, 128, 12, 12)).astype(np.float32)
    built = O.build(lambda p: chain(p, np.random.default_rng(4)), {"x": x}, tmp_path)
    names, expected = O.run_cpu(built)
    O.assert_same(O.run_irrun(built), expected, names, atol=2e-5, context=kernels)
    # channels-last: both depthwise layers, and the block's 1x1 layer on the Relu's channels-last view (the
    # squeeze-excite's 1x1 reads [N, C, 1, 1], contiguous in either layout)
    assert sorted(taken) == ([] if kernels == "channels-first" else
                             ["depthwise_channels_last"] * 2 + ["pointwise_channels_last"]), taken


def test_activations_keep_a_permuted_view_in_its_memory_order():
    """Unary ops on a channels-last view compute in memory order (the same values) and hand on the same kind
    of view; broadcast or sliced views are not permuted dense arrays and compute as before."""
    from irrun.ops import activation
    from irrun.ops.memory_order import memory_order
    from irrun.ops.registry import TensorInfo
    from irrun.ir.types import element_type

    x = np.random.default_rng(2).standard_normal((2, 8, 5, 3)).astype(np.float32)
    view = channels_last(x)
    assert memory_order(view) == [0, 2, 3, 1] and memory_order(x) is None
    assert memory_order(np.broadcast_to(x[:, :1], x.shape)) is None and memory_order(x[:, :, ::2]) is None
    info = [TensorInfo(x.shape, element_type("f32"))]
    for op in (kind({}, None) for kind in (activation.Relu, activation.HSwish, activation.Gelu7, activation.Sigmoid)):
        got = op.run([view], info, info)[0]
        np.testing.assert_array_equal(got, op.run([x], info, info)[0])
        assert depthwise_nhwc.channels_last_view(got), type(op).__name__
