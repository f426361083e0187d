"""Write models/torch_fasterrcnn: a small torchvision Faster R-CNN (random weights, no download) converted with
`openvino.convert_model`, with its input and OpenVINO's CPU outputs.

The converted graph holds two If-8 whose chosen branch has a value-dependent output shape (torchvision's
batched NMS: one branch returns an empty tensor, the other NonMaxSuppression-9 selections), plus TopK,
NonZero, ROIAlign-9 and the box arithmetic of the RPN and the ROI heads. The class logits are scaled so that
detections survive the score threshold.

Dev dependencies: torch and torchvision (CPU) and openvino. Deterministic and re-runnable:
    python models/make_detection_models.py
"""
from __future__ import annotations

import collections
import pathlib
import sys

import numpy as np
import openvino as ov
import torch
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.ops import MultiScaleRoIAlign

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_models import save_npz  # noqa: E402  (deterministic .npz writer)

TARGET = pathlib.Path(__file__).resolve().parent / "torch_fasterrcnn"
CHANNELS, CLASSES, SIZE = 16, 4, 128


class TinyBackbone(torch.nn.Module):
    """Two feature maps (strides 4 and 8) of CHANNELS channels, as an FPN would hand them on."""

    def __init__(self):
        super().__init__()
        conv = torch.nn.Conv2d
        self.stride4 = torch.nn.Sequential(conv(3, CHANNELS, 3, 2, 1), torch.nn.ReLU(),
                                           conv(CHANNELS, CHANNELS, 3, 2, 1), torch.nn.ReLU())
        self.stride8 = torch.nn.Sequential(conv(CHANNELS, CHANNELS, 3, 2, 1), torch.nn.ReLU())
        self.out_channels = CHANNELS

    def forward(self, x):
        a = self.stride4(x)
        return collections.OrderedDict([("0", a), ("1", self.stride8(a))])


class Detections(torch.nn.Module):
    """The detector on one image batch of size 1, returning (boxes, scores, labels) tensors."""

    def __init__(self, detector):
        super().__init__()
        self.detector = detector

    def forward(self, image):
        found = self.detector([image[0]])[0]
        return found["boxes"], found["scores"], found["labels"]


def build_detector() -> torch.nn.Module:
    torch.manual_seed(0)
    detector = FasterRCNN(
        TinyBackbone(),
        rpn_anchor_generator=AnchorGenerator(sizes=((16, 32), (32, 64)), aspect_ratios=((0.5, 1.0, 2.0),) * 2),
        box_roi_pool=MultiScaleRoIAlign(featmap_names=["0", "1"], output_size=4, sampling_ratio=2),
        box_head=TwoMLPHead(CHANNELS * 4 * 4, 32),
        box_predictor=FastRCNNPredictor(32, CLASSES),
        min_size=SIZE, max_size=SIZE, rpn_pre_nms_top_n_test=100, rpn_post_nms_top_n_test=50,
        box_detections_per_img=20)
    detector.eval()
    with torch.no_grad():  # random logits are near zero: scale them so scores pass box_score_thresh
        detector.roi_heads.box_predictor.cls_score.weight.mul_(20)
    return Detections(detector).eval()


def main():
    module = build_detector()
    image = torch.from_numpy(np.random.default_rng(20261123).random((1, 3, SIZE, SIZE)).astype(np.float32))
    model = ov.convert_model(module, example_input=(image,))
    kinds = collections.Counter(node.get_type_name() for node in model.get_ordered_ops())
    assert kinds["If"] >= 1 and kinds["ROIAlign"] >= 1, kinds
    model.inputs[0].get_tensor().set_names({"image"})
    for output, name in zip(model.outputs, ("boxes", "scores", "labels")):
        output.get_tensor().set_names({name})
    TARGET.mkdir(exist_ok=True)
    xml = TARGET / "model.xml"
    ov.save_model(model, str(xml))
    compiled = ov.Core().compile_model(str(xml), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    outputs = compiled([image.numpy()])
    expected = {o.get_any_name(): np.asarray(v) for o, v in zip(compiled.outputs, outputs.values())}
    assert len(expected["scores"]) > 0, "no detection survived: scale the class logits more"
    save_npz(TARGET / "inputs.npz", {"image": image.numpy()})
    save_npz(TARGET / "expected.npz", expected)
    print({k: v.shape for k, v in expected.items()}, dict(kinds))


if __name__ == "__main__":
    main()
