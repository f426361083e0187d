"""One self-contained HTML page for `compare --report`, `generate --against openvino --report` and
`precision --report`: plots drawn by plotly (the optional extra `irrun[report]`), its JavaScript embedded so
the page opens offline.

What is collected during a run (`TensorSamples`: value histograms and error maps of the first divergent and
the worst tensor) needs NumPy only; plotly is imported when a page is written.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError

HISTOGRAM_BINS = 60
MAP_SIDE = 160             # error maps are reduced (block maximum) to at most this many rows and columns
NEIGHBOURHOOD_HOPS = 2
NEIGHBOURHOOD_MAX = 40


def _plotly():
    try:
        import plotly.graph_objects as go
        import plotly.io as pio
        import plotly.offline as offline
    except ImportError:
        raise InputError("--report needs plotly: pip install 'irrun[report]'") from None
    return go, pio, offline


# ---------------------------------------------------------------- what a comparison keeps for the page

@dataclass
class TensorSample:
    """Small summaries of one compared tensor: histograms of both sides on common bins, an error map."""

    label: str
    why: str                      # "first divergence" or "worst"
    score: float                  # error / tolerance at the worst element
    bins: list
    counts: list
    ref_counts: list
    error_map: list | None        # |irrun - reference|, 2-D, reduced by block maxima
    map_note: str = ""


@dataclass
class TensorSamples:
    """A comparison's sampler: keeps the first tensor out of tolerance and the worst one (largest ratio of
    error to tolerance), as summaries only, never the tensors."""

    rtol: float
    atol: float
    first: TensorSample | None = None
    worst: TensorSample | None = None

    def __call__(self, diff, got, ref) -> None:
        if diff.ok or diff.note:
            return
        score = tolerance_ratio(got, ref, self.rtol, self.atol)
        if self.first is None:
            self.first = summarize(diff.label, "first divergence", score, got, ref)
        if self.worst is None or score > self.worst.score:
            self.worst = summarize(diff.label, "worst", score, got, ref)

    @property
    def shown(self) -> list[TensorSample]:
        same = self.worst is not None and self.first is not None and self.worst.label == self.first.label
        return [s for s in (self.first, None if same else self.worst) if s is not None]


def tolerance_ratio(got, ref, rtol: float, atol: float) -> float:
    """max |got - ref| / (atol + rtol |ref|) over the elements (inf where a side is not finite or the allowed
    error is 0)."""
    a, b = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    with np.errstate(all="ignore"):
        error = np.abs(a - b)
        allowed = atol + rtol * np.abs(b)
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        ratio = np.where(same, 0.0, np.where(allowed > 0, error / np.where(allowed > 0, allowed, 1), np.inf))
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    return float(ratio.max()) if ratio.size else 0.0


def summarize(label: str, why: str, score: float, got, ref) -> TensorSample:
    a, b = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    finite = np.concatenate([a[np.isfinite(a)], b[np.isfinite(b)]])
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if high <= low:
        high = low + 1.0
    bins = np.linspace(low, high, HISTOGRAM_BINS + 1)
    counts = np.histogram(a[np.isfinite(a)], bins)[0]
    ref_counts = np.histogram(b[np.isfinite(b)], bins)[0]
    with np.errstate(all="ignore"):
        error = np.abs(a - b)
    error[np.isnan(error)] = np.inf
    error_map, note = _error_map(error)
    return TensorSample(label, why, score, bins.tolist(), counts.tolist(), ref_counts.tolist(), error_map, note)


def _error_map(error: np.ndarray) -> tuple[list | None, str]:
    """A 2-D view of the error: 2-D as is; 3-D: the first item; 4-D: the first item's channels tiled in a grid.
    Reduced by block maxima to at most MAP_SIDE x MAP_SIDE."""
    if error.ndim == 2:
        plane, note = error, ""
    elif error.ndim == 3:
        plane, note = error[0], "item 0"
    elif error.ndim == 4:
        channels, height, width = error.shape[1:]
        columns = max(1, math.ceil(math.sqrt(channels)))
        rows = math.ceil(channels / columns)
        grid = np.zeros((rows * height, columns * width))
        for c in range(channels):
            r, k = divmod(c, columns)
            grid[r * height:(r + 1) * height, k * width:(k + 1) * width] = error[0, c]
        plane, note = grid, f"item 0, {channels} channels tiled {rows}x{columns}"
    else:
        return None, "no map for this rank"
    rows_step = max(1, math.ceil(plane.shape[0] / MAP_SIDE))
    cols_step = max(1, math.ceil(plane.shape[1] / MAP_SIDE))
    if rows_step > 1 or cols_step > 1:
        padded = np.full((math.ceil(plane.shape[0] / rows_step) * rows_step,
                          math.ceil(plane.shape[1] / cols_step) * cols_step), 0.0)
        padded[:plane.shape[0], :plane.shape[1]] = plane
        plane = padded.reshape(padded.shape[0] // rows_step, rows_step, -1, cols_step).max(axis=(1, 3))
        note = (note + ", " if note else "") + f"block maxima of {rows_step}x{cols_step}"
    finite = np.where(np.isfinite(plane), plane, np.nan)
    return [[None if math.isnan(v) else v for v in row] for row in finite.tolist()], note


# ---------------------------------------------------------------- the page

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }}
h1 {{ font-size: 1.4em; }} h2 {{ font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }}
.verdict {{ font-size: 1.2em; font-weight: bold; padding: .4em .8em; display: inline-block; border-radius: 4px; }}
.pass {{ background: #d9f2d9; }} .fail {{ background: #f8d7d7; }}
table {{ border-collapse: collapse; font-size: .85em; }}
th, td {{ padding: 2px 8px; border-bottom: 1px solid #eee; text-align: left; white-space: nowrap; }}
th {{ cursor: pointer; background: #f4f4f4; position: sticky; top: 0; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.bad td {{ background: #fdecea; }}
.scroll {{ max-height: 32em; overflow: auto; border: 1px solid #ddd; display: inline-block; }}
.plot {{ width: 100%; max-width: 1200px; }}
pre {{ background: #f7f7f7; padding: .6em; overflow-x: auto; }}
</style>
<script>{plotly}</script>
</head><body>
<h1>{title}</h1>
{body}
<script>
function sortTable(th) {{
  const table = th.closest("table"), body = table.tBodies[0], index = th.cellIndex;
  const ascending = th.dataset.order !== "asc"; th.dataset.order = ascending ? "asc" : "desc";
  const key = (row) => {{ const cell = row.cells[index]; const n = parseFloat(cell.dataset.value ?? cell.textContent);
    return isNaN(n) ? cell.textContent : n; }};
  const rows = Array.from(body.rows).sort((a, b) => {{ const x = key(a), y = key(b);
    return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1); }});
  rows.forEach((row) => body.appendChild(row));
}}
function filterTable(input, id) {{
  const text = input.value.toLowerCase(), only = document.getElementById(id + "-bad").checked;
  for (const row of document.getElementById(id).tBodies[0].rows) {{
    row.style.display = (row.textContent.toLowerCase().includes(text) && (!only || row.classList.contains("bad")))
      ? "" : "none";
  }}
}}
</script>
</body></html>
"""


@dataclass
class Page:
    """Sections of HTML; figures are plotly figures turned into divs (plotly.js is embedded once)."""

    title: str
    parts: list[str] = field(default_factory=list)

    def heading(self, text: str) -> None:
        self.parts.append(f"<h2>{html.escape(text)}</h2>")

    def paragraph(self, text: str) -> None:
        self.parts.append(f"<p>{html.escape(text)}</p>")

    def verdict(self, passed: bool, text: str) -> None:
        self.parts.append(f'<p class="verdict {"pass" if passed else "fail"}">{html.escape(text)}</p>')

    def preformatted(self, text: str) -> None:
        self.parts.append(f"<pre>{html.escape(text)}</pre>")

    def figure(self, figure, height: int = 420) -> None:
        _, pio, _ = _plotly()
        figure.update_layout(template="none", height=height, margin=dict(l=70, r=30, t=50, b=60))
        div_id = f"figure{sum(p.count('plotly-graph-div') for p in self.parts) + 1}"
        self.parts.append('<div class="plot">' + pio.to_html(figure, include_plotlyjs=False, full_html=False,
                                                             div_id=div_id, config={"displaylogo": False}) + "</div>")

    def table(self, table_id: str, header: list[str], rows: list[tuple[bool, list]], numeric=frozenset()) -> None:
        """A sortable (click a header), filterable table; rows are (bad, cells)."""
        head = "".join(f"<th onclick=\"sortTable(this)\">{html.escape(h)}</th>" for h in header)
        body = []
        for bad, cells in rows:
            tds = []
            for i, cell in enumerate(cells):
                if i in numeric:
                    value = "Infinity" if isinstance(cell, float) and math.isinf(cell) else cell
                    tds.append(f'<td class="num" data-value="{html.escape(str(value))}">'
                               f'{html.escape(_short(cell))}</td>')
                else:
                    tds.append(f"<td>{html.escape(str(cell))}</td>")
            body.append(f'<tr class="{"bad" if bad else ""}">{"".join(tds)}</tr>')
        self.parts.append(
            f'<p><input type="search" placeholder="filter rows" oninput="filterTable(this, \'{table_id}\')"> '
            f'<label><input type="checkbox" id="{table_id}-bad" onchange="filterTable(this.parentNode.'
            f'previousElementSibling, \'{table_id}\')"> only rows out of tolerance</label></p>'
            f'<div class="scroll"><table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}'
            f"</tbody></table></div>")

    def write(self, path) -> Path:
        _, _, offline = _plotly()
        text = PAGE.format(title=html.escape(self.title), plotly=offline.get_plotlyjs(), body="\n".join(self.parts))
        path = Path(path)
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
        return path


def _short(value) -> str:
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.3g}"
    return str(value)


def _log_values(values):
    """Plotly's log axis drops zeros and infinities: show them at the axis ends, marked in the hover text."""
    finite = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    low = min(finite) / 10 if finite else 1e-12
    high = max(finite) * 10 if finite else 1.0
    return [low if v == 0 else high if v is None or not math.isfinite(v) else v for v in values], low, high


# ---------------------------------------------------------------- compare

def compare_page(comparison, model=None, samples: TensorSamples | None = None, title: str | None = None) -> Page:
    go, _, _ = _plotly()
    page = Page(title or f"irrun compare: {comparison.model} against {comparison.against}")
    first = comparison.first_divergence
    verdict = comparison.text().strip().splitlines()[-1]
    page.verdict(comparison.passed, verdict)
    page.paragraph(f"model {comparison.model}; reference {comparison.against}; rtol {comparison.rtol:g}, "
                   f"atol {comparison.atol:g}; an element is out of tolerance when |irrun - reference| > atol + "
                   f"rtol |reference|.")
    if first is not None:
        page.paragraph(f"first divergence: {first.label}: {first.mismatches} of {first.size} elements out of "
                       f"tolerance, max abs {_short(first.max_abs)}, max rel {_short(first.max_rel)}")
    if comparison.plain is not None:
        page.heading("OpenVINO's unmodified model")
        page.preformatted("\n".join(comparison.plain.text()))
    if comparison.layers:
        page.heading("Error of every compared tensor, in execution order")
        page.figure(_error_plot(go, comparison, samples), height=460)
        page.heading("Layers")
        page.table("layers", ["#", "id", "layer", "type", "port", "shape", "max_abs", "max_rel", "mismatch",
                              "nan/inf", "ref nan/inf"],
                   [(not d.ok, [i, d.layer_id, d.name, f"{d.type}-{d.version}", d.port,
                                "x".join(map(str, d.shape)) or "scalar", d.max_abs, d.max_rel, d.mismatches,
                                f"{d.nan}/{d.inf}", f"{d.ref_nan}/{d.ref_inf}"])
                    for i, d in enumerate(comparison.layers)], numeric={0, 6, 7, 8})
    if comparison.outputs:
        page.heading("Outputs")
        page.table("outputs", ["output", "shape", "max_abs", "max_rel", "mismatch", "nan/inf", "ref nan/inf"],
                   [(not d.ok, [d.name, "x".join(map(str, d.shape)) or "scalar", d.max_abs, d.max_rel,
                                d.mismatches, f"{d.nan}/{d.inf}", f"{d.ref_nan}/{d.ref_inf}"])
                    for d in comparison.outputs], numeric={2, 3, 4})
    for sample in (samples.shown if samples else []):
        page.heading(f"{sample.why.capitalize()}: {sample.label}")
        page.figure(_histogram(go, sample), height=360)
        if sample.error_map is not None:
            page.figure(_heatmap(go, sample), height=460)
        else:
            page.paragraph(f"error map: {sample.map_note}")
    focus = first or _worst_layer(comparison)
    if model is not None and focus is not None and focus.layer_id is not None:
        page.heading(f"Around layer {focus.layer_id} ({focus.name})")
        page.figure(neighbourhood_figure(go, model, focus.layer_id, comparison), height=520)
    if comparison.missing:
        page.heading("Not compared")
        page.preformatted("\n".join(comparison.missing))
    return page


def _worst_layer(comparison):
    bad = [d for d in comparison.layers if not d.ok]
    return max(bad, key=lambda d: d.max_abs) if bad else None


def _error_plot(go, comparison, samples):
    """Error over tolerance per tensor (log), the tolerance at 1; with zero tolerance the max abs error."""
    layers = comparison.layers
    relative = comparison.rtol > 0 or comparison.atol > 0
    text = [f"{d.label}<br>max abs {_short(d.max_abs)}, max rel {_short(d.max_rel)}<br>{d.mismatches} of "
            f"{d.size} out of tolerance" for d in layers]
    x = list(range(len(layers)))
    colours = ["#c0392b" if not d.ok else "#2c7fb8" for d in layers]
    # exact agreement sits at the bottom of the log axis, drawn as a hollow triangle
    symbols = ["triangle-down-open" if d.max_abs == 0 else "circle" for d in layers]
    absolute, _, _ = _log_values([d.max_abs for d in layers])
    figure = go.Figure()
    if relative:
        shown, _, _ = _log_values([_diff_ratio(d, comparison.rtol, comparison.atol) for d in layers])
        figure.add_trace(go.Scatter(x=x, y=shown, mode="lines+markers", name="error / tolerance", text=text,
                                    hovertemplate="%{text}<extra></extra>",
                                    marker=dict(color=colours, size=6, symbol=symbols)))
        figure.add_trace(go.Scatter(x=x, y=absolute, mode="lines", name="max abs error", visible="legendonly",
                                    text=text, hovertemplate="%{text}<extra></extra>"))
        figure.add_hline(y=1.0, line_dash="dash", line_color="#c0392b", annotation_text="tolerance",
                         annotation_position="bottom left")
        figure.update_yaxes(type="log", title="max |irrun - ref| / (atol + rtol |ref|)")
    else:
        figure.add_trace(go.Scatter(x=x, y=absolute, mode="lines+markers", name="max abs error", text=text,
                                    hovertemplate="%{text}<extra></extra>",
                                    marker=dict(color=colours, size=6, symbol=symbols)))
        figure.update_yaxes(type="log", title="max |irrun - ref| (zero tolerance)")
    first = comparison.first_divergence
    if first is not None:
        figure.add_vline(x=layers.index(first), line_color="#e67e22", line_width=2)
        figure.add_annotation(x=layers.index(first), y=1.02, yref="paper", showarrow=False, xanchor="left",
                              text=f"first divergence: {first.name}"[:70], font=dict(color="#e67e22"))
    figure.update_xaxes(title="compared tensor, execution order")
    figure.update_layout(legend=dict(orientation="h", y=-0.2))
    return figure


def _diff_ratio(d, rtol, atol) -> float:
    """The error relative to the tolerance, from the Diff alone: max_abs / (atol + rtol * max_abs / max_rel)
    (|ref| at the worst relative element); exact when the worst absolute and relative elements coincide."""
    if not math.isfinite(d.max_abs):
        return math.inf
    if d.max_abs == 0:
        return 0.0
    ref = d.max_abs / d.max_rel if d.max_rel else 0.0
    allowed = atol + rtol * ref
    return d.max_abs / allowed if allowed > 0 else math.inf


def _histogram(go, sample: TensorSample):
    centres = [(a + b) / 2 for a, b in zip(sample.bins[:-1], sample.bins[1:])]
    figure = go.Figure()
    figure.add_trace(go.Bar(x=centres, y=sample.ref_counts, name="reference", opacity=0.6))
    figure.add_trace(go.Bar(x=centres, y=sample.counts, name="irrun", opacity=0.6))
    figure.update_layout(barmode="overlay", title="values", bargap=0)
    figure.update_xaxes(title="value")
    figure.update_yaxes(title="elements")
    return figure


def _heatmap(go, sample: TensorSample):
    figure = go.Figure(go.Heatmap(z=sample.error_map, colorscale="Reds", colorbar=dict(title="|diff|")))
    figure.update_layout(title="|irrun - reference|" + (f" ({sample.map_note})" if sample.map_note else ""))
    figure.update_yaxes(autorange="reversed")
    return figure


def neighbourhood_figure(go, model, layer_id: str, comparison=None):
    """The layers within NEIGHBOURHOOD_HOPS of `layer_id` (producers and consumers), drawn left to right by
    depth; red: out of tolerance, blue: within, grey: not compared."""
    graph = model.graph
    readers: dict[str, list[str]] = {}
    for lid in graph.order:
        for source in graph.nodes[lid].inputs:
            if source is not None:
                readers.setdefault(source[0], []).append(lid)
    near = {layer_id: 0}
    frontier = [layer_id]
    for hop in range(NEIGHBOURHOOD_HOPS):
        nxt = []
        for lid in frontier:
            linked = [s[0] for s in graph.nodes[lid].inputs if s is not None] + readers.get(lid, [])
            for other in linked:
                if other not in near and len(near) < NEIGHBOURHOOD_MAX:
                    near[other] = hop + 1
                    nxt.append(other)
        frontier = nxt
    position = {lid: i for i, lid in enumerate(graph.order)}
    ordered = sorted(near, key=lambda lid: position.get(lid, -1))
    depth = {}
    for lid in ordered:
        sources = [s[0] for s in graph.nodes[lid].inputs if s is not None and s[0] in near]
        depth[lid] = 1 + max((depth[s] for s in sources if s in depth), default=-1)
    columns: dict[int, list[str]] = {}
    for lid in ordered:
        columns.setdefault(depth[lid], []).append(lid)
    xy = {lid: (d, i - (len(ids) - 1) / 2) for d, ids in columns.items() for i, lid in enumerate(ids)}
    status = {}
    for diff in (comparison.layers if comparison is not None else []):
        status[diff.layer_id] = status.get(diff.layer_id, True) and diff.ok
    edge_x, edge_y = [], []
    for lid in ordered:
        for source in graph.nodes[lid].inputs:
            if source is not None and source[0] in xy:
                (x0, y0), (x1, y1) = xy[source[0]], xy[lid]
                edge_x += [x0, x1, None]
                edge_y += [y0, y1, None]
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=edge_x, y=edge_y, mode="lines", line=dict(color="#999", width=1),
                                hoverinfo="skip", showlegend=False))
    colours = ["#c0392b" if status.get(lid) is False else "#2c7fb8" if status.get(lid) else "#aaaaaa"
               for lid in ordered]
    refs = [graph.nodes[lid].ref for lid in ordered]
    figure.add_trace(go.Scatter(
        x=[xy[lid][0] for lid in ordered], y=[xy[lid][1] for lid in ordered], mode="markers+text",
        marker=dict(size=[22 if lid == layer_id else 14 for lid in ordered], color=colours,
                    line=dict(width=[3 if lid == layer_id else 0 for lid in ordered], color="#000")),
        text=[r.type for r in refs], textposition="bottom center", showlegend=False,
        hovertext=[f"layer {r.id}: {r.name}<br>{r.type}-{r.version}" for r in refs], hoverinfo="text"))
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    figure.update_layout(title="neighbourhood (red: out of tolerance, blue: within, grey: not compared; "
                               "hover for names)")
    return figure


def write_compare_report(path, comparison, model=None, samples=None) -> Path:
    return compare_page(comparison, model, samples).write(path)


# ---------------------------------------------------------------- generate

def write_generate_report(path, folder, result, note: str | None = None) -> Path:
    """Per step: the max |logit difference| (log) and whether irrun and OpenVINO chose the same token."""
    go, _, _ = _plotly()
    steps = result.steps
    agreed = sum(bool(s.agree) for s in steps)
    page = Page(f"irrun generate: {folder} against openvino")
    page.verdict(result.all_agree, f"{agreed}/{len(steps)} tokens agree, max |logit diff| "
                                   f"{_short(max((s.max_logit_diff for s in steps), default=0.0))}")
    page.paragraph(f"prompt {','.join(map(str, result.prompt))}; irrun's token is fed back at every step; "
                   f"OpenVINO's CPU plugin with f32 settings.")
    if note:
        page.paragraph(note)
    values, _, _ = _log_values([s.max_logit_diff for s in steps])
    figure = go.Figure()
    figure.add_trace(go.Scatter(
        x=[s.index for s in steps], y=values, mode="lines+markers", name="max |logit diff|",
        marker=dict(size=10, color=["#2c7fb8" if s.agree else "#c0392b" for s in steps],
                    symbol=["circle" if s.agree else "x" for s in steps]),
        text=[f"step {s.index}: irrun {s.token}, openvino {s.reference_token}" for s in steps],
        hovertemplate="%{text}<br>max |diff| %{y:.3g}<extra></extra>"))
    figure.update_yaxes(type="log", title="max |irrun - openvino| over the last position's logits")
    figure.update_xaxes(title="step (blue: same token, red x: different)", dtick=1)
    page.heading("Logit difference per step")
    page.figure(figure)
    page.heading("Steps")
    page.table("steps", ["step", "fed", "irrun token", "openvino token", "max |logit diff|", "agree"],
               [(not s.agree, [s.index, s.fed, s.token, s.reference_token, s.max_logit_diff,
                               "yes" if s.agree else "NO"]) for s in steps], numeric={0, 1, 4})
    return page.write(path)


# ---------------------------------------------------------------- precision

def write_precision_report(path, analysis) -> Path:
    """The reduced-precision analysis: error each layer causes alone in the narrow type, the set kept in f32."""
    go, _, _ = _plotly()
    page = Page(f"irrun precision: {analysis.model} in {analysis.kind}")
    solved = analysis.error_all <= analysis.tolerance or (analysis.error_kept is not None
                                                          and analysis.error_kept <= analysis.tolerance)
    summary = (f"every layer can compute in {analysis.kind}" if analysis.error_all <= analysis.tolerance else
               f"keep {len(analysis.keep_layers)} layers in f32: output error {_short(analysis.error_kept)}"
               if analysis.keep else "no set of layers brings the error under the tolerance")
    page.verdict(solved, summary)
    page.paragraph(f"{analysis.candidates} layers computed in {analysis.kind} (weights and every layer output "
                   f"rounded{', overflow to inf' if analysis.kind == 'f16' else ''}): output error "
                   f"{_short(analysis.error_all)} (max |y - y_f32| / max |y_f32|), tolerance "
                   f"{analysis.tolerance:g}; {analysis.runs} model runs.")
    if analysis.ranking:
        kept = {r.layer_id for r in analysis.keep}
        values, _, _ = _log_values([r.harm for r in analysis.ranking])
        labels = [f"{i + 1}. {r.name}" + (f" (+{r.group - 1})" if r.group > 1 else "")
                  for i, r in enumerate(analysis.ranking)]
        figure = go.Figure(go.Bar(
            x=labels, y=values, marker_color=["#c0392b" if r.layer_id in kept else "#2c7fb8"
                                              for r in analysis.ranking],
            textposition="none",
            text=[f"layer {r.layer_id} {r.type}" + (f", {r.overflow} overflowed" if r.overflow else "")
                  for r in analysis.ranking], hovertemplate="%{x}<br>%{text}<br>error %{y:.3g}<extra></extra>"))
        figure.add_hline(y=analysis.tolerance, line_dash="dash", line_color="#c0392b", annotation_text="tolerance")
        figure.update_yaxes(type="log", title=f"output error with only this layer in {analysis.kind}")
        figure.update_layout(title="layers by the error they cause alone (red: kept in f32)")
        page.heading("Ranking")
        page.figure(figure, height=480)
        page.table("ranking", ["rank", "id", "layer", "type", "error alone", "group", "overflow", "kept in f32"],
                   [(r.layer_id in kept, [i + 1, r.layer_id, r.name, r.type, r.harm, r.group, r.overflow,
                                          "yes" if r.layer_id in kept else ""])
                    for i, r in enumerate(analysis.ranking)], numeric={0, 4, 5, 6})
    return page.write(path)
