"""The worked examples of the MaxPool-8 spec page (Example 1 with its erratum fixed), hand-computed
AdaptiveMaxPool-8 cases from its window formula, and ROIPooling max per the DirectML formula."""
import numpy as np
import pytest

import irrun
from irbuild import IRBuilder

X3 = [[[[-1, 2, 3], [4, 5, -6], [-7, 8, 9]]]]


def run_maxpool(tmp_path, data, opset="opset8", **attrs):
    data = np.asarray(data, np.float32)
    b = IRBuilder()
    p = b.parameter(data.shape, name="x")
    model = irrun.load(_single(b, p, "MaxPool", opset, attrs, tmp_path))
    return list(model.run([data]).values())


def _single(b, p, type_, opset, attrs, tmp_path, extra_sources=()):
    # Port dims of outputs are not used by irrun's runtime (it infers them), so write the input's.
    dims = b.layers[p].outputs[0][0]
    outputs = [(dims, "f32"), (dims, attrs.get("index_element_type", "i64"))]
    if type_ == "MaxPool" and opset == "opset1":
        outputs = outputs[:1]
    layer = b.op(type_, opset, [(p, 0), *extra_sources], attrs, outputs)
    for i in range(len(outputs)):
        b.result((layer, i))
    return b.save(tmp_path)


def base(**kw):
    attrs = dict(strides="1,1", pads_begin="0,0", pads_end="0,0", kernel="2,2", rounding_type="floor",
                 auto_pad="explicit")
    attrs.update(kw)
    return attrs


def test_example1_explicit_with_erratum(tmp_path):
    values, indices = run_maxpool(tmp_path, X3, **base(pads_begin="1,1", pads_end="1,1"))
    # The spec prints -6 (index 5) at [1][3]; that window holds 3 and -6, so it is 3 (index 2).
    np.testing.assert_array_equal(values[0, 0], [[-1, 2, 3, 3], [4, 5, 5, 3], [4, 8, 9, 9], [-7, 8, 9, 9]])
    np.testing.assert_array_equal(indices[0, 0], [[0, 1, 2, 2], [3, 4, 4, 2], [3, 7, 8, 8], [6, 7, 8, 8]])
    assert indices.dtype == np.int64


def test_example2_valid_1d(tmp_path):
    values, indices = run_maxpool(tmp_path, [[[-1, 2, 3, 5, -7, 9, 1]]], strides="1", kernel="3",
                                  pads_begin="0", pads_end="0", rounding_type="floor", auto_pad="valid")
    np.testing.assert_array_equal(values, [[[3, 5, 5, 9, 9]]])
    np.testing.assert_array_equal(indices, [[[2, 3, 3, 5, 5]]])


def test_example3_same_lower(tmp_path):
    values, indices = run_maxpool(tmp_path, X3, **base(auto_pad="same_lower"))
    np.testing.assert_array_equal(values[0, 0], [[-1, 2, 3], [4, 5, 5], [4, 8, 9]])
    np.testing.assert_array_equal(indices[0, 0], [[0, 1, 2], [3, 4, 4], [3, 7, 8]])


def test_example4_same_upper_two_channels(tmp_path):
    data = [[[[-1, 2, 3], [4, 5, -6], [-7, 8, 9]], [[2, -1, 5], [6, -7, 1], [8, 2, -3]]]]
    values, indices = run_maxpool(tmp_path, data, **base(auto_pad="same_upper"))
    np.testing.assert_array_equal(values[0], [[[5, 5, 3], [8, 9, 9], [8, 9, 9]], [[6, 5, 5], [8, 2, 1], [8, 2, -3]]])
    np.testing.assert_array_equal(indices[0], [[[4, 4, 2], [7, 8, 8], [7, 8, 8]],
                                               [[12, 11, 11], [15, 16, 14], [15, 16, 17]]])


def test_example5_valid_ceil(tmp_path):
    values, indices = run_maxpool(tmp_path, X3, **base(strides="2,2", rounding_type="ceil", auto_pad="valid"))
    np.testing.assert_array_equal(values[0, 0], [[5, 3], [8, 9]])
    np.testing.assert_array_equal(indices[0, 0], [[4, 2], [7, 8]])


def test_example6_dilated(tmp_path):
    data = [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]]
    values, indices = run_maxpool(tmp_path, data, **base(dilations="2,2", pads_begin="1,1", pads_end="1,1"))
    np.testing.assert_array_equal(values[0, 0], [[5, 6, 5], [8, 9, 8], [5, 6, 5]])
    np.testing.assert_array_equal(indices[0, 0], [[4, 5, 4], [7, 8, 7], [4, 5, 4]])


def test_example7_axis2(tmp_path):
    data = [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[10, 11, 12], [13, 14, 15], [16, 17, 18]]]]
    values, indices = run_maxpool(tmp_path, data, **base(dilations="1,1", axis="2"))
    np.testing.assert_array_equal(values[0], [[[5, 6], [8, 9]], [[14, 15], [17, 18]]])
    np.testing.assert_array_equal(indices[0], [[[4, 5], [7, 8]], [[4, 5], [7, 8]]])


def test_xml_example_output_sizes(tmp_path):
    """The spec's three XML examples on [1, 3, 32, 32]: same_upper 32, explicit pads 1 -> 17, valid 16."""
    data = np.zeros((1, 3, 32, 32), np.float32)
    for auto_pad, size in (("same_upper", 16), ("explicit", 17), ("valid", 16)):
        values, _ = run_maxpool(tmp_path / auto_pad, data, **base(strides="2,2", pads_begin="1,1", pads_end="1,1",
                                                                    auto_pad=auto_pad))
        assert values.shape == (1, 3, size, size)
    # The spec's first XML example claims 32x32 for same_upper with stride 2; OpenVINO gives ceil(32/2) = 16.


def test_maxpool1_has_one_output(tmp_path):
    (values,) = run_maxpool(tmp_path, X3, opset="opset1", **base(pads_begin="1,1", pads_end="1,1"))
    assert values.shape == (1, 1, 4, 4)


def run_adaptive(tmp_path, data, out_size, index_type="i64"):
    data = np.asarray(data, np.float32)
    b = IRBuilder()
    p = b.parameter(data.shape, name="x")
    size = b.const(np.array(out_size, np.int64))
    model = irrun.load(_single(b, p, "AdaptiveMaxPool", "opset8", {"index_element_type": index_type}, tmp_path,
                               [(size, 0)]))
    return list(model.run([data]).values())


def test_adaptive_1d_overlapping_windows(tmp_path):
    # in 5 -> out 3: windows [0, 2), [1, 4), [3, 5)
    values, indices = run_adaptive(tmp_path, [[[1, 7, 3, 7, 2]]], [3])
    np.testing.assert_array_equal(values, [[[7, 7, 7]]])
    np.testing.assert_array_equal(indices, [[[1, 1, 3]]])


def test_adaptive_2d_indices_are_spatial_per_channel(tmp_path):
    data = np.arange(2 * 4 * 4, dtype=np.float32).reshape(1, 2, 4, 4)
    values, indices = run_adaptive(tmp_path, data, [2, 2], "i32")
    np.testing.assert_array_equal(values[0, 0], [[5, 7], [13, 15]])
    np.testing.assert_array_equal(values[0, 1], [[21, 23], [29, 31]])
    np.testing.assert_array_equal(indices[0, 1], [[5, 7], [13, 15]])  # not offset by the channel
    assert indices.dtype == np.int32


def test_adaptive_upsampling_and_ties(tmp_path):
    # in 2x2 -> out 3x3: windows [0,1), [0,2), [1,2) per axis; ties go to the first element
    values, indices = run_adaptive(tmp_path, [[[[4, 4], [1, 4]]]], [3, 3])
    np.testing.assert_array_equal(values[0, 0], [[4, 4, 4], [4, 4, 4], [1, 4, 4]])
    np.testing.assert_array_equal(indices[0, 0], [[0, 0, 1], [0, 0, 1], [2, 3, 3]])


def roi_max_by_hand(fm, roi, pooled, scale):
    """The DirectML formulas, written out with integer arithmetic."""
    _, x1, y1, x2, y2 = roi
    x1, y1, x2, y2 = (int(np.sign(v * scale) * np.floor(abs(v * scale) + 0.5)) for v in (x1, y1, x2, y2))
    height, width = y2 - y1 + 1, x2 - x1 + 1
    out = np.zeros((fm.shape[1], *pooled), np.float32)
    for py in range(pooled[0]):
        for px in range(pooled[1]):
            sy = min(max((py * height) // pooled[0] + y1, 0), fm.shape[2])
            sx = min(max((px * width) // pooled[1] + x1, 0), fm.shape[3])
            ey = min(max(((py + 1) * height + pooled[0] - 1) // pooled[0] + y1, 0), fm.shape[2])
            ex = min(max(((px + 1) * width + pooled[1] - 1) // pooled[1] + x1, 0), fm.shape[3])
            if ey > sy and ex > sx:
                out[:, py, px] = fm[int(roi[0]), :, sy:ey, sx:ex].max(axis=(1, 2))
    return out


@pytest.mark.parametrize("roi,pooled,scale", [
    ((0, 0, 0, 5, 5), (2, 2), 1.0),
    ((0, 1, 2, 6, 7), (3, 2), 1.0),
    ((1, 2, 2, 12, 9), (2, 3), 0.5),
    ((0, -3, -2, 4, 3), (2, 2), 1.0),      # partly outside: clamped
    ((1, 3, 3, 3, 3), (2, 2), 1.0),        # a single pixel repeated
    ((0, 5, 5, 20, 20), (4, 4), 1.0),      # overhanging the map: empty bins give 0
])
def test_roi_pooling_max_matches_directml_formula(tmp_path, roi, pooled, scale):
    rng = np.random.default_rng(7)
    fm = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    b = IRBuilder()
    p = b.parameter(fm.shape, name="fm")
    r = b.const(np.array([roi], np.float32))
    layer = b.op("ROIPooling", "opset2", [(p, 0), (r, 0)],
                 {"pooled_h": pooled[0], "pooled_w": pooled[1], "spatial_scale": scale, "method": "max"},
                 [([1, 3, *pooled], "f32")])
    b.result((layer, 0))
    (out,) = irrun.load(b.save(tmp_path)).run([fm]).values()
    np.testing.assert_array_equal(out[0], roi_max_by_hand(fm, roi, pooled, scale))
