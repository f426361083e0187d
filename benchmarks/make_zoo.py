"""Build the benchmark zoo: torchvision, timm and transformers networks with random weights (classification,
detection with NMS, segmentation, keypoints, encoders), converted to OpenVINO IR with default settings, the
way a new user would.

Dev-only (needs torch, torchvision, timm, transformers, openvino; never downloads weights):

    python benchmarks/make_zoo.py [--out ~/.cache/irrun-zoo] [--only NAME ...] [--force]

Every network is built with `torch.manual_seed(SEED)` (so benchmarks/models.py rebuilds the very same
module), in eval mode, converted with `openvino.convert_model(module, example_input=...)` and saved with
`openvino.save_model` (default: f16-compressed weights). Each folder <out>/<name>/ holds model.xml,
model.bin and inputs.npz (the example inputs keyed by Parameter name, in order). A network that
fails to build or convert is reported and skipped.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import traceback

import numpy as np

SEED = 0
DEFAULT_OUT = pathlib.Path(os.environ.get("IRRUN_ZOO", pathlib.Path.home() / ".cache" / "irrun-zoo"))


def image(size=224, channels=3):
    return [np.random.default_rng(SEED).standard_normal((1, channels, size, size)).astype(np.float32)]


def torchvision_net(name, **kwargs):
    def build():
        import torchvision
        return torchvision.models.get_model(name, weights=None, **kwargs)
    return build


def segmentation_net(name):
    def build():
        import torchvision
        return torchvision.models.get_model(name, weights=None, weights_backbone=None, aux_loss=False)
    return build


def timm_net(name):
    def build():
        import timm
        return timm.create_model(name, pretrained=False)
    return build


def wrapped(module, forward):
    """`module` inside a torch module whose forward(*inputs) is forward(module, *inputs): a single output, say."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = module

        def forward(self, *args):
            return forward(self.inner, *args)

    return Wrapped()


class OutputOnly:
    """Wraps a transformers encoder so that it returns its last hidden state only (one output)."""

    @staticmethod
    def wrap(module):
        return wrapped(module, lambda inner, *args: inner(*args).last_hidden_state)


def bert_encoder():
    from transformers import BertConfig, BertModel
    config = BertConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                        attn_implementation="eager")
    return OutputOnly.wrap(BertModel(config, add_pooling_layer=False))


def bert_inputs():
    rng = np.random.default_rng(SEED)
    ids = rng.integers(1000, 20000, size=(1, 128)).astype(np.int64)
    return [ids, np.ones((1, 128), np.int64)]


def whisper_encoder():
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    # whisper-base sized: 6 layers, d_model 512, 80 mel bins, 3000 frames -> 1500 positions
    config = WhisperConfig(d_model=512, encoder_layers=6, encoder_attention_heads=8, encoder_ffn_dim=2048,
                           num_mel_bins=80, max_source_positions=1500, attn_implementation="eager")
    return OutputOnly.wrap(WhisperEncoder(config))


def whisper_inputs():
    return [np.random.default_rng(SEED).standard_normal((1, 80, 3000)).astype(np.float32)]


class FirstImage:
    """Wraps a torchvision detection model (a list of [C, H, W] images in, a list of dicts out) so that it takes
    one [1, C, H, W] batch and returns the first image's tensors as a tuple (boxes, scores, labels, ...)."""

    KEYS = ("boxes", "scores", "labels", "keypoints", "keypoints_scores")

    @staticmethod
    def wrap(module):
        def first_image(inner, images):
            found = inner([images[0]])[0]
            return tuple(found[key] for key in FirstImage.KEYS if key in found)
        return wrapped(module, first_image)


def detection_net(name, **kwargs):
    def build():
        import torchvision
        return FirstImage.wrap(torchvision.models.get_model(name, weights=None, weights_backbone=None, **kwargs))
    return build


def yolo_head():
    """A YOLO-style detector: a MobileNetV3 backbone, a 1x1 head giving per cell and anchor (cx, cy, w, h),
    objectness and 80 class scores, decoded and filtered per class with torchvision's batched NMS."""
    import torch
    import torchvision

    class YoloStyle(torch.nn.Module):
        classes, anchors = 80, 3

        def __init__(self):
            super().__init__()
            self.features = torchvision.models.mobilenet_v3_large(weights=None).features
            self.head = torch.nn.Conv2d(960, self.anchors * (5 + self.classes), 1)

        def forward(self, images):
            grid = self.head(self.features(images))
            n, _, h, w = grid.shape
            grid = grid.view(n, self.anchors, 5 + self.classes, h, w).permute(0, 1, 3, 4, 2).reshape(n, -1,
                                                                                                    5 + self.classes)
            ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            cells = torch.stack([xs, ys], -1).reshape(1, 1, h * w, 2).expand(n, self.anchors, h * w, 2)
            stride = images.shape[-1] / w
            centers = (grid[0, :, :2].sigmoid() + cells[0].reshape(-1, 2)) * stride
            sizes = grid[0, :, 2:4].exp().clamp(max=100) * stride
            boxes = torch.cat([centers - sizes / 2, centers + sizes / 2], 1)
            scores = grid[0, :, 4:5].sigmoid() * grid[0, :, 5:].sigmoid()
            flat = scores.flatten()
            keep = flat > 0.05
            candidates = torch.nonzero(keep).squeeze(1)
            box_index, labels = candidates // self.classes, candidates % self.classes
            kept = torchvision.ops.batched_nms(boxes[box_index], flat[candidates], labels, 0.45)[:300]
            return boxes[box_index[kept]], flat[candidates[kept]], labels[kept]

    return YoloStyle()


# name -> (build, inputs)
ZOO = {
    "resnet50": (torchvision_net("resnet50"), image),
    "mobilenet_v2": (torchvision_net("mobilenet_v2"), image),
    "mobilenet_v3_small": (torchvision_net("mobilenet_v3_small"), image),
    "mnasnet1_0": (torchvision_net("mnasnet1_0"), image),
    "efficientnet_b0": (torchvision_net("efficientnet_b0"), image),
    "convnext_tiny": (torchvision_net("convnext_tiny"), image),
    "vit_b_16": (torchvision_net("vit_b_16"), image),
    "swin_t": (torchvision_net("swin_t"), image),
    "maxvit_t": (torchvision_net("maxvit_t"), image),
    "regnet_y_400mf": (torchvision_net("regnet_y_400mf"), image),
    "densenet121": (torchvision_net("densenet121"), image),
    "shufflenet_v2_x1_0": (torchvision_net("shufflenet_v2_x1_0"), image),
    "squeezenet1_1": (torchvision_net("squeezenet1_1"), image),
    "googlenet": (torchvision_net("googlenet", aux_logits=False, init_weights=True), image),
    "deeplabv3_mobilenet_v3_large": (segmentation_net("deeplabv3_mobilenet_v3_large"), image),
    "fcn_resnet50": (segmentation_net("fcn_resnet50"), image),
    "lraspp_mobilenet_v3_large": (segmentation_net("lraspp_mobilenet_v3_large"), image),
    "ssdlite320_mobilenet_v3_large": (detection_net("ssdlite320_mobilenet_v3_large"), lambda: image(320)),
    "fasterrcnn_mobilenet_v3_large_320_fpn": (detection_net("fasterrcnn_mobilenet_v3_large_320_fpn"),
                                              lambda: image(320)),
    "retinanet_resnet50_fpn_320": (detection_net("retinanet_resnet50_fpn", min_size=320, max_size=320),
                                   lambda: image(320)),
    "yolo_style_mobilenet_v3_nms": (yolo_head, lambda: image(320)),
    "keypointrcnn_resnet50_fpn_320": (detection_net("keypointrcnn_resnet50_fpn", min_size=320, max_size=320),
                                      lambda: image(320)),
    "r3d_18": (torchvision_net("r3d_18"),
               lambda: [np.random.default_rng(SEED).standard_normal((1, 3, 16, 112, 112)).astype(np.float32)]),
    "timm_convnext_atto": (timm_net("convnext_atto"), image),
    "timm_fastvit_t8": (timm_net("fastvit_t8"), lambda: image(256)),
    "timm_efficientvit_b0": (timm_net("efficientvit_b0"), image),
    "timm_mobilevit_xxs": (timm_net("mobilevit_xxs"), lambda: image(256)),
    "timm_resnet18": (timm_net("resnet18"), image),
    "bert_base_encoder": (bert_encoder, bert_inputs),
    "whisper_base_encoder": (whisper_encoder, whisper_inputs),
}


def build_module(name):
    """The seeded torch module (eval mode) and its example inputs as numpy arrays."""
    import torch
    build, inputs = ZOO[name]
    torch.manual_seed(SEED)
    module = build().eval()
    return module, inputs()


def convert(name, out: pathlib.Path):
    import openvino as ov
    import torch
    module, inputs = build_module(name)
    with torch.no_grad():
        model = ov.convert_model(module, example_input=tuple(torch.from_numpy(a) for a in inputs))
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    ov.save_model(model, str(folder / "model.xml"))
    names = [p.get_any_name() for p in model.inputs]
    np.savez(folder / "inputs.npz", **dict(zip(names, inputs)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--only", action="append", choices=list(ZOO))
    parser.add_argument("--force", action="store_true", help="rebuild models already in --out")
    args = parser.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    failed = []
    for name in args.only or list(ZOO):
        if (args.out / name / "inputs.npz").exists() and not args.force:
            print(f"{name}: already built", flush=True)
            continue
        try:
            convert(name, args.out)
            print(f"{name}: ok", flush=True)
        except Exception as exc:  # noqa: BLE001  (one failing network must not stop the zoo)
            failed.append(name)
            print(f"{name}: FAILED {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}",
                  flush=True)
            traceback.print_exc(limit=3)
    print(f"built into {args.out}; failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
