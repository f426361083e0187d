"""`compare --report` and `generate --report`: one self-contained HTML page, opened in headless Chromium (.ci/run
installs it; one browser for all pages, the `browser` fixture of conftest.py): it loads with no console message,
and every plotly figure is drawn."""
import re
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from irrun.cli.main import cli

ROOT = Path(__file__).parents[1]
FUSED = ROOT / "tests" / "data" / "fused"


def assert_figures_drawn(dom: str, count: int) -> None:
    assert dom.count('class="plotly-graph-div') == count
    assert len(re.findall(r'class="[^"]*js-plotly-plot', dom)) == count  # plotly.newPlot ran on each
    assert dom.count('class="main-svg"') >= count


def test_a_broken_page_is_caught(tmp_path, browser):
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>console.log('hello'); notDefined();</script></body></html>")
    _, console = browser.browse(page)
    assert any("hello" in line for line in console) and any("notDefined" in line for line in console)


def test_compare_report_opens_offline_with_plot_table_and_divergence(tmp_path, browser):
    x = tmp_path / "x.npy"
    np.save(x, np.load(FUSED / "mlp_nf4.npz")["x"])
    page = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["compare", str(FUSED / "mlp_nf4.xml"), "-i", str(x), "--against", "openvino",
                                      "--rtol", "0", "--atol", "0", "--report", str(page)])
    assert result.exit_code == 1, result.output
    text = page.read_text()
    assert "<script src" not in text and "<link" not in text  # everything embedded
    dom, console = browser.browse(page, window=(1280, 2400), screenshot=tmp_path / "shot.png")
    assert console == []
    # error plot, histogram and error map of the first divergence (also the worst here), neighbourhood graph
    assert_figures_drawn(dom, 4)
    assert "first divergence: layer 8 (mlp.gate_proj, MatMul-1) port 0" in dom
    assert "First divergence: layer 8 (mlp.gate_proj, MatMul-1) port 0" in dom
    assert "OpenVINO's result changes when its intermediate outputs are exposed" in dom
    layer_rows = re.search(r'<table id="layers">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
    assert layer_rows.count("<tr") == 7 and "mlp.down_proj" in layer_rows
    assert (tmp_path / "shot.png").stat().st_size > 10_000


def test_generate_report(tmp_path, browser):
    page = tmp_path / "generate.html"
    result = CliRunner().invoke(cli, ["generate", str(FUSED / "llama64_nf4"), "--ids", "5,17,42", "--max-new-tokens",
                                      "2", "--against", "openvino", "--report", str(page)])
    assert result.exit_code == 0, result.output
    dom, console = browser.browse(page)
    assert console == []
    assert_figures_drawn(dom, 1)
    assert "2/2 tokens agree" in dom
    steps = re.search(r'<table id="steps">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
    assert steps.count("<tr") == 2


def test_report_needs_against_for_generate(tmp_path):
    result = CliRunner().invoke(cli, ["generate", str(FUSED / "llama64_nf4"), "--ids", "5", "--report",
                                      str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "--report goes with --against openvino" in result.output
