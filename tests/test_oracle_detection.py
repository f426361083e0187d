"""irrun vs OpenVINO on object-detection ops: seeded random sweeps.

Oracles (see tests/oracle.py):
  * PriorBox-1/8, PriorBoxClustered-1: OpenVINO's reference kernels (Node.evaluate), exact.
  * NonMaxSuppression-1/3/4/5/9, RegionYolo-1, ReorgYolo-2: OpenVINO 2026.4 has no reference evaluate()
    for them, so the CPU plugin is the truth.
      - NMS indices are exact; hard-NMS scores are the input scores (exact); soft-NMS scores decay through
        the plugin's JIT exp and a vector product of weights: atol 1e-5 (scores lie in [0, 1]).
      - NMS-1/3/4 have a static output [rows, 3] by OpenVINO's shape inference, but the CPU plugin returns
        only the valid rows (its own shape). irrun returns the declared shape: the valid rows first
        (checked against the plugin), then rows of -1.
      - RegionYolo: logistic and softmax in f32 through the plugin's JIT exp: atol 1e-6, f32 values in
        [0, 1] for the transformed entries (coordinates 2..3 are copied exactly).
      - ReorgYolo is a pure permutation: exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from openvino import opset1, opset2, opset3, opset4, opset5, opset8, opset9

import oracle as O
from oracle import assert_same, build, run_cpu_many, run_irrun, run_reference

c = O.constant

# ---------------------------------------------------------------- NonMaxSuppression


def _nms_data(rng, batches, num_boxes, classes, center, dtype, ties):
    if center:
        xy = rng.random((batches, num_boxes, 2))
        wh = rng.random((batches, num_boxes, 2)) * 0.6
        boxes = np.concatenate([xy, wh], axis=2)
    else:
        a = rng.random((batches, num_boxes, 2))
        b = a + (rng.random((batches, num_boxes, 2)) - 0.2) * 0.6  # some flipped corners
        boxes = np.concatenate([a, b], axis=2)[..., [0, 1, 2, 3]]
    if ties:
        scores = rng.integers(0, 6, (batches, classes, num_boxes)) / 5.0
    else:
        scores = rng.random((batches, classes, num_boxes))
    return boxes.astype(dtype), scores.astype(dtype)


NMS_V5_CASES = 40


@pytest.mark.parametrize("version", [5, 9])
def test_nms5_9_sweep(version):
    rng = np.random.default_rng(100 + version)
    module = {5: opset5, 9: opset9}[version]
    cases = []
    for case in range(NMS_V5_CASES):
        batches, num_boxes, classes = int(rng.integers(1, 3)), int(rng.integers(1, 25)), int(rng.integers(1, 4))
        center = bool(rng.integers(0, 2))
        dtype = [np.float32, np.float16][int(rng.integers(0, 4)) == 0]
        ties = bool(rng.integers(0, 3) == 0)
        boxes, scores = _nms_data(rng, batches, num_boxes, classes, center, dtype, ties)
        max_out = int(rng.integers(0, num_boxes + 3))
        iou = np.float32(rng.choice([0.0, 0.3, 0.5, 0.7, 1.0]))
        score = np.float32(rng.choice([0.0, 0.2, 0.5]))
        soft = bool(rng.integers(0, 3) == 0)
        sigma = np.float32(rng.choice([0.2, 0.5]) if soft else 0.0)
        sort = bool(rng.integers(0, 2))
        out_type = ["i32", "i64"][int(rng.integers(0, 2))]
        ninputs = int(rng.choice([2, 3, 4, 5, 6, 6, 6]))
        params = dict(case=case, shape=(batches, num_boxes, classes), center=center, dtype=np.dtype(dtype).name,
                      max_out=max_out, iou=iou, score=score, sigma=sigma, sort=sort, out=out_type, ninputs=ninputs)

        def make(p):
            extra = [c(np.int64(max_out)), c(iou), c(score), c(sigma)][:ninputs - 2]
            return module.non_max_suppression(p["b"], p["s"], *extra, box_encoding="center" if center else "corner",
                                              sort_result_descending=sort, output_type=out_type)

        cases.append((params, ninputs, max_out, soft, build(make, {"b": boxes, "s": scores})))
    oracle = run_cpu_many([built for *_, built in cases])
    for (params, ninputs, max_out, soft, built), (_, expected) in zip(cases, oracle):
        got = run_irrun(built)
        if ninputs == 2 or max_out == 0:
            # Nothing can be selected, and the CPU plugin leaves valid_outputs unwritten (garbage);
            # irrun gives 0, the row count of the (empty) outputs.
            assert list(got.values())[2].tolist() == [0], params
            expected[2] = list(got.values())[2]
        atol = [None, 1e-5 if (soft and ninputs == 6) else None, None]
        assert_same(got, expected, built.output_names, atol=atol, context=str(params))


@pytest.mark.parametrize("version", [1, 3, 4])
def test_nms1_3_4_sweep(version):
    rng = np.random.default_rng(200 + version)
    module = {1: opset1, 3: opset3, 4: opset4}[version]
    cases = []
    for case in range(25):
        batches, num_boxes, classes = int(rng.integers(1, 3)), int(rng.integers(1, 20)), int(rng.integers(1, 4))
        center = bool(rng.integers(0, 2))
        boxes, scores = _nms_data(rng, batches, num_boxes, classes, center, np.float32, bool(rng.integers(0, 2)))
        max_out = int(rng.integers(0, num_boxes + 2))
        iou = np.float32(rng.choice([0.3, 0.5, 0.7]))
        score = np.float32(rng.choice([0.0, 0.3]))
        sort = bool(rng.integers(0, 2))
        kwargs = dict(box_encoding="center" if center else "corner", sort_result_descending=sort)
        out_type = "i64"
        if version > 1:
            out_type = ["i32", "i64"][int(rng.integers(0, 2))]
            kwargs["output_type"] = out_type
        params = dict(case=case, shape=(batches, num_boxes, classes), center=center, max_out=max_out, iou=iou,
                      score=score, sort=sort, out=out_type)
        built = build(lambda p: module.non_max_suppression(p["b"], p["s"], c(np.int64(max_out)), c(iou), c(score),
                                                           **kwargs), {"b": boxes, "s": scores})
        cases.append((params, out_type, built))
    for (params, out_type, built), (_, (expected,)) in zip(cases, run_cpu_many([built for *_, built in cases])):
        rows = built.model.outputs[0].get_shape()[0]
        got = list(run_irrun(built).values())[0]
        assert got.shape == (rows, 3) and got.dtype == O.np_dtype(out_type), params
        valid = min(rows, len(expected))
        assert_same([got[:valid]], [expected[:valid].astype(got.dtype)], context=str(params))
        assert (got[valid:] == -1).all(), params
        if version == 4:  # v4's rows hold every selection
            assert len(expected) <= rows, params


# ---------------------------------------------------------------- PriorBox / PriorBoxClustered


def _prior_box_attrs(rng, v8):
    min_size = list(rng.choice([2.0, 4.0, 7.5, 16.0], int(rng.integers(1, 3)), replace=False))
    attrs = dict(
        min_size=min_size,
        max_size=list(rng.choice([9.0, 20.0, 32.0], int(rng.integers(0, len(min_size) + 1)), replace=False)),
        aspect_ratio=list(rng.choice([1.0, 2.0, 3.0, 0.5], int(rng.integers(0, 3)), replace=False)),
        flip=bool(rng.integers(0, 2)),
        clip=bool(rng.integers(0, 2)),
        step=float(rng.choice([0.0, 4.0, 8.5])),
        offset=float(rng.choice([0.0, 0.5])),
        variance=[[], [0.1], [0.1, 0.1, 0.2, 0.2]][int(rng.integers(0, 3))],
        scale_all_sizes=bool(rng.integers(0, 4) != 0),
    )
    if not attrs["scale_all_sizes"]:
        attrs["min_size"] = [s / 32 for s in attrs["min_size"]]
        attrs["step"] = float(rng.choice([0.0, 0.1, -1.0]))
        attrs["max_size"] = []
    if v8:
        attrs["min_max_aspect_ratios_order"] = bool(rng.integers(0, 2))
    return attrs


@pytest.mark.parametrize("version", [1, 8])
def test_prior_box_sweep(version):
    rng = np.random.default_rng(300 + version)
    module = {1: opset1, 8: opset8}[version]
    for case in range(30):
        attrs = _prior_box_attrs(rng, version == 8)
        layer = np.array(rng.integers(1, 6, 2), dtype=np.int64)
        image = np.array(rng.integers(16, 64, 2), dtype=np.int64)
        if case % 5 == 0:  # fixed sizes with densities
            attrs = dict(fixed_size=[8.0, 16.0][:int(rng.integers(1, 3))], offset=0.5, clip=False, flip=False,
                         step=0.0, variance=[0.1], min_size=[], max_size=[],
                         aspect_ratio=list(rng.choice([2.0, 3.0], int(rng.integers(0, 2)))))
            attrs["density"] = [float(rng.integers(1, 4)) for _ in attrs["fixed_size"]]
            if rng.integers(0, 2):
                # one ratio only: with more, OpenVINO's reference writes more priors than its shape holds
                attrs["fixed_ratio"], attrs["aspect_ratio"] = [2.0], []
        params = dict(case=case, layer=layer.tolist(), image=image.tolist(), **attrs)
        step = attrs["step"]
        if step < 0:  # the Python factory refuses step -1 (mxnet's "image size / layer size"); the IR may hold it
            attrs["step"] = 1.0
        built = build(lambda p: module.prior_box(c(layer), c(image), attrs), {},
                      patch=lambda xml: O.patch_layer(xml, "PriorBox", {"step": "-1"}) if step < 0 else xml)
        expected = run_reference(built)
        assert_same(run_irrun(built), expected, built.output_names, context=str(params))


def test_prior_box_clustered_sweep():
    rng = np.random.default_rng(400)
    for case in range(30):
        n = int(rng.integers(1, 4))
        attrs = dict(width=list(rng.random(n) * 20 + 1), height=list(rng.random(n) * 20 + 1),
                     clip=bool(rng.integers(0, 2)), offset=float(rng.choice([0.0, 0.5])),
                     variance=[[], [0.1], [0.1, 0.1, 0.2, 0.2]][int(rng.integers(0, 3))])
        mode = int(rng.integers(0, 3))
        if mode == 1:
            attrs["step"] = 6.0
        elif mode == 2:
            attrs["step_widths"], attrs["step_heights"] = 5.0, 7.0
        layer = np.array(rng.integers(1, 6, 2), dtype=[np.int32, np.int64][case % 2])
        image = np.array(rng.integers(16, 64, 2), dtype=layer.dtype)
        params = dict(case=case, layer=layer.tolist(), image=image.tolist(), **attrs)
        offset = attrs["offset"]
        attrs["offset"] = 0.5  # the Python factory refuses offset 0; the IR may hold it
        built = build(lambda p: opset1.prior_box_clustered(c(layer), c(image), attrs), {},
                      patch=lambda xml: O.patch_layer(xml, "PriorBoxClustered", {"offset": str(offset)}))
        expected = run_reference(built)
        assert_same(run_irrun(built), expected, built.output_names, context=str(params))


# ---------------------------------------------------------------- RegionYolo / ReorgYolo


def test_region_yolo_sweep():
    rng = np.random.default_rng(500)
    cases = []
    for case in range(20):
        coords, classes = 4, int(rng.integers(1, 6))
        softmax = bool(rng.integers(0, 2))
        if softmax:
            num, mask = int(rng.integers(1, 4)), []
            channels = num * (coords + classes + 1)
            axis, end_axis = [(1, 3), (1, 1), (2, 3), (0, 3)][int(rng.integers(0, 4))]
        else:
            num = 6
            mask = sorted(rng.choice(6, int(rng.integers(1, 4)), replace=False).tolist())
            channels = len(mask) * (coords + classes + 1)
            axis, end_axis = 1, 3
        x = (rng.standard_normal((int(rng.integers(1, 3)), channels, int(rng.integers(1, 5)),
                                  int(rng.integers(1, 5)))) * 3).astype(np.float32)
        params = dict(case=case, shape=x.shape, classes=classes, softmax=softmax, num=num, mask=mask, axis=axis,
                      end_axis=end_axis)
        built = build(lambda p: opset1.region_yolo(p["x"], coords, classes, num, softmax, mask, axis, end_axis,
                                                   [10.0, 13.0]), {"x": x})
        cases.append((params, built))
    for (params, built), (_, expected) in zip(cases, run_cpu_many([built for _, built in cases])):
        assert_same(run_irrun(built), expected, built.output_names, atol=1e-6, context=str(params))


def test_reorg_yolo_sweep():
    rng = np.random.default_rng(600)
    cases = []
    for case in range(12):
        s = int(rng.integers(1, 4))
        x = rng.standard_normal((int(rng.integers(1, 3)), s * s * int(rng.integers(1, 4)),
                                 s * int(rng.integers(1, 4)), s * int(rng.integers(1, 4)))).astype(np.float32)
        built = build(lambda p: opset2.reorg_yolo(p["x"], [s, s]), {"x": x})
        cases.append((f"case={case} stride={s} {x.shape}", built))
    for (context, built), (_, expected) in zip(cases, run_cpu_many([built for _, built in cases])):
        assert_same(run_irrun(built), expected, built.output_names, context=context)
