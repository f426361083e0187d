"""`compare --report` and `generate --report`: one self-contained HTML page, opened in headless Chromium (.ci/run
installs it): it loads with no console message, and every plotly figure is drawn."""
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from irrun.cli.main import cli

ROOT = Path(__file__).parents[1]
FUSED = ROOT / "tests" / "data" / "fused"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0",
                  "--virtual-time-budget=8000"]


def browse(page: Path, tmp_path: Path, *extra) -> tuple[str, list[str]]:
    """The page's DOM after its scripts ran, and the browser console's messages."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is needed (apt-get install chromium; .ci/run installs it)"
    profile = tmp_path / f"profile-{page.stem}"
    done = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, "--dump-dom",
                           page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


def assert_figures_drawn(dom: str, count: int) -> None:
    assert dom.count('class="plotly-graph-div') == count
    assert len(re.findall(r'class="[^"]*js-plotly-plot', dom)) == count  # plotly.newPlot ran on each
    assert dom.count('class="main-svg"') >= count


def test_a_broken_page_is_caught(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>console.log('hello'); notDefined();</script></body></html>")
    _, console = browse(page, tmp_path)
    assert any("hello" in line for line in console) and any("notDefined" in line for line in console)


def test_compare_report_opens_offline_with_plot_table_and_divergence(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.load(FUSED / "mlp_nf4.npz")["x"])
    page = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["compare", str(FUSED / "mlp_nf4.xml"), "-i", str(x), "--against", "openvino",
                                      "--rtol", "0", "--atol", "0", "--report", str(page)])
    assert result.exit_code == 1, result.output
    text = page.read_text()
    assert "<script src" not in text and "<link" not in text  # everything embedded
    dom, console = browse(page, tmp_path, "--window-size=1280,2400", f"--screenshot={tmp_path / 'shot.png'}")
    assert console == []
    # error plot, histogram and error map of the first divergence (also the worst here), neighbourhood graph
    assert_figures_drawn(dom, 4)
    assert "first divergence: layer 8 (mlp.gate_proj, MatMul-1) port 0" in dom
    assert "First divergence: layer 8 (mlp.gate_proj, MatMul-1) port 0" in dom
    assert "OpenVINO's result changes when its intermediate outputs are exposed" in dom
    layer_rows = re.search(r'<table id="layers">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
    assert layer_rows.count("<tr") == 7 and "mlp.down_proj" in layer_rows
    assert (tmp_path / "shot.png").stat().st_size > 10_000


def test_generate_report(tmp_path):
    page = tmp_path / "generate.html"
    result = CliRunner().invoke(cli, ["generate", str(FUSED / "llama64_nf4"), "--ids", "5,17,42", "--max-new-tokens",
                                      "2", "--against", "openvino", "--report", str(page)])
    assert result.exit_code == 0, result.output
    dom, console = browse(page, tmp_path)
    assert console == []
    assert_figures_drawn(dom, 1)
    assert "2/2 tokens agree" in dom
    steps = re.search(r'<table id="steps">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
    assert steps.count("<tr") == 2


def test_report_needs_against_for_generate(tmp_path):
    result = CliRunner().invoke(cli, ["generate", str(FUSED / "llama64_nf4"), "--ids", "5", "--report",
                                      str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "--report goes with --against openvino" in result.output
