"""`irrun check` against two corpora.

Valid: IRs that OpenVINO's `save_model` writes for valid models (pooling layers over seeded random
attribute combinations, multi-output layers, dynamic and interval dims, f16-compressed Consts + Convert,
small multi-layer graphs) and every IR under models/. None may give an error.

Defective: one valid base model written by OpenVINO, with exactly one defect planted per case; each must
be reported with the expected rule id on the expected layer."""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from lxml import etree
from openvino import opset1, opset2, opset8, opset14, opset16

import irrun
from irrun.tools.check import Report
from irrun.ops import REGISTRY

ROOT = Path(__file__).parents[1]
SHIPPED = sorted(ROOT.glob("models/**/*.xml"))


def _errors(report: Report) -> list[str]:
    return [line for line, d in zip(report.lines(), report.diagnostics) if d.severity == "error"]


def _assert_no_errors(paths, describe=None):
    failures = []
    for path in paths:
        report = irrun.check(path)
        if report.errors:
            failures.append((describe(path) if describe else str(path)) + "\n    " + "\n    ".join(_errors(report)))
    assert not failures, f"{len(failures)} of {len(paths)} valid IRs give errors:\n" + "\n".join(failures[:10])


# ================================================================ valid corpus


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT / "models")))
def test_shipped_models_have_no_errors(path):
    _assert_no_errors([path])


def _save(model_outputs, params, directory: Path, name: str, compress: bool) -> Path:
    model = ov.Model(model_outputs, params, name)
    path = directory / name / "model.xml"
    path.parent.mkdir(parents=True)
    ov.save_model(model, str(path), compress_to_fp16=compress)
    return path


def _input(rng, rank, element_type, dynamic=True, min_dim=1):
    """A Parameter of random static dims, some made dynamic (-1) or intervals; returns it and its dims."""
    dims = [rng.randint(min_dim, 9) for _ in range(rank)]
    partial = []
    for d in dims:
        roll = rng.random() if dynamic else 1.0
        partial.append(ov.Dimension() if roll < 0.15 else ov.Dimension(max(1, d - 2), d + 3) if roll < 0.22 else d)
    param = opset1.parameter(ov.PartialShape(partial), getattr(ov.Type, element_type), name="data")
    return param, dims


def _pool_attrs(rng, spatial, allow_ceil_torch=False, dilate=True):
    kernel = [rng.randint(1, 4) for _ in spatial]
    strides = [rng.randint(1, 3) for _ in spatial]
    dilations = [rng.randint(1, 2) if dilate else 1 for _ in spatial]
    pads_begin = [rng.randint(0, k - 1) if k > 1 else 0 for k in kernel]
    pads_end = [rng.randint(0, k - 1) if k > 1 else 0 for k in kernel]
    auto_pad = rng.choice(["explicit", "valid", "same_upper", "same_lower", "notset"])
    rounding = rng.choice(["floor", "ceil"] + (["ceil_torch"] if allow_ceil_torch else []))
    return dict(kernel=kernel, strides=strides, dilations=dilations, pads_begin=pads_begin, pads_end=pads_end,
                auto_pad=auto_pad, rounding_type=rounding)


def _maxpool(rng, version):
    rank = rng.randint(3, 5)
    et = rng.choice(["f32", "f16", "i32", "i64"] if version == 1 else ["f32", "f16", "i8", "u8", "i32", "i64"])
    param, _ = _input(rng, rank, et)
    a = _pool_attrs(rng, range(rank - 2), allow_ceil_torch=version == 14, dilate=version > 1)
    if version == 1:
        node = opset1.max_pool(param, a["strides"], a["pads_begin"], a["pads_end"], a["kernel"],
                               a["rounding_type"], a["auto_pad"])
    else:
        factory = opset8.max_pool if version == 8 else opset14.max_pool
        node = factory(param, a["strides"], a["dilations"], a["pads_begin"], a["pads_end"], a["kernel"],
                       a["rounding_type"], a["auto_pad"], rng.choice(["i32", "i64"]),
                       rng.randint(-rank, rank - 1))
    outputs = node.outputs()
    if rng.random() < 0.3:  # a second pooling layer on the values
        second = opset8.max_pool(outputs[0], [1] * (rank - 2), [1] * (rank - 2), [0] * (rank - 2),
                                 [0] * (rank - 2), [1] * (rank - 2))
        outputs = [second.output(0)] + outputs[1:]
    return outputs, [param]


def _avgpool(rng, version):
    rank = rng.randint(3, 5)
    param, _ = _input(rng, rank, rng.choice(["f32", "f16"]))
    a = _pool_attrs(rng, range(rank - 2), allow_ceil_torch=version >= 14, dilate=version == 16)
    args = (param, a["strides"], a["pads_begin"], a["pads_end"], a["kernel"], rng.random() < 0.5,
            a["rounding_type"], a["auto_pad"])
    if version == 1:
        node = opset1.avg_pool(*args)
    elif version == 14:
        node = opset14.avg_pool(*args)
    else:
        node = opset16.avg_pool(*args, dilations=a["dilations"])
    return node.outputs(), [param]


def _adaptive(rng, kind):
    rank = rng.randint(3, 5)
    param, _ = _input(rng, rank, rng.choice(["f32", "f16"]))
    sizes = np.array([rng.randint(1, 6) for _ in range(rank - 2)], dtype=rng.choice([np.int32, np.int64]))
    if kind == "max":
        node = opset8.adaptive_max_pool(param, opset1.constant(sizes), rng.choice(["i32", "i64"]))
    else:
        node = opset8.adaptive_avg_pool(param, opset1.constant(sizes))
    return node.outputs(), [param]


def _roi_pooling(rng, _):
    et = rng.choice(["f32", "f16"])
    param, dims = _input(rng, 4, et, min_dim=2)
    count = rng.randint(1, 4)
    rois = np.concatenate([np.zeros((count, 1)), np.sort(np.random.default_rng(rng.randint(0, 99)).random(
        (count, 4)), axis=1)], axis=1).astype(np.float16 if et == "f16" else np.float32)
    pooled = [rng.randint(1, 4), rng.randint(1, 4)]
    method = rng.choice(["max", "bilinear"])
    node = opset2.roi_pooling(param, opset1.constant(rois), output_roi=pooled,
                              spatial_scale=rng.choice([0.25, 0.5, 1.0]), method=method)
    return node.outputs(), [param]


def _convolution(rng, grouped):
    """Convolution / GroupConvolution with f32 weights: saved compressed, as f16 Consts + Convert."""
    rank = rng.randint(3, 5)
    groups = rng.randint(1, 3) if grouped else 1
    param, _ = _input(rng, rank, "f32")
    a = _pool_attrs(rng, range(rank - 2))
    channels_in, channels_out = rng.randint(1, 3), rng.randint(1, 3)
    weights_shape = ([groups, channels_out, channels_in] if grouped else [channels_out, channels_in]) + a["kernel"]
    param = opset1.parameter(ov.PartialShape([param.get_partial_shape()[0], groups * channels_in,
                                              *param.get_partial_shape()[2:]]), ov.Type.f32, name="data")
    weights = opset1.constant(np.random.default_rng(rng.randint(0, 99)).standard_normal(weights_shape).astype(np.float32))
    factory = opset1.group_convolution if grouped else opset1.convolution
    node = factory(param, weights, a["strides"], a["pads_begin"], a["pads_end"], a["dilations"], a["auto_pad"])
    return node.outputs(), [param]


def _mixed(rng, _):
    """Convolution with (compressible) f32 weights, MaxPool-8 with both outputs, a Convert of the indices,
    AdaptiveMaxPool and ROIPooling on the pooled map: a small realistic graph."""
    param = opset1.parameter(ov.PartialShape([-1, 3, 16, 16]), ov.Type.f32, name="image")
    weights = opset1.constant(np.random.default_rng(rng.randint(0, 99)).standard_normal((4, 3, 3, 3)).astype(np.float32))
    conv = opset1.convolution(param, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    pool = opset8.max_pool(conv, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2], index_element_type="i32")
    indices = opset1.convert(pool.output(1), "i64")
    adaptive = opset8.adaptive_max_pool(pool.output(0), opset1.constant(np.array([3, 3], np.int64)))
    rois = opset1.constant(np.array([[0, 1, 1, 6, 6], [0, 0, 2, 7, 5]], np.float32))
    roi = opset2.roi_pooling(pool.output(0), rois, output_roi=[2, 2], spatial_scale=0.5)
    return [pool.output(0), indices.output(0), *adaptive.outputs(), roi.output(0)], [param]


FAMILIES = {  # family: (generator, its argument, how many IRs)
    "MaxPool-1": (_maxpool, 1, 150), "MaxPool-8": (_maxpool, 8, 250), "MaxPool-14": (_maxpool, 14, 250),
    "AvgPool-1": (_avgpool, 1, 80), "AvgPool-14": (_avgpool, 14, 80), "AvgPool-16": (_avgpool, 16, 80),
    "AdaptiveMaxPool-8": (_adaptive, "max", 100), "AdaptiveAvgPool-8": (_adaptive, "avg", 50),
    "ROIPooling-2": (_roi_pooling, None, 100), "mixed": (_mixed, None, 4),
    "Convolution-1": (_convolution, False, 60), "GroupConvolution-1": (_convolution, True, 60),
}
ALWAYS_COMPRESSED = {"Convolution-1", "GroupConvolution-1", "mixed"}


def generate_valid(family: str, directory: Path) -> list[Path]:
    """`count` IRs of one family that OpenVINO accepts (combinations it refuses are skipped)."""
    make, arg, count = FAMILIES[family]
    rng = random.Random(f"check-valid-{family}")
    paths, attempts = [], 0
    while len(paths) < count and attempts < count * 20:
        attempts += 1
        try:
            outputs, params = make(rng, arg)
        except RuntimeError:  # OpenVINO's own validation refused the combination
            continue
        compress = family in ALWAYS_COMPRESSED or rng.random() < 0.5
        paths.append(_save(outputs, params, directory, f"{family}_{attempts}", compress))
    assert len(paths) == count, f"only {len(paths)} valid {family} models in {attempts} attempts"
    return paths


@pytest.mark.parametrize("family", FAMILIES)
def test_openvino_written_irs_have_no_errors(family, tmp_path):
    paths = generate_valid(family, tmp_path)
    _assert_no_errors(paths, describe=lambda p: p.read_text())


def test_compressed_weights_and_dynamic_dims_are_checked(tmp_path):
    """The valid corpus really exercises f16 Consts + Convert and dynamic dims, and a valid IR is silent."""
    path = generate_valid("mixed", tmp_path)[0]
    text = path.read_text()
    assert 'element_type="f16"' in text and 'type="Convert"' in text and "<dim>-1</dim>" in text
    assert irrun.check(path).diagnostics == []


# ================================================================ defect corpus


def _base_model(directory: Path) -> Path:
    """A valid model with every structure a defect is planted in: named layers, an f16 Const + Convert,
    multi-output MaxPool-8, MaxPool-1, AdaptiveMaxPool-8 with a Const size, ROIPooling-2 with Const ROIs."""
    param = opset1.parameter([1, 3, 12, 12], ov.Type.f32, name="image")
    weights = opset1.constant(np.random.default_rng(1).standard_normal((4, 3, 3, 3)).astype(np.float32))
    conv = opset1.convolution(param, weights, [1, 1], [1, 1], [1, 1], [1, 1], name="conv")
    pool = opset8.max_pool(conv, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2], name="pool8")
    pool1 = opset1.max_pool(param, [1, 1], [0, 0], [0, 0], [3, 3], name="pool1")
    sizes = opset1.constant(np.array([3, 2], np.int64), name="sizes")
    adaptive = opset8.adaptive_max_pool(pool.output(0), sizes, "i32", name="adaptive")
    rois = opset1.constant(np.array([[0, 1, 1, 6, 6], [0, 0, 2, 7, 5]], np.float32), name="rois")
    roi = opset2.roi_pooling(pool.output(0), rois, output_roi=[2, 2], spatial_scale=0.5, name="roi")
    outputs = [*pool.outputs(), pool1.output(0), *adaptive.outputs(), roi.output(0)]
    results = [opset1.result(o, name=f"out_{i}") for i, o in enumerate(outputs)]
    model = ov.Model(results, [param], "base")
    path = directory / "model.xml"
    ov.save_model(model, str(path), compress_to_fp16=True)
    return path


class Planted:
    """The base model's XML as an lxml tree, with helpers to plant one defect."""

    def __init__(self, base: Path):
        self.tree = etree.parse(str(base))
        self.root = self.tree.getroot()
        self.base = base
        self.bin_bytes = base.with_suffix(".bin").read_bytes()

    def layer(self, name):
        (el,) = self.root.xpath(f"layers/layer[@name='{name}']")
        return el

    def id(self, name) -> str:
        return self.layer(name).get("id")

    def const_named(self, element_type):
        """The first Const of an element type (the serializer names compressed Consts itself)."""
        return self.root.xpath(f"layers/layer[@type='Const'][data/@element_type='{element_type}']")[0]

    def data(self, name, **attrs):
        data = self.layer(name).find("data")
        for key, value in attrs.items():
            if value is None:
                data.attrib.pop(key, None)
            else:
                data.set(key, value)

    def port(self, name, port_id):
        (el,) = self.layer(name).xpath(f".//port[@id='{port_id}']")
        return el

    def edges(self, **match):
        keys = {"from_layer": "from-layer", "from_port": "from-port", "to_layer": "to-layer", "to_port": "to-port"}
        found = self.root.find("edges").findall("edge")
        return [e for e in found if all(e.get(keys[k]) == str(v) for k, v in match.items())]

    def save(self, directory: Path, text: str | None = None, with_bin=True) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "model.xml"
        path.write_bytes(text.encode() if text is not None else etree.tostring(self.tree, xml_declaration=True))
        if with_bin:
            (directory / "model.bin").write_bytes(self.bin_bytes)
        return path


# irrun implements every op version of OpenVINO's opsets, so the defects about an op it lacks remove this one
# from the registry while they are checked.
MISSING_OP = ("GRN", 1)


def _unimplemented_unary_type() -> str:
    """The type of MISSING_OP, planted on a one-input layer whose output dims are then declared by hand."""
    return MISSING_OP[0]


def _set_dims(port, dims):
    for d in port.findall("dim"):
        port.remove(d)
    for value in dims:
        etree.SubElement(port, "dim").text = str(value)


# Each defect: (name, plant(p) -> (expected rule, expected layer name or None, severity)); `plant` edits the tree
# (or returns replacement XML text via p.text / removes the .bin via p.no_bin).
DEFECTS = {}
PENDING = {}  # defect name -> the op declaration change that will catch it (strict xfail until then)


def defect(name, pending=None):
    def register(function):
        DEFECTS[name] = function
        if pending:
            PENDING[name] = pending
        return function
    return register


@defect("not well-formed XML")
def _(p):
    p.text = etree.tostring(p.tree).decode()[:-40]
    return "file.xml", None


@defect("DOCTYPE with an entity")
def _(p):
    p.text = '<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY x "y">]>\n' + etree.tostring(p.tree).decode()
    return "file.doctype", None


@defect("IR version 9")
def _(p):
    p.root.set("version", "9")
    return "file.version", None


@defect("no <layers>")
def _(p):
    p.root.remove(p.root.find("layers"))
    return "file.structure", None


@defect(".bin missing")
def _(p):
    p.no_bin = True
    return "file.bin", None


@defect("Const offset past the .bin")
def _(p):
    p.const_named("f16").find("data").set("offset", str(len(p.bin_bytes)))
    return "const.offset", p.const_named("f16").get("name")


@defect("Const size too small for its shape")
def _(p):
    p.const_named("f16").find("data").set("size", "100")
    return "const.size", p.const_named("f16").get("name")


@defect("Const element type unknown")
def _(p):
    p.layer("sizes").find("data").set("element_type", "i65")
    return "attr.value", "sizes"


@defect("Const element type string")
def _(p):
    p.layer("sizes").find("data").set("element_type", "string")  # i64 data read as a string Const's header
    return "const.weights", "sizes"


@defect("Const shape negative")
def _(p):
    p.layer("sizes").find("data").set("shape", "-2")
    return "attr.value", "sizes"


@defect("duplicate layer id")
def _(p):
    p.layer("pool1").set("id", p.id("conv"))
    return "layer.id.duplicate", "pool1"


@defect("unknown layer type")
def _(p):
    p.layer("pool1").set("type", "MaxPoolX")
    return "layer.type", "pool1"


@defect("unknown opset")
def _(p):
    p.layer("pool1").set("version", "opset99")
    return "layer.opset", "pool1"


@defect("required attribute missing")
def _(p):
    p.data("pool8", kernel=None)
    return "attr.missing", "pool8"


@defect("enum value unknown")
def _(p):
    p.data("pool8", rounding_type="round")
    return "attr.value", "pool8"


@defect("ceil_torch before MaxPool-14")
def _(p):
    p.data("pool8", rounding_type="ceil_torch")
    return "attr.value", "pool8"


@defect("auto_pad unknown")
def _(p):
    p.data("pool1", auto_pad="same")
    return "attr.value", "pool1"


@defect("MaxPool index_element_type f32 (OpenVINO accepts it)")
def _(p):
    p.data("pool8", index_element_type="f32")
    return "attr.value.spec", "pool8"


@defect("AdaptiveMaxPool index_element_type f16")
def _(p):
    p.data("adaptive", index_element_type="f16")
    return "attr.value", "adaptive"


@defect("integer list not integers")
def _(p):
    p.data("pool1", strides="1, x")
    return "attr.value", "pool1"


@defect("zero stride")
def _(p):
    p.data("pool8", strides="0, 1")
    return "attr.range", "pool8"


@defect("zero kernel")
def _(p):
    p.data("pool1", kernel="0, 3")
    return "attr.range", "pool1"


@defect("zero dilation")
def _(p):
    p.data("pool8", dilations="1, 0")
    return "attr.range", "pool8"


@defect("kernel list longer than the spatial rank")
def _(p):
    p.data("pool8", kernel="2, 2, 2")
    return "attr.length", "pool8"


@defect("pads list shorter than the spatial rank")
def _(p):
    p.data("pool1", pads_begin="0")
    return "attr.length", "pool1"


@defect("axis out of range")
def _(p):
    p.data("pool8", axis="4")
    return "attr.range", "pool8"


@defect("kernel larger than the padded input")
def _(p):
    p.data("pool1", kernel="13, 3")
    return "shape.kernel", "pool1"


@defect("ROIPooling method case")
def _(p):
    p.data("roi", method="Max")
    return "attr.value", "roi"


@defect("ROIPooling spatial_scale zero")
def _(p):
    p.data("roi", spatial_scale="0")
    return "attr.range", "roi"


@defect("ROIPooling pooled size zero")
def _(p):
    p.data("roi", pooled_h="0")
    return "attr.range", "roi"


@defect("AdaptiveMaxPool output_size of the wrong length")
def _(p):
    const = p.layer("sizes")
    const.find("data").set("shape", "1")
    const.find("data").set("size", "8")
    _set_dims(const.find("output/port"), [1])
    _set_dims(p.port("adaptive", 1), [1])
    return "port.dims", "adaptive"


@defect("unknown attribute (warning)")
def _(p):
    p.data("pool8", exclude_pad="true")
    return "attr.unknown", "pool8", "warning"


@defect("output dims wrong")
def _(p):
    _set_dims(p.port("pool8", 1), [1, 4, 11, 10])
    return "port.dims.declared", "pool8"


@defect("output rank wrong")
def _(p):
    _set_dims(p.port("adaptive", 2), [1, 4, 3])
    return "port.dims.declared", "adaptive"


@defect("output precision wrong")
def _(p):
    p.port("pool8", 2).set("precision", "I32")
    return "port.type.declared", "pool8"


@defect("declared interval excludes the inferred dim")
def _(p):
    _set_dims(p.port("pool1", 1), [1, 3, "2..8", 10])
    return "port.dims.declared", "pool1"


@defect("input dims disagree with the producer")
def _(p):
    _set_dims(p.port("out_2", 0), [1, 3, 10, 11])
    return "edge.dims", "out_2"


@defect("input precision disagrees with the producer")
def _(p):
    p.port("roi", 1).set("precision", "FP16")
    return "edge.type", "roi"


@defect("Parameter shape disagrees with its port")
def _(p):
    p.data("image", shape="1,3,12,13")
    return "port.dims.declared", "image"


@defect("port dim unreadable")
def _(p):
    p.port("pool1", 1).findall("dim")[2].text = "ten"
    return "port.dims", "pool1"


@defect("port precision unknown")
def _(p):
    p.port("pool1", 1).set("precision", "FP33")
    return "port.precision", "pool1"


@defect("port id used twice")
def _(p):
    p.port("adaptive", 3).set("id", "2")
    return "port.id", "adaptive"


@defect("output port missing")
def _(p):
    port = p.port("adaptive", 3)
    port.getparent().remove(port)
    result = p.layer("out_4")
    result.getparent().remove(result)
    for edge in p.edges(to_layer=result.get("id")):
        edge.getparent().remove(edge)
    return "port.count", "adaptive"


@defect("edge to a missing layer")
def _(p):
    p.edges(to_layer=p.id("out_2"))[0].set("from-layer", "999")
    return "edge.ref", "out_2"


@defect("edge from a missing port")
def _(p):
    p.edges(to_layer=p.id("out_2"))[0].set("from-port", "7")
    return "edge.port", "pool1"


@defect("input port fed twice")
def _(p):
    edge = p.edges(to_layer=p.id("out_2"))[0]
    twin = etree.SubElement(edge.getparent(), "edge")
    for key, value in edge.attrib.items():
        twin.set(key, value)
    twin.set("from-layer", p.id("pool8"))
    twin.set("from-port", "1")
    return "edge.multiple", "out_2"


@defect("Result not fed")
def _(p):
    edge = p.edges(to_layer=p.id("out_2"))[0]
    edge.getparent().remove(edge)
    return "edge.unfed", "out_2"


@defect("cycle")
def _(p):
    # conv reads the MaxPool-8 values it feeds
    edge = p.edges(to_layer=p.id("conv"), to_port=0)[0]
    edge.set("from-layer", p.id("pool8"))
    edge.set("from-port", "1")
    return "graph.cycle", "pool8"


@defect("no Result")
def _(p):
    layers = p.root.find("layers")
    for result in layers.xpath("layer[@type='Result']"):
        for edge in p.edges(to_layer=result.get("id")):
            edge.getparent().remove(edge)
        layers.remove(result)
    return "graph.results", None


@defect("dead layer (warning)")
def _(p):
    result = p.layer("out_2")
    result.getparent().remove(result)
    for edge in p.edges(to_layer=result.get("id")):
        edge.getparent().remove(edge)
    return "graph.dead", "pool1", "warning"


NEEDS_MISSING_OP = {"op irrun does not implement (warning)", "dims wrong after an op irrun does not implement"}


@defect("op irrun does not implement (warning)")
def _(p):
    p.layer("pool1").set("type", _unimplemented_unary_type())
    p.layer("pool1").remove(p.layer("pool1").find("data"))
    _set_dims(p.port("pool1", 1), [1, 3, 12, 12])
    _set_dims(p.port("out_2", 0), [1, 3, 12, 12])
    return "layer.unimplemented", "pool1", "warning"


@defect("dims wrong after an op irrun does not implement")
def _(p):
    p.layer("pool1").set("type", _unimplemented_unary_type())
    p.layer("pool1").remove(p.layer("pool1").find("data"))
    _set_dims(p.port("pool1", 1), [1, 3, 12, 12])
    return "edge.dims", "out_2"


@defect("Convert destination type unknown")
def _(p):
    convert = p.root.xpath("layers/layer[@type='Convert']")[0]
    convert.find("data").set("destination_type", "f31")
    return "attr.value", convert.get("name")


@defect("negative pads (OpenVINO fails to read them)")
def _(p):
    p.data("pool1", pads_begin="-1, 0")
    return "attr.value", "pool1"


@defect("ROIPooling spatial_scale NaN (OpenVINO refuses it)")
def _(p):
    p.data("roi", spatial_scale="nan")
    return "attr.range", "roi"


@defect("MaxPool on boolean data (the spec allows float or integer; OpenVINO accepts it)")
def _(p):
    p.layer("image").find("data").set("element_type", "boolean")
    for name, port in (("image", 0), ("conv", 0), ("pool1", 0), ("pool1", 1), ("out_2", 0)):
        p.port(name, port).set("precision", "BOOL")
    return "port.type.spec", "pool1"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return _base_model(tmp_path_factory.mktemp("base"))


def test_base_model_is_conformant(base):
    assert irrun.check(base).diagnostics == []


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=f"needs {PENDING[name]}")) if name in PENDING
    else name for name in DEFECTS])
def test_defect_is_caught(name, base, tmp_path, monkeypatch):
    if name in NEEDS_MISSING_OP:
        monkeypatch.delitem(REGISTRY, MISSING_OP)
    planted = Planted(base)
    planted.text, planted.no_bin = None, False
    expected = DEFECTS[name](planted)
    rule, layer_name = expected[:2]
    severity = expected[2] if len(expected) > 2 else "error"
    layer_id = None
    if layer_name is not None:
        layer_id = planted.layer(layer_name).get("id")
    path = planted.save(tmp_path, planted.text, with_bin=not planted.no_bin)
    report = irrun.check(path)
    found = [(d.rule, d.layer.id if d.layer else None, d.severity) for d in report.diagnostics]
    assert (rule, layer_id, severity) in found, "\n".join(report.lines())
    assert report.conformant == (severity == "warning"), "\n".join(report.lines())
    if layer_name is not None and layer_id is not None:
        (named,) = {d.layer.name for d in report.diagnostics if d.rule == rule and d.layer.id == layer_id}
        assert named == layer_name or rule.startswith("layer.id")


def test_defect_corpus_has_at_least_30_kinds():
    assert len(DEFECTS) - len(PENDING) >= 30
