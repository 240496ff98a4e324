"""One picture per puzzle for trainers that give a sample a single visual (Video-R1's image form,
docs/store.md "Export"): the context frames in order on the top row with the gap drawn as plain
grey tiles marked "?", and the options on the bottom row, each under its label. The masked frames are
never drawn: only the context frames' and the options' files are read."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

TILE_W = 224                # tile width in pixels; the height follows the first frame's aspect
PAD = 8
LABEL_H = 36                # the band above each tile that holds its label
BACKGROUND = (255, 255, 255)
GAP_FILL = (128, 128, 128)  # a masked tile: one flat colour, nothing of the frame
INK = (0, 0, 0)


@dataclass(frozen=True)
class Tile:
    box: tuple[int, int, int, int]    # (left, top, right, bottom) of the picture part
    kind: str                         # "context", "gap" or "option"
    uri: str | None                   # the frame drawn there (None for a gap)
    label: str                        # what is written above it


def layout(rec: dict, tile_h: int) -> tuple[tuple[int, int], list[Tile]]:
    """((width, height), tiles) of a puzzle's storyboard: row one the frames with the gap, row two
    the options."""
    s, m = rec["mask"]["start"], rec["mask"]["length"]
    top = []
    for i, f in enumerate(rec["frames"]):
        gap = s <= i < s + m
        top.append(("gap", None, "?") if gap else ("context", f["uri"], str(i + 1)))
    bottom = [("option", o["uri"], o["label"]) for o in rec["options"]]
    cols = max(len(top), len(bottom))
    row_h = LABEL_H + tile_h + PAD
    tiles = []
    for r, row in enumerate((top, bottom)):
        for c, (kind, uri, label) in enumerate(row):
            x, y = PAD + c * (TILE_W + PAD), PAD + r * row_h + LABEL_H
            tiles.append(Tile((x, y, x + TILE_W, y + tile_h), kind, uri, label))
    return (PAD + cols * (TILE_W + PAD), PAD + 2 * row_h), tiles


def render(rec: dict, frames_root: Path) -> tuple[Image.Image, list[Tile]]:
    """The storyboard of `rec`, its frames read from frames_root/<uri>."""
    frames_root = Path(frames_root)
    first = next(f["uri"] for i, f in enumerate(rec["frames"])
                 if not rec["mask"]["start"] <= i < rec["mask"]["start"] + rec["mask"]["length"])
    with Image.open(frames_root / first) as im:
        tile_h = max(1, round(TILE_W * im.height / im.width))
    size, tiles = layout(rec, tile_h)
    board = Image.new("RGB", size, BACKGROUND)
    draw = ImageDraw.Draw(board)
    font = ImageFont.load_default(size=LABEL_H - 10)
    for t in tiles:
        x0, y0, x1, y1 = t.box
        draw.text((x0 + 4, y0 - LABEL_H + 4), t.label if t.kind != "option" else f"Option {t.label}",
                  fill=INK, font=font)
        if t.uri is None:
            draw.rectangle(t.box, fill=GAP_FILL)
            continue
        with Image.open(frames_root / t.uri) as im:
            board.paste(im.convert("RGB").resize((x1 - x0, y1 - y0)), (x0, y0))
    return board, tiles
