"""irrun vs OpenVINO on DetectionOutput-1/8 and Proposal-1/4: seeded random sweeps.

OpenVINO 2026.4 has no reference evaluate() for these ops, so the CPU plugin is the truth.
  * DetectionOutput: image ids, labels and scores are copies (exact); box coordinates are f32 decodes
    (products, an exp for CENTER_SIZE) that the plugin's compiler may contract into FMAs: atol 1e-6
    (coordinates lie in about [-1, 2]).
  * Proposal: box coordinates in pixels (up to a few hundred) from the same kind of f32 decode:
    atol 1e-4 (a few f32 ulps at 256); normalized coordinates atol 1e-6. Scores are copies (exact).
    The plugin orders proposals with std::partial_sort on the score alone, so the order of equal
    scores is unspecified; proposals failing min_size get score 0 and tie. Rows are compared exactly
    up to the first zero-score box (read from Proposal-4's score output); later rows depend on that
    unspecified order. Proposal-4's score output is left unwritten by the plugin after the last box.
"""

from __future__ import annotations

import numpy as np
import pytest
from openvino import PartialShape, opset1, opset4, opset8

from irrun.errors import ShapeError
from irrun.ir.types import ELEMENT_TYPES
from irrun.ops.proposals import DetectionOutput1, DetectionOutput8, Proposal4
from irrun.ops.registry import Context, TensorInfo

import oracle as O
from oracle import assert_same, build, run_cpu, run_cpu_many, run_irrun

CORNER, CENTER = "caffe.PriorBoxParameter.CORNER", "caffe.PriorBoxParameter.CENTER_SIZE"

# ---------------------------------------------------------------- DetectionOutput


def _do_case(rng, arm):
    images, priors, classes = int(rng.integers(1, 3)), int(rng.integers(2, 12)), int(rng.integers(2, 5))
    share = bool(rng.integers(0, 2))
    normalized = bool(rng.integers(0, 2))
    encoded = bool(rng.integers(0, 4) == 0)
    decrease = bool(rng.integers(0, 4) == 0)
    attrs = dict(
        background_label_id=0 if decrease else int(rng.choice([-1, 0, 0, 1])),
        top_k=int(rng.choice([-1, -1, 0, 2, 5, 100])),
        variance_encoded_in_target=encoded,
        keep_top_k=[int(rng.choice([-1, -1, 0, 1, 3, 8, 50]))],
        code_type=str(rng.choice([CORNER, CENTER])),
        share_location=share,
        nms_threshold=float(rng.choice([0.0, 0.3, 0.5, 0.7, 1.0])),
        confidence_threshold=float(rng.choice([0.0, 0.2, 0.5])),
        clip_after_nms=bool(rng.integers(0, 2)),
        clip_before_nms=bool(rng.integers(0, 2)),
        decrease_label_id=decrease,
        normalized=normalized,
    )
    height, width = 1, 1
    if not normalized:
        height, width = int(rng.choice([1, 40, 300])), int(rng.choice([1, 60, 300]))
        attrs.update(input_height=height, input_width=width)
    if arm:
        attrs["objectness_score"] = float(rng.choice([0.0, 0.3, 0.6]))
    prior_batch = images if rng.integers(0, 2) else 1
    corner = rng.random((prior_batch, priors, 2)) * 0.8
    size = 0.05 + rng.random((prior_batch, priors, 2)) * 0.4
    boxes = np.concatenate([corner, corner + size], axis=2) * np.array([width, height, width, height])
    if not normalized:
        boxes = np.concatenate([np.zeros((prior_batch, priors, 1)), boxes], axis=2)
        if rng.integers(0, 5) == 0:  # a -1 image id ends the priors early
            boxes[:, int(rng.integers(1, priors)), 0] = -1
    rows = [boxes.reshape(prior_batch, 1, -1)]
    if not encoded:
        variance = 0.1 + rng.random((prior_batch, priors, 4)) * 0.2
        variance = np.concatenate([variance, np.zeros((prior_batch, priors, boxes.shape[2] - 4))], axis=2)
        rows.append(variance.reshape(prior_batch, 1, -1))
    feeds = {
        "loc": (rng.standard_normal((images, priors * (1 if share else classes) * 4)) * 0.3).astype(np.float32),
        "conf": rng.random((images, priors * classes)).astype(np.float32),
        "pr": np.concatenate(rows, axis=1).astype(np.float32),
    }
    if arm:
        feeds["aconf"] = rng.random((images, priors * 2)).astype(np.float32)
        feeds["aloc"] = (rng.standard_normal(feeds["loc"].shape) * 0.3).astype(np.float32)
    return attrs, feeds, classes


@pytest.mark.parametrize("version", [1, 8])
@pytest.mark.parametrize("arm", [False, True])
def test_detection_output_sweep(version, arm):
    rng = np.random.default_rng(300 + version + 10 * arm)
    cases = []
    for case in range(30):
        attrs, feeds, classes = _do_case(rng, arm)
        if version == 1:
            attrs["num_classes"] = classes
        module = opset1 if version == 1 else opset8
        params = dict(case=case, shapes={k: v.shape for k, v in feeds.items()}, **attrs)

        def make(p):
            extra = [p["aconf"], p["aloc"]] if arm else []
            return module.detection_output(p["loc"], p["conf"], p["pr"], attrs, *extra)

        built = build(make, feeds)
        got = run_irrun(built)
        if _plugin_refuses(attrs, feeds):
            if O.cpu_reports_run_time_errors():
                with pytest.raises(RuntimeError, match="insufficient output buffer"):
                    run_cpu(built)
            # keep_top_k 0 keeps nothing: the output is the end marker alone
            assert attrs["keep_top_k"][0] == 0
            values = list(got.values())[0]
            assert values[0, 0, 0, 0] == -1 and np.count_nonzero(values) == 1, params
            continue
        cases.append((attrs, feeds, params, built, got))
    oracle = run_cpu_many([built for *_, built, _ in cases])
    for (attrs, feeds, params, built, got), (_, expected) in zip(cases, oracle):
        written = _plugin_written_rows(attrs, feeds, expected[0].shape[2])
        assert (list(got.values())[0][0, 0, written:] == 0).all(), params
        got = {k: v[:, :, :written] for k, v in got.items()}
        expected = [expected[0][:, :, :written]]
        assert_same(got, expected, built.output_names, atol=1e-6, context=str(params))
        # the boxes differ by at most the tolerance, everything else is exact
        values = list(got.values())[0]
        assert (values[..., :3] == expected[0][..., :3]).all(), params


def _plugin_refuses(attrs, feeds):
    """The CPU plugin refuses keep_top_k <= 0 with top_k > priors: it would clear images * top_k * classes rows,
    more than the output's images * priors * classes."""
    priors = feeds["pr"].shape[2] // (4 if attrs["normalized"] else 5)
    return attrs["keep_top_k"][0] != -1 and attrs["keep_top_k"][0] <= 0 and attrs["top_k"] > priors


def _plugin_written_rows(attrs, feeds, rows):
    """The rows the CPU plugin clears: with keep_top_k <= 0 and top_k > 0 it clears images * top_k * classes
    rows, fewer than the output has when keep_top_k is not -1; the rest is left unwritten (irrun: zeros)."""
    images, classes = feeds["conf"].shape[0], feeds["conf"].shape[1] // (feeds["pr"].shape[2] //
                                                                          (4 if attrs["normalized"] else 5))
    if attrs["keep_top_k"][0] <= 0 and attrs["top_k"] > 0:
        return min(rows, images * attrs["top_k"] * classes)
    return rows


def test_detection_output_f16():
    """f16 inputs: the plugin computes in f32 and rounds the result to f16."""
    rng = np.random.default_rng(7)
    cases = []
    for case in range(6):
        attrs, feeds, _ = _do_case(rng, bool(case % 2))
        feeds = {k: v.astype(np.float16) for k, v in feeds.items()}
        if _plugin_refuses(attrs, feeds):
            continue
        arm = "aconf" in feeds
        built = build(lambda p: opset8.detection_output(p["loc"], p["conf"], p["pr"], attrs,
                                                        *([p["aconf"], p["aloc"]] if arm else [])), feeds)
        cases.append((case, attrs, feeds, built))
    for (case, attrs, feeds, built), (_, expected) in zip(cases, run_cpu_many([built for *_, built in cases])):
        written = _plugin_written_rows(attrs, feeds, expected[0].shape[2])
        got = {k: v[:, :, :written] for k, v in run_irrun(built).items()}
        assert_same(got, [expected[0][:, :, :written]], built.output_names, atol=1e-3, context=str((case, attrs)))


def _do_op(cls, **attrs):
    values = dict(background_label_id=0, top_k=-1, variance_encoded_in_target=False, keep_top_k=(-1,),
                  code_type="caffe.priorboxparameter.corner", share_location=True, nms_threshold=0.5,
                  confidence_threshold=0.0, clip_after_nms=False, clip_before_nms=False, decrease_label_id=False,
                  normalized=True, input_height=1, input_width=1, objectness_score=0.0)
    values.update(attrs)
    return cls(values, Context())


def _ov_shape(shape):
    return PartialShape([-1 if d is None else d for d in shape])


F32 = ELEMENT_TYPES["f32"]


@pytest.mark.parametrize("version", [1, 8])
def test_detection_output_shape_inference(version):
    """Output shapes with dynamic dimensions and rejections, against OpenVINO's shape inference."""
    rng = np.random.default_rng(40 + version)
    module = opset1 if version == 1 else opset8
    checked = rejected = 0
    for case in range(120):
        images, priors, classes = int(rng.integers(1, 3)), int(rng.integers(1, 6)), int(rng.integers(1, 4))
        share, normalized, encoded = (bool(rng.integers(0, 2)) for _ in range(3))
        arm = bool(rng.integers(0, 2))
        keep, top_k = int(rng.choice([-1, 0, 4])), int(rng.choice([-1, 0, 3]))
        size = 4 if normalized else 5
        shapes = [[images, priors * (1 if share else classes) * 4], [images, priors * classes],
                  [int(rng.choice([1, images])), 1 if encoded else 2, priors * size]]
        if arm:
            shapes += [[images, priors * 2], list(shapes[0])]
        for shape in shapes:  # make some dims dynamic, and break some
            for axis in range(len(shape)):
                roll = rng.integers(0, 12)
                if roll == 0:
                    shape[axis] = None
                elif roll == 1:
                    shape[axis] += 1
        attrs = dict(keep_top_k=[keep], top_k=top_k, share_location=share, normalized=normalized,
                     variance_encoded_in_target=encoded, nms_threshold=0.5)
        mine = dict(attrs, keep_top_k=(keep,))
        if version == 1:
            attrs["num_classes"] = mine["num_classes"] = classes
        params = [O.ov.opset1.parameter(_ov_shape(s), np.float32) for s in shapes]
        try:
            node = module.detection_output(*params[:3], attrs, *params[3:])
            expected = tuple(None if d.is_dynamic else d.get_length() for d in node.get_output_partial_shape(0))
        except RuntimeError:
            expected = None
        op_ = _do_op(DetectionOutput1 if version == 1 else DetectionOutput8, **mine)
        infos = [TensorInfo(tuple(s), F32) for s in shapes]
        if expected is None:
            with pytest.raises(ShapeError):
                op_.infer(infos)
            rejected += 1
        else:
            assert op_.infer(infos)[0].shape == expected, (case, shapes, attrs)
            checked += 1
    assert checked > 20 and rejected > 10


# ---------------------------------------------------------------- Proposal


def _proposal_case(rng):
    u = np.uint64
    tf = bool(rng.integers(0, 3) == 0)
    ratios = sorted(rng.choice([0.5, 1.0, 2.0, 0.7], size=int(rng.integers(1, 4)), replace=False).tolist())
    scales = sorted(rng.choice([0.5, 1.0, 2.0, 4.0], size=int(rng.integers(1, 3)), replace=False).tolist())
    attrs = dict(
        base_size=u(rng.choice([4, 8, 16])), pre_nms_topn=u(rng.choice([8, 10, 40, 1000])),
        post_nms_topn=u(rng.choice([1, 4, 10, 40])), nms_thresh=float(rng.choice([0.3, 0.5, 0.7, 0.95])),
        feat_stride=u(rng.choice([4, 8, 16])), min_size=u(rng.choice([1, 4, 12])), ratio=ratios, scale=scales,
        clip_before_nms=bool(rng.integers(0, 2)), clip_after_nms=bool(rng.integers(0, 2)),
        normalize=bool(rng.integers(0, 2)), box_size_scale=float(rng.choice([1.0, 2.0, 0.5])),
        box_coordinate_scale=float(rng.choice([1.0, 2.0])), framework="tensorflow" if tf else "",
    )
    # the CPU plugin crashes (segmentation fault) when fewer than 8 boxes enter its NMS and post_nms_topn > 1:
    # keep pre_nms_topn and the number of proposals (anchors * height * width) at 8 or more
    batch, height, width = int(rng.integers(1, 3)), int(rng.integers(2, 6)), int(rng.integers(4, 7))
    anchors = len(ratios) * len(scales)
    image = [float(rng.integers(20, 100)), float(rng.integers(20, 100)), float(rng.choice([1.0, 0.5, 2.0]))]
    if rng.integers(0, 2):
        image.append(float(rng.choice([1.0, 0.5, 2.0])))
    feeds = {
        "cls": (rng.random((batch, 2 * anchors, height, width)) + 1e-3).astype(np.float32),
        "d": (rng.standard_normal((batch, 4 * anchors, height, width)) * 0.3).astype(np.float32),
        "im": np.array(image, dtype=np.float32),
    }
    return attrs, feeds


def test_proposal_sweep():
    rng = np.random.default_rng(500)
    whole = partial = tensorflow = 0
    cases = []
    for case in range(40):
        attrs, feeds = _proposal_case(rng)
        tensorflow += attrs["framework"] == "tensorflow"
        params = dict(case=case, shapes={k: v.shape for k, v in feeds.items()}, image=feeds["im"].tolist(), **attrs)
        built4 = build(lambda p: opset4.proposal(p["cls"], p["d"], p["im"], attrs), feeds)
        built1 = build(lambda p: opset1.proposal(p["cls"], p["d"], p["im"], attrs), feeds)
        cases.append((attrs, feeds, params, built4, built1))
    oracle = iter(run_cpu_many([built for *_, built4, built1 in cases for built in (built4, built1)]))
    for attrs, feeds, params, built4, built1 in cases:
        (_, (rois4, probs4)), (_, (rois1,)) = next(oracle), next(oracle)
        got4 = list(run_irrun(built4).values())
        got1 = list(run_irrun(built1).values())
        topn = int(attrs["post_nms_topn"])
        atol = 1e-6 if attrs["normalize"] else 1e-4
        assert rois4.shape == got4[0].shape == got1[0].shape and probs4.shape == got4[1].shape, params
        for n in range(feeds["cls"].shape[0]):
            block = slice(n * topn, (n + 1) * topn)
            marker = np.nonzero(rois4[block, 0] == -1)[0]
            count = int(marker[0]) if len(marker) else topn
            positive = np.nonzero(probs4[block][:count] == 0)[0]
            exact = int(positive[0]) if len(positive) else count
            context = f"{params} image {n}: {count} boxes, {exact} of them with a positive score"
            rows = slice(n * topn, n * topn + exact)
            assert_same([got4[0][rows], got4[1][rows], got1[0][rows]], [rois4[rows], probs4[rows], rois1[rows]],
                        atol=[atol, None, atol], context=context)
            partial += exact < count
            whole += exact == count
            if exact == count:  # the whole block is determined: padding and the -1 marker
                assert_same([got4[0][block], got1[0][block]], [rois4[block], rois1[block]], atol=atol,
                            context=context)
    assert whole > 20 and tensorflow > 5, (whole, partial, tensorflow)


def test_proposal_min_size_filter():
    """Boxes smaller than min_size * scale get score 0 (checked where the zero scores are not selected)."""
    rng = np.random.default_rng(9)
    u = np.uint64
    attrs = dict(base_size=u(8), pre_nms_topn=u(100), post_nms_topn=u(3), nms_thresh=0.7, feat_stride=u(8),
                 min_size=u(10), ratio=[1.0], scale=[1.0, 2.0], clip_before_nms=True, clip_after_nms=False,
                 normalize=False, box_size_scale=1.0, box_coordinate_scale=1.0, framework="")
    feeds = {"cls": (rng.random((1, 4, 4, 4)) + 1e-3).astype(np.float32),
             "d": np.zeros((1, 8, 4, 4), np.float32), "im": np.array([64, 64, 1], np.float32)}
    feeds["cls"][0, 2] += 5  # the small anchors score highest, yet are filtered out
    built = build(lambda p: opset4.proposal(p["cls"], p["d"], p["im"], attrs), feeds)
    _, expected = run_cpu(built)
    got = list(run_irrun(built).values())
    assert (expected[1] > 0).all() and (expected[1] < 2).all()
    assert_same(got, expected, atol=[1e-4, None])


def test_proposal_shape_inference():
    values = dict(base_size=16, pre_nms_topn=10, post_nms_topn=7, nms_thresh=0.5, feat_stride=16, min_size=1,
                  ratio=(1.0,), scale=(1.0,), clip_before_nms=True, clip_after_nms=False, normalize=False,
                  box_size_scale=1.0, box_coordinate_scale=1.0, framework="")
    op_ = Proposal4(values, Context())
    infos = lambda a, b, c: [TensorInfo(a, F32), TensorInfo(b, F32), TensorInfo(c, F32)]  # noqa: E731
    assert [i.shape for i in op_.infer(infos((2, 2, 3, 3), (2, 4, 3, 3), (3,)))] == [(14, 5), (14,)]
    assert [i.shape for i in op_.infer(infos((None, 2, 3, 3), (2, 4, 3, 3), (4,)))] == [(14, 5), (14,)]
    assert [i.shape for i in op_.infer(infos(None, None, None))] == [(None, 5), (None,)]
    for bad, rule in [(((2, 2, 3, 3), (2, 6, 3, 3), (3,)), "port.dims"), (((2, 2, 3, 3), (1, 4, 3, 3), (3,)),
                      "port.dims"), (((2, 2, 3, 3), (2, 4, 3, 3), (5,)), "port.dims"),
                      (((2, 2, 3), (2, 4, 3, 3), (3,)), "port.rank")]:
        with pytest.raises(ShapeError) as err:
            op_.infer(infos(*bad))
        assert err.value.rule == rule


def test_runtime_refusals():
    """What the CPU plugin refuses at run time (on two threads or more: O.cpu_reports_run_time_errors), irrun
    refuses too (ExecutionError)."""
    import irrun
    from irrun.errors import ExecutionError

    rng = np.random.default_rng(11)
    attrs, feeds, _ = _do_case(rng, False)
    attrs.update(decrease_label_id=True, background_label_id=1, keep_top_k=[-1], top_k=-1)
    built = build(lambda p: opset8.detection_output(p["loc"], p["conf"], p["pr"], attrs), feeds)
    if O.cpu_reports_run_time_errors():
        with pytest.raises(RuntimeError, match="decrease_label_id"):
            run_cpu(built)
    with pytest.raises(ExecutionError) as err:
        irrun.load(str(built.xml)).run(built.feed_dict)
    assert err.value.rule == "attr.range"

    attrs, feeds = _proposal_case(rng)
    for image in ([0, 50, 1], [50, -3, 1], [50, 50, -1], [50, 50, 1, np.inf]):
        feeds["im"] = np.array(image, dtype=np.float32)
        built = build(lambda p: opset4.proposal(p["cls"], p["d"], p["im"], attrs), feeds)
        if O.cpu_reports_run_time_errors():
            with pytest.raises(RuntimeError, match="image info"):
                run_cpu(built)
        with pytest.raises(ExecutionError) as err:
            irrun.load(str(built.xml)).run(built.feed_dict)
        assert err.value.rule == "input.value"
