"""The ExperimentalDetectron* ops of opset6 against OpenVINO's CPU plugin (no reference evaluate() in 2026.4).

openvino's Python API has no factories for them, so each test writes the IR by hand (tests/irbuild.py),
lets OpenVINO read it and save it back (which writes the output shapes its own inference gives), and runs
that file in both. Box coordinates are compared with a few f32 ulps of tolerance (the plugin's compiler
contracts some multiply-adds); scores, classes and the selection order exactly."""
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from irbuild import IRBuilder
from oracle import Built, _any_name, assert_same, core, run_cpu, type_name

import irrun
from irrun.tools.check import check

BOX_ATOL = 2e-5


def built_from(builder: IRBuilder, feeds: dict, directory: Path) -> Built:
    raw = builder.save(directory, "raw")
    xml = directory / "model.xml"
    ov.save_model(core().read_model(str(raw)), str(xml), compress_to_fp16=False)
    back = core().read_model(str(xml))
    names = [_any_name(o, i) for i, o in enumerate(back.inputs)]
    return Built(xml=xml, model=back, input_names=names, feeds=[feeds[n] for n in names],
                 output_names=[_any_name(o, i) for i, o in enumerate(back.outputs)],
                 output_types=[type_name(o.get_element_type()) for o in back.outputs])


def verify(builder, feeds, directory, context, atol=None):
    built = built_from(builder, feeds, directory)
    report = check(built.xml)
    assert not report.errors, f"{context}\n" + "\n".join(report.lines())
    model = irrun.load(built.xml)
    names, expected = run_cpu(built)
    assert [o.shape for o in model.outputs] == [tuple(e.shape) for e in expected], context
    got = model.run(built.feed_dict)
    assert_same(got, expected, names, atol=atol, context=context)
    return got, expected


def boxes(rng, count, low=0.0, span=60.0, size=30.0):
    corner = rng.random((count, 2)).astype(np.float32) * span + low
    return np.concatenate([corner, corner + rng.random((count, 2)).astype(np.float32) * size], 1).astype(np.float32)


# ---------------------------------------------------------------- TopKROIs

@pytest.mark.parametrize("seed", range(6))
def test_topk_rois(seed, tmp_path):
    rng = np.random.default_rng(100 + seed)
    count = int(rng.integers(1, 12))
    max_rois = int(rng.integers(0, count + 1))  # beyond the ROI count the CPU plugin leaves memory unwritten
    probs = rng.random(count).astype(np.float32)
    if seed % 2:
        probs = np.round(probs * 3).astype(np.float32) / 3  # ties: OpenVINO keeps index order
    b = IRBuilder()
    r, p = b.parameter([count, 4], name="rois"), b.parameter([count], name="probs")
    t = b.op("ExperimentalDetectronTopKROIs", "opset6", [(r, 0), (p, 0)], {"max_rois": max_rois},
             [([max_rois, 4], "f32")])
    b.result((t, 0), "top")
    verify(b, {"rois": boxes(rng, count), "probs": probs}, tmp_path, f"seed {seed}: {count} ROIs, max {max_rois}")


def test_topk_rois_pads_with_zeros(tmp_path):
    """max_rois above the ROI count: OpenVINO's shape is [max_rois, 4] and its kernels write only the first
    rows (the CPU plugin leaves the rest unwritten); irrun fills them with zeros."""
    b = IRBuilder()
    r, p = b.parameter([2, 4], name="rois"), b.parameter([2], name="probs")
    t = b.op("ExperimentalDetectronTopKROIs", "opset6", [(r, 0), (p, 0)], {"max_rois": 4}, [([4, 4], "f32")])
    b.result((t, 0), "top")
    built = built_from(b, {"rois": np.arange(8, dtype=np.float32).reshape(2, 4),
                           "probs": np.array([0.1, 0.9], np.float32)}, tmp_path)
    got = list(irrun.load(built.xml).run(built.feed_dict).values())[0]
    np.testing.assert_array_equal(got, [[4, 5, 6, 7], [0, 1, 2, 3], [0] * 4, [0] * 4])


# ---------------------------------------------------------------- PriorGridGenerator

@pytest.mark.parametrize("seed", range(6))
def test_prior_grid_generator(seed, tmp_path):
    rng = np.random.default_rng(200 + seed)
    priors, height, width = int(rng.integers(1, 4)), int(rng.integers(1, 5)), int(rng.integers(1, 6))
    flatten = seed % 2 == 0
    attrs = {"flatten": str(flatten).lower(), "h": 0, "w": 0, "stride_x": 0.0, "stride_y": 0.0}
    if seed % 3 == 1:
        attrs.update(stride_x=float(rng.integers(2, 9)), stride_y=float(rng.integers(2, 9)))
    if seed % 3 == 2:
        attrs.update(h=height, w=width)
    b = IRBuilder()
    pr = b.parameter([priors, 4], name="priors")
    fm = b.parameter([1, 2, height, width], name="features")
    im = b.parameter([1, 3, 37, 50], name="image")
    shape = [height * width * priors, 4] if flatten else [height, width, priors, 4]
    t = b.op("ExperimentalDetectronPriorGridGenerator", "opset6", [(pr, 0), (fm, 0), (im, 0)], attrs, [(shape, "f32")])
    b.result((t, 0), "grid")
    feeds = {"priors": (rng.standard_normal((priors, 4)) * 10).astype(np.float32),
             "features": rng.random((1, 2, height, width)).astype(np.float32),
             "image": rng.random((1, 3, 37, 50)).astype(np.float32)}
    verify(b, feeds, tmp_path, f"seed {seed}: {attrs}")


@pytest.mark.parametrize("flatten", [True, False])
def test_prior_grid_generator_smaller_grid(flatten, tmp_path):
    """h/w below the feature map's size: the shape still follows the feature map (OpenVINO's shape inference),
    the kernel writes the h*w*priors leading rows and irrun zeros the rest (the plugin leaves it unwritten)."""
    rng = np.random.default_rng(250 + flatten)
    b = IRBuilder()
    pr = b.parameter([3, 4], name="priors")
    fm = b.parameter([1, 2, 3, 5], name="features")
    im = b.parameter([1, 3, 20, 33], name="image")
    shape = [45, 4] if flatten else [3, 5, 3, 4]
    t = b.op("ExperimentalDetectronPriorGridGenerator", "opset6", [(pr, 0), (fm, 0), (im, 0)],
             {"flatten": str(flatten).lower(), "h": 2, "w": 2, "stride_x": 0.0, "stride_y": 0.0}, [(shape, "f32")])
    b.result((t, 0), "grid")
    feeds = {"priors": (rng.standard_normal((3, 4)) * 10).astype(np.float32),
             "features": rng.random((1, 2, 3, 5)).astype(np.float32),
             "image": rng.random((1, 3, 20, 33)).astype(np.float32)}
    built = built_from(b, feeds, tmp_path)
    got = list(irrun.load(built.xml).run(built.feed_dict).values())[0].reshape(-1, 4)
    expected = run_cpu(built)[1][0].reshape(-1, 4)
    assert got.shape == expected.shape == (45, 4)
    assert_same([got[:12]], [expected[:12]])
    assert not got[12:].any()


# ---------------------------------------------------------------- ROIFeatureExtractor

@pytest.mark.parametrize("seed", range(6))
def test_roi_feature_extractor(seed, tmp_path):
    rng = np.random.default_rng(300 + seed)
    count, size = int(rng.integers(1, 9)), int(rng.integers(1, 4))
    aligned, ratio = seed % 2 == 1, [0, 2, 1][seed % 3]
    levels = [[1, 3, 32, 32], [1, 3, 16, 16], [1, 3, 8, 8], [1, 3, 4, 4]][:2 + seed % 3]
    scales = ",".join(str(4 << i) for i in range(len(levels)))
    rois = boxes(rng, count, span=100, size=300)
    rois[0] = [10, 10, 5, 20]  # area <= 0: no pyramid level, zero features
    if count > 1:
        rois[1] = [-20, -10, 400, 300]  # beyond the image
    b = IRBuilder()
    r = b.parameter([count, 4], name="rois")
    params = [b.parameter(shape, name=f"level{i}") for i, shape in enumerate(levels)]
    t = b.op("ExperimentalDetectronROIFeatureExtractor", "opset6", [(r, 0)] + [(p, 0) for p in params],
             {"output_size": size, "sampling_ratio": ratio, "pyramid_scales": scales, "aligned": str(aligned).lower()},
             [([count, 3, size, size], "f32"), ([count, 4], "f32")])
    b.result((t, 0), "features")
    b.result((t, 1), "rois_out")
    feeds = {"rois": rois, **{f"level{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(levels)}}
    verify(b, feeds, tmp_path, f"seed {seed}: size {size} ratio {ratio} aligned {aligned}", atol=[1e-6, None])


# ---------------------------------------------------------------- GenerateProposalsSingleImage

def proposals_model(rng, anchors, height, width, pre, post, nms, min_size):
    b = IRBuilder()
    im = b.parameter([3], name="im_info")
    an = b.parameter([height * width * anchors, 4], name="anchors")
    de = b.parameter([anchors * 4, height, width], name="deltas")
    sc = b.parameter([anchors, height, width], name="scores")
    t = b.op("ExperimentalDetectronGenerateProposalsSingleImage", "opset6", [(im, 0), (an, 0), (de, 0), (sc, 0)],
             {"min_size": min_size, "nms_threshold": nms, "post_nms_count": post, "pre_nms_count": pre},
             [([post, 4], "f32"), ([post], "f32")])
    b.result((t, 0), "rois")
    b.result((t, 1), "roi_scores")
    feeds = {"im_info": np.array([64, 80, 1], np.float32), "anchors": boxes(rng, height * width * anchors),
             "deltas": (rng.standard_normal((anchors * 4, height, width)) * 0.5).astype(np.float32),
             "scores": rng.random((anchors, height, width)).astype(np.float32)}
    return b, feeds


@pytest.mark.parametrize("seed", range(8))
def test_generate_proposals_single_image(seed, tmp_path):
    """min_size 0 keeps every score distinct (OpenVINO orders equal scores with an unstable partial sort)."""
    rng = np.random.default_rng(400 + seed)
    anchors, height, width = int(rng.integers(1, 5)), int(rng.integers(1, 7)), int(rng.integers(1, 7))
    total = anchors * height * width
    pre = int(rng.integers(1, total + 5))
    post = int(rng.integers(1, pre + 3))
    nms = [0.3, 0.5, 0.7, 1.0][seed % 4]
    b, feeds = proposals_model(rng, anchors, height, width, pre, post, nms, 0.0)
    verify(b, feeds, tmp_path, f"seed {seed}: {anchors}x{height}x{width} pre {pre} post {post} nms {nms}",
           atol=[BOX_ATOL, None])


@pytest.mark.parametrize("seed", range(3))
def test_generate_proposals_min_size(seed, tmp_path):
    """Boxes smaller than min_size get score 0 and still take part; rows up to the last non-zero score match
    exactly (among equal zero scores OpenVINO's order is its sort's, unspecified)."""
    rng = np.random.default_rng(450 + seed)
    b, feeds = proposals_model(rng, 3, 4, 5, 60, 40, 0.7, 15.0)
    built = built_from(b, feeds, tmp_path)
    got = list(irrun.load(built.xml).run(built.feed_dict).values())
    _, expected = run_cpu(built)
    live = int((expected[1] > 0).sum())
    assert 0 < live < 40
    assert_same([got[0][:live], got[1]], [expected[0][:live], expected[1]], atol=[BOX_ATOL, None])


# ---------------------------------------------------------------- DetectionOutput

@pytest.mark.parametrize("seed", range(8))
def test_detection_output(seed, tmp_path):
    rng = np.random.default_rng(500 + seed)
    count, classes = int(rng.integers(1, 30)), int(rng.integers(2, 6))
    max_det = int(rng.integers(1, 40))
    post = [5, -1, 20, 1][seed % 4]
    attrs = {"score_threshold": [0.3, 0.05][seed % 2], "nms_threshold": [0.5, 0.3, 0.7][seed % 3],
             "max_delta_log_wh": 4.135, "num_classes": classes, "post_nms_count": post,
             "max_detections_per_image": max_det, "class_agnostic_box_regression": str(seed % 4 == 3).lower(),
             "deltas_weights": "10,10,5,5" if seed % 2 else "1,2,0.5,1"}
    b = IRBuilder()
    r = b.parameter([count, 4], name="rois")
    d = b.parameter([count, classes * 4], name="deltas")
    s = b.parameter([count, classes], name="scores")
    im = b.parameter([1, 3], name="im_info")
    t = b.op("ExperimentalDetectronDetectionOutput", "opset6", [(r, 0), (d, 0), (s, 0), (im, 0)], attrs,
             [([max_det, 4], "f32"), ([max_det], "i32"), ([max_det], "f32")])
    b.result((t, 0), "boxes")
    b.result((t, 1), "classes")
    b.result((t, 2), "det_scores")
    rois = boxes(rng, count, span=40, size=20)
    rois[0, 2] = rois[0, 0] - 1  # an empty ROI is skipped
    scores = rng.random((count, classes)).astype(np.float32)
    if seed % 3 == 2:
        # ties within a class: by ROI index. (Equal scores of one ROI in two classes are ordered by
        # libstdc++'s partial_sort heap, which irrun does not reproduce: it puts the lower class first.)
        scores = (np.round(scores * 4) / 4 + np.arange(classes) * 0.01).astype(np.float32)
    feeds = {"rois": rois, "deltas": rng.standard_normal((count, classes * 4)).astype(np.float32),
             "scores": scores, "im_info": np.array([[50, 60, 1]], np.float32)}
    verify(b, feeds, tmp_path, f"seed {seed}: {count} ROIs {classes} classes {attrs}", atol=[BOX_ATOL, None, None])
