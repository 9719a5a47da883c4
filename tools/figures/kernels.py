"""kernels.py - the CUDA-core kernels of steps 6 to 10: a naive thread per output
(naive_matmul_threads), step 9's kernels with their constants read from its sources
(matvec_warp_per_row, warp_shuffle_sum, split_attention, tiled_gemm), step 9's kernel table
(step09_kernels) and one decode token of step 10 kernel by kernel (decode_timeline).
"""
import glob
import math
import os
import re
import sys

import matplotlib.ticker
from matplotlib.patches import Rectangle

from style import (
    BLUE, DARK_GREEN, DARK_ORANGE, GREEN, GREY, INK, LIGHT_BLUE, LIGHT_GREEN, LIGHT_GREY,
    LIGHT_ORANGE, LIGHT_RED, ORANGE, PURPLE, RED, ROOT, arrow, box, canvas, plt, thousands)
from sampler import softmax

# ---- naive_matmul_threads ----

def naive_matmul_threads():
    in_dim, lanes, sector_bytes, element_bytes = 1536, 32, 32, 2
    row_bytes = in_dim * element_bytes
    per_sector = sector_bytes // element_bytes
    columns, cell = 40, 0.095
    naive_column = 5  # the loop's i at this step: anywhere inside a sector
    height = lanes * cell
    fig, ax = canvas(12, 5.9)
    ax.text(0.3, 5.62, "One load of one warp: 32 lanes read 32 F16 elements of W "
            "(out_dim rows of in_dim elements, row after row in memory)", fontsize=11.5,
            fontweight="bold", va="center")

    def grid(x0, y_top, title, subtitle):
        ax.text(x0, y_top + 0.72, title, fontsize=10, fontweight="bold", va="bottom")
        ax.text(x0, y_top + 0.66, subtitle, fontsize=8.5, va="top", family="monospace")
        width = columns * cell
        # One line per cell border (two collections, not a rectangle per cell: a small file).
        ax.hlines([y_top - row * cell for row in range(lanes + 1)], x0, x0 + width,
                  color=LIGHT_GREY, linewidth=0.4)
        ax.vlines([x0 + column * cell for column in range(columns + 1)], y_top - height, y_top,
                  color=LIGHT_GREY, linewidth=0.4)
        ax.vlines([x0 + border * cell for border in range(0, columns + 1, per_sector)],
                  y_top - height, y_top, color=GREY, linewidth=1.1)
        ax.add_patch(Rectangle((x0, y_top - height), width, height, facecolor="none",
                               edgecolor=INK, linewidth=0.8))
        for border in range(0, columns, per_sector):
            ax.text(x0 + border * cell, y_top - height - 0.05, f"i0+{border}" if border else "i0",
                    ha="center", va="top", fontsize=7.5, family="monospace")
        ax.text(x0 + width + 0.06, y_top - height / 2,
                "... to\ncolumn\nin_dim-1", ha="left", va="center",
                fontsize=7.5, color=GREY, linespacing=1.3)
        ax.text(x0 + width / 2, y_top - height - 0.27,
                f"a grey line every {per_sector} elements: the {sector_bytes}-byte sectors "
                "memory is moved in", ha="center", va="top", fontsize=7.5, color=GREY)

    def fill(x0, y_top, row, first_column, n_columns, face):
        ax.add_patch(Rectangle((x0 + first_column * cell, y_top - (row + 1) * cell),
                               n_columns * cell, cell, facecolor=face, edgecolor="none"))

    def row_label(x0, y_top, row, text, color=INK):
        ax.text(x0 - 0.06, y_top - (row + 0.5) * cell, text, ha="right", va="center",
                fontsize=7.5, family="monospace", color=color)

    # Naive: lane k reads W[o + k][i], each element in a sector of its own.
    x0, y_top = 1.55, 4.45
    grid(x0, y_top, "step 6's matmul_kernel: lane k computes out[t][o+k]",
         "at loop step i, lane k reads W[o+k][i]")
    sector_start = naive_column - naive_column % per_sector
    for row in range(lanes):
        fill(x0, y_top, row, sector_start, per_sector, LIGHT_RED)
        fill(x0, y_top, row, naive_column, 1, RED)
    for row, text in ((0, "lane 0: row o"), (lanes // 2, "lane k: row o+k"),
                      (lanes - 1, "lane 31: row o+31")):
        row_label(x0, y_top, row, text, RED)
    stripe_x = x0 + (naive_column + 1) * cell
    note_x, note_y = x0 + 1.95, y_top - 0.55
    for row in (0, 1):
        ax.annotate("", xy=(stripe_x, y_top - (row + 0.5) * cell), xytext=(note_x - 0.05, note_y),
                    arrowprops={"arrowstyle": "-", "color": INK, "linewidth": 0.6})
    ax.text(note_x, note_y, f"W[o][i] and W[o+1][i]:\n{thousands(row_bytes)} B apart "
            f"(in_dim x {element_bytes} B,\nin_dim {in_dim}: Qwen2.5-1.5B)", va="center",
            fontsize=8, linespacing=1.3,
            bbox={"facecolor": "white", "edgecolor": LIGHT_GREY, "pad": 2})
    used = lanes * element_bytes
    ax.text(x0, y_top - height - 0.62,
            f"{lanes} addresses, {thousands(row_bytes)} B apart: {lanes} sectors, "
            f"{lanes} x {sector_bytes} B = {thousands(lanes * sector_bytes)} B\nmoved to use "
            f"{used} B (dark red); the rest (light red) stays useful only\nif the cache keeps "
            f"it until loop steps i+1, i+2, ... ask for it", fontsize=8.5, va="top",
            linespacing=1.35)

    # Coalesced: lane k reads W[o][i0 + k], two whole sectors of one row.
    x0 = 7.3
    grid(x0, y_top, "coalesced (a warp per row): lane k reads W[o][i0+k]",
         "lanes 0..31 read 32 consecutive elements")
    fill(x0, y_top, 0, 0, lanes, BLUE)
    row_label(x0, y_top, 0, "row o", BLUE)
    for lane in (0, lanes - 1):
        lane_x = x0 + (lane + 0.5) * cell
        arrow(ax, (lane_x, y_top + 0.3), (lane_x, y_top + 0.02), color=BLUE)
        ax.text(lane_x + 0.05, y_top + 0.19, f"lane {lane}", va="center", fontsize=8,
                color=BLUE)
    sectors = lanes * element_bytes // sector_bytes
    ax.text(x0, y_top - height - 0.62,
            f"{lanes} consecutive addresses: {sectors} sectors, {sectors * sector_bytes} B moved, "
            f"all {used} B used:\n{lanes // sectors}x less memory traffic for the same "
            f"{lanes} elements", fontsize=8.5, va="top", linespacing=1.35)
    return fig


# ---- step 9's kernels: the constants of step09_coalesced_kernels' CUDA files ----

STEP09 = os.path.join(ROOT, "step09_coalesced_kernels")
QWEN_1_5B = {"d_model": 1536, "d_ff": 8960, "n_heads": 12, "n_kv_heads": 2, "head_dim": 128}
H200_MULTIPROCESSORS = 132  # what cudaDevAttrMultiProcessorCount says on an H200


def cuda_sources(folder, names=None):
    """The paths of a step's CUDA and header files (*.cuh, *.h, *.cu), or of the named ones
    that exist, headers first: however the step splits its kernels into files."""
    if names is not None:
        paths = [os.path.join(folder, name) for name in names]
        return [path for path in paths if os.path.exists(path)]
    found = []
    for pattern in ("*.cuh", "*.h", "*.cu"):
        found += sorted(glob.glob(os.path.join(folder, pattern)))
    return found


def cuda_source(paths):
    return "\n".join(open(path, encoding="utf-8").read() for path in paths)


def cuda_constants(paths):
    """{name: value} of the files' top-level `constexpr int` lines, evaluated (C++'s integer
    division included) once the names they use are known, so the pictures change when the
    kernels' tile sizes do. A name given two different values is an error."""
    declared = []
    for match in re.findall(r"^(?:static |inline )*constexpr int ([^;]+);", cuda_source(paths),
                            re.M):
        for declaration in match.split(","):
            name, expression = (part.strip() for part in declaration.split("=", 1))
            declared.append((name, expression.replace("/", "//")))
    values = {}
    while declared:
        left = []
        for name, expression in declared:
            try:
                value = eval(expression, {"__builtins__": {}}, dict(values))
            except NameError:
                left.append((name, expression))
                continue
            if values.get(name, value) != value:
                sys.exit(f"error: {name} is {values[name]} and {value} in {', '.join(paths)}")
            values[name] = value
        if len(left) == len(declared):
            break  # the rest name constants of other files: not ones the pictures use
        declared = left
    return values


def tile_constant(c, name):
    """Step 12's tile constant kTcNAME, or kNAME where the GEMM's file still calls it that."""
    return c["kTc" + name] if "kTc" + name in c else c["k" + name]


# ---- matvec_warp_per_row ----

def matvec_warp_per_row():
    c = cuda_constants(cuda_sources(STEP09))
    lanes, warps, split_at = c["kWarpSize"], c["kMatvecWarps"], c["kPiecesToSplitRow"]
    source = cuda_source(cuda_sources(STEP09))
    kernel = source[source.index("__global__ void matvec_kernel"):]
    unroll = re.search(r"#pragma unroll (\d+)", kernel).group(1)  # of the 16-byte loads' loop
    piece_bytes, weight_bytes, sector_bytes = 16, 2, 32  # a uint4 load; F16 weights
    per_piece = piece_bytes // weight_bytes
    load_bytes = lanes * piece_bytes
    sectors = load_bytes // sector_bytes
    fig, ax = canvas(12, 6.3)
    ax.text(0.3, 6.05, "step 9's matvec_kernel (one token): a warp reads along one row of W, "
            "neighbouring lanes loading neighbouring bytes", fontsize=12, fontweight="bold",
            va="center")

    # One row of W in memory order: the first two loads of its warp, piece by piece.
    x0, y, cell, height = 1.55, 4.75, 0.15, 0.36
    ax.text(0.3, 5.62, f"Row o of W (F16), cut into {piece_bytes}-byte pieces of {per_piece} "
            f"weights: lane k loads pieces k, k+{lanes}, k+{2 * lanes}, ... "
            "(the number in a piece is the lane that loads it)", fontsize=9, va="center")
    ax.text(x0 - 0.1, y + height / 2, "row o", ha="right", va="center", fontsize=9,
            family="monospace", color=BLUE)
    # One collection for the pieces, not a patch each: a small file.
    ax.broken_barh([(x0 + piece * cell, cell) for piece in range(2 * lanes)], (y, height),
                   facecolors=[BLUE] * lanes + [LIGHT_BLUE] * lanes, edgecolor="white",
                   linewidth=0.6)
    for piece in range(2 * lanes):
        ax.text(x0 + (piece + 0.5) * cell, y + height / 2, str(piece % lanes), ha="center",
                va="center", fontsize=6.5, color="white" if piece < lanes else INK)
    ax.text(x0 + 2 * lanes * cell + 0.08, y + height / 2, f"... to piece\nin_dim/{per_piece} - 1",
            va="center", fontsize=8, color=GREY, linespacing=1.2)
    ticks = range(0, 2 * lanes + 1, sector_bytes // piece_bytes)  # the 32-byte sectors
    ax.vlines([x0 + t * cell for t in ticks], [y - (0.13 if t % lanes == 0 else 0.06)
                                               for t in ticks], y, color=INK, linewidth=0.6)
    ax.text(x0, y + height + 0.1, f"a tick under the row every {sector_bytes} B: the sectors "
            "memory moves", fontsize=7.5, color=GREY, va="bottom")
    for load in range(3):
        ax.text(x0 + load * lanes * cell, y - 0.16, f"{thousands(load * load_bytes)} B",
                ha="center", va="top", fontsize=7.5, color=GREY)
    for load, face in ((0, BLUE), (1, INK)):
        middle = x0 + (load + 0.5) * lanes * cell
        ax.text(middle, y - 0.38, f"loop step {load + 1}: pieces {load * lanes} to "
                f"{(load + 1) * lanes - 1}", ha="center", va="top", fontsize=8.5,
                fontweight="bold", color=face)
        ax.text(middle, y - 0.6, f"{lanes} lanes x {piece_bytes} B = {load_bytes} consecutive "
                f"bytes = {sectors} whole sectors", ha="center", va="top", fontsize=8)

    # What one lane does with one piece.
    zoom_piece, zoom_x, zoom_y, zoom_cell = 5, 1.55, 3.0, 0.36
    ax.annotate("", xy=(x0 + (zoom_piece + 0.5) * cell, y),
                xytext=(zoom_x + 4 * zoom_cell, zoom_y + 0.64),
                arrowprops={"arrowstyle": "-", "color": GREY, "linewidth": 0.7,
                            "linestyle": (0, (2, 2))})
    first = zoom_piece * per_piece
    ax.text(zoom_x - 0.1, zoom_y + 0.49, f"piece {zoom_piece}, one\nuint4 load: "
            f"W[o][{first}..{first + per_piece - 1}]", ha="right", va="center", fontsize=7.5,
            linespacing=1.2)
    ax.text(zoom_x - 0.1, zoom_y + 0.15, "x (floats,\nthrough L1)", ha="right", va="center",
            fontsize=7.5, linespacing=1.2)
    for i in range(per_piece):
        box(ax, zoom_x + i * zoom_cell, zoom_y + 0.34, zoom_cell, 0.3, BLUE)
        ax.text(zoom_x + (i + 0.5) * zoom_cell, zoom_y + 0.49, f"w{first + i}", ha="center",
                va="center", fontsize=6.5, color="white")
        box(ax, zoom_x + i * zoom_cell, zoom_y, zoom_cell, 0.3, LIGHT_GREEN,
            f"x{first + i}", fontsize=6.5)
    ax.text(zoom_x + per_piece * zoom_cell + 0.15, zoom_y + 0.32,
            f"lane {zoom_piece}: sum += w{first}·x{first} + ... + w{first + per_piece - 1}"
            f"·x{first + per_piece - 1}\n(x as two float4 loads); the loop is unrolled {unroll} "
            "times,\nso each lane has several loads in flight", va="center", fontsize=8,
            linespacing=1.35)

    # Step 6 against step 9, in one small picture each: where the 32 lanes of a warp read.
    inset_x, inset_y, mini = 8.05, 2.8, 0.085
    ax.add_patch(Rectangle((inset_x - 0.12, inset_y - 0.12), 3.95, 1.24, facecolor="white",
                           edgecolor=LIGHT_GREY, linewidth=0.8))
    ax.text(inset_x, inset_y + 1.0, "Where one warp load reads in W (rows down, bytes across)",
            fontsize=7.5, va="center", color=GREY)
    pictures = (("step 6: lane k reads W[o+k][i]",
                 f"{lanes} rows: {lanes} sectors\nfor {lanes * weight_bytes} B used", RED),
                ("step 9: lane k reads piece k", f"1 row: {sectors} sectors\nfor "
                 f"{load_bytes} B used", BLUE))
    for index, (title, detail, face) in enumerate(pictures):
        left = inset_x + index * 1.95
        ax.text(left, inset_y + 0.78, title, fontsize=7.5, fontweight="bold", color=face,
                va="center")
        ax.add_patch(Rectangle((left, inset_y), 8 * mini, 8 * mini, facecolor="white",
                               edgecolor=GREY, linewidth=0.6))
        strip = ((left + 2 * mini, inset_y), mini, 8 * mini) if index == 0 else \
            ((left, inset_y + 7 * mini), 8 * mini, mini)
        ax.add_patch(Rectangle(*strip, facecolor=face, edgecolor="none"))
        ax.text(left + 8 * mini + 0.08, inset_y + 4 * mini, detail, va="center", fontsize=7.5,
                linespacing=1.25)

    # How a block's warps take rows: a row each when rows are short, one row together when long.
    warp_faces = [BLUE, ORANGE, GREEN, RED]
    short_pieces = QWEN_1_5B["d_model"] // per_piece
    long_pieces = QWEN_1_5B["d_ff"] // per_piece
    ax.plot([0.3, 11.75], [2.55, 2.55], color=LIGHT_GREY, linewidth=0.8)
    ax.text(0.3, 2.33, f"A block is {warps} warps ({warps * lanes} threads); which rows they read "
            f"depends on the row's length (launch_matmul)", fontsize=9.5, fontweight="bold",
            va="center")

    left, top, segment = 1.55, 1.95, 0.42
    ax.text(0.3, top, f"Rows under {split_at} pieces (Wq: {QWEN_1_5B['d_model']} weights = "
            f"{short_pieces} pieces,\n{short_pieces // lanes} loads a lane): a warp per row, "
            f"{warps} rows a block", fontsize=8.5, va="center", linespacing=1.3)
    groups = short_pieces // lanes
    for warp in range(warps):
        row_y = top - 0.62 - warp * 0.3
        ax.text(left - 0.1, row_y + 0.11, f"warp {warp}: row o+{warp}", ha="right",
                va="center", fontsize=8, family="monospace", color=warp_faces[warp])
        ax.broken_barh([(left + g * segment, segment) for g in range(groups)], (row_y, 0.22),
                       facecolor=warp_faces[warp], edgecolor="white", linewidth=0.8)
        right = left + groups * segment
        arrow(ax, (right + 0.08, row_y + 0.11), (right + 0.4, row_y + 0.11))
        ax.text(right + 0.47, row_y + 0.11, f"warp_sum: out[o+{warp}]", va="center",
                fontsize=8, family="monospace")
    ax.text(left, top - 0.62 - (warps - 1) * 0.3 - 0.06, f"each box: {lanes} pieces, one load "
            "of the warp", fontsize=7.5, color=GREY, va="top")

    left, segment = 7.05, 0.132
    ax.text(6.35, top, f"Rows of {split_at} pieces or more (Wdown: {QWEN_1_5B['d_ff']} weights "
            f"= {long_pieces} pieces):\nthe {warps} warps share one row", fontsize=8.5,
            va="center", linespacing=1.3)
    row_y = top - 0.78
    ax.text(left - 0.1, row_y + 0.14, "row o", ha="right", va="center", fontsize=8,
            family="monospace")
    groups = math.ceil(long_pieces / lanes)
    ax.broken_barh([(left + g * segment, segment) for g in range(groups)], (row_y, 0.28),
                   facecolors=[warp_faces[g % warps] for g in range(groups)], edgecolor="white",
                   linewidth=0.6)
    for warp in range(warps):
        ax.text(left + (warp + 0.5) * segment, row_y + 0.33, str(warp), ha="center",
                va="bottom", fontsize=7, color=warp_faces[warp])
    ax.text(left + warps * segment + 0.05, row_y + 0.33, f"<- warp (each box {lanes} pieces)",
            va="bottom", fontsize=7)
    loads = [len(range(warp * lanes, long_pieces, warps * lanes)) for warp in range(warps)]
    ax.text(left, row_y - 0.07, f"warp w loads pieces {lanes}w + lane, then +{warps * lanes}, "
            f"+{2 * warps * lanes}, ...: the block reads {thousands(warps * load_bytes)}\n"
            f"consecutive bytes a loop step. Loads a lane, warps 0 to {warps - 1}: "
            f"{', '.join(map(str, loads))} (a warp alone: {long_pieces // lanes})", va="top",
            fontsize=8, linespacing=1.3)
    sums_y = row_y - 0.85
    for warp in range(warps):
        box(ax, left + warp * 0.55, sums_y, 0.5, 0.26, warp_faces[warp])
        ax.text(left + warp * 0.55 + 0.25, sums_y + 0.13, f"sum {warp}", ha="center",
                va="center", fontsize=7.5, color="white")
    ax.text(left - 0.1, sums_y + 0.13, "warp_sum", ha="right", va="center", fontsize=8,
            family="monospace")
    shared_x = left + warps * 0.55 + 0.4
    arrow(ax, (shared_x - 0.35, sums_y + 0.13), (shared_x - 0.05, sums_y + 0.13))
    ax.text(shared_x, sums_y + 0.13, f"partial_sums[{warps}], shared memory;\n"
            f"__syncthreads, thread 0 adds the {warps}: out[o]", va="center", fontsize=8,
            linespacing=1.3)
    return fig


# ---- warp_shuffle_sum ----

SHUFFLE_VALUES = [0.5, 1.25, -2.0, 3.0, 0.75, -1.5, 2.25, 1.0]  # made up; exact in binary


def warp_shuffle_sum():
    c = cuda_constants(cuda_sources(STEP09))
    lanes, threads, warp_size = len(SHUFFLE_VALUES), c["kNormThreads"], c["kWarpSize"]
    offsets = [lanes >> (step + 1) for step in range(int(math.log2(lanes)))]  # 4, 2, 1
    fig, ax = canvas(12, 5.4)
    ax.text(0.3, 5.15, "warp_sum: each lane adds the value of lane (its lane XOR offset), the "
            "offset halving each step; all end with the total", fontsize=12,
            fontweight="bold", va="center")

    # The butterfly, drawn for 8 lanes: a row of values after each step.
    left, spacing, width, height = 2.05, 0.6, 0.47, 0.3
    top, row_gap = 4.3, 1.0
    rows = [list(SHUFFLE_VALUES)]
    for offset in offsets:
        rows.append([rows[-1][lane] + rows[-1][lane ^ offset] for lane in range(lanes)])
    for lane in range(lanes):
        ax.text(left + lane * spacing + width / 2, top + height + 0.08, f"lane {lane}",
                ha="center", va="bottom", fontsize=8, family="monospace")
    labels = ["each lane's value"]
    for offset in offsets:
        second = [lane for lane in range(1, lanes) if not lane & offset][0]
        labels.append(f"offset {offset}: lane i adds\nlane i ^ {offset}'s value\n"
                      f"(0↔{offset}, {second}↔{second ^ offset}, ...)")
    for row, (values, label) in enumerate(zip(rows, labels)):
        y = top - row * row_gap
        ax.text(left - 0.15, y + height / 2, label, ha="right", va="center", fontsize=8,
                linespacing=1.2)
        last = row == len(rows) - 1
        for lane, value in enumerate(values):
            box(ax, left + lane * spacing, y, width, height, LIGHT_GREEN if last else
                LIGHT_BLUE, f"{value:g}", fontsize=8.5)
        if row == 0:
            continue
        offset = offsets[row - 1]
        for lane in range(lanes):  # the own value straight down, the partner's across
            x_to = left + lane * spacing + width / 2
            partner_x = left + (lane ^ offset) * spacing + width / 2
            ax.plot([x_to, x_to], [y + row_gap, y + height], color=GREY, linewidth=0.7)
            arrow(ax, (partner_x, y + row_gap), (x_to + (0.06 if partner_x < x_to else -0.06),
                                                 y + height), color=ORANGE)
    bottom = top - len(offsets) * row_gap
    ax.text(left + (lanes * spacing - spacing + width) / 2, bottom - 0.1,
            f"{' + '.join(f'{v:g}' for v in SHUFFLE_VALUES).replace('+ -', '- ')} = "
            f"{sum(SHUFFLE_VALUES):g}, in every lane", ha="center", va="top", fontsize=8.5,
            color=DARK_GREEN)
    steps = int(math.log2(warp_size))
    ax.text(0.3, 0.4, f"{lanes} lanes take {len(offsets)} steps (offsets "
            f"{', '.join(map(str, offsets))}); the code's {warp_size} take {steps} (offsets "
            f"{', '.join(str(warp_size >> (s + 1)) for s in range(steps))}), not "
            f"{warp_size - 1} additions one after another.\n__shfl_xor_sync(kFullWarp, value, "
            "offset) hands each lane its partner's register: no shared memory, no "
            "__syncthreads.", fontsize=8.5, va="center", linespacing=1.4)

    # How rmsnorm_kernel sums the squares of a row: warps first, then the warps' sums.
    warps, dim = threads // warp_size, QWEN_1_5B["d_model"]
    x0, cell, span = 7.45, 0.5, 4.0
    ax.plot([7.1, 7.1], [0.75, 4.85], color=LIGHT_GREY, linewidth=0.8)
    ax.text(x0 - 0.1, 4.65, f"rmsnorm_kernel: one block of {threads} threads ({warps} warps) "
            "per token", fontsize=9.5, fontweight="bold", va="center")
    ax.text(x0, 4.32, f"thread t adds the squares of row[t], row[t+{threads}], ... "
            f"({dim} / {threads} = {dim // threads} each)", fontsize=8, va="center")
    for warp in range(warps):
        box(ax, x0 + warp * cell, 3.8, cell - 0.04, 0.3, LIGHT_BLUE, f"warp {warp}", fontsize=7)
    arrow(ax, (x0 + 2.0, 3.75), (x0 + 2.0, 3.42))
    ax.text(x0 + 2.1, 3.58, "warp_sum in each warp; lane 0 stores it", fontsize=8,
            va="center")
    for warp in range(warps):
        box(ax, x0 + warp * cell, 3.05, cell - 0.04, 0.3, LIGHT_ORANGE, f"[{warp}]",
            fontsize=7.5)
    ax.text(x0 + warps * cell + 0.05, 3.2, f"warp_sums[{warps}]:\nshared memory", fontsize=7.5,
            va="center", linespacing=1.2)
    ax.plot([x0 - 0.1, x0 + span], [2.8, 2.8], color=INK, linewidth=0.8, linestyle=(0, (4, 2)))
    ax.text(x0 + span, 2.72, "__syncthreads", ha="right", va="top", fontsize=7.5,
            family="monospace")
    ax.text(x0, 2.35, f"every warp again: lane l < {warps} takes warp_sums[l], the other lanes "
            "0,\nand warp_sum adds them", fontsize=8, va="center", linespacing=1.3)
    lane_cell = span / warp_size
    ax.broken_barh([(x0 + lane * lane_cell, lane_cell) for lane in range(warp_size)],
                   (1.7, 0.28), facecolors=[LIGHT_ORANGE] * warps + ["white"] *
                   (warp_size - warps), edgecolor=GREY, linewidth=0.5)
    ax.text(x0 + warps * lane_cell / 2, 1.62, f"lanes 0..{warps - 1}:\nwarp_sums", ha="center",
            va="top", fontsize=7.5, linespacing=1.2)
    ax.text(x0 + (warps + warp_size) * lane_cell / 2, 1.62, f"lanes {warps}..{warp_size - 1}: 0",
            ha="center", va="top", fontsize=7.5)
    arrow(ax, (x0 + 2.0, 1.4), (x0 + 2.0, 1.17))
    box(ax, x0, 0.72, span, 0.42, LIGHT_GREEN)
    ax.text(x0 + span / 2, 0.93, "every thread holds the sum of squares:\n"
            "inv_rms = 1 / sqrt(sum / dim + eps); result[i] = row[i] · inv_rms · weight[i]",
            ha="center", va="center", fontsize=7.5, linespacing=1.3)
    return fig


# ---- split_attention ----

# A made-up worked example: one query head, three chunks of four positions, values of one
# dimension (a head has 64 or 128), so that every number fits in the picture.
SPLIT_SCORES = [[1.2, -0.4, 2.0, 0.3], [3.1, 0.8, -1.0, 1.5], [0.2, 2.6, -0.7, 1.1]]
SPLIT_VALUES = [[0.5, -1.0, 2.0, 1.0], [-0.5, 1.5, 0.0, 3.0], [1.0, -2.0, 0.5, 2.5]]


def attention_chunks(n_positions, n_kv_heads, c):
    """(chunk count, positions per chunk) as gpu::attention picks them for one new token."""
    wanted = max(1, 2 * H200_MULTIPROCESSORS // n_kv_heads)
    passes = -(-n_positions // c["kPassPositions"])
    chunk_positions = -(-passes // wanted) * c["kPassPositions"]
    return -(-n_positions // chunk_positions), chunk_positions


def split_attention():
    c = cuda_constants(cuda_sources(STEP09))
    n_heads, n_kv_heads = QWEN_1_5B["n_heads"], QWEN_1_5B["n_kv_heads"]
    group = n_heads // n_kv_heads
    fig, ax = canvas(12, 7.0)
    ax.text(0.3, 6.75, "One new token's attention, split over the cached positions: "
            "split_attention_kernel, then merge_chunks_kernel", fontsize=12, fontweight="bold",
            va="center")

    # The grid: the positions of each KV head cut into chunks, a block per (chunk, KV head).
    ax.text(0.3, 6.38, f"Qwen2.5-1.5B: {n_heads} query heads share {n_kv_heads} KV heads "
            f"({group} each). A block takes one chunk of one KV head, for all {group} query "
            "heads of its group: each cached row is read once, not once per query head.",
            fontsize=8.5, va="center")
    strip_x, chunk_width, shown = 2.7, 0.74, 6
    for kv_head in range(n_kv_heads):
        y = 5.5 - kv_head * 0.8
        for index, head in enumerate(range(kv_head * group, (kv_head + 1) * group)):
            box(ax, 0.3 + index * 0.34, y + 0.05, 0.3, 0.26, LIGHT_ORANGE, f"q{head}",
                fontsize=6.5)
        arrow(ax, (0.3 + group * 0.34 + 0.02, y + 0.18), (strip_x - 0.05, y + 0.18),
              color=DARK_ORANGE)
        for chunk in range(shown + 1):
            x = strip_x + chunk * chunk_width
            if chunk == shown - 1:
                ax.text(x + chunk_width / 2, y + 0.18, "...", ha="center", va="center",
                        fontsize=9)
                continue
            name = f"block\n(n_chunks-1, {kv_head})" if chunk == shown else \
                f"block\n({chunk}, {kv_head})"
            width = chunk_width + (0.3 if chunk == shown else 0) - 0.04
            box(ax, x, y, width, 0.36, LIGHT_BLUE if chunk % 2 == 0 else PURPLE)
            ax.text(x + width / 2, y + 0.18, name, ha="center", va="center", fontsize=6.5,
                    linespacing=1.1)
        ax.text(strip_x, y + 0.42, f"KV head {kv_head}: its slice of the cached K and V rows, "
                "positions 0 .. n-1, cut into chunks", fontsize=7.5, va="bottom")
    ax.text(0.3, 4.55, f"blockIdx = (chunk, KV head). A chunk is a whole number of passes of "
            f"{c['kPassPositions']} positions; in a pass warp w of the {c['kDecodeWarps']} "
            f"takes positions w, w+{c['kDecodeWarps']}, ... ({c['kPositionsPerWarp']} rows of K "
            "and of V), its lanes reading neighbouring floats\nof a row. From pass to pass "
            "the block keeps an online softmax, the same rescaling as the merge below does "
            "over the chunks.", fontsize=7.5, va="top", linespacing=1.35)

    # How many chunks gpu::attention makes on an H200, at the kernel table's lengths.
    table_x, columns = 8.3, (0.0, 1.35, 2.75)
    ax.text(table_x, 5.95, f"Chunks on an H200 ({H200_MULTIPROCESSORS} multiprocessors): the "
            "code aims at ~2\nblocks per multiprocessor; a chunk is at least one pass",
            fontsize=7.5, va="bottom", linespacing=1.25)
    for column, title in zip(columns, ("cached positions", "chunks x positions", "blocks")):
        ax.text(table_x + column, 5.82, title, fontsize=7.5, va="top", fontweight="bold")
    for row, n_positions in enumerate((512, 4096, 32768)):
        n_chunks, chunk_positions = attention_chunks(n_positions, n_kv_heads, c)
        cells = (thousands(n_positions), f"{n_chunks} x {chunk_positions}",
                 str(n_chunks * n_kv_heads))
        for column, text in zip(columns, cells):
            ax.text(table_x + column, 5.58 - row * 0.21, text, fontsize=7.5, va="top")

    # The worked example: three chunks' partial results, then the merge.
    ax.plot([0.3, 11.75], [4.05, 4.05], color=LIGHT_GREY, linewidth=0.8)
    ax.text(0.3, 3.83, "Each chunk keeps, per query head: m = its largest score, l = sum of "
            "e^(s - m), o = sum of e^(s - m) · v. Worked example: one query head, chunks of 4 "
            "positions, values of 1 dimension.", fontsize=8.5, va="center")
    cell, gap, left = 0.42, 0.25, 1.45
    chunk_size = len(SPLIT_SCORES[0])
    row_ys = [3.1, 2.75, 2.4, 2.05]
    for label, y in zip(["position", "score s", "value v", "e^(s - m)"], row_ys):
        ax.text(left - 0.1, y + 0.14, label, ha="right", va="center", fontsize=8)
    partials = []
    for chunk, (scores, values) in enumerate(zip(SPLIT_SCORES, SPLIT_VALUES)):
        x = left + chunk * (chunk_size * cell + gap)
        middle = x + chunk_size * cell / 2
        m = max(scores)
        weights = [math.exp(s - m) for s in scores]
        l, o = sum(weights), sum(w * v for w, v in zip(weights, values))
        partials.append((m, l, o))
        ax.text(middle, row_ys[0] + 0.42, f"chunk {chunk}", ha="center", va="center",
                fontsize=8.5, fontweight="bold")
        for i, (s, v, w) in enumerate(zip(scores, values, weights)):
            cx = x + i * cell
            ax.text(cx + cell / 2, row_ys[0] + 0.14, str(chunk * chunk_size + i), ha="center",
                    va="center", fontsize=7.5, color=GREY)
            box(ax, cx, row_ys[1], cell, 0.28, RED if s == m else LIGHT_RED, f"{s:g}",
                fontsize=8)
            box(ax, cx, row_ys[2], cell, 0.28, LIGHT_GREEN, f"{v:g}", fontsize=8)
            box(ax, cx, row_ys[3], cell, 0.28, "white", f"{w:.3f}", fontsize=7)
        arrow(ax, (middle, row_ys[3] - 0.03), (middle, 1.74))
        box(ax, x, 1.1, chunk_size * cell, 0.62, LIGHT_BLUE)
        ax.text(middle, 1.41, f"m{chunk} = {m:g}\nl{chunk} = {l:.4f}\no{chunk} = {o:.4f}",
                ha="center", va="center", fontsize=8, family="monospace", linespacing=1.3)
    ax.text(left - 0.1, 1.41, "the chunk's\npartial result", ha="right", va="center",
            fontsize=8, linespacing=1.2)

    # The merge, with the example's numbers, against the softmax over every position at once.
    big_m = max(m for m, _, _ in partials)
    rescale = [math.exp(m - big_m) for m, _, _ in partials]
    total = sum(l * r for (_, l, _), r in zip(partials, rescale))
    out = sum(o * r for (_, _, o), r in zip(partials, rescale)) / total
    scores = [s for chunk in SPLIT_SCORES for s in chunk]
    values = [v for chunk in SPLIT_VALUES for v in chunk]
    direct = sum(p * v for p, v in zip(softmax(scores), values))
    assert abs(out - direct) < 1e-12, "the merge must give the softmax over every position"
    merge_x = 7.35
    ax.text(merge_x, row_ys[0] + 0.42, f"merge_chunks_kernel: a block per query head "
            f"({n_heads} blocks)", fontsize=8.5, fontweight="bold", va="center")
    lines = [f"M = max(m0, m1, m2) = {big_m:g}",
             "r = e^(m - M):  " + ",  ".join(f"r{i} = {r:.4f}" for i, r in enumerate(rescale)),
             f"l = l0 r0 + l1 r1 + l2 r2 = {total:.4f}",
             f"out = (o0 r0 + o1 r1 + o2 r2) / l = {out:.6f}"]
    for row, line in enumerate(lines):
        ax.text(merge_x, row_ys[0] + 0.14 - row * 0.35, line, fontsize=8.5, va="center")
    chunks_right = left + len(SPLIT_SCORES) * (chunk_size * cell + gap) - gap
    arrow(ax, (chunks_right + 0.05, 1.41), (merge_x - 0.12, row_ys[2] - 0.05), color=GREY,
          connectionstyle="arc3,rad=0.25")
    box(ax, merge_x, 1.1, 4.4, 0.62, LIGHT_GREEN)
    ax.text(merge_x + 2.2, 1.41, f"the softmax over all {len(scores)} scores at once, times v:"
            f"\n{direct:.6f}: the same, to 12 decimals", ha="center",
            va="center", fontsize=8.5, linespacing=1.35)
    ax.text(0.3, 0.75, "The chunks never see each other's scores: e^(s - m) in a chunk is "
            "e^(s - M) · e^(M - m), so multiplying a chunk's l and o by e^(m - M) puts them on "
            "the scale of the\nlargest score M. In the kernels o is a vector of head_dim values "
            f"per (chunk, query head); the partial results wait in device memory between the "
            f"two kernels,\nand the merge block's {c['kDecodeWarps']} warps take every "
            f"{c['kDecodeWarps']}th chunk, its lanes the dimensions of o.", fontsize=8,
            va="top", linespacing=1.4)
    return fig


# ---- tiled_gemm ----

GEMM_TIMES = {"load": 1.5, "store": 0.35, "math": 1.8}  # made-up durations, for the shape only


def tiled_gemm():
    c = cuda_constants(cuda_sources(STEP09))
    tokens, outputs, depth = c["kTileTokens"], c["kTileOutputs"], c["kTileDepth"]
    thread_tokens, thread_outputs = c["kThreadTokens"], c["kThreadOutputs"]
    threads, pad, per_thread = c["kGemmThreads"], c["kTilePad"], c["kPerThread"]
    rows_per_pass = c["kRowsPerPass"]
    n_tokens, in_dim, out_dim = 512, QWEN_1_5B["d_model"], QWEN_1_5B["d_model"]  # Wq, a prompt
    tile_rows, tile_columns = n_tokens // tokens, out_dim // outputs
    across = outputs // thread_outputs  # threads along a tile's outputs
    shown_thread = across + 1  # in neither the first row nor the first column of threads
    my_tokens = shown_thread // across * thread_tokens
    my_outputs = shown_thread % across * thread_outputs
    fig, ax = canvas(12, 7.0)
    ax.text(0.3, 6.75, "step 9's tiled_gemm_kernel (many tokens): out = x W^T in 64 x 64 tiles, "
            "walked along in_dim through shared memory", fontsize=12, fontweight="bold",
            va="center")
    ax.text(0.3, 6.42, f"x is (n_tokens, in_dim), W (out_dim, in_dim). A block of {threads} "
            f"threads computes one {tokens} x {outputs} tile of out; Wq at {n_tokens} tokens: "
            f"{tile_rows} x {tile_columns} = {tile_rows * tile_columns} tiles, so "
            f"{tile_rows * tile_columns} blocks.", fontsize=8.5, va="center")

    # The three matrices (not to scale), one tile, and one k step's two slices.
    tile_row, tile_column, k_step = 2, 5, 3
    x_left, bottom, depth_size, token_size, out_size = 0.5, 3.05, 1.45, 1.3, 2.6
    w_left, w_bottom = x_left + depth_size + 0.25, bottom + token_size + 0.25
    slice_w = 0.11  # a k step's 16 columns, drawn wider than to scale
    token_step, out_step = token_size / tile_rows, out_size / tile_columns
    box(ax, x_left, bottom, depth_size, token_size, "white")
    box(ax, w_left, w_bottom, out_size, depth_size, "white")
    box(ax, w_left, bottom, out_size, token_size, "white")
    ax.hlines([bottom + r * token_step for r in range(1, tile_rows)], w_left, w_left + out_size,
              color=LIGHT_GREY, linewidth=0.5)
    ax.vlines([w_left + col * out_step for col in range(1, tile_columns)], bottom,
              bottom + token_size, color=LIGHT_GREY, linewidth=0.5)
    tile_y = bottom + token_size - (tile_row + 1) * token_step
    tile_x = w_left + tile_column * out_step
    w_slice_y = w_bottom + depth_size - (k_step + 1) * slice_w
    for rectangle, face in ((((tile_x, tile_y), out_step, token_step), ORANGE),
                            (((x_left, tile_y), depth_size, token_step), LIGHT_BLUE),
                            (((x_left + k_step * slice_w, tile_y), slice_w, token_step), BLUE),
                            (((tile_x, w_bottom), out_step, depth_size), LIGHT_GREEN),
                            (((tile_x, w_slice_y), out_step, slice_w), GREEN)):
        ax.add_patch(Rectangle(*rectangle, facecolor=face, edgecolor="none", zorder=3))
    for left, low, width, height in ((x_left, bottom, depth_size, token_size),
                                     (w_left, w_bottom, out_size, depth_size),
                                     (w_left, bottom, out_size, token_size)):
        ax.add_patch(Rectangle((left, low), width, height, facecolor="none", edgecolor=INK,
                               linewidth=0.8, zorder=3))
    ax.text(x_left + depth_size / 2, bottom - 0.06, "x: in_dim across", ha="center", va="top",
            fontsize=8)
    ax.text(x_left - 0.06, bottom + token_size / 2, "n_tokens", ha="right", va="center",
            fontsize=8, rotation=90)
    ax.text(w_left + out_size / 2, w_bottom + depth_size + 0.06, "W^T: column o is row o of W",
            ha="center", va="bottom", fontsize=8)
    ax.text(w_left - 0.06, w_bottom + depth_size / 2, "in_dim", ha="right", va="center",
            fontsize=8, rotation=90)
    ax.text(w_left + out_size / 2, bottom - 0.06, f"out: out_dim across, {tile_rows} x "
            f"{tile_columns} tiles (orange: this block's)", ha="center", va="top", fontsize=8)
    ax.text(x_left, bottom - 0.33, f"Dark: one k step's slices, {tokens} x {depth} of x and "
            f"{outputs} x {depth} of W. The block walks k0 = 0, {depth}, {2 * depth}, ... "
            f"({in_dim // depth} steps\nfor in_dim {in_dim}); in shared memory each weight "
            f"serves {tokens} tokens and each activation {outputs} outputs.", fontsize=7.5,
            va="top", linespacing=1.35)

    # Shared memory: the two slices, transposed (a row per k), with the padding.
    smem_x, cell, x_low, w_low = 5.35, 0.038, 5.4, 4.2
    width = (tokens + pad) * cell
    for index, (name, face, dark, first, count, low) in enumerate((
            ("x_tile", LIGHT_BLUE, BLUE, my_tokens, thread_tokens, x_low),
            ("w_tile", LIGHT_GREEN, GREEN, my_outputs, thread_outputs, w_low))):
        ax.add_patch(Rectangle((smem_x, low), tokens * cell, depth * cell, facecolor=face,
                               edgecolor="none"))
        ax.add_patch(Rectangle((smem_x + tokens * cell, low), pad * cell, depth * cell,
                               facecolor=LIGHT_GREY, edgecolor="none"))
        ax.hlines([low + r * cell for r in range(1, depth)], smem_x, smem_x + width,
                  color="white", linewidth=0.3)
        k_row = low + (depth - 1 - k_step) * cell
        ax.add_patch(Rectangle((smem_x + first * cell, k_row), count * cell, cell,
                               facecolor=dark, edgecolor="none", zorder=3))
        ax.add_patch(Rectangle((smem_x + first * cell, low), count * cell, depth * cell,
                               facecolor="none", edgecolor=RED, linewidth=1.0, zorder=3))
        ax.add_patch(Rectangle((smem_x, low), width, depth * cell, facecolor="none",
                               edgecolor=INK, linewidth=0.8, zorder=3))
        what = "token" if index == 0 else "output"
        ax.text(smem_x, low + depth * cell + 0.07, f"{name}[k][{what}]: {depth} x "
                f"({tokens} + {pad})", fontsize=8, va="bottom", family="monospace")
        ax.text(smem_x - 0.05, low + depth * cell / 2, f"k\n0..{depth - 1}", ha="right",
                va="center", fontsize=7, linespacing=1.1)
        ax.text(smem_x + (first + count / 2) * cell, low - 0.05,
                f"thread {shown_thread}'s {count}", ha="center", va="top", fontsize=7,
                color=RED)
    arrow(ax, (x_left + (k_step + 0.5) * slice_w, tile_y + token_step + 0.03),
          (smem_x - 0.35, x_low + depth * cell / 2), color=BLUE, connectionstyle="arc3,rad=-0.2")
    arrow(ax, (tile_x + out_step + 0.03, w_slice_y + slice_w / 2),
          (smem_x - 0.35, w_low + depth * cell / 2), color=GREEN, connectionstyle="arc3,rad=0.2")
    ax.text(smem_x, 3.85, f"All {threads} threads copy, {per_thread} values of each slice a "
            f"thread: thread t\ntakes column k0 + t % {depth} of rows t / {depth}, "
            f"+{rows_per_pass}, +{2 * rows_per_pass}, ..., so {depth}\nneighbouring threads read "
            f"{depth} neighbouring k of a row (coalesced).\nRows of {tokens} + {pad} floats: the "
            "padding spreads the\ntransposing stores over the banks.", fontsize=7.5, va="top",
            linespacing=1.35)

    # The tile as the threads share it: each a block of 4 tokens x 8 outputs in registers.
    tile_left, tile_top, size = 9.3, 5.95, 2.2
    down = tokens // thread_tokens
    block_w, block_h = size / across, size / down
    ax.text(tile_left + size / 2, tile_top + 0.08, f"the tile: {down} x {across} threads, each "
            f"{thread_tokens} tokens x {thread_outputs} outputs", ha="center", va="bottom",
            fontsize=8)
    box(ax, tile_left, tile_top - size, size, size, LIGHT_ORANGE)
    ax.hlines([tile_top - r * block_h for r in range(1, down)], tile_left, tile_left + size,
              color="white", linewidth=0.6)
    ax.vlines([tile_left + col * block_w for col in range(1, across)], tile_top - size,
              tile_top, color="white", linewidth=0.6)
    shown_row, shown_column = my_tokens // thread_tokens, my_outputs // thread_outputs
    ax.add_patch(Rectangle((tile_left + shown_column * block_w,
                            tile_top - (shown_row + 1) * block_h), block_w, block_h,
                           facecolor=RED, edgecolor=INK, linewidth=0.6, zorder=3))
    ax.text(tile_left - 0.06, tile_top - size / 2, f"{tokens} tokens", ha="right",
            va="center", fontsize=7.5, rotation=90)
    ax.text(tile_left + size / 2, tile_top - size - 0.05, f"{outputs} outputs", ha="center",
            va="top", fontsize=7.5)
    ax.text(tile_left - 0.3, tile_top - size - 0.3, f"red: thread {shown_thread}, tokens "
            f"{my_tokens}..{my_tokens + thread_tokens - 1} x outputs {my_outputs}.."
            f"{my_outputs + thread_outputs - 1}:\nacc[{thread_tokens}][{thread_outputs}] in "
            "registers", fontsize=7.5, va="top", color=RED, linespacing=1.3)

    # What that thread does at each k: 4 + 8 reads from shared memory, 32 multiply-adds.
    product_x, product_y, small = 9.55, 2.35, 0.16
    ax.text(tile_left - 0.3, product_y + 0.45, f"thread {shown_thread} at each k:", fontsize=8,
            va="center", fontweight="bold")
    for a in range(thread_tokens):
        box(ax, product_x - small - 0.08, product_y - (a + 1) * small, small, small, BLUE)
    for b in range(thread_outputs):
        box(ax, product_x + b * small, product_y + 0.08, small, small, GREEN)
    box(ax, product_x, product_y - thread_tokens * small, thread_outputs * small,
        thread_tokens * small, RED)
    ax.hlines([product_y - a * small for a in range(1, thread_tokens)], product_x,
              product_x + thread_outputs * small, color="white", linewidth=0.5)
    ax.vlines([product_x + b * small for b in range(1, thread_outputs)],
              product_y - thread_tokens * small, product_y, color="white", linewidth=0.5)
    ax.text(product_x + thread_outputs * small + 0.1, product_y + 0.16,
            f"w_tile[k][{thread_outputs} outputs]", fontsize=7, va="center", color=DARK_GREEN)
    ax.text(product_x + thread_outputs * small + 0.1, product_y - thread_tokens * small / 2,
            "acc", fontsize=7.5, va="center", color=RED)
    reads = thread_tokens + thread_outputs
    ax.text(tile_left - 0.3, product_y - thread_tokens * small - 0.15,
            f"{thread_tokens} floats of x_tile[k] (blue), {thread_outputs} of w_tile[k]:\n"
            f"{reads} reads (three float4) for {thread_tokens * thread_outputs} multiply-adds,"
            "\nacc[a][b] += x[a] · w[b]", fontsize=7.5, va="top", linespacing=1.35)

    # Prefetching: the next k step's loads are in flight while this step's math runs.
    times = GEMM_TIMES
    ax.plot([0.3, 8.55], [2.35, 2.35], color=LIGHT_GREY, linewidth=0.8)
    ax.text(0.3, 2.15, "Prefetching: while a step's slices are multiplied out of shared memory, "
            "the next step's are on their way into registers", fontsize=9, fontweight="bold",
            va="center")
    scale, origin = 0.55, 2.3
    tracks = {"step 9: loads (global → registers)": 1.65,
              "step 9: copy to shared, math": 1.3,
              "first version: one after another": 0.7}
    for label, y in tracks.items():
        ax.text(origin - 0.1, y + 0.12, label, ha="right", va="center", fontsize=7.5)

    def bar(start, length, y, face, text):
        ax.broken_barh([(origin + start * scale, length * scale)], (y, 0.24), facecolors=face,
                       edgecolor="white", linewidth=0.8)
        ax.text(origin + (start + length / 2) * scale, y + 0.12, text, ha="center",
                va="center", fontsize=6.5)

    load_y, math_y, first_y = tracks.values()
    steps = 3
    bar(0, times["load"], load_y, LIGHT_BLUE, "load k0=0")
    start = times["load"]
    for step in range(steps):
        bar(start, times["store"], math_y, LIGHT_ORANGE, "")
        math_start = start + times["store"]
        bar(math_start, times["math"], math_y, ORANGE, f"math, k0={step * depth}")
        if step + 1 < steps:
            bar(math_start, times["load"], load_y, LIGHT_BLUE, f"load k0={(step + 1) * depth}")
        start = math_start + max(times["math"], times["load"])
    ours_end = start
    start = 0
    for step in range(steps):
        bar(start, times["load"], first_y, LIGHT_BLUE, f"load k0={step * depth}")
        bar(start + times["load"], times["store"], first_y, LIGHT_ORANGE, "")
        bar(start + times["load"] + times["store"], times["math"], first_y, ORANGE,
            f"math, k0={step * depth}")
        start += times["load"] + times["store"] + times["math"]
    for end, y in ((ours_end, math_y), (start, first_y)):
        ax.plot([origin + end * scale] * 2, [y - 0.04, y + 0.28], color=INK, linewidth=1.0)
    ax.text(origin, 0.45, "Light orange: registers → shared memory, between two "
            "__syncthreads. Durations made up, to show the overlap: the first version waited "
            f"for each slice,\nwhich with the few blocks of a narrow product (Wdown: {out_dim} "
            f"outputs like Wq, {tile_columns} x {tile_rows} tiles at {n_tokens} tokens) was most "
            "of its time.", fontsize=7.5, va="center", linespacing=1.35)
    return fig


# ---- step09_kernels ----

KERNEL_RECORDS = "docs/bench/kernels-2026-12-01"
KERNEL_RUNS = [  # (file, bar label, colour), oldest first; all from one device call
    ("kernels_step08_sampling.tsv", "step08 (step 6's naive kernels)", GREY),
    ("kernels_step09_first.tsv", "step09, first version", LIGHT_BLUE),
    ("kernels_step09_coalesced_kernels.tsv", "step09", BLUE),
]
KERNEL_GRAPH = "graph_step09.tsv"  # its rows "... in a graph": the same kernels replayed
GRAPH_SUFFIX = " in a graph"


def kernel_rows(path):
    """(device, {(operator, shape): microseconds}) of one bench_kernels record, in its order."""
    device, rows = "", {}
    for line in open(os.path.join(ROOT, KERNEL_RECORDS, path), encoding="utf-8"):
        fields = line.rstrip("\n").split("\t")
        if fields[0] == "copy":
            device = fields[1]
        elif fields[0] == "row":
            rows[(fields[1], fields[2])] = float(fields[3])
    return device, rows


def kernel_tokens(shape):
    """How many tokens a row is about: (512, 1536) and "prompt of 512 tokens" are 512."""
    match = re.search(r"\((\d+), \d+\)|prompt of (\d+) tokens", shape)
    return int(match.group(1) or match.group(2)) if match else 1


def kernel_label(operator, shape):
    """A short label: matmul's "Wq (1, 1536) x (1536)^T" becomes "Wq: 1536 → 1536"."""
    product = re.match(r"(.+?) \(\d+, (\d+)\) x \((\d+)\)\^T$", shape)
    if product:
        return f"{product.group(1)}: {product.group(2)} → {product.group(3)}"
    shape = re.sub(r"^1 new token ", "", shape)
    shape = re.sub(r"^prompt of (\d+) tokens", r"of a \1-token prompt", shape)
    shape = re.sub(r"\(1, (\d+)\)|^\((\d+)\)", lambda m: m.group(1) or m.group(2), shape)
    shape = re.sub(r"\((\d+), (\d+)\)", r"\1 x \2", shape)
    return f"{operator} {shape}".replace(": a launch", " (a launch)")


def step09_kernels():
    runs = [(label, face, kernel_rows(path)) for path, label, face in KERNEL_RUNS]
    device, last = runs[-1][2][0], runs[-1][2][1]
    first = runs[0][2][1]
    graph = {(operator[:-len(GRAPH_SUFFIX)], shape): us
             for (operator, shape), us in kernel_rows(KERNEL_GRAPH)[1].items()
             if operator.endswith(GRAPH_SUFFIX)}
    sections = {}
    for key in last:
        sections.setdefault(kernel_tokens(key[1]), []).append(key)
    heights = [len(keys) for keys in sections.values()]
    fig = plt.figure(figsize=(12, 0.56 * max(heights) + 1.4))
    fig.text(0.01, 0.975, f"Every operator at Qwen2.5-1.5B shapes, F16 weights, on one {device}: "
             "step 8's kernels against step 9's (time per call, log scale)", fontsize=12,
             fontweight="bold", va="top")
    bar_height = 0.8 / (len(runs) + 1)
    panel_width, gap = 0.365, 0.16
    for index, (n_tokens, keys) in enumerate(sections.items()):
        top, height = 0.87, 0.8 * len(keys) / max(heights)
        ax = fig.add_axes((0.17 + index * (panel_width + gap), top - height, panel_width,
                           height))
        for row, key in enumerate(keys):
            bars = [(face, run.get(key), "") for _, face, (_, run) in runs]
            if key in graph:
                bars.append(("white", graph[key], "////"))
            for slot, (face, us, hatch) in enumerate(bars):
                if us is None:
                    continue
                y = row - 0.4 + (slot + 0.5) * bar_height
                ax.barh(y, us, height=bar_height * 0.92, color=face, hatch=hatch,
                        edgecolor=BLUE if hatch else "none", linewidth=0.6)
                text = f"{us:,.1f}" if us < 1000 else f"{us:,.0f}"
                if slot == len(runs) - 1 and key in first:
                    text += f"  ({first[key] / us:,.1f}x)"
                ax.text(us * 1.12, y, text, va="center", fontsize=6.5)
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels([kernel_label(*key) for key in keys], fontsize=8)
        ax.set_ylim(len(keys) - 0.5, -0.5)
        ax.set_xscale("log")
        ax.set_xlim(0.5, 1e7)
        ticks = [1, 10, 100, 1e3, 1e4, 1e5, 1e6]
        ax.set_xticks(ticks)
        ax.set_xticklabels(["1 µs", "10 µs", "100 µs", "1 ms", "10 ms", "100 ms", "1 s"],
                           fontsize=7.5)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.tick_params(axis="y", length=0)
        ax.grid(axis="x", color=LIGHT_GREY, linewidth=0.6)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        title = "one token (decode)" if n_tokens == 1 else f"{n_tokens} tokens at once (prefill)"
        ax.set_title(title, fontsize=9.5, loc="left", fontweight="bold")
    legend = [Rectangle((0, 0), 1, 1, facecolor=face) for _, face, _ in runs]
    legend.append(Rectangle((0, 0), 1, 1, facecolor="white", edgecolor=BLUE, hatch="////"))
    names = [label for label, _, _ in runs] + ["step09 replayed 20 at a time in a CUDA graph "
                                                "(another\ncall): no launch cost per kernel"]
    fig.legend(legend, names, loc="upper left", fontsize=8, frameon=False,
               bbox_to_anchor=(0.17 + panel_width + gap - 0.01, 0.87 - 0.8 * min(heights) /
                               max(heights) - 0.07))
    fig.text(0.17 + panel_width + gap, 0.1, "Each time is the median of 5 runs of back-to-back "
             "calls, the inputs\nrotating through 256 MB of copies (more than the L2 holds). "
             "(Nx) after a\nstep09 bar: step08's time / step09's. Data: "
             f"{KERNEL_RECORDS}/.", fontsize=7.5, va="bottom", linespacing=1.4)
    return fig


# ---- step 10: one token's kernels ----

TIMELINE_DIR = "docs/bench/step10-2026-12-01"
TIMELINE_ROWS = [  # (tsv, md, engine, label)
    ("timeline-call2.tsv", "timeline-call2.md", "step09", "step09"),
    ("timeline-call3.tsv", "timeline-call3.md", "step10-no-graph", "step10 --no-graph"),
    ("timeline-call3.tsv", "timeline-call3.md", "step10", "step10 (one graph)"),
]
TIMELINE_KINDS = [  # (label, colour, kernel names)
    ("matrix-vector products", BLUE, ("matvec_kernel",)),
    ("fused products (norm, bias, RoPE, SwiGLU inside)", LIGHT_BLUE,
     ("qkv_rope_cache_kernel", "gate_up_swiglu_kernel")),
    ("attention (split, merge)", ORANGE, ("split_attention_kernel", "merge_chunks_kernel")),
    ("LM head and argmax", GREEN, ("lm_head_argmax_kernel", "pick_next_token_kernel",
                                   "argmax_blocks_kernel", "argmax_final_kernel")),
    ("rmsnorm, bias, RoPE, SwiGLU, residual adds, embedding", PURPLE,
     ("rmsnorm_kernel", "add_bias_kernel", "rope_kernel", "swiglu_kernel",
      "residual_add_kernel", "embedding_kernel")),
]


def timeline_kernels(tsv, engine):
    """[(kernel name, µs)] of one engine's token in a decode_timeline.py record."""
    rows = []
    with open(os.path.join(ROOT, TIMELINE_DIR, tsv), encoding="utf-8") as f:
        next(f)
        for line in f:
            name, kernel, us = line.rstrip("\n").split("\t")[0], *line.rstrip("\n").split("\t")[2:]
            if name == engine:
                rows.append((kernel, float(us)))
    return rows


def timeline_token_us(md, engine):
    with open(os.path.join(ROOT, TIMELINE_DIR, md), encoding="utf-8") as f:
        for line in f:
            found = re.match(r"- (\S+): ([\d.]+) µs a token", line)
            if found and found[1] == engine:
                return float(found[2])
    raise ValueError(f"no token time of {engine} in {md}")


def kernel_colour(name):
    for _, colour, names in TIMELINE_KINDS:
        if name in names:
            return colour
    raise ValueError(f"decode_timeline: no colour for kernel {name}")


def decode_timeline():
    rows = [(label, timeline_kernels(tsv, engine), timeline_token_us(md, engine))
            for tsv, md, engine, label in TIMELINE_ROWS]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 6.6),
                                      gridspec_kw={"height_ratios": [1.1, 1.0]})
    fig.subplots_adjust(left=0.12, right=0.985, top=0.87, bottom=0.08, hspace=0.45)
    fig.text(0.01, 0.965, "One generated token of the Qwen2.5-1.5B-shaped model on the H200, "
             "kernel by kernel", fontsize=12, fontweight="bold", va="center")
    fig.text(0.01, 0.925, "Each bar is one kernel as long as Nsight Compute timed it alone; the "
             "black mark is the token's own time in a normal run. What the marks leave after the "
             "bars is time between kernels.", fontsize=8.5, va="center")
    longest = max(max(sum(us for _, us in kernels), token) for _, kernels, token in rows)
    for y, (label, kernels, token) in enumerate(reversed(rows)):
        start = 0.0
        for name, us in kernels:
            top.add_patch(Rectangle((start, y - 0.32), us, 0.64, facecolor=kernel_colour(name),
                                    edgecolor="white", linewidth=0.15))
            start += us
        top.plot([token, token], [y - 0.45, y + 0.45], color=INK, linewidth=2.0)
        busy = start
        if token > busy:
            top.add_patch(Rectangle((busy, y - 0.32), token - busy, 0.64, facecolor="white",
                                    edgecolor=GREY, hatch="////", linewidth=0.6))
            note = f"{token - busy:.0f} µs between kernels"
        else:
            note = (f"timed alone, the kernels add up to {busy - token:.0f} µs more:\n"
                    "in the graph each one starts while the one before drains")
        top.text(max(busy, token) + longest * 0.01, y, f"{token:.0f} µs a token, "
                 f"{len(kernels)} kernels; {note}", va="center", fontsize=7.5, linespacing=1.2)
    top.set_yticks(range(len(rows)))
    top.set_yticklabels([label for label, _, _ in reversed(rows)], fontsize=8)
    top.set_xlim(0, longest * 1.6)
    top.set_ylim(-0.6, len(rows) - 0.4)
    top.set_xlabel("µs from the token's first kernel")
    for side in ("top", "right", "left"):
        top.spines[side].set_visible(False)
    top.tick_params(axis="y", length=0)

    # The first layer of step09 and of step10, named.
    def first_layer(kernels, per_layer):
        return kernels[1:1 + per_layer]  # after the embedding
    layers = [("step09, layer 0", first_layer(rows[0][1], 19)),
              ("step10, layer 0", first_layer(rows[2][1], 6))]
    widest = max(sum(us for _, us in kernels) for _, kernels in layers)
    for y, (label, kernels) in enumerate(reversed(layers)):
        start = 0.0
        above = y == 1  # step09's 19 names slanted above its row, step10's 6 under its row
        for name, us in kernels:
            bottom.add_patch(Rectangle((start, y - 0.3), us, 0.6, facecolor=kernel_colour(name),
                                       edgecolor="white", linewidth=0.8))
            short = name.replace("_kernel", "").replace("split_attention", "split").replace(
                "merge_chunks", "merge").replace("residual_add", "residual add")
            bottom.text(start + us / 2, y + 0.36 if above else y - 0.36, short,
                        ha="left" if above else "center", va="bottom" if above else "top",
                        fontsize=6.5, rotation=35 if above else 0, rotation_mode="anchor")
            start += us
        bottom.text(start + widest * 0.01, y, f"{len(kernels)} kernels, {start:.0f} µs",
                    va="center", fontsize=7.5)
    bottom.set_yticks(range(len(layers)))
    bottom.set_yticklabels([label for label, _ in reversed(layers)], fontsize=8)
    bottom.set_xlim(0, widest * 1.2)
    bottom.set_ylim(-0.8, len(layers) + 0.5)
    bottom.set_xlabel("µs, kernels timed alone (the first layer after the embedding)")
    for side in ("top", "right", "left"):
        bottom.spines[side].set_visible(False)
    bottom.tick_params(axis="y", length=0)
    legend = [Rectangle((0, 0), 1, 1, color=colour) for _, colour, _ in TIMELINE_KINDS]
    legend.append(Rectangle((0, 0), 1, 1, facecolor="white", edgecolor=GREY, hatch="////"))
    fig.legend(legend, [label for label, _, _ in TIMELINE_KINDS] + ["between kernels"],
               loc="upper left", bbox_to_anchor=(0.12, 0.905), ncol=3, fontsize=7.5,
               frameon=False)
    return fig
