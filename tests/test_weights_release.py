"""The weights mapping's pages leave the resident set once load-time folding has read them (issue 11 item 3:
f16 weights converted to f32 would otherwise be resident twice), and weights read as they are still give
the right values after a release."""
import numpy as np
from openvino import opset8
from oracle import build, constant, run_reference

import irrun
from irrun.ir.weights import WeightsFile

MIB = 1 << 20


def resident_kib(path) -> int:
    """Resident KiB of this process's mappings of `path` (Linux /proc/self/smaps)."""
    total, current = 0, None
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:
                current = fields[5] if len(fields) >= 6 else None
            elif line.startswith("Rss:") and current == str(path):
                total += int(fields[1])
    return total


def test_release_drops_the_pages_and_keeps_the_data(tmp_path):
    data = np.random.default_rng(0).integers(0, 255, 32 * MIB, dtype=np.uint8)
    path = tmp_path / "model.bin"
    data.tofile(path)
    weights = WeightsFile(str(path))
    view = np.frombuffer(weights.slice(0, data.size), np.uint8)
    assert int(view.sum(dtype=np.int64)) == int(data.sum(dtype=np.int64))  # touches every page
    assert resident_kib(path) > 30 * 1024
    weights.release(at_least=64 * MIB)  # fewer bytes handed out: kept
    assert resident_kib(path) > 30 * 1024
    weights.release()
    assert resident_kib(path) < 1024
    np.testing.assert_array_equal(view, data)  # read back from the file


def test_f16_weights_converted_at_load_are_not_resident_twice(tmp_path):
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((2048, 2048)).astype(np.float16)  # 8 MiB in the .bin, 16 MiB as f32
    bias = rng.standard_normal(2048).astype(np.float32)  # read as it is at run time
    built = build(lambda p: opset8.add(opset8.matmul(
        p["x"], opset8.convert(constant(weight), "f32"), False, True), constant(bias)),
        {"x": rng.standard_normal((3, 2048)).astype(np.float32)}, tmp_path)
    model = irrun.load(built.xml)
    assert resident_kib(tmp_path / "model.bin") < 1024
    expected = run_reference(built)
    for _ in range(2):
        got = model.run(built.feeds)
        np.testing.assert_allclose(next(iter(got.values())), expected[0], rtol=1e-4, atol=1e-4)


def test_outputs_do_not_depend_on_releases(tmp_path, monkeypatch):
    """Releasing after every constant, or only once at the end of load, gives the same bits."""
    import irrun.engine.loader

    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float32)
    built = build(lambda p: opset8.matmul(opset8.matmul(p["x"], opset8.convert(constant(a), "f32"), False, False),
                                          constant(b), False, False),
                  {"x": rng.standard_normal((2, 64)).astype(np.float32)}, tmp_path)
    results = []
    for threshold in (0, 1 << 40):
        monkeypatch.setattr(irrun.engine.loader, "RELEASE_BYTES", threshold)
        results.append(next(iter(irrun.load(built.xml).run(built.feeds).values())))
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], run_reference(built)[0], rtol=1e-4, atol=1e-4)


def test_consts_at_unaligned_offsets_are_read_into_aligned_arrays(tmp_path):
    """The .bin packs Consts without padding: after a 1-byte u8 Const the next starts at an odd offset (as in
    optimum-intel's f32 LLM exports). NumPy gives only aligned arrays to BLAS and its SIMD loops, so an unaligned
    f32 weight made a decode step's products 20-30 times slower; irrun copies such a Const when it reads it."""
    from irbuild import IRBuilder

    rng = np.random.default_rng(2)
    weight = rng.standard_normal((64, 48)).astype(np.float32)
    x = rng.standard_normal((3, 48)).astype(np.float32)
    b = IRBuilder()
    data = b.parameter([3, 48], "f32", name="x")
    flag = b.const(np.array([7], np.uint8))  # 1 byte: the weight after it lies at offset 1
    w = b.const(weight)
    product = b.op("MatMul", "opset1", [(data, 0), (w, 0)], {"transpose_a": "false", "transpose_b": "true"},
                   [([3, 64], "f32")])
    b.result((product, 0), name="y")
    b.result((flag, 0), name="flag")
    model = irrun.load(b.save(tmp_path))
    (loaded,) = [info.value for (layer, _), info in model.infos.items()
                 if model.graph.nodes[layer].ref.type == "Constant" and info.value.dtype == np.float32]
    assert loaded.flags.aligned
    np.testing.assert_array_equal(loaded, weight)
    y = next(iter(model.run({"x": x}).values()))
    np.testing.assert_allclose(y, x @ weight.T, rtol=1e-6, atol=1e-6)
