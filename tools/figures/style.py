"""style.py - what every figure shares: the repository root, the palette, matplotlib's
settings for byte-identical SVGs, and the drawing helpers (boxes, arrows, brackets).
"""
import os

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402 (the backend must be chosen first)
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# One palette for every figure: a section of a file, a kind of row or a kind of bar keeps its
# colour from picture to picture.
BLUE = "#3b6ea5"
LIGHT_BLUE = "#a9c4e2"
ORANGE = "#dd8452"
LIGHT_ORANGE = "#f3cdb5"
GREEN = "#55a868"
LIGHT_GREEN = "#bfe0c7"
RED = "#c44e52"
LIGHT_RED = "#f1c4c5"
PURPLE = "#bdb3dd"
LIGHT_PURPLE = "#d4cee9"
GREY = "#8c8c8c"
LIGHT_GREY = "#e6e6e6"
INK = "#262626"
DARK_ORANGE = "#a4501f"  # orange text, readable on white
DARK_GREEN = "#2f6b3d"

plt.rcParams.update({
    "svg.hashsalt": "qwen-from-scratch",  # clip-path ids from a fixed salt: identical files
    "svg.fonttype": "none",               # text stays text: small files, selectable labels
    # DejaVu Sans lays the text out; the narrower fallbacks of other machines still fit.
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
    "font.monospace": ["DejaVu Sans Mono", "Menlo", "Consolas"],
    "font.size": 9,
    "text.color": INK,
    "axes.edgecolor": INK,
    "axes.labelcolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
})


# ---- drawing helpers: figures in inches, boxes with centred text ----

def canvas(width, height):
    """A figure whose one axes spans it, with data units of inches and y growing upwards."""
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    return fig, ax


def box(ax, x, y, width, height, face, text="", fontsize=9):
    ax.add_patch(Rectangle((x, y), width, height, facecolor=face, edgecolor=INK, linewidth=0.8))
    if text:
        ax.text(x + width / 2, y + height / 2, text, ha="center", va="center", fontsize=fontsize)


def arrow(ax, start, end, color=INK, **kwargs):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=9, color=color,
                                 linewidth=0.9, shrinkA=0, shrinkB=0, **kwargs))


def bracket(ax, x, y_low, y_high, side, color=INK):
    """A square bracket from y_low to y_high; side -1 opens to the right, +1 to the left."""
    tip = x - side * 0.08
    ax.plot([tip, x, x, tip], [y_low, y_low, y_high, y_high], color=color, linewidth=1.0)


def thousands(n):
    return f"{n:,}"
