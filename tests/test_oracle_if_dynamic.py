"""If-8 whose chosen branch gives value-dependent output shapes (issue 10 item 2), against OpenVINO's CPU plugin.

torchvision's batched NMS converts to an If whose then-branch returns an empty tensor and whose else-branch
runs NonMaxSuppression-9: the If's output shape is known only once the branch has run. irrun runs the chosen
branch during run-time inference and takes its actual shapes (as TensorIterator and Loop do)."""
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset3, opset8, opset9
from oracle import assert_same, build, cpu_config, run_cpu

import irrun
from irrun.tools.check import check


def c(value, dtype=None):
    return opset1.constant(np.asarray(value, dtype=dtype))


def make_nms_if(params):
    """cond ? empty [0,3] selections and [0] scores : NonMaxSuppression-9 selections and NonZero of the scores."""
    boxes, scores = params["boxes"], params["scores"]
    bshape = list(boxes.get_output_partial_shape(0).to_shape())
    sshape = list(scores.get_output_partial_shape(0).to_shape())
    empty = [ov.op.Constant(ov.Type.i64, ov.Shape([0, 3]), []), ov.op.Constant(ov.Type.f32, ov.Shape([0]), [])]
    then = ov.Model([opset1.result(e) for e in empty], [], "then")
    eb, es = opset1.parameter(bshape, np.float32), opset1.parameter(sshape, np.float32)
    nms = opset9.non_max_suppression(eb, es, c(3, np.int64), c(0.4, np.float32), c(0.2, np.float32),
                                     sort_result_descending=True, output_type="i64")
    positive = opset3.non_zero(opset1.greater(es, c(0.5, np.float32)), "i64")
    count = opset1.convert(opset3.shape_of(positive, "i64"), "f32")
    other = ov.Model([opset1.result(nms.output(0)), opset1.result(count)], [eb, es], "else")
    node = opset8.if_op(params["cond"])
    node.set_then_body(then)
    node.set_else_body(other)
    node.set_input(boxes.output(0), None, eb)
    node.set_input(scores.output(0), None, es)
    first = node.set_output(then.get_results()[0], other.get_results()[0])
    second = node.set_output(then.get_results()[1], other.get_results()[1])
    return [first, second]


@pytest.mark.parametrize("seed", range(6))
def test_if_branch_with_value_dependent_shapes(seed, tmp_path):
    rng = np.random.default_rng(900 + seed)
    count = int(rng.integers(1, 9))
    corners = rng.random((1, count, 2)).astype(np.float32) * 4
    boxes = np.concatenate([corners, corners + 1 + rng.random((1, count, 2)).astype(np.float32)], axis=2)
    inputs = {"cond": np.array(seed % 3 == 0), "boxes": boxes,
              "scores": rng.random((1, 2, count)).astype(np.float32)}
    built = build(make_nms_if, inputs, tmp_path)
    report = check(built.xml)
    assert not report.errors, "\n".join(report.lines())
    model = irrun.load(built.xml)
    assert model.outputs[0].shape == (None, 3)
    names, expected = run_cpu(built)
    assert_same(model.run(built.feed_dict), expected, names, context=f"seed {seed}: cond {inputs['cond']}")


def test_converted_faster_rcnn_detections():
    """models/torch_fasterrcnn (models/make_detection_models.py): torchvision Faster R-CNN with two If-8 around
    batched NMS, on images other than the shipped one; detection order must match OpenVINO's."""
    xml = Path(__file__).parents[1] / "models" / "torch_fasterrcnn" / "model.xml"
    report = check(xml)
    assert not report.errors, "\n".join(report.lines())
    loaded = irrun.load(xml)
    compiled = ov.Core().compile_model(str(xml), "CPU", cpu_config())
    rng = np.random.default_rng(11)
    for case, size in enumerate([(128, 128), (96, 160)]):
        image = rng.random((1, 3, *size)).astype(np.float32)
        expected = [np.asarray(v) for v in compiled([image]).values()]
        got = loaded.run([image])
        assert len(expected[1]) > 0
        assert_same(got, expected, ["boxes", "scores", "labels"], atol=[1e-4, 1e-6, None],
                    context=f"case {case}: image {size}")
