#!/usr/bin/env python3
"""Draw the MCP server's icons (mcp_server/icons/): the server's and one per tool category, each as
SVG and as a 48×48 PNG, for light and for dark backgrounds.

Each icon is drawn once below, on a 24×24 grid as a flat stroked glyph (2 units wide, round caps and
joins) in its category's colour; the SVG is written from the drawing and the PNG rendered from the
same drawing with Pillow (8× oversampled, then reduced), stored as a small palette PNG. `light`
icons are for light backgrounds (a dark shade of the colour), `dark` ones for dark backgrounds (a
light shade). Run it after changing a drawing and commit what it writes:

    .venv/bin/python scripts/mcp-icons.py            # writes mcp_server/icons/*.svg, *.png
    .venv/bin/python scripts/mcp-icons.py --check    # exit 1 when a committed file differs
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "mcp_server" / "icons"
GRID = 24
PNG_SIZE = 48
OVERSAMPLE = 8
STROKE = 2.0

# Per category: (light-background colour, dark-background colour).
COLOURS = {
    "server": ("#1d4ed8", "#93c5fd"),
    "invoice": ("#1d4ed8", "#93c5fd"),
    "customer": ("#6d28d9", "#c4b5fd"),
    "catalog": ("#b45309", "#fcd34d"),
    "payment": ("#15803d", "#86efac"),
    "credit_note": ("#be123c", "#fda4af"),
    "schedule": ("#0e7490", "#67e8f9"),
    "email": ("#4338ca", "#a5b4fc"),
    "e_invoice": ("#0f766e", "#5eead4"),
    "business": ("#334155", "#cbd5e1"),
}
# What is drawn on the server icon's filled tile, per theme.
ON_TILE = ("#ffffff", "#0b1220")


def rect(x1, y1, x2, y2, r=0.0, *, fill=False, on=False):
    return {"kind": "rect", "box": (x1, y1, x2, y2), "r": r, "fill": fill, "on": on}


def lines(*points, closed=False, on=False):
    return {"kind": "lines", "points": points, "closed": closed, "fill": False, "on": on}


def circle(cx, cy, r, *, fill=False, on=False):
    return {"kind": "circle", "centre": (cx, cy), "r": r, "fill": fill, "on": on}


def arc(cx, cy, r, start, end, *, on=False):
    """Clockwise on screen from `start` to `end` degrees (0: to the right, 90: down)."""
    return {"kind": "arc", "centre": (cx, cy), "r": r, "start": start, "end": end, "fill": False, "on": on}


PAGE = rect(5, 3, 19, 21, 2)
DRAWINGS = {
    # The service itself: an invoice on a filled tile.
    "server": [rect(2, 2, 22, 22, 5, fill=True),
               rect(7, 5, 17, 19, 1.5, on=True),
               lines((10, 9), (14, 9), on=True), lines((10, 12), (14, 12), on=True), lines((10, 15), (12, 15), on=True)],
    # A page with lines of text.
    "invoice": [PAGE, lines((9, 8), (15, 8)), lines((9, 12), (15, 12)), lines((9, 16), (12, 16))],
    # A person: head and shoulders.
    "customer": [circle(12, 8, 4), arc(12, 21, 7, 180, 360)],
    # A price tag with its hole.
    "catalog": [lines((12, 3), (20, 3), (21, 4), (21, 12), (12, 21), (3, 12), closed=True),
                circle(16, 8, 1.5, fill=True)],
    # A payment card.
    "payment": [rect(2, 5, 22, 19, 2), lines((2, 10), (22, 10)), lines((6, 15), (10, 15))],
    # A page with an arrow back: the invoice corrected.
    "credit_note": [PAGE, lines((9, 8), (15, 8)), lines((15, 15), (9, 15)), lines((11.5, 12.5), (9, 15), (11.5, 17.5))],
    # A calendar page.
    "schedule": [rect(3, 5, 21, 21, 2), lines((3, 10), (21, 10)), lines((8, 3), (8, 7)), lines((16, 3), (16, 7)),
                 circle(8, 15, 1.25, fill=True), circle(12, 15, 1.25, fill=True), circle(16, 15, 1.25, fill=True)],
    # An envelope: reminders and e-mails.
    "email": [rect(3, 5, 21, 19, 2), lines((3.5, 7), (12, 13), (20.5, 7))],
    # A page of markup: the structured e-invoice (and exports of them).
    "e_invoice": [PAGE, lines((10.5, 8.5), (8, 12), (10.5, 15.5)), lines((13.5, 8.5), (16, 12), (13.5, 15.5))],
    # A building: the business.
    "business": [rect(5, 3, 19, 21, 1.5), lines((9, 7), (10, 7)), lines((14, 7), (15, 7)), lines((9, 11), (10, 11)),
                 lines((14, 11), (15, 11)), lines((10.5, 21), (10.5, 16), (13.5, 16), (13.5, 21))],
}


def _n(value: float) -> str:
    return f"{value:g}"


def svg(name: str, theme: str) -> str:
    """The icon as an SVG document (no script, no external reference)."""
    colour, on_tile = _colours(name, theme)
    body = []
    for shape in DRAWINGS[name]:
        paint = on_tile if shape["on"] else colour
        style = f' fill="{paint}" stroke="none"' if shape["fill"] else (f' stroke="{paint}"' if shape["on"] else "")
        if shape["kind"] == "rect":
            x1, y1, x2, y2 = shape["box"]
            corner = f' rx="{_n(shape["r"])}"' if shape["r"] else ""
            body.append(f'<rect x="{_n(x1)}" y="{_n(y1)}" width="{_n(x2 - x1)}" height="{_n(y2 - y1)}"{corner}{style}/>')
        elif shape["kind"] == "lines":
            points = " ".join(f"{_n(x)},{_n(y)}" for x, y in shape["points"])
            element = "polygon" if shape["closed"] else "polyline"
            body.append(f'<{element} points="{points}"{style}/>')
        elif shape["kind"] == "circle":
            (cx, cy), r = shape["centre"], shape["r"]
            body.append(f'<circle cx="{_n(cx)}" cy="{_n(cy)}" r="{_n(r)}"{style}/>')
        else:
            (x1, y1), (x2, y2) = _arc_ends(shape)
            large = 1 if (shape["end"] - shape["start"]) % 360 > 180 else 0
            r = _n(shape["r"])
            body.append(f'<path d="M{_n(x1)} {_n(y1)}A{r} {r} 0 {large} 1 {_n(x2)} {_n(y2)}"{style}/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{GRID}" height="{GRID}" viewBox="0 0 {GRID} {GRID}" '
            f'fill="none" stroke="{colour}" stroke-width="{_n(STROKE)}" stroke-linecap="round" '
            f'stroke-linejoin="round">' + "".join(body) + "</svg>\n")


def png(name: str, theme: str) -> bytes:
    """The icon as a PNG of PNG_SIZE pixels a side, drawn with Pillow from the same drawing."""
    from PIL import Image, ImageDraw
    colour, on_tile = _colours(name, theme)
    scale = PNG_SIZE / GRID * OVERSAMPLE
    width = STROKE * scale
    side = PNG_SIZE * OVERSAMPLE
    # Each colour is a layer of its own (a coverage mask), so edges blend into transparency, never into black.
    layers: dict[str, Image.Image] = {}

    def mask(paint: str) -> ImageDraw.ImageDraw:
        return ImageDraw.Draw(layers.setdefault(paint, Image.new("L", (side, side), 0)))

    def at(x: float, y: float) -> tuple[float, float]:
        return x * scale, y * scale

    def cap(draw: ImageDraw.ImageDraw, x: float, y: float) -> None:
        px, py = at(x, y)
        draw.ellipse((px - width / 2, py - width / 2, px + width / 2, py + width / 2), fill=255)

    for shape in DRAWINGS[name]:
        draw = mask(on_tile if shape["on"] else colour)
        if shape["kind"] == "rect":
            x1, y1, x2, y2 = (v * scale for v in shape["box"])
            r = shape["r"] * scale
            if shape["fill"]:
                draw.rounded_rectangle((x1, y1, x2, y2), radius=r, fill=255)
            else:  # Pillow strokes inside the box; SVG on the outline: widen by half a stroke
                half = width / 2
                draw.rounded_rectangle((x1 - half, y1 - half, x2 + half, y2 + half), radius=r + half, outline=255,
                                       width=round(width))
        elif shape["kind"] == "lines":
            points = list(shape["points"]) + ([shape["points"][0]] if shape["closed"] else [])
            draw.line([at(x, y) for x, y in points], fill=255, width=round(width), joint="curve")
            for x, y in points:
                cap(draw, x, y)
        elif shape["kind"] == "circle":
            (cx, cy), r = at(*shape["centre"]), shape["r"] * scale
            if shape["fill"]:
                draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=255)
            else:
                outer = r + width / 2
                draw.ellipse((cx - outer, cy - outer, cx + outer, cy + outer), outline=255, width=round(width))
        else:
            (cx, cy), outer = at(*shape["centre"]), shape["r"] * scale + width / 2
            draw.arc((cx - outer, cy - outer, cx + outer, cy + outer), shape["start"], shape["end"], fill=255,
                     width=round(width))
            for x, y in _arc_ends(shape):
                cap(draw, x, y)
    image = Image.new("RGBA", (PNG_SIZE, PNG_SIZE), (0, 0, 0, 0))
    for paint, layer in layers.items():  # in drawing order: the tile first, what is on it after
        solid = Image.new("RGBA", (PNG_SIZE, PNG_SIZE), _rgb(paint) + (255,))
        image.alpha_composite(Image.composite(solid, Image.new("RGBA", solid.size, _rgb(paint) + (0,)),
                                              layer.resize((PNG_SIZE, PNG_SIZE), Image.Resampling.LANCZOS)))
    out = io.BytesIO()
    image.quantize(colors=32, method=Image.Quantize.FASTOCTREE).save(out, "PNG", optimize=True)
    return out.getvalue()


def _arc_ends(shape: dict) -> tuple[tuple[float, float], tuple[float, float]]:
    import math
    (cx, cy), r = shape["centre"], shape["r"]
    return tuple((round(cx + r * math.cos(math.radians(a)), 4), round(cy + r * math.sin(math.radians(a)), 4))
                 for a in (shape["start"], shape["end"]))


def _colours(name: str, theme: str) -> tuple[str, str]:
    index = ("light", "dark").index(theme)
    return COLOURS[name][index], ON_TILE[index]


def _rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def files() -> dict[str, bytes]:
    """Every icon file by name: `{name}-{theme}.svg` and `{name}-{theme}.png`."""
    made = {}
    for name in DRAWINGS:
        for theme in ("light", "dark"):
            made[f"{name}-{theme}.svg"] = svg(name, theme).encode()
            made[f"{name}-{theme}.png"] = png(name, theme)
    return made


def main(argv: list[str]) -> int:
    made = files()
    if "--check" in argv:
        stale = [name for name, content in made.items()
                 if not (FOLDER / name).exists() or (FOLDER / name).read_bytes() != content]
        for name in stale:
            print(f"{FOLDER / name} differs from its drawing: run scripts/mcp-icons.py", file=sys.stderr)
        return 1 if stale else 0
    FOLDER.mkdir(exist_ok=True)
    for name, content in made.items():
        (FOLDER / name).write_bytes(content)
    print(f"wrote {len(made)} files to {FOLDER} ({sum(map(len, made.values()))} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
