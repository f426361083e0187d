"""--profile accounts for the whole run: layer kernels, run-time inference (where a value-dependent op such as
NonMaxSuppression computes) and the time outside layers add up to the run's wall time."""
import time

import numpy as np
from oracle import build
from openvino import opset9

import irrun
from irrun import debug, timeline


def nms_model(tmp_path, count=3000):
    rng = np.random.default_rng(0)
    corner = rng.random((1, count, 2)).astype(np.float32) * 50
    boxes = np.concatenate([corner, corner + 1 + rng.random((1, count, 2)).astype(np.float32) * 5], axis=2)
    scores = rng.random((1, 4, count)).astype(np.float32)
    c = opset9.constant
    built = build(lambda p: opset9.non_max_suppression(
        opset9.relu(p["b"]), opset9.sigmoid(p["s"]), c(np.int64(count)), c(np.float32(0.5)), c(np.float32(0.1))),
        {"b": boxes, "s": scores}, tmp_path)
    return irrun.load(built.xml), {"b": boxes, "s": scores}


def test_profile_total_is_the_wall_time(tmp_path):
    model, feeds = nms_model(tmp_path)
    for _ in range(2):  # the first run also plans
        profiler = debug.Profiler(model)
        started = time.perf_counter()
        model.run(feeds, observer=profiler)
        wall = time.perf_counter() - started
        # one clock for both: the profile misses only the calls into and out of Model.run
        assert profiler.wall <= wall
        assert profiler.wall >= wall - max(0.03 * wall, 0.002), (profiler.wall, wall)
        nms = next(t for t in profiler.times if t.type == "NonMaxSuppression")
        assert nms.inference > nms.seconds  # the selection is made while its output shape is inferred
        in_layers = sum(t.total for t in profiler.executed)
        assert abs(in_layers + sum(profiler.outside.values()) - profiler.wall) < 1e-9
    report = profiler.report()
    assert "Time outside layers:" in report and timeline.PLANNING in report
    assert f"Total: {profiler.wall * 1e3:.3f} ms, the run's wall time" in report


def test_chained_observers_pass_the_marks(tmp_path):
    model, feeds = nms_model(tmp_path, count=50)
    seen = []
    profiler = debug.Profiler(model)
    model.run(feeds, observer=debug.chain(lambda node, outputs, seconds: seen.append(node.id), profiler))
    assert len(seen) == len(profiler.times) and profiler.outside[timeline.OBSERVERS] > 0
    assert profiler.layers  # marks reached the profiler through the chain
