"""Build the example IR models shipped in models/, with their inputs and expected outputs.

Dev-only script: it needs the `openvino` package (the oracle), never irrun itself.
Run it from anywhere; it rewrites every model folder next to this file and
models/README.md, and is deterministic (re-running it gives byte-identical files for
the same OpenVINO version):

    python models/make_models.py

Each model folder holds:
    model.xml / model.bin   the IR, saved by openvino.save_model(compress_to_fp16=False)
    input.npy               the input for the Parameter named "input"
    expected.npz            OpenVINO's outputs, keyed by each output's get_any_name()

Expected outputs come from OpenVINO's CPU plugin with INFERENCE_PRECISION_HINT=f32,
reading back the saved model.xml (so the names are the ones a reader of the file
sees). As a guard against a misbuilt model, the seven MaxPool-8 examples are also
checked against the spec's worked examples (with the Example 1 erratum fixed) and
against OpenVINO's reference implementation (ov.Model.evaluate), and pooling_mix's
outputs against small NumPy re-implementations (check_pooling_mix). The script stops
with an AssertionError if any of these disagree.
"""
import io
import pathlib
import sys
import zipfile

import numpy as np
import openvino as ov
from openvino import opset1, opset2, opset8

HERE = pathlib.Path(__file__).resolve().parent
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


# --------------------------------------------------------------------------- helpers

def parameter(shape, name="input"):
    p = opset8.parameter(shape, np.float32, name=name)
    p.output(0).get_tensor().set_names({name})
    return p


def name_output(output, name):
    """Give a node output a tensor name and return a Result for it (friendly name = name)."""
    output.get_tensor().set_names({name})
    result = opset8.result(output)
    result.set_friendly_name(name)
    return result


def save_npz(path, arrays):
    """np.savez, but byte-for-byte deterministic: fixed zip timestamps, keys in output order."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for key in arrays:
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.require(arrays[key], requirements="C"), allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())


def save_npy(path, array):
    with open(path, "wb") as f:
        np.lib.format.write_array(f, np.require(array, requirements="C"), allow_pickle=False)


def build(folder, model, inputs):
    """Save `model` into models/<folder>/, run the saved file on the CPU plugin, store I/O."""
    out_dir = HERE / folder
    out_dir.mkdir(exist_ok=True)
    xml = out_dir / "model.xml"
    ov.save_model(model, str(xml), compress_to_fp16=False)
    for name, array in inputs.items():
        assert name == "input", "the README and loaders assume one input named 'input'"
        save_npy(out_dir / "input.npy", array)

    core = ov.Core()
    read_back = core.read_model(str(xml))
    compiled = core.compile_model(read_back, "CPU", CONFIG)
    request = compiled.create_infer_request()
    request.infer({k: v for k, v in inputs.items()})
    expected = {}
    for output in compiled.outputs:
        name = output.get_any_name()
        assert name not in expected, f"{folder}: duplicate output name {name!r}"
        expected[name] = np.array(request.get_tensor(output).data, copy=True)
    # output order and names as a reader of the file sees them
    names = [o.get_any_name() for o in read_back.outputs]
    assert list(expected) == names, (list(expected), names)
    save_npz(out_dir / "expected.npz", expected)
    return read_back, expected


def evaluate_reference(model, x):
    """Run `model` through OpenVINO's reference implementations (no plugin)."""
    outs = [ov.Tensor(np.zeros(o.get_partial_shape().to_shape(), o.get_element_type().to_dtype()))
            for o in model.outputs]
    assert model.evaluate(outs, [ov.Tensor(x)]), "ov.Model.evaluate failed"
    return {o.get_any_name(): t.data.copy() for o, t in zip(model.outputs, outs)}


# --------------------------------------------------------------------------- MaxPool-8 examples

X3 = [[-1, 2, 3], [4, 5, -6], [-7, 8, 9]]

# (attributes, input, spec output0, spec output1); the spec's Example 1 prints -6 / 5 at
# output [0][0][1][3], but that window holds 3 and -6: OpenVINO gives 3 / 2 (erratum fixed here).
MAXPOOL_EXAMPLES = {
    1: dict(
        what="4D, explicit pads 1, kernel 2, stride 1 (spec erratum at [0,0,1,3]: 3 / index 2)",
        attrs=dict(strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], kernel=[2, 2],
                   rounding_type="floor", auto_pad="explicit"),
        x=[[X3]],
        values=[[[[-1, 2, 3, 3], [4, 5, 5, 3], [4, 8, 9, 9], [-7, 8, 9, 9]]]],
        indices=[[[[0, 1, 2, 2], [3, 4, 4, 2], [3, 7, 8, 8], [6, 7, 8, 8]]]],
    ),
    2: dict(
        what="3D input, 1D kernel 3, auto_pad valid",
        attrs=dict(strides=[1], kernel=[3], rounding_type="floor", auto_pad="valid"),
        x=[[[-1, 2, 3, 5, -7, 9, 1]]],
        values=[[[3, 5, 5, 9, 9]]],
        indices=[[[2, 3, 3, 5, 5]]],
    ),
    3: dict(
        what="4D, kernel 2, auto_pad same_lower",
        attrs=dict(strides=[1, 1], kernel=[2, 2], rounding_type="floor", auto_pad="same_lower"),
        x=[[X3]],
        values=[[[[-1, 2, 3], [4, 5, 5], [4, 8, 9]]]],
        indices=[[[[0, 1, 2], [3, 4, 4], [3, 7, 8]]]],
    ),
    4: dict(
        what="4D, 2 channels, kernel 2, auto_pad same_upper (indices over the whole tensor)",
        attrs=dict(strides=[1, 1], kernel=[2, 2], rounding_type="floor", auto_pad="same_upper"),
        x=[[X3, [[2, -1, 5], [6, -7, 1], [8, 2, -3]]]],
        values=[[[[5, 5, 3], [8, 9, 9], [8, 9, 9]], [[6, 5, 5], [8, 2, 1], [8, 2, -3]]]],
        indices=[[[[4, 4, 2], [7, 8, 8], [7, 8, 8]], [[12, 11, 11], [15, 16, 14], [15, 16, 17]]]],
    ),
    5: dict(
        what="4D, kernel 2, stride 2, auto_pad valid + rounding ceil (gives 2x2)",
        attrs=dict(strides=[2, 2], kernel=[2, 2], rounding_type="ceil", auto_pad="valid"),
        x=[[X3]],
        values=[[[[5, 3], [8, 9]]]],
        indices=[[[[4, 2], [7, 8]]]],
    ),
    6: dict(
        what="4D, kernel 2, dilations 2, explicit pads 1",
        attrs=dict(strides=[1, 1], kernel=[2, 2], dilations=[2, 2], rounding_type="floor",
                   auto_pad="explicit", pads_begin=[1, 1], pads_end=[1, 1]),
        x=[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]],
        values=[[[[5, 6, 5], [8, 9, 8], [5, 6, 5]]]],
        indices=[[[[4, 5, 4], [7, 8, 7], [4, 5, 4]]]],
    ),
    7: dict(
        what="4D, 2 channels, kernel 2, axis=2 (indices per channel, spatial only)",
        attrs=dict(strides=[1, 1], kernel=[2, 2], dilations=[1, 1], rounding_type="floor",
                   auto_pad="explicit", pads_begin=[0, 0], pads_end=[0, 0], axis=2),
        x=[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[10, 11, 12], [13, 14, 15], [16, 17, 18]]]],
        values=[[[[5, 6], [8, 9]], [[14, 15], [17, 18]]]],
        indices=[[[[4, 5], [7, 8]], [[4, 5], [7, 8]]]],
    ),
}


def maxpool_example(number, spec):
    attrs = dict(spec["attrs"])
    x = np.array(spec["x"], dtype=np.float32)
    rank = x.ndim - 2
    auto_pad = attrs.pop("auto_pad")
    p = parameter(list(x.shape))
    node = opset8.max_pool(
        p,
        strides=attrs.pop("strides"),
        dilations=attrs.pop("dilations", [1] * rank),
        pads_begin=attrs.pop("pads_begin", [0] * rank),
        pads_end=attrs.pop("pads_end", [0] * rank),
        kernel_shape=attrs.pop("kernel"),
        rounding_type=attrs.pop("rounding_type"),
        auto_pad=None if auto_pad == "explicit" else auto_pad,
        index_element_type="i64",
        axis=attrs.pop("axis", 0),
        name="maxpool",
    )
    assert not attrs, attrs
    results = [name_output(node.output(0), "values"), name_output(node.output(1), "indices")]
    model = ov.Model(results, [p], f"maxpool_example{number}")
    read_back, expected = build(f"maxpool_example{number}", model, {"input": x})
    np.testing.assert_array_equal(expected["values"], np.array(spec["values"], np.float32))
    np.testing.assert_array_equal(expected["indices"], np.array(spec["indices"], np.int64))
    assert expected["values"].dtype == np.float32 and expected["indices"].dtype == np.int64
    reference = evaluate_reference(read_back, x)
    for name in expected:
        np.testing.assert_array_equal(reference[name], expected[name])
    return dict(x=x, expected=expected)


# --------------------------------------------------------------------------- pooling_mix

# ROIs for method="max": (batch_id, x1, y1, x2, y2) in the 32x32 input's pixels; the
# feature map is the 16x16 MaxPool output, hence spatial_scale 0.5. Odd coordinates
# land on .5 after scaling and exercise round-half-away-from-zero. Stored as an f16
# Constant followed by a Convert to f32 (what converted models look like).
ROIS_MAX = np.array([
    [0, 0, 0, 31, 31],
    [0, 3, 5, 20, 13],
    [0, 9, 1, 12, 30],
    [0, 25, 27, 25, 27],   # one-pixel ROI: every bin reads the same element
], dtype=np.float16)
# ROIs for method="bilinear": normalised [0, 1] coordinates (spatial_scale is ignored).
ROIS_BILINEAR = np.array([
    [0, 0.0, 0.0, 1.0, 1.0],
    [0, 0.125, 0.25, 0.625, 0.875],
    [0, 0.5, 0.0, 0.75, 0.375],
], dtype=np.float32)


def pooling_mix():
    rng = np.random.default_rng(20260401)
    x = rng.standard_normal((1, 8, 32, 32)).astype(np.float32)
    p = parameter(list(x.shape))
    mp = opset8.max_pool(p, strides=[2, 2], dilations=[1, 1], pads_begin=[1, 1],
                         pads_end=[1, 1], kernel_shape=[3, 3], rounding_type="floor",
                         auto_pad=None, index_element_type="i64", axis=0, name="maxpool")
    size = opset1.constant(np.array([7, 7], dtype=np.int64), name="adaptive_size")
    amp = opset8.adaptive_max_pool(mp.output(0), size, index_element_type="i32",
                                   name="adaptive_maxpool")
    amp_idx64 = opset1.convert(amp.output(1), "i64", name="adaptive_indices_i64")
    rois_f16 = opset1.constant(ROIS_MAX, name="rois_max_f16")
    rois = opset1.convert(rois_f16, "f32", name="rois_max")
    roi_max = opset2.roi_pooling(mp.output(0), rois, output_roi=[3, 3], spatial_scale=0.5,
                                 method="max", name="roi_pool_max")
    rois_bl = opset1.constant(ROIS_BILINEAR, name="rois_bilinear")
    roi_bl = opset2.roi_pooling(mp.output(0), rois_bl, output_roi=[4, 4], spatial_scale=1.0,
                                method="bilinear", name="roi_pool_bilinear")
    results = [
        name_output(mp.output(0), "pool_values"),
        name_output(mp.output(1), "pool_indices"),
        name_output(amp.output(0), "adaptive_values"),
        name_output(amp_idx64.output(0), "adaptive_indices"),
        name_output(roi_max.output(0), "roi_max"),
        name_output(roi_bl.output(0), "roi_bilinear"),
    ]
    model = ov.Model(results, [p], "pooling_mix")
    _, expected = build("pooling_mix", model, {"input": x})
    check_pooling_mix(x, expected)
    return dict(x=x, expected=expected)


def check_pooling_mix(x, e):
    """Independent NumPy checks of the CPU plugin's answers (catch a misbuilt model)."""
    n, c, h, w = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    win = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))[:, :, ::2, ::2]
    np.testing.assert_array_equal(e["pool_values"], win.max(axis=(-2, -1)))
    flat = x.reshape(-1)
    np.testing.assert_array_equal(flat[e["pool_indices"]], e["pool_values"])
    # AdaptiveMaxPool: indices are spatial (per channel) into the 16x16 map
    fm = e["pool_values"]
    ih = fm.shape[2]
    ref = np.empty((n, c, 7, 7), np.float32)
    for i in range(7):
        for j in range(7):
            y0, y1 = (i * ih) // 7, -((-(i + 1) * ih) // 7)
            x0, x1 = (j * ih) // 7, -((-(j + 1) * ih) // 7)
            ref[:, :, i, j] = fm[:, :, y0:y1, x0:x1].max(axis=(-2, -1))
    np.testing.assert_array_equal(e["adaptive_values"], ref)
    assert e["adaptive_indices"].dtype == np.int64
    got = np.take_along_axis(fm.reshape(n, c, -1), e["adaptive_indices"].reshape(n, c, -1), -1)
    np.testing.assert_array_equal(got.reshape(ref.shape), ref)
    # ROIPooling max, OpenVINO reference algorithm (SEMANTICS.md)
    roi = ROIS_MAX.astype(np.float32)
    ref = np.zeros((len(roi), c, 3, 3), np.float32)
    for r, (b, *coords) in enumerate(roi):
        x1, y1, x2, y2 = (int(np.sign(v * 0.5) * np.floor(abs(v * 0.5) + 0.5)) for v in coords)
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for ph in range(3):
            hs = min(max(int(np.floor(ph * rh / 3)) + y1, 0), ih)
            he = min(max(int(np.ceil((ph + 1) * rh / 3)) + y1, 0), ih)
            for pw in range(3):
                ws = min(max(int(np.floor(pw * rw / 3)) + x1, 0), ih)
                we = min(max(int(np.ceil((pw + 1) * rw / 3)) + x1, 0), ih)
                if he > hs and we > ws:
                    ref[r, :, ph, pw] = fm[int(b), :, hs:he, ws:we].max(axis=(-2, -1))
    np.testing.assert_array_equal(e["roi_max"], ref)
    # ROIPooling bilinear, OpenVINO reference algorithm (normalised coordinates)
    ref = np.zeros((len(ROIS_BILINEAR), c, 4, 4), np.float32)
    last = np.float32(ih - 1)
    for r, (b, x1, y1, x2, y2) in enumerate(ROIS_BILINEAR):
        h_step, w_step = (y2 - y1) * last / np.float32(3), (x2 - x1) * last / np.float32(3)
        for ph in range(4):
            for pw in range(4):
                in_y = np.float32(ph) * h_step + y1 * last
                in_x = np.float32(pw) * w_step + x1 * last
                if not (0 <= in_y <= last and 0 <= in_x <= last):
                    continue
                top, left = int(np.floor(in_y)), int(np.floor(in_x))
                bottom, right = min(int(np.ceil(in_y)), ih - 1), min(int(np.ceil(in_x)), ih - 1)
                f = fm[int(b)]
                dx = in_x - left
                upper = f[:, top, left] + (f[:, top, right] - f[:, top, left]) * dx
                lower = f[:, bottom, left] + (f[:, bottom, right] - f[:, bottom, left]) * dx
                ref[r, :, ph, pw] = upper + (lower - upper) * (in_y - top)
    np.testing.assert_allclose(e["roi_bilinear"], ref, rtol=0, atol=1e-5)


# --------------------------------------------------------------------------- README

def describe(arr):
    return f"{arr.dtype} {list(arr.shape)}"


def folder_size(folder):
    return sum(p.stat().st_size for p in (HERE / folder).iterdir() if p.is_file())


def write_readme(rows):
    lines = [
        "# Example models",
        "",
        "Small OpenVINO IR models that ship with irrun, each with an input and the outputs",
        "OpenVINO computes for it. **Generated** by `python models/make_models.py` (needs the",
        "`openvino` package, a dev dependency); edit that script, not this file.",
        "",
        "Every folder holds `model.xml` + `model.bin` (IR v11, saved with",
        "`openvino.save_model(..., compress_to_fp16=False)`), `input.npy` (the input of the",
        "Parameter named `input`) and `expected.npz` (OpenVINO's CPU plugin outputs with",
        "`INFERENCE_PRECISION_HINT=f32`, keyed by output name, i.e. `get_any_name()`).",
        "",
        "```sh",
        "irrun models/pooling_mix/model.xml -i input=models/pooling_mix/input.npy -o out.npz",
        "```",
        "",
        "| model | what it shows | input | outputs | size |",
        "| --- | --- | --- | --- | --- |",
    ]
    for folder, what, x, expected in rows:
        outs = "<br>".join(f"`{k}`: {describe(v)}" for k, v in expected.items())
        lines.append(f"| `{folder}` | {what} | `input`: {describe(x)} | {outs} "
                     f"| {folder_size(folder) / 1024:.1f} KB |")
    lines += [
        "",
        "The `maxpool_example*` models are the seven worked examples of OpenVINO's MaxPool-8",
        "operation spec, with the spec's attributes and inputs; they all use",
        "`index_element_type=i64`. The script asserts OpenVINO's outputs equal the spec's,",
        "except for the spec's Example 1 erratum: it prints -6 (index 5) at output",
        "`[0][0][1][3]`, but that window holds 3 and -6, and OpenVINO gives 3 (index 2).",
        "",
        "`pooling_mix` graph:",
        "",
        "```",
        "input f32[1,8,32,32]",
        " -> MaxPool-8 (kernel 3, stride 2, pads 1, i64 indices)    -> pool_values, pool_indices",
        "      values f32[1,8,16,16] feed:",
        "      -> AdaptiveMaxPool-8 to 7x7 (i32 indices)            -> adaptive_values",
        "           indices -> Convert i32->i64                       -> adaptive_indices",
        "      -> ROIPooling-2 max 3x3, spatial_scale 0.5,",
        "           ROIs = Constant f16[4,5] -> Convert f32           -> roi_max",
        "      -> ROIPooling-2 bilinear 4x4, ROIs = Constant f32[3,5] -> roi_bilinear",
        "```",
        "",
        "Its input is `numpy.random.default_rng(20260401).standard_normal` (f32). The max",
        "ROIs are in the 32x32 input's pixels (hence scale 0.5 on the 16x16 map); odd",
        "coordinates land on .5 after scaling (round half away from zero) and one ROI is a",
        "single pixel. The bilinear ROIs are normalised to [0, 1].",
        "",
        "Compare `roi_bilinear` with a tolerance (a few ulps, e.g. `atol=1e-6`): the CPU",
        "plugin's bilinear ROIPooling differs by 1 ulp from a plain f32 evaluation of",
        "OpenVINO's reference formula on 15 of its 384 elements. Every other output is exact.",
        "",
    ]
    readme = HERE / "README.md"
    # Keep the section models/make_torch_models.py writes after its marker.
    marker = "<!-- torch-models:begin"
    previous = readme.read_text() if readme.exists() else ""
    tail = previous[previous.index(marker):] if marker in previous else ""
    readme.write_text("\n".join(lines) + ("\n" + tail if tail else ""))


def main():
    rows = []
    for number, spec in MAXPOOL_EXAMPLES.items():
        got = maxpool_example(number, spec)
        rows.append((f"maxpool_example{number}", f"MaxPool-8 spec Example {number}: {spec['what']}",
                     got["x"], got["expected"]))
    got = pooling_mix()
    rows.append(("pooling_mix",
                 "MaxPool-8 with indices feeding AdaptiveMaxPool-8 (i32 indices + Convert to "
                 "i64), ROIPooling max (f16 ROI Constant + Convert) and ROIPooling bilinear",
                 got["x"], got["expected"]))
    write_readme(rows)
    for folder, *_ in rows:
        print(f"{folder:20s} {folder_size(folder):7d} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
