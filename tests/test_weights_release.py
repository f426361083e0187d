"""The weights mapping's pages leave the resident set once load-time folding has read them (issue 11 item 3:
f16 weights converted to f32 would otherwise be resident twice), and weights read as they are still give
the right values after a release."""
from pathlib import Path

import numpy as np
from irbuild import IRBuilder
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


def test_values_read_at_run_time_are_aligned_and_weights_converted_at_load_stay_views(tmp_path):
    """The .bin packs Consts back to back: after a 1-byte u8 Const the next starts at an odd offset (as in
    optimum-intel's f32 LLM exports). NumPy hands only aligned arrays to BLAS and its SIMD loops, so an unaligned
    f32 weight made a decode step's products 20-30 times slower: a value a run-time layer reads is copied when it
    is not aligned. An f16 weight converted to f32 at load is read only while loading: it stays a view of the
    mapping (a copy would stay resident beside the f32 weight)."""
    rng = np.random.default_rng(2)
    weight = rng.standard_normal((64, 48)).astype(np.float32)
    half = rng.standard_normal((64, 48)).astype(np.float16)
    x = rng.standard_normal((3, 48)).astype(np.float32)
    b = IRBuilder()
    data = b.parameter([3, 48], "f32", name="x")
    flag = b.const(np.array([7], np.uint8))  # 1 byte: the weights after it lie at odd offsets
    w = b.const(weight)
    w16 = b.const(half)
    converted = b.op("Convert", "opset1", [(w16, 0)], {"destination_type": "f32"}, [([64, 48], "f32")])
    for source in (w, converted):
        product = b.op("MatMul", "opset1", [(data, 0), (source, 0)], {"transpose_a": "false", "transpose_b": "true"},
                       [([3, 64], "f32")])
        b.result((product, 0))
    b.result((flag, 0))
    model = irrun.load(b.save(tmp_path))
    consts = {info.value.dtype: info.value for (layer, _), info in model.infos.items()
              if model.graph.nodes[layer].ref.type == "Constant"}
    assert consts[np.dtype(np.float32)].flags.aligned
    np.testing.assert_array_equal(consts[np.dtype(np.float32)], weight)
    assert np.shares_memory(consts[np.dtype(np.float16)], np.frombuffer(model.weights.buffer, np.uint8))
    y, y16 = list(model.run({"x": x}).values())[:2]
    np.testing.assert_allclose(y, x @ weight.T, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y16, x @ half.astype(np.float32).T, rtol=1e-6, atol=1e-6)


def test_compressed_weights_scales_stay_views_of_the_mapping():
    """The layers of a decompression chain (codes, zero points, scales) are read once, at load, by
    engine/decompression.py: the Consts they read stay views of the mapping even where unaligned (an int4
    export's f16 scales: 3.6 MB of the 300M-parameter benchmark Llama were copied for nothing)."""
    model = irrun.load(Path(__file__).parent / "data" / "llm" / "llama_int4_asym" / "openvino_model.xml")
    mapping = np.frombuffer(model.weights.buffer, np.uint8)
    read = {source for layer_id in model.decompression.absorbed for source in model.graph.nodes[layer_id].inputs}
    values = [model.infos[source].value for source in read if isinstance(model.infos[source].value, np.ndarray)]
    unaligned = [value for value in values if not value.flags.aligned]
    assert unaligned  # the export has such Consts, so the test shows something
    assert all(np.shares_memory(value, mapping) for value in unaligned)
