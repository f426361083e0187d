"""Runtime behaviour: constant subgraphs computed once at load, tensors freed after their last use,
unsupported ops reported clearly, the observer hook."""
import numpy as np
import pytest
from click.testing import CliRunner

import irrun
from irbuild import IRBuilder
from irrun.cli.main import cli
from irrun.errors import UnsupportedOpError
from irrun.ops.conversion import Convert

MODELS = __import__("pathlib").Path(__file__).parents[1] / "models"


def test_f16_weights_and_shape_arithmetic_are_computed_once_at_load(monkeypatch):
    calls = []
    original = Convert.run

    def counting_run(self, inputs, in_infos, out_infos):
        calls.append(self.layer.id)
        return original(self, inputs, in_infos, out_infos)

    monkeypatch.setattr(Convert, "run", counting_run)
    model = irrun.load(MODELS / "torch_resnet" / "model.xml")
    at_load = len(calls)
    assert at_load >= 10  # every f16 Const -> Convert
    x = np.load(MODELS / "torch_resnet" / "input.npy")
    model.run([x])
    model.run([x])
    assert len(calls) == at_load


def test_observer_sees_every_live_layer_in_order():
    model = irrun.load(MODELS / "pooling_mix" / "model.xml")
    seen = []
    model.run([np.load(MODELS / "pooling_mix" / "input.npy")],
              observer=lambda node, outputs, seconds: seen.append((node.id, len(outputs), seconds >= 0)))
    assert [layer_id for layer_id, _, _ in seen] == model.graph.order
    assert all(ok for _, _, ok in seen)


def test_intermediate_tensors_are_freed_after_last_use(tmp_path):
    """A chain of layers keeps at most two intermediate tensors alive: the budget sees the peak."""
    b = IRBuilder()
    src = b.parameter([1, 1, 256, 256], name="x")
    for _ in range(20):
        src = b.op("MaxPool", "opset1", [(src, 0)], dict(strides="1,1", pads_begin="0,0", pads_end="0,0",
                                                        kernel="1,1"), [([1, 1, 256, 256], "f32")])
    b.result((src, 0))
    tensor = 256 * 256 * 4
    model = irrun.load(b.save(tmp_path), max_memory=4 * tensor)  # 20 live tensors would need 21x
    out = model.run([np.ones((1, 1, 256, 256), np.float32)])
    assert next(iter(out.values())).shape == (1, 1, 256, 256)


def _model_with_unknown_op(tmp_path):
    b = IRBuilder()
    p = b.parameter([2], name="x")
    layer = b.op("Frobnicate", "opset8", [(p, 0)], {}, [([2], "f32")], name="mystery")
    b.result((layer, 0))
    return b.save(tmp_path)


def test_unsupported_op_is_one_clear_error(tmp_path):
    path = _model_with_unknown_op(tmp_path)
    with pytest.raises(UnsupportedOpError, match=r"layer 1 \(mystery, Frobnicate\).*irrun info --ops"):
        irrun.load(path)
    report = irrun.check(path)
    assert any(d.layer and d.layer.id == "1" for d in report.diagnostics)
    result = CliRunner().invoke(cli, [str(path), "-i", "x=" + str(tmp_path / "x.npy")])
    assert result.exit_code == 1 and "Frobnicate" in result.output and "Traceback" not in result.output


def test_implemented_op_in_a_newer_opset_than_irrun_knows_names_type_version_and_opset(tmp_path, monkeypatch):
    from irrun.ops.registry import REGISTRY

    monkeypatch.delitem(REGISTRY, ("NMSRotated", 13))  # an op OpenVINO's opsets name and irrun lacks
    b = IRBuilder()
    p = b.parameter([1, 1, 4, 4], name="x")
    layer = b.op("NMSRotated", "opset13", [(p, 0)], {}, [([1], "f32")], name="nms")
    b.result((layer, 0))
    with pytest.raises(UnsupportedOpError, match=r"unsupported op NMSRotated-13 \(opset13\)"):
        irrun.load(b.save(tmp_path))


def test_garbage_collector_is_back_after_runs_and_failures():
    """Runs pause Python's cyclic collector (runtime.collector_paused) and always turn it back on; a caller
    that turned it off keeps it off."""
    import gc

    model = irrun.load(MODELS / "pooling_mix" / "model.xml")
    data = np.load(MODELS / "pooling_mix" / "input.npy")
    assert gc.isenabled()
    model.run([data])
    assert gc.isenabled()
    with pytest.raises(irrun.IRError):
        model.run([data[..., :0, :0, :0]])
    assert gc.isenabled()
    gc.disable()
    try:
        model.run([data])
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_output_folded_at_load_is_read_only_and_each_run_gives_it_unchanged(tmp_path):
    b = IRBuilder()
    p = b.parameter([2], name="x")
    weights = b.const(np.array([1, 2], np.float16))
    widened = b.op("Convert", "opset1", [(weights, 0)], {"destination_type": "f32"}, [([2], "f32")])
    b.result((b.op("Add", "opset1", [(p, 0), (widened, 0)], {}, [([2], "f32")]), 0))
    b.result((widened, 0))
    model = irrun.load(b.save(tmp_path))
    x = np.zeros(2, np.float32)
    _, constant = model.run([x]).values()
    with pytest.raises(ValueError, match="read-only"):
        constant[0] = 5  # before: this wrote into the model's folded constant and changed the next run
    assert [v.tolist() for v in model.run([x]).values()] == [[1.0, 2.0], [1.0, 2.0]]
