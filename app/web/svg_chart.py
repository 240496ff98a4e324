"""Line and bar charts as inline SVG, drawn on the server, for the Train, Rollouts and Stats pages.
Made to be read: whole-number step ticks, the legend under the plot, baselines
as labelled reference levels, bar labels turned and thinned so that none overlaps.

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


CHAR_W = 5.6          # width of one character of the 10 px tick and legend font (static/studio.css)
LINE_H = 13           # height of one legend row / one rotated bar label's slot
LEGEND_SWATCH = 16
ROT_CHARS, ROT_PAD = 16, 70   # a turned bar label: at most this many characters, this much room below
LABEL_LIFT = 6        # px between a baseline's dashed line and its label's text baseline
HALO = "paint-order:stroke;stroke:var(--mvp-bg,#fff);stroke-width:3px"   # a label stays legible over a line


def _ticks(lo: float, hi: float, n: int = 4, integer: bool = False) -> list[float]:
    """About `n` round ticks in [lo, hi]; with `integer` only whole numbers (a step axis shows 60,
    never 60.2 or 60.5)."""
    if hi <= lo:
        return [float(round(lo))] if integer else [lo]
    step = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(step))
    mults = (1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)
    step = next(m * mag for m in mults if m * mag >= step)
    if integer:
        step = max(1, round(step))
    first = math.ceil(lo / step - 1e-9) * step
    out = [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]
    return [float(round(v)) for v in out] if integer else out


def _fmt(v: float) -> str:
    v = 0.0 if abs(v) < 1e-12 else v        # no "-0" tick
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def _legend_rows(names: list[str], width: float) -> list[list[tuple[str, float]]]:
    """The legend's entries wrapped into rows that fit `width`: [(name, x offset)] per row."""
    rows: list[list[tuple[str, float]]] = [[]]
    x = 0.0
    for name in names:
        w = LEGEND_SWATCH + 4 + CHAR_W * len(name) + 12
        if rows[-1] and x + w > width:
            rows.append([])
            x = 0.0
        rows[-1].append((name, x))
        x += w
    return rows


def _spread(ys: list[float], gap: float, lo: float, hi: float) -> list[float]:
    """Label positions near `ys` (in order) moved apart to at least `gap`, kept within [lo, hi]."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    out = list(ys)
    prev = None
    for i in order:
        out[i] = max(out[i], lo) if prev is None else max(out[i], prev + gap)
        prev = out[i]
    over = (prev or hi) - hi
    if over > 0:                       # pushed past the bottom: shift the whole stack up
        out = [y - over for y in out]
    return out


def line_chart(series: dict[str, list[tuple[float, float]]], *, title: str, elem_id: str,
               y_range: tuple[float | None, float | None] = (None, None), x_label: str = "step",
               dashed: tuple[str, ...] = (), baselines: tuple[str, ...] = (),
               empty: str = "no data yet") -> str:
    """One SVG with a polyline and a dot per point for each named series, axes and a legend under
    the plot (never over the points). `y_range`: fixed bounds (None = from the data). Series named
    in `dashed` are drawn dashed; those in `baselines` are reference levels (chance, a shortcut
    solver, humans): a dashed line under the data without dots, labelled with its name and value at
    its right end. When every x is a whole number (steps) the x ticks are whole numbers."""
    esc = lambda x: html.escape(str(x), quote=True)
    pts = [(x, y) for s in series.values() for x, y in s if math.isfinite(x) and math.isfinite(y)]
    head = lambda h: (f'<div class="mvp-chart" id="{esc(elem_id)}" data-points="{len(pts)}">'
                      f'<svg viewBox="0 0 {W} {h}" width="100%" role="img" aria-label="{esc(title)}">'
                      f'<text x="{PAD_L}" y="16" class="mvp-chart-title">{esc(title)}</text>')
    if not pts:
        return head(H) + (f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" class="mvp-chart-empty">'
                          f'{esc(empty)}</text></svg></div>')
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    whole = all(float(x).is_integer() for x in xs)
    x0, x1 = min(xs), max(xs)
    x_ticks = _ticks(x0, x1, integer=whole)      # from the data: one checkpoint is one tick, not 60 and 61
    y0 = y_range[0] if y_range[0] is not None else min(ys)
    y1 = y_range[1] if y_range[1] is not None else max(ys)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    if y1 == y0:
        y0, y1 = y0 - (abs(y0) * 0.1 or 1), y1 + (abs(y1) * 0.1 or 1)
    drawn = [str(n) for n, s in series.items() if n not in baselines
             and any(math.isfinite(x) and math.isfinite(y) for x, y in s)]
    legend = _legend_rows(drawn, W - PAD_L - PAD_R)
    legend = [r for r in legend if r]
    total_h = H + (LINE_H * len(legend) + 6 if legend else 0)
    sx = lambda x: PAD_L + (x - x0) / (x1 - x0) * (W - PAD_L - PAD_R)
    sy = lambda y: H - PAD_B - (y - y0) / (y1 - y0) * (H - PAD_T - PAD_B)
    out = [head(total_h)]
    for t in _ticks(y0, y1):
        out.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" class="mvp-grid"/>'
                   f'<text x="{PAD_L - 4}" y="{sy(t) + 3:.1f}" text-anchor="end" class="mvp-tick">{_fmt(t)}</text>')
    for t in x_ticks:
        out.append(f'<text x="{sx(t):.1f}" y="{H - PAD_B + 13}" text-anchor="middle" class="mvp-tick" '
                   f'data-x-tick="{_fmt(t)}">{_fmt(t)}</text>')
    out.append(f'<text x="{W - PAD_R}" y="{H - 4}" text-anchor="end" class="mvp-tick">{esc(x_label)}</text>')
    colors = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(series)}
    # reference levels first (under the data), each labelled at its right end, labels kept apart
    base = [(n, [(x, y) for x, y in s if math.isfinite(x) and math.isfinite(y)]) for n, s in series.items()
            if n in baselines]
    base = [(n, s) for n, s in base if s]
    # a label stands clear above its line (LABEL_LIFT), never on it; below it when the top is too near
    top = PAD_T + 8
    want = [sy(s[-1][1]) - LABEL_LIFT for _, s in base]
    want = [y if y >= top else y + 2 * LABEL_LIFT + 9 for y in want]
    label_y = _spread(want, LINE_H - 2, top, H - PAD_B - 2)
    for (name, s), ly in zip(base, label_y):
        c = colors[name]
        line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in sorted(s))
        out.append(f'<g data-baseline="{esc(name)}"><polyline points="{line}" fill="none" stroke="{c}" '
                   f'stroke-width="1.1" stroke-dasharray="4 3" opacity="0.8"/>'
                   f'<text x="{W - PAD_R - 2}" y="{ly:.1f}" text-anchor="end" class="mvp-legend" '
                   f'style="fill:{c};{HALO}" '
                   f'data-baseline-label="{esc(name)}">{esc(name)} {s[-1][1]:.2f}</text></g>')
    for name, s in series.items():
        if name in baselines:
            continue
        color = colors[name]
        good = sorted((x, y) for x, y in s if math.isfinite(x) and math.isfinite(y))
        dash = ' stroke-dasharray="5 3"' if name in dashed else ""
        line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in good)
        out.append(f'<g data-series="{esc(name)}"><polyline points="{line}" fill="none" stroke="{color}" '
                   f'stroke-width="1.6"{dash}/>')
        out += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.2" fill="{color}" data-series="{esc(name)}">'
                f'<title>{esc(name)}: {x:g}, {y:.4g}</title></circle>' for x, y in good]
        out.append("</g>")
    for row_i, row in enumerate(legend):      # under the x axis, wrapped to the chart's width
        y = H + 9 + LINE_H * row_i
        for name, dx in row:
            x, c = PAD_L + dx, colors[name]
            dash = ' stroke-dasharray="4 2"' if name in dashed else ""
            out.append(f'<g class="mvp-legend-item" data-legend="{esc(name)}">'
                       f'<line x1="{x:.1f}" x2="{x + LEGEND_SWATCH:.1f}" '
                       f'y1="{y - 3}" y2="{y - 3}" stroke="{c}" stroke-width="2.5"{dash}/>'
                       f'<text x="{x + LEGEND_SWATCH + 4:.1f}" y="{y}" class="mvp-legend">{esc(name)}</text></g>')
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
    slot = (W - PAD_L - PAD_R) / len(good)
    # labels that do not fit under their bar are turned 60 degrees and only every k-th is written,
    # so that neighbours stay a line apart (a bar's full label is its tooltip)
    fits = max(len(lab) for lab, _ in good) * CHAR_W <= slot * 0.95
    every = 1 if fits else max(1, math.ceil(LINE_H / slot))
    extra = 0 if fits else ROT_PAD        # room under the axis for turned labels
    out = [head.replace(f'viewBox="0 0 {W} {H}"', f'viewBox="0 0 {W} {H + extra}"')]
    sy = lambda y: H - PAD_B - (y - low) / ((top - low) or 1.0) * (H - PAD_T - PAD_B)
    for t in _ticks(low, top):
        out.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" class="mvp-grid"/>'
                   f'<text x="{PAD_L - 4}" y="{sy(t) + 3:.1f}" text-anchor="end" class="mvp-tick">{_fmt(t)}</text>')
    for i, (label, v) in enumerate(good):
        x, y0, y1 = PAD_L + i * slot + slot * 0.15, sy(max(v, 0.0)), sy(min(v, 0.0))
        out.append(f'<rect x="{x:.1f}" y="{y0:.1f}" width="{slot * 0.7:.1f}" height="{max(0.5, y1 - y0):.1f}" '
                   f'fill="{PALETTE[0]}" data-bar="{esc(label)}"><title>{esc(label)}: {v:.4g}</title></rect>')
        if i % every:
            continue
        cx = x + slot * 0.35
        if fits:
            out.append(f'<text x="{cx:.1f}" y="{H - PAD_B + 13}" text-anchor="middle" class="mvp-tick" '
                       f'data-bar-label="{esc(label)}">{esc(label)}</text>')
        else:
            short = label if len(label) <= ROT_CHARS else label[:ROT_CHARS - 1] + "…"
            out.append(f'<text x="{cx:.1f}" y="{H - PAD_B + 8}" text-anchor="end" class="mvp-tick" '
                       f'transform="rotate(-60 {cx:.1f} {H - PAD_B + 8})" data-bar-label="{esc(label)}">'
                       f'{esc(short)}</text>')
    out.append("</svg></div>")
    return "".join(out)
