#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A small flame graph renderer: folded stacks (loopwatch --folded, flamegraph.pl's
input) in, a standalone SVG out, with the root at the bottom and a tooltip per frame.

usage: tools/flamegraph.py FILE.folded [--title TEXT] [--width PX] > out.svg
"""
import argparse
import html
import re
import sys

ROW_PX = 17
FONT_PX = 12
MIN_PX = 0.5  # narrower frames are not drawn


def parse(path):
    root = {"name": "all", "value": 0, "children": {}}
    with open(path) as f:
        for line in f:
            m = re.match(r"^(.*) (\d+)$", line.rstrip("\n"))
            if not m:
                continue
            weight = int(m.group(2))
            node = root
            node["value"] += weight
            for frame in m.group(1).split(";"):
                node = node["children"].setdefault(
                    frame, {"name": frame, "value": 0, "children": {}})
                node["value"] += weight
    return root


def depth(node):
    return 1 + max((depth(c) for c in node["children"].values()), default=0)


def colour(name, root_name):
    """CPU warm, blocked blue, waiting for a CPU purple; the kernel's frames lighter."""
    h = sum(ord(c) for c in name) % 40
    if root_name == "blocked":
        r, g, b = 80 + h, 130 + h, 220
    elif root_name == "runq":
        r, g, b = 170 + h, 110, 210
    else:
        r, g, b = 225, 100 + 2 * h, 50 + h
    if name.endswith("_[k]"):
        r, g, b = (min(255, v + 30) for v in (r, g, b))
    return "rgb(%d,%d,%d)" % (r, g, b)


def render(root, title, width):
    rows = depth(root)
    height = (rows + 2) * ROW_PX + 10
    scale = (width - 20) / max(root["value"], 1)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="monospace" font-size="%d">' % (width, height, FONT_PX),
           '<rect width="100%" height="100%" fill="#fdfdf8"/>',
           '<text x="%d" y="%d" text-anchor="middle" font-size="%d">%s</text>'
           % (width // 2, ROW_PX, FONT_PX + 3, html.escape(title))]

    def draw(node, x, level, cause):
        w = node["value"] * scale
        if w < MIN_PX:
            return
        y = height - (level + 1) * ROW_PX - 5
        label = "%s (%.1f ms, %.1f %%)" % (node["name"], node["value"] / 1000,
                                           100.0 * node["value"] / max(root["value"], 1))
        out.append('<g><title>%s</title><rect x="%.1f" y="%d" width="%.1f" height="%d" '
                   'fill="%s" rx="2"/>' % (html.escape(label), x, y, w, ROW_PX - 1,
                                           colour(node["name"], cause)))
        chars = int(w / (FONT_PX * 0.6))
        if chars >= 3:
            text = node["name"] if len(node["name"]) <= chars else node["name"][:chars - 2] + ".."
            out.append('<text x="%.1f" y="%d">%s</text>' % (x + 3, y + ROW_PX - 5,
                                                           html.escape(text)))
        out.append("</g>")
        for child in sorted(node["children"].values(), key=lambda c: c["name"]):
            draw(child, x, level + 1, cause or child["name"])
            x += child["value"] * scale

    x = 10.0
    draw(root, x, 0, None)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folded")
    ap.add_argument("--title", default="loopwatch: stall time by stack")
    ap.add_argument("--width", type=int, default=1200)
    args = ap.parse_args()
    sys.stdout.write(render(parse(args.folded), args.title, args.width))


if __name__ == "__main__":
    main()
