"""GenerateProposals-9 against OpenVINO's CPU plugin (no reference evaluate() in 2026.4): seeded sweeps over
batches, anchors, pre/post NMS counts, nms_threshold, min_size (with im_info scales of 3 and 4 values),
normalized and roi_num_type. Scores are distinct (OpenVINO orders equal scores with an unstable partial
sort). Boxes within a few f32 ulps (the plugin contracts multiply-adds), the rest exactly."""
import numpy as np
import pytest
from openvino import opset9
from oracle import assert_same, build, run_cpu

import irrun
from irrun.tools.check import check


@pytest.mark.parametrize("seed", range(12))
def test_generate_proposals(seed, tmp_path):
    rng = np.random.default_rng(2000 + seed)
    batches, anchors, height, width = (int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 6)),
                                       int(rng.integers(1, 6)))
    total = anchors * height * width
    pre = int(rng.integers(1, total + 5))
    post = int(rng.integers(1, pre + 3))
    normalized = seed % 3 == 0
    scale = 1.0 if normalized else 60.0
    info_width = 3 if seed % 2 else 4
    im_info = np.tile(np.array([[1.0, 1.0, 1.0, 1.0][:info_width]], np.float32), (batches, 1))
    im_info[:, :2] = [[scale * 0.9, scale * 1.2]]
    im_info[:, 2:] = rng.choice([0.5, 1.0, 2.0], size=(batches, info_width - 2))
    corner = rng.random((height, width, anchors, 2)).astype(np.float32) * scale
    inputs = {"im_info": im_info,
              "anchors": np.concatenate([corner, corner + rng.random(corner.shape).astype(np.float32) * scale * 0.5],
                                        axis=3).astype(np.float32),
              "deltas": (rng.standard_normal((batches, anchors * 4, height, width)) * 0.5).astype(np.float32),
              "scores": rng.random((batches, anchors, height, width)).astype(np.float32)}
    attrs = dict(min_size=float(rng.choice([0.0, 0.05 * scale, 0.2 * scale])),
                 nms_threshold=float(rng.choice([0.3, 0.5, 0.7, 1.0])), pre_nms_count=pre, post_nms_count=post,
                 normalized=normalized, roi_num_type=["i64", "i32"][seed % 2])
    built = build(lambda p: opset9.generate_proposals(p["im_info"], p["anchors"], p["deltas"], p["scores"], **attrs),
                  inputs, tmp_path)
    report = check(built.xml)
    assert not report.errors, "\n".join(report.lines())
    model = irrun.load(built.xml)
    assert model.outputs[0].shape == (None, 4)
    names, expected = run_cpu(built)
    context = f"seed {seed}: {batches}x{anchors}x{height}x{width} {attrs}"
    assert_same(model.run(built.feed_dict), expected, names, atol=[2e-5 * scale, None, None], context=context)
