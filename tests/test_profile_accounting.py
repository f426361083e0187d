"""--profile accounts for the whole run: layer kernels, run-time inference (where a value-dependent op such as
NonMaxSuppression computes) and the time outside layers add up to the run's wall time."""
import time

import numpy as np
import pytest
from oracle import build
from openvino import opset9

import irrun
from irrun.engine import timeline
from irrun.tools import profile as profiling
from irrun.tools.dumps import chain


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
        profiler = profiling.Profiler(model)
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
    assert "Most of the run-time inference is NonMaxSuppression-9" in report.splitlines()[-1]


def test_one_profiler_over_several_runs(tmp_path):
    model, feeds = nms_model(tmp_path, count=200)
    profiler = profiling.Profiler(model)
    walls = []
    for _ in range(3):
        started = time.perf_counter()
        model.run(feeds, observer=profiler)
        walls.append(time.perf_counter() - started)
    assert profiler.wall <= sum(walls)
    assert profiler.wall >= sum(walls) - max(0.03 * sum(walls), 0.006)
    nms = [t for t in profiler.times if t.type == "NonMaxSuppression"]
    assert len(nms) == 3 and sum(t.inference for t in nms) == pytest.approx(
        profiler.layer(nms[0].layer_id, timeline.INFERENCE))  # each run's own share, not running totals


def test_chained_observers_pass_the_marks(tmp_path):
    model, feeds = nms_model(tmp_path, count=50)
    seen = []
    profiler = profiling.Profiler(model)
    model.run(feeds, observer=chain(lambda node, outputs, seconds: seen.append(node.id), profiler))
    assert len(seen) == len(profiler.times) and profiler.outside[timeline.OBSERVERS] > 0
    assert profiler.layers  # marks reached the profiler through the chain


def test_an_nms_in_an_if_body_runs_once_per_run_and_is_planned_once(tmp_path, monkeypatch):
    from test_oracle_if_dynamic import make_nms_if

    from irrun.ops import control_flow, detection

    rng = np.random.default_rng(5)
    corners = rng.random((1, 40, 2)).astype(np.float32) * 4
    feeds = {"cond": np.array(False), "boxes": np.concatenate([corners, corners + 1], axis=2),
             "scores": rng.random((1, 2, 40)).astype(np.float32)}
    model = irrun.load(build(make_nms_if, feeds, tmp_path).xml)
    calls = []
    original = detection.non_max_suppression
    monkeypatch.setattr(detection, "non_max_suppression", lambda *a, **k: calls.append(1) or original(*a, **k))
    for run in range(3):
        profiler = profiling.Profiler(model)
        model.run(feeds, observer=profiler)
        assert len(calls) == run + 1  # inferring the If runs the branch; its kernel hands the arrays back
    (if_layer,) = [n for n in model.graph.nodes.values() if n.ref.type == "If"]
    graph = if_layer.op.branches["else_body"][0]
    assert isinstance(graph, control_flow._Graph)
    (body,) = graph._models.values()
    assert len(body._plans) == 1
    (if_time,) = [t for t in profiler.times if t.type == "If"]
    assert if_time.inference > if_time.seconds


def test_a_mark_charges_its_own_bookkeeping_to_the_observers():
    """Each clock read advances 1 s: a mark's interval since the previous mark goes to its label, its own time
    (between its two reads) to the observers; the charges add up to the first read to the last."""
    ticks = iter(range(100))
    line = timeline.Timeline(clock=lambda: float(next(ticks)))
    node = type("FakeNode", (), {"id": "7"})()
    line.mark(timeline.START)                   # reads 0
    line.mark(timeline.CHECKS)                  # reads 1 (checks 1 s), 2 (observers 1 s)
    line.mark(timeline.KERNEL_TIME, node)       # reads 3 (layer 7: 1 s), 4 (observers 1 s)
    line.mark(timeline.STEPS)                   # reads 5 (step loop 1 s), 6 (observers 1 s)
    assert line.outside[timeline.CHECKS] == 1 and line.outside[timeline.STEPS] == 1
    assert line.layer("7", timeline.KERNEL_TIME) == 1 and line.outside[timeline.OBSERVERS] == 3
    assert line.total == 6
