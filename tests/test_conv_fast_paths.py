"""Forward convolution's fast paths (issue 11) against a plain definition.

The plain definition is written here, independently of irrun: the input zero-padded (or cropped, for
negative pads) with np.pad, then the sum over kernel offsets of strided windows times the weights,
contracted over each group's input channels, in float64 (int64 for integers). The fast paths it checks:
the pointwise matmul on the NCHW input, im2col chunks written straight into the result (chunks forced
small), stride-1 columns copied from the flattened input (forced on and off), the depthwise kernels
(flat rows per channel or with the channels innermost, stride phases, the direct einsums of 2D layers), in
f32, f16, f64 and integers, plus empty tensors and the memory budget callback. Layers shaped like the zoo's
(which the small shapes of tests/test_oracle_convolution.py's sweeps never route to the channels-last
kernels) run against OpenVINO's CPU plugin; the pip package has no reference `evaluate`
for GroupConvolution.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from openvino import opset1

import oracle as O
from irrun.ops import convolution as C
from irrun.ops import depthwise_direct, depthwise_nhwc


def plain_conv(x, w, strides, dilations, begins, out):
    """x [N, G*Cg, *D], w [G, Og, Cg, *K] -> [N, G*Og, *out], float64 or int64."""
    wide = np.float64 if x.dtype.kind == "f" else np.int64
    x, w = x.astype(wide), w.astype(wide)
    groups, out_per_group, in_per_group, *kernel = w.shape
    n = x.shape[0]
    reach = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, strides, kernel, dilations)]
    pads = [(0, 0), (0, 0)] + [(max(b, 0), max(0, r - dim - b)) for b, r, dim in zip(begins, reach, x.shape[2:])]
    padded = np.pad(x, pads)[(slice(None), slice(None), *(slice(max(-b, 0), None) for b in begins))]
    padded = padded.reshape(n, groups, in_per_group, *padded.shape[2:])
    result = np.zeros((n, groups, out_per_group, *out), wide)
    for offs in itertools.product(*(range(k) for k in kernel)):
        window = padded[(slice(None),) * 3 + tuple(slice(o * d, o * d + (m - 1) * s + 1, s)
                                                   for o, d, m, s in zip(offs, dilations, out, strides))]
        taps = w[(slice(None), slice(None), slice(None), *offs)]  # [G, Og, Cg]
        result += np.einsum("goc,ngc...->ngo...", taps, window)
    return result.reshape(n, groups * out_per_group, *out)


def random_case(rng, pointwise=False, depthwise=False, one_output=False, stride_one=False):
    spatial = int(rng.integers(1, 4))
    groups = int(rng.integers(1, 4))
    in_per_group = 1 if depthwise else int(rng.integers(1, 5))
    out_per_group = 1 if one_output else int(rng.integers(1, 7))
    if pointwise:
        kernel, strides, dil, begins, ends = [1] * spatial, [1] * spatial, [1] * spatial, [0] * spatial, [0] * spatial
    else:
        kernel = [int(v) for v in rng.integers(1, 4, spatial)]
        strides = [1] * spatial if stride_one else [int(v) for v in rng.integers(1, 4, spatial)]
        dil = [int(v) for v in rng.integers(1, 3, spatial)]
        begins = [int(v) for v in rng.integers(-1, 3, spatial)]
        ends = [int(v) for v in rng.integers(-1, 3, spatial)]
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    dims = [int(rng.integers(max(1, e + 1), 10)) for e in eff]
    out = [(d + b + e - f) // s + 1 for d, b, e, f, s in zip(dims, begins, ends, eff, strides)]
    n = int(rng.integers(1, 3))
    return dict(n=n, groups=groups, in_per_group=in_per_group, out_per_group=out_per_group, dims=dims,
                kernel=kernel, strides=strides, dil=dil, begins=begins, out=out)


def random_2d_depthwise_case(rng, kernel_below, stride_below, dilation_below, pad_below, dims_below,
                             strided_axis=None):
    """A random 2D layer with one input channel per group (draws below the given bounds; pads from -1), strided
    by at least 2 along `strided_axis` when given."""
    kernel = [int(v) for v in rng.integers(1, kernel_below, 2)]
    strides = [int(v) for v in rng.integers(1, stride_below, 2)]
    if strided_axis is not None:
        strides[strided_axis] = max(2, strides[strided_axis])
    dil = [int(v) for v in rng.integers(1, dilation_below, 2)]
    begins = [int(v) for v in rng.integers(-1, pad_below, 2)]
    ends = [int(v) for v in rng.integers(-1, pad_below, 2)]
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    dims = [int(rng.integers(max(1, e + 1), dims_below)) for e in eff]
    out = [(d + b + e - f) // s + 1 for d, b, e, f, s in zip(dims, begins, ends, eff, strides)]
    return dict(n=int(rng.integers(1, 3)), groups=int(rng.integers(1, 6)), in_per_group=1,
                out_per_group=int(rng.integers(1, 4)), dims=dims, kernel=kernel, strides=strides, dil=dil,
                begins=begins, out=out)


def arrays(rng, case, dtype):
    xs = (case["n"], case["groups"] * case["in_per_group"], *case["dims"])
    ws = (case["groups"], case["out_per_group"], case["in_per_group"], *case["kernel"])
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    return rng.integers(-50, 50, xs).astype(dtype), rng.integers(-50, 50, ws).astype(dtype)


def check(case, x, w):
    got = C.conv_forward(x, w, case["strides"], case["dil"], case["begins"], case["out"])
    want = plain_conv(x, w, case["strides"], case["dil"], case["begins"], case["out"])
    assert got.shape == want.shape, case
    if x.dtype.kind == "f":
        length = case["in_per_group"] * int(np.prod(case["kernel"]))
        assert got.dtype == (np.float64 if x.dtype == np.float64 else np.float32), case
        tol = (1e-12 if x.dtype == np.float64 else 1e-6) * length + (1e-12 if x.dtype == np.float64 else 1e-5)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=str(case))
    else:
        np.testing.assert_array_equal(got, want, err_msg=str(case))


KINDS = ["pointwise", "general", "depthwise", "depthwise-channels-last", "depthwise-per-offset", "depthwise-nhwc"]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32])
@pytest.mark.parametrize("kind", KINDS)
def test_forward_matches_plain_definition(kind, dtype, monkeypatch):
    rng = np.random.default_rng([7, KINDS.index(kind), np.dtype(dtype).num])
    # 2D stride 1 takes depthwise_direct (test_direct_*): off here, so the other kernels see those cases too
    monkeypatch.setattr(depthwise_direct, "usable", lambda kernel: False)
    # the channels-last einsum over a transposed copy (depthwise_nhwc): forced on, or off for the other kinds
    monkeypatch.setattr(depthwise_nhwc, "usable", lambda groups, out_per_group, *sizes:
                        kind == "depthwise-nhwc" and out_per_group == 1)
    # depthwise sums with the channels innermost (forced) or per channel (forced), whatever the sizes
    monkeypatch.setattr(C, "channels_last", (lambda groups, out_per_group, *sizes: out_per_group == 1)
                        if kind == "depthwise-channels-last" else (lambda *args: False))
    # stride 1: einsums over shifted copies (forced), or the sums over the flattened input
    monkeypatch.setattr(C, "use_columns", (lambda *args: kind == "depthwise"))
    for i in range(12):
        # every other case with tiny chunks and channel blocks: many row / batch chunks, many blocks
        monkeypatch.setattr(C, "CHUNK_BYTES", 64 if i % 2 else 1 << 25)
        monkeypatch.setattr(C, "DEPTHWISE_BLOCK_BYTES", 64 if i % 2 else 1 << 17)
        monkeypatch.setattr(C, "COLUMN_BLOCK_BYTES", 64 if i % 2 else 1 << 21)
        # stride-1 columns from the flattened input: always, never, or as chosen
        monkeypatch.setattr(C, "FLAT_WASTE", (1e9, 0.0, 1.25)[i % 3])
        case = random_case(rng, pointwise=kind == "pointwise", depthwise=kind.startswith("depthwise"),
                           one_output=kind in ("depthwise-channels-last", "depthwise-nhwc"),
                           stride_one=kind == "depthwise" and i % 2 == 0)
        check(case, *arrays(rng, case, dtype))


def test_channels_last_sums_on_a_mobile_net_shape():
    """The unforced choice on a late MobileNet-style layer (many channels, 7x7): channels innermost."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 96, 7, 7)).astype(np.float32)
    w = rng.standard_normal((96, 1, 1, 5, 5)).astype(np.float32)
    assert C.channels_last(96, 1, 6 * 11 + 7, 25, 11 * 11)
    for strides, out in (([1, 1], [7, 7]), ([2, 2], [4, 4])):
        got = C.conv_forward(x, w, strides, [1, 1], [2, 2], out)
        np.testing.assert_allclose(got, plain_conv(x, w, strides, [1, 1], [2, 2], out), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_flat_columns_match_plain_definition(dtype, monkeypatch):
    """Stride-1 columns copied from the flattened input (forced), in one chunk and in chunks of a row."""
    monkeypatch.setattr(C, "FLAT_WASTE", 1e9)
    rng = np.random.default_rng([13, np.dtype(dtype).num])
    for i in range(16):
        monkeypatch.setattr(C, "CHUNK_BYTES", 64 if i % 2 else 1 << 25)
        case = random_case(rng, stride_one=True)
        check(case, *arrays(rng, case, dtype))


def test_pointwise_reads_the_input_in_place():
    """The 1x1 path hands the NCHW input itself to the matmul: no padded copy, no column buffer."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 5, 7)).astype(np.float32)
    w = rng.standard_normal((2, 4, 3, 1, 1)).astype(np.float32)
    asked = []
    got = C.conv_forward(x, w, [1, 1], [1, 1], [0, 0], [5, 7], lambda nbytes, what: asked.append(what))
    assert asked == []
    np.testing.assert_allclose(got, plain_conv(x, w, [1, 1], [1, 1], [0, 0], [5, 7]), rtol=1e-5, atol=1e-5)


def test_temporaries_are_reserved_before_allocation():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 4, 9, 9)).astype(np.float32)
    w = rng.standard_normal((1, 8, 4, 3, 3)).astype(np.float32)
    asked = []
    C.conv_forward(x, w, [1, 1], [1, 1], [1, 1], [9, 9], lambda nbytes, what: asked.append((nbytes, what)))
    sizes = dict((what.split(" [")[0], nbytes) for nbytes, what in asked)
    assert sizes["padded convolution input"] == 1 * 4 * 11 * 11 * 4
    # stride 1: columns and products on the padded pitch, 9 rows of 11 positions
    assert sizes["convolution column buffer"] == (4 * 9 + 8) * 9 * 11 * 4

    class Refused(Exception):
        pass

    def refuse(nbytes, what):
        raise Refused(what)

    with pytest.raises(Refused):
        C.conv_forward(x, w, [1, 1], [1, 1], [1, 1], [9, 9], refuse)


def test_channels_last_depthwise_reserves_its_buffers_first(monkeypatch):
    """The nhwc kernel asks for its padded transposed copy and its result before making them: 2 x 128
    channels, 11x11 padded, 9x9 out, f32."""
    x = np.ones((2, 128, 9, 9), np.float32)
    w = np.ones((128, 1, 1, 3, 3), np.float32)
    assert depthwise_nhwc.usable(128, 1, [9, 9], [1, 1], 9)
    asked = []

    def refuse(nbytes, what):
        asked.append((nbytes, what))
        raise MemoryError(what)

    allocated = []
    monkeypatch.setattr(depthwise_nhwc, "_padded_channels_last", lambda *args: allocated.append(args))
    with pytest.raises(MemoryError):
        C.conv_forward(x, w, [1, 1], [1, 1], [1, 1], [9, 9], refuse)
    assert asked == [((11 * 11 + 9 * 9) * 2 * 128 * 4, "channels-last depthwise buffers")] and not allocated


@pytest.mark.parametrize("shape", [(0, 4, 5, 5), (2, 0, 5, 5)])
def test_empty_batch_or_channels(shape):
    x = np.zeros(shape, np.float32)
    groups = 1 if shape[1] == 0 else 2
    w = np.ones((groups, 3, shape[1] // groups, 3, 3), np.float32)
    got = C.conv_forward(x, w, [1, 1], [1, 1], [1, 1], [5, 5])
    assert got.shape == (shape[0], groups * 3, 5, 5) and not got.any()


# depthwise layers of the zoo's shapes (scaled down) and the kernel each takes: (channels, height, width,
# kernel, stride, pad, dilation, kernel); [N, C, H, W] input, groups == C
ZOO_LAYERS = [
    (16, 30, 33, 7, 1, 3, 1, "direct"),          # ConvNeXt 7x7
    (12, 29, 28, 5, 1, 4, 2, "direct"),          # 5x5 dilated, stride 1, 28 wide
    (64, 7, 7, 5, 1, 2, 1, "direct"),            # 5x5 over few positions, too few channels for nhwc
    (96, 21, 20, 7, 1, 3, 1, "direct"),          # enough channels for nhwc, too many positions (ConvNeXt 28x28)
    (40, 28, 28, 5, 2, 2, 1, "direct"),          # strided 5x5, too few channels for nhwc
    (8, 20, 20, 3, 1, 1, 1, "direct"),           # MobileNet 3x3
    (8, 21, 20, 3, 2, 1, 1, "direct"),           # strided 3x3
    (40, 41, 40, 3, 2, 1, 1, "direct"),          # strided 3x3, too few channels for nhwc
    (96, 7, 7, 5, 1, 2, 1, "nhwc"),              # MnasNet/EfficientNet late 5x5
    (72, 28, 28, 5, 2, 2, 1, "nhwc"),            # strided 5x5
    (144, 27, 28, 3, 2, 1, 1, "nhwc"),           # MobileNet v2 strided 3x3, odd height
    (160, 14, 14, 7, 1, 3, 1, "nhwc"),           # ConvNeXt-atto 7x7
    (256, 12, 10, 5, 1, 4, 2, "nhwc"),           # DeepLab 5x5 dilated
    (384, 9, 9, 3, 1, 1, 1, "nhwc"),             # many channels, 3x3
    (200, 20, 20, 3, 1, 1, 1, "nhwc"),           # SSDlite's 20x20 3x3: enough channels for nhwc at 400 positions
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("layer", ZOO_LAYERS, ids=lambda layer: "x".join(map(str, layer)))
def test_zoo_depthwise_layers_match_the_cpu_plugin(layer, dtype, tmp_path, monkeypatch):
    channels, h, w_, k, stride, pad, dil, kernel = layer
    taken = []

    def spy(module, name, label):
        kernel_fn = getattr(module, name)

        def recorded(*args):
            taken.append(label)
            return kernel_fn(*args)
        monkeypatch.setattr(module, name, recorded)

    spy(C, "_flat_sums_channels_last", "channels-last")
    spy(C, "depthwise_columns", "columns")
    spy(depthwise_direct, "depthwise_direct", "direct")
    spy(depthwise_nhwc, "depthwise_channels_last", "nhwc")
    rng = np.random.default_rng([channels, h, w_, k, stride, pad, dil])
    x = rng.standard_normal((2, channels, h, w_)).astype(dtype)
    w = rng.standard_normal((channels, 1, 1, k, k)).astype(dtype)
    built = O.build(lambda p: opset1.group_convolution(p["x"], O.constant(w), strides=[stride] * 2,
                                                      pads_begin=[pad] * 2, pads_end=[pad] * 2,
                                                      dilations=[dil] * 2), {"x": x}, tmp_path)
    names, expected = O.run_cpu(built)
    O.assert_same(O.run_irrun(built), expected, names, atol=4e-6 * k * k + 1e-5,
                  f16_ulp=dtype == np.float16, context=str(layer))
    assert set(taken) == {kernel}, taken


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_depthwise_strides_beyond_the_phase_split(dtype, monkeypatch):
    """Strides above 4 take the per-offset windows (no stride phases), accumulating into the result (in 2D
    too, with depthwise_direct off)."""
    monkeypatch.setattr(depthwise_direct, "usable", lambda kernel: False)
    rng = np.random.default_rng([14, np.dtype(dtype).num])
    for spatial in (1, 2, 3):
        case = dict(n=2, groups=3, in_per_group=1, out_per_group=2, dims=[11] * spatial, kernel=[3] * spatial,
                    strides=[5 + a for a in range(spatial)], dil=[1 + a % 2 for a in range(spatial)],
                    begins=[1] * spatial, ends=[2] * spatial, out=None)
        case["out"] = [(11 + 3 - ((3 - 1) * d + 1)) // s + 1 for d, s in zip(case["dil"], case["strides"])]
        x, w = arrays(rng, case, dtype)
        check(case, x, w)


def test_tap_grids_group_the_offsets_by_stride_phase():
    """Hand-worked: stride 1 is one 3x3 grid (rows a pitch apart); stride 2 splits a 5x5 kernel into its four
    phases (3x3, 3x2, 2x3, 2x2 offsets); dilation 2 over stride 2 keeps every offset in one phase."""
    taps = [np.full((4, 1), j, np.float32) for j in range(25)]
    offsets = list(itertools.product(range(3), range(3)))
    starts = [i * 10 + j for i, j in offsets]
    (grid,) = C.tap_grids(offsets, (1, 1), starts, taps[:9])
    start, shape, steps, weights = grid
    assert (start, shape, steps, weights.shape) == (0, (3, 3), (10, 1), (3, 3, 4))
    np.testing.assert_array_equal(weights[:, :, 0], np.arange(9).reshape(3, 3))
    offsets = list(itertools.product(range(5), range(5)))
    # stride phases of 7x7 positions each: offset (i, j) reads phase (i % 2, j % 2) from (i // 2, j // 2)
    starts = [((i % 2) * 2 + j % 2) * 49 + i // 2 * 7 + j // 2 for i, j in offsets]
    grids = C.tap_grids(offsets, (2, 2), starts, taps)
    assert [(g[0], g[1], g[2]) for g in grids] == [(0, (3, 3), (7, 1)), (49, (3, 2), (7, 1)),
                                                    (98, (2, 3), (7, 1)), (147, (2, 2), (7, 1))]
    np.testing.assert_array_equal(grids[3][3][:, :, 0], [[6, 8], [16, 18]])
    (grid,) = C.tap_grids(offsets, (1, 1), [i * 7 + j for i, j in offsets], taps)
    assert grid[1:3] == ((5, 5), (7, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32])
def test_channels_last_einsum_matches_the_per_offset_sums(dtype, monkeypatch):
    """The channels-last sums of one grid of offsets (stride 1, or dilations multiples of the strides) as one
    einsum, forced on random 1D-3D cases: equal to the per-offset products and sums (forced by splitting
    the grid; exactly for integers, to rounding for floats, whose einsum may sum in another order) and to
    the plain definition."""
    monkeypatch.setattr(C, "channels_last", lambda groups, out_per_group, *sizes: out_per_group == 1)
    monkeypatch.setattr(C, "use_columns", lambda *args: False)
    monkeypatch.setattr(depthwise_direct, "usable", lambda kernel: False)
    rng = np.random.default_rng([16, np.dtype(dtype).num])
    einsums = []
    for i in range(12):
        monkeypatch.setattr(C, "DEPTHWISE_BLOCK_BYTES", 64 if i % 2 else 1 << 17)
        case = random_case(rng, depthwise=True, one_output=True, stride_one=i % 3 != 2)
        if i % 3 == 2:  # strides 2 with dilation 2 or 4: one phase
            case["strides"] = [2] * len(case["dims"])
            case["dil"] = [2 * int(v) for v in rng.integers(1, 3, len(case["dims"]))]
            eff = [(k - 1) * d + 1 for k, d in zip(case["kernel"], case["dil"])]
            case["dims"] = [max(dim, e + 1) for dim, e in zip(case["dims"], eff)]
            case["begins"] = [max(b, 0) for b in case["begins"]]
            case["out"] = [(dim + 2 * b - e) // 2 + 1 for dim, b, e in zip(case["dims"], case["begins"], eff)]
        x, w = arrays(rng, case, dtype)
        grids = []
        monkeypatch.setattr(C, "tap_grids", lambda *args: grids.append(len(real_tap_grids(*args))) or
                            real_tap_grids(*args))
        fast = C.conv_forward(x, w, case["strides"], case["dil"], case["begins"], case["out"])
        einsums.append((grids, case))
        monkeypatch.setattr(C, "tap_grids", lambda *args: real_tap_grids(*args) * 2)  # two grids: per offset
        slow = C.conv_forward(x, w, case["strides"], case["dil"], case["begins"], case["out"])
        if x.dtype.kind == "f":
            tol = (1e-12 if x.dtype == np.float64 else 1e-6) * int(np.prod(case["kernel"])) + 1e-6
            np.testing.assert_allclose(fast, slow, rtol=tol, atol=tol, err_msg=str(case))
        else:
            np.testing.assert_array_equal(fast, slow, err_msg=str(case))
        check(case, x, w)
    assert all(g == [1] or 0 in case["out"] for g, case in einsums), einsums


real_tap_grids = C.tap_grids


DIRECT_EDGES = [  # (n, channels, out per group, h, w, kernel, stride, dilation, begins, ends): odd sizes, crops, wide pads
    (2, 5, 1, 9, 7, (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),
    (1, 3, 3, 6, 11, (2, 5), (1, 1), (2, 1), (0, 2), (1, 3)),
    (2, 4, 2, 8, 8, (3, 1), (1, 1), (1, 1), (-1, 0), (2, -1)),
    (1, 2, 1, 3, 4, (5, 5), (1, 1), (1, 1), (4, 4), (4, 4)),    # pads wider than the input: windows of zeros only
    (1, 7, 1, 1, 9, (1, 7), (1, 1), (1, 2), (0, 6), (0, 6)),
    (2, 6, 1, 13, 12, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),  # MobileNet's strided 3x3, odd height
    (1, 4, 2, 17, 15, (5, 4), (3, 2), (2, 3), (3, -1), (4, 2)),  # row classes of several kernel rows, a crop
    (1, 3, 1, 9, 9, (3, 3), (5, 6), (1, 1), (2, 0), (0, 2)),    # strides beyond the kernel: phases without rows
    (2, 2, 1, 5, 6, (6, 6), (2, 2), (1, 1), (5, 5), (5, 5)),    # strided windows of padding only
]


def direct_cases(rng):
    cases = [random_2d_depthwise_case(rng, kernel_below=8, stride_below=5 if i % 2 else 2, dilation_below=3,
                                      pad_below=4, dims_below=24) for i in range(24)]
    for n, channels, multiplier, h, w_, kernel, strides, dil, begins, ends in DIRECT_EDGES:
        eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
        out = [(dim + b + e - f) // s + 1 for dim, b, e, f, s in zip((h, w_), begins, ends, eff, strides)]
        cases.append(dict(n=n, groups=channels, in_per_group=1, out_per_group=multiplier, dims=[h, w_],
                          kernel=list(kernel), strides=list(strides), dil=list(dil), begins=list(begins), out=out))
    return [case for case in cases if min(case["out"]) > 0]  # (an empty output returns before any kernel)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32])
def test_direct_matches_the_kernels_it_replaces_and_the_plain_definition(dtype, monkeypatch):
    """depthwise_direct (2D) against the kernels that served these layers before it, and against the plain
    definition, on random cases (kernels 1-7, strides 1-4, dilations 1-2, pads from -1, channel multipliers,
    batch 2) and hand-picked edges, with NaN and inf inputs, blocks of one channel and of all. Stride 1 against
    depthwise_columns: same products, same order, equal to the bit (but for outputs one column wide, whose
    positions and kernel rows are one stride apart: the einsum may sum those in another order); strided
    against the stride phases' sums (strides up to 4) or the per-offset windows: equal to rounding,
    non-finite outputs alike."""
    rng = np.random.default_rng([21, np.dtype(dtype).num])
    real = depthwise_direct.depthwise_direct
    taken = []
    monkeypatch.setattr(depthwise_direct, "depthwise_direct", lambda *args: taken.append(1) or real(*args))
    monkeypatch.setattr(depthwise_nhwc, "usable", lambda *args: False)
    cases = direct_cases(rng)
    for i, case in enumerate(cases):
        monkeypatch.setattr(depthwise_direct, "BLOCK_BYTES", 64 if i % 2 else 1 << 20)
        x, w = arrays(rng, case, dtype)
        if x.dtype.kind == "f" and i % 3 == 0:
            x.reshape(-1)[rng.integers(0, x.size, 3)] = [np.nan, np.inf, -np.inf]
        args = (x, w, case["strides"], case["dil"], case["begins"], case["out"])
        before = len(taken)
        got = C.conv_forward(*args)
        assert len(taken) == before + 1, case
        stride_one = case["strides"] == [1, 1]
        with monkeypatch.context() as old_kernels:
            old_kernels.setattr(depthwise_direct, "usable", lambda kernel: False)
            old_kernels.setattr(C, "use_columns", lambda *args: True)
            before = C.conv_forward(*args)
        if x.dtype.kind != "f" or stride_one and case["out"][1] > 1:
            np.testing.assert_array_equal(got, before, err_msg=str(case))
        else:
            tol = (1e-12 if x.dtype == np.float64 else 1e-6) * int(np.prod(case["kernel"])) + 1e-6
            np.testing.assert_allclose(got, before, rtol=tol, atol=tol, err_msg=str(case))
        if np.isfinite(x).all():
            check(case, x, w)
    assert len(cases) >= 28


def test_direct_reserves_its_buffers_first():
    """The column copies of a block of channels are asked for before they are made: 3 copies of 12 rows of 9
    outputs per channel, all 6 channels in one block, f32."""
    x = np.ones((1, 6, 10, 9), np.float32)
    w = np.ones((6, 1, 1, 3, 3), np.float32)
    asked = []

    def refuse(nbytes, what):
        asked.append((nbytes, what))
        raise MemoryError(what)

    with pytest.raises(MemoryError):
        C.conv_forward(x, w, [1, 1], [1, 1], [1, 1], [10, 9], refuse)
    assert asked == [(6 * 3 * 12 * 9 * 4, "depthwise column buffers")]
