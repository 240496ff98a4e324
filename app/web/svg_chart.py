"""Line charts as inline SVG, drawn on the server, for the Train, Rollouts and eval-stats pages.

Why hand-written rather than gr.LinePlot: in Gradio 6.31 a LinePlot fed by a gr.Timer stayed blank
in the tab that launched the run (the lines appeared only after a reload), and an empty plot
labels its axes "Infinity". An SVG string is redrawn whole on every tick, costs ~1 ms for a few
hundred points, says "no data yet" when there is none, and its points are DOM elements a
browser test can count (`circle[data-series]`)."""
from __future__ import annotations

import html
import math

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563", "#db2777",
           "#65a30d", "#7c3aed")
W, H, PAD_L, PAD_R, PAD_T, PAD_B = 460, 220, 44, 12, 26, 34


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    step = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(step))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= step)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _fmt(v: float) -> str:
    v = 0.0 if abs(v) < 1e-12 else v        # no "-0" tick
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def line_chart(series: dict[str, list[tuple[float, float]]], *, title: str, elem_id: str,
               y_range: tuple[float | None, float | None] = (None, None), x_label: str = "step",
               dashed: tuple[str, ...] = (), empty: str = "no data yet") -> str:
    """One SVG with a polyline and a dot per point for each named series, a legend and axes.
    `y_range`: fixed bounds (None = from the data). Series named in `dashed` are drawn dashed."""
    esc = lambda x: html.escape(str(x), quote=True)
    pts = [(x, y) for s in series.values() for x, y in s if math.isfinite(x) and math.isfinite(y)]
    head = (f'<div class="mvp-chart" id="{esc(elem_id)}" data-points="{len(pts)}">'
            f'<svg viewBox="0 0 {W} {H}" width="100%" role="img" aria-label="{esc(title)}">'
            f'<text x="{PAD_L}" y="16" class="mvp-chart-title">{esc(title)}</text>')
    if not pts:
        return head + (f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" class="mvp-chart-empty">'
                       f'{esc(empty)}</text></svg></div>')
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs)
    y0 = y_range[0] if y_range[0] is not None else min(ys)
    y1 = y_range[1] if y_range[1] is not None else max(ys)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    if y1 == y0:
        y0, y1 = y0 - (abs(y0) * 0.1 or 1), y1 + (abs(y1) * 0.1 or 1)
    sx = lambda x: PAD_L + (x - x0) / (x1 - x0) * (W - PAD_L - PAD_R)
    sy = lambda y: H - PAD_B - (y - y0) / (y1 - y0) * (H - PAD_T - PAD_B)
    out = [head]
    for t in _ticks(y0, y1):
        out.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" class="mvp-grid"/>'
                   f'<text x="{PAD_L - 4}" y="{sy(t) + 3:.1f}" text-anchor="end" class="mvp-tick">{_fmt(t)}</text>')
    for t in _ticks(x0, x1):
        out.append(f'<text x="{sx(t):.1f}" y="{H - PAD_B + 13}" text-anchor="middle" class="mvp-tick">{_fmt(t)}</text>')
    out.append(f'<text x="{W - PAD_R}" y="{H - 4}" text-anchor="end" class="mvp-tick">{esc(x_label)}</text>')
    legend_x = PAD_L + 6
    for i, (name, s) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        good = sorted((x, y) for x, y in s if math.isfinite(x) and math.isfinite(y))
        dash = ' stroke-dasharray="5 3"' if name in dashed else ""
        line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in good)
        out.append(f'<g data-series="{esc(name)}"><polyline points="{line}" fill="none" stroke="{color}" '
                   f'stroke-width="1.6"{dash}/>')
        out += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.2" fill="{color}" data-series="{esc(name)}">'
                f'<title>{esc(name)}: {x:g}, {y:.4g}</title></circle>' for x, y in good]
        out.append("</g>")
        out.append(f'<rect x="{legend_x}" y="{PAD_T - 4}" width="10" height="3" fill="{color}"/>'
                   f'<text x="{legend_x + 13}" y="{PAD_T}" class="mvp-legend">{esc(name)}</text>')
        legend_x += 18 + 6.2 * len(str(name))
    out.append("</svg></div>")
    return "".join(out)


def bar_chart(bars: list[tuple[str, float]], *, title: str, elem_id: str, y_max: float | None = None,
              empty: str = "no data yet") -> str:
    """One SVG bar per (label, value), labels under the bars; `empty` (a sentence saying what
    produces the data) when there are no finite values. `y_max`: a fixed top (1 for rates)."""
    esc = lambda x: html.escape(str(x), quote=True)
    good = [(str(k), float(v)) for k, v in bars if v is not None and math.isfinite(float(v))]
    head = (f'<div class="mvp-chart" id="{esc(elem_id)}" data-bars="{len(good)}">'
            f'<svg viewBox="0 0 {W} {H}" width="100%" role="img" aria-label="{esc(title)}">'
            f'<text x="{PAD_L}" y="16" class="mvp-chart-title">{esc(title)}</text>')
    if not good:     # a sentence, not an empty frame (it may be longer than the chart is wide)
        return (f'<div class="mvp-chart" id="{esc(elem_id)}" data-bars="0"><p class="mvp-chart-note">'
                f'<b>{esc(title)}</b>: {esc(empty)}</p></div>')
    top = y_max if y_max is not None else max(max(v for _, v in good), 0.0) or 1.0
    low = min(0.0, min(v for _, v in good))
    sy = lambda y: H - PAD_B - (y - low) / ((top - low) or 1.0) * (H - PAD_T - PAD_B)
    out = [head]
    for t in _ticks(low, top):
        out.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" class="mvp-grid"/>'
                   f'<text x="{PAD_L - 4}" y="{sy(t) + 3:.1f}" text-anchor="end" class="mvp-tick">{_fmt(t)}</text>')
    slot = (W - PAD_L - PAD_R) / len(good)
    for i, (label, v) in enumerate(good):
        x, y0, y1 = PAD_L + i * slot + slot * 0.15, sy(max(v, 0.0)), sy(min(v, 0.0))
        short = label if len(label) <= max(4, int(slot / 6)) else label[:max(3, int(slot / 6) - 1)] + "…"
        out.append(f'<rect x="{x:.1f}" y="{y0:.1f}" width="{slot * 0.7:.1f}" height="{max(0.5, y1 - y0):.1f}" '
                   f'fill="{PALETTE[0]}" data-bar="{esc(label)}"><title>{esc(label)}: {v:.4g}</title></rect>'
                   f'<text x="{x + slot * 0.35:.1f}" y="{H - PAD_B + 13}" text-anchor="middle" '
                   f'class="mvp-tick">{esc(short)}</text>')
    out.append("</svg></div>")
    return "".join(out)
