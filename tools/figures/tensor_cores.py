"""tensor_cores.py - step 12's tensor-core GEMM (tensor_core_gemm) and flash attention's tiles
(flash_attention_tiles), their sizes read from step 12's sources.
"""
import os

from matplotlib.patches import Rectangle

from style import (
    BLUE, DARK_GREEN, GREY, INK, LIGHT_BLUE, LIGHT_GREEN, LIGHT_GREY, LIGHT_ORANGE,
    LIGHT_PURPLE, LIGHT_RED, ORANGE, PURPLE, RED, ROOT, arrow, box, canvas, plt)
from kernels import QWEN_1_5B, cuda_constants, cuda_sources, tile_constant

# ---- step 12: tensor_core_gemm and flash_attention_tiles ----

STEP12 = os.path.join(ROOT, "step12_tensor_cores")
# Each kernel's file with the tensor-core header they share (step 12's other files hold step 9's
# tile constants, under the same names before the tensor-core ones were renamed kTc...).
STEP12_GEMM = ["tensor_core_ptx.cuh", "gemm_tensor_cores.cu"]
STEP12_FLASH = ["tensor_core_ptx.cuh", "flash_attention.cu"]
SHOWN_LANE = 5  # the lane the fragment pictures follow: group 1, pair 2
PALE_BLUE, PALE_GREEN, PALE_ORANGE = "#d9e5f2", "#dff0e3", "#f9e6da"
FRAGMENT_FACES = {"a": [LIGHT_BLUE, PALE_BLUE, PALE_BLUE, LIGHT_BLUE],  # a[0..3], a checkerboard
                  "b": [LIGHT_GREEN, PALE_GREEN],                       # b[0], b[1]
                  "acc": [LIGHT_ORANGE, LIGHT_ORANGE, PALE_ORANGE, PALE_ORANGE]}  # acc[0..3]


def fragment_lane(row, column, kind):
    """(lane, register) holding element (row, column) of an m16n8k16 operand, as PTX lays them
    out: kind "a" (16 x 16: register a[i], quarter i top left, bottom left, top right, bottom
    right), "b" (16 k x 8 columns: b[0] k 0-7, b[1] k 8-15, the pair along k) or "acc" (16 x 8
    floats: acc[0..1] row group, acc[2..3] row group + 8)."""
    if kind == "a":
        return 4 * (row % 8) + (column % 8) // 2, 2 * (column // 8) + row // 8
    if kind == "b":
        return 4 * column + (row % 8) // 2, row // 8
    return 4 * (row % 8) + column // 2, 2 * (row // 8) + column % 2


def fragment_grid(ax, left, bottom, rows, columns, cell, kind, title="", numbers=True):
    """An mma operand as a grid of cells, one per value, shaded by register (a region each),
    white lines around each pair of 16-bit values (one 32-bit register of one lane; two floats
    of acc), each pair labelled with its lane when `numbers`; SHOWN_LANE's pairs in red."""
    def x_of(column):
        return left + column * cell

    def y_of(row):  # the bottom of a row: row 0 at the top
        return bottom + (rows - 1 - row) * cell

    cells = [(row, column, *fragment_lane(row, column, kind)) for row in range(rows)
             for column in range(columns)]
    for register in sorted({register for _, _, _, register in cells}):
        mine = [(row, column) for row, column, _, r in cells if r == register]
        first_row, last_row = min(r for r, _ in mine), max(r for r, _ in mine)
        first_column, last_column = min(c for _, c in mine), max(c for _, c in mine)
        ax.add_patch(Rectangle((x_of(first_column), y_of(last_row)),
                               (last_column - first_column + 1) * cell,
                               (last_row - first_row + 1) * cell,
                               facecolor=FRAGMENT_FACES[kind][register], edgecolor="none"))
    along_rows = kind == "b"  # B's pairs run down a column (two k), the others' along a row
    pairs = [(row, column) for row in range(0, rows, 2 if along_rows else 1)
             for column in range(0, columns, 1 if along_rows else 2)]
    width, height = (cell, 2 * cell) if along_rows else (2 * cell, cell)
    for row, column in pairs:
        lane, _ = fragment_lane(row, column, kind)
        x, y = x_of(column), y_of(row) - (cell if along_rows else 0)
        if lane == SHOWN_LANE:
            ax.add_patch(Rectangle((x, y), width, height, facecolor=RED, edgecolor="none"))
        if numbers:
            ax.text(x + width / 2, y + height / 2, str(lane), ha="center", va="center",
                    fontsize=5, color="white" if lane == SHOWN_LANE else INK)
    step_x, step_y = (1, 2) if along_rows else (2, 1)
    ax.vlines([x_of(column) for column in range(step_x, columns, step_x)], bottom,
              bottom + rows * cell, color="white", linewidth=0.6)
    ax.hlines([bottom + row * cell for row in range(step_y, rows, step_y)], left,
              left + columns * cell, color="white", linewidth=0.6)
    ax.add_patch(Rectangle((left, bottom), columns * cell, rows * cell, facecolor="none",
                           edgecolor=INK, linewidth=0.8))
    if title:
        ax.text(left + columns * cell / 2, bottom + rows * cell + 0.06, title, ha="center",
                va="bottom", fontsize=7.5, linespacing=1.25)


def tensor_core_gemm():
    c = cuda_constants(cuda_sources(STEP12, STEP12_GEMM))
    outputs, depth = tile_constant(c, "TileOutputs"), tile_constant(c, "TileDepth")
    stages = c["kStages"]
    warps_tokens, warps_outputs = c["kTcWarpsTokens"], c["kTcWarpsOutputs"]
    stride, warp_outputs = c["kRowStride"], c["kWarpOutputs"]
    tokens = 128  # the taller of tensor_core_tile_tokens' two tiles (64 when it leaves SMs idle)
    warp_tokens = tokens // warps_tokens
    frags_tokens, frags_outputs = warp_tokens // 16, warp_outputs // 8
    n_warps = warps_tokens * warps_outputs
    stage_bytes = (tokens + outputs) * stride * 2
    fig, ax = canvas(12, 7.4)
    ax.text(0.3, 7.15, "step 12's tensor_core_gemm_kernel: out = x W^T on the tensor cores, "
            "fed by ldmatrix and a ring of cp.async stages", fontsize=12, fontweight="bold",
            va="center")
    ax.text(0.3, 6.83, f"x is rounded to F16 first (padded to whole tiles); a block matrix's "
            f"weights are dequantized to F16 on their way into shared memory. A block of "
            f"{n_warps} warps computes {tokens} tokens x {outputs} outputs of out\n(64 tokens "
            f"when 128 would leave multiprocessors idle), walking in_dim {depth} at a time.",
            fontsize=8.5, va="top", linespacing=1.35)

    # The block's tile, its warps, and one k step's slices of x and W.
    tile_x, tile_y, size, band = 1.05, 3.45, 2.1, 0.42
    box(ax, tile_x - band - 0.12, tile_y, band, size, LIGHT_BLUE)
    box(ax, tile_x, tile_y + size + 0.12, size, band, LIGHT_GREEN)
    ax.text(tile_x - band / 2 - 0.12, tile_y + size / 2, f"x's slice: {tokens} tokens x {depth} k",
            ha="center", va="center", fontsize=7, rotation=90)
    ax.text(tile_x + size / 2, tile_y + size + 0.12 + band / 2, f"W's slice: {outputs} outputs "
            f"x {depth} k\n(a row per output)", ha="center", va="center", fontsize=7,
            linespacing=1.2)
    warp_w, warp_h = size / warps_outputs, size / warps_tokens
    for warp in range(n_warps):
        row, column = warp // warps_outputs, warp % warps_outputs
        x, y = tile_x + column * warp_w, tile_y + size - (row + 1) * warp_h
        box(ax, x, y, warp_w, warp_h, ORANGE if warp == 0 else LIGHT_ORANGE)
        if warp == 0:
            label = (x + warp_w / 2, y + warp_h / 2 + 0.12)
        else:
            ax.text(x + warp_w / 2, y + warp_h / 2, f"warp {warp}\ntokens {row * warp_tokens}–"
                    f"{(row + 1) * warp_tokens - 1}\noutputs {column * warp_outputs}–"
                    f"{(column + 1) * warp_outputs - 1}", ha="center", va="center", fontsize=6.5,
                    linespacing=1.2)
    top = tile_y + size
    mma_w, mma_h = warp_w / frags_outputs, warp_h / frags_tokens
    ax.vlines([tile_x + j * mma_w for j in range(1, frags_outputs)], top - warp_h, top,
              color="white", linewidth=0.6)
    ax.hlines([top - i * mma_h for i in range(1, frags_tokens)], tile_x, tile_x + warp_w,
              color="white", linewidth=0.6)
    shown_i, shown_j = frags_tokens - 1, frags_outputs - 1
    ax.add_patch(Rectangle((tile_x + shown_j * mma_w, top - (shown_i + 1) * mma_h), mma_w, mma_h,
                           facecolor=RED, edgecolor=INK, linewidth=0.6, zorder=3))
    ax.text(*label, "warp 0", ha="center", va="center", fontsize=6.5, zorder=4,
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})
    ax.text(tile_x + size / 2, tile_y - 0.22, f"the block's tile: {tokens} x {outputs}, "
            f"{warps_tokens} x {warps_outputs} warps of {warp_tokens} x {warp_outputs}",
            ha="center", va="top", fontsize=7.5)
    text_x = tile_x + size + 0.25
    ax.text(text_x, top + 0.5, f"A warp's {warp_tokens} x {warp_outputs}: {frags_tokens} x "
            f"{frags_outputs} mma tiles\nof 16 tokens x 8 outputs (white lines in\nwarp 0), "
            f"acc[{frags_tokens}][{frags_outputs}][4]: {frags_tokens * frags_outputs * 4} "
            "floats a lane,\nin registers for the whole walk.", fontsize=7.5, va="top",
            linespacing=1.35)
    ax.text(text_x, top - 0.85, f"Per 16 of k a warp issues {frags_tokens} ldmatrix.x4 for A "
            f"(a 16 x 16\nof x each), {frags_outputs // 2} for B (two 8-output tiles each) "
            f"and\n{frags_tokens} x {frags_outputs} = {frags_tokens * frags_outputs} mma: "
            f"{frags_tokens * frags_outputs * 16 * 8 * 16:,} multiply-adds.\nRed: the mma "
            "tile drawn on the right, by lane.", fontsize=7.5, va="top", linespacing=1.35)

    # The ring of stages, iteration by iteration, by the loop's rule: step k is multiplied
    # out of stage k % kStages while steps k+1 .. k+kStages-1 are in flight in the others.
    ring_x, ring_top, cell_w, cell_h = 1.05, 2.45, 0.66, 0.26
    shown = 6
    ax.plot([0.3, 6.3], [2.93, 2.93], color=LIGHT_GREY, linewidth=0.8)
    ax.text(0.3, 2.75, f"The ring: {stages} stages of slices in shared memory, "
            f"{stages} x ({tokens} + {outputs}) rows x {stride * 2} bytes = "
            f"{stages * stage_bytes // 1024} KB", fontsize=9, fontweight="bold", va="center")
    columns = ["before\nthe loop"] + [f"k = {k}" for k in range(shown)]
    for index, name in enumerate(columns):
        ax.text(ring_x + index * cell_w + cell_w / 2, ring_top + 0.02, name, ha="center",
                va="bottom", fontsize=6.5, linespacing=1.1)
    for stage in range(stages):
        y = ring_top - (stage + 1) * cell_h
        ax.text(ring_x - 0.08, y + cell_h / 2, f"stage {stage}", ha="right", va="center",
                fontsize=7)
        for index in range(len(columns)):
            x = ring_x + index * cell_w
            if index == 0:  # the prologue issues steps 0 .. kStages - 2
                text, face = (f"{stage} issued", BLUE) if stage < stages - 1 else ("", "white")
            else:
                k = index - 1
                held = next(step for step in range(k, k + stages) if step % stages == stage)
                if held == k:
                    text, face = f"{k}: mma", ORANGE
                elif held == k + stages - 1:
                    text, face = f"{held} issued", BLUE
                else:
                    text, face = f"{held} in flight", LIGHT_BLUE
            box(ax, x, y, cell_w, cell_h, face)
            ax.text(x + cell_w / 2, y + cell_h / 2, text, ha="center", va="center",
                    fontsize=6, color="white" if face == BLUE else INK)
    ax.text(ring_x + len(columns) * cell_w + 0.1, ring_top - stages * cell_h / 2,
            f"... {QWEN_1_5B['d_model'] // depth}\nsteps at\nin_dim {QWEN_1_5B['d_model']}",
            fontsize=7, va="center", linespacing=1.2)
    ax.text(0.3, ring_top - stages * cell_h - 0.12, f"Each step k: cp.async.wait_group "
            f"{stages - 2} (step k's copies are in: at most {stages - 2} younger groups\nstill "
            "in flight); __syncthreads (no warp reads the stage of step k − 1 any more); "
            f"cp.async\nof step k + {stages - 1}'s slices into that stage, one commit; then "
            f"the mma of step k, {depth // 16} x 16 of k, out of\nstage k % {stages}. cp.async "
            "copies 16 bytes from global to shared memory without a trip through\nregisters. "
            "A block matrix's pieces go through registers instead: loaded before step k's "
            "mma,\nunpacked to F16 and stored into the stage after them.", fontsize=7.2,
            va="top", linespacing=1.35)

    # The mma's operands and which lane holds what (tensor_core_ptx.cuh).
    cell, frag_bottom = 0.12, 3.6
    ax.text(6.5, 6.45, "The red mma tile, lane by lane: mma.sync.m16n8k16 is one instruction "
            "for a warp, 16 x 8 x 16 = 2,048\nmultiply-adds. Each number is the lane that holds "
            "that pair of 16-bit values (of floats, in acc).", fontsize=7.5, va="top",
            linespacing=1.35)
    a_x = 6.85
    b_x = a_x + 16 * cell + 0.45
    c_x = b_x + 8 * cell + 0.55
    fragment_grid(ax, a_x, frag_bottom, 16, 16, cell, "a", "A: 16 tokens x 16 k of x\n"
                  "a[0] a[1] a[2] a[3], one register each")
    fragment_grid(ax, b_x, frag_bottom, 16, 8, cell, "b", "B = W^T: 16 k\nx 8 outputs, b[0] b[1]")
    fragment_grid(ax, c_x, frag_bottom, 16, 8, cell, "acc", "acc: 16 tokens x 8\n"
                  "outputs (floats)")
    middle = frag_bottom + 8 * cell
    ax.text(b_x - 0.22, middle, "·", ha="center", va="center", fontsize=16)
    ax.text(c_x - 0.27, middle, "+=", ha="center", va="center", fontsize=11)
    quarter_names = ["a[0]", "a[1]", "a[2]", "a[3]"]
    for register, name in enumerate(quarter_names):
        column, row = register // 2, register % 2
        ax.text(a_x - 0.05, frag_bottom + (1 - row) * 8 * cell + 4 * cell, name, ha="right",
                va="center", fontsize=6.5) if column == 0 else ax.text(
            a_x + 16 * cell + 0.05, frag_bottom + (1 - row) * 8 * cell + 4 * cell, name,
            ha="left", va="center", fontsize=6.5)
    for register in range(2):
        ax.text(b_x + 8 * cell + 0.04, frag_bottom + (1 - register) * 8 * cell + 4 * cell,
                f"b[{register}]", ha="left", va="center", fontsize=6.5)
    for half, name in enumerate(["acc[0..1]", "acc[2..3]"]):
        ax.text(c_x + 8 * cell + 0.04, frag_bottom + (1 - half) * 8 * cell + 4 * cell, name,
                ha="left", va="center", fontsize=6.5)
    group, pair = SHOWN_LANE // 4, 2 * (SHOWN_LANE % 4)
    where = {}
    for kind, rows, columns in (("a", 16, 16), ("b", 16, 8), ("acc", 16, 8)):
        for row in range(rows):
            for column in range(columns):
                lane, register = fragment_lane(row, column, kind)
                if lane == SHOWN_LANE:
                    where.setdefault((kind, register), []).append((row, column))

    def span(cells, along_rows):
        (r0, c0), (r1, c1) = cells[0], cells[-1]
        return f"[{r0}..{r1}][{c0}]" if along_rows else f"[{r0}][{c0}..{c1}]"

    a_text = ", ".join(f"a[{r}] = A{span(where[('a', r)], False)}" for r in range(4))
    b_text = ", ".join(f"b[{r}] = B{span(where[('b', r)], True)}" for r in range(2))
    acc_rows = sorted({row for register in range(4) for row, _ in where[("acc", register)]})
    ax.text(6.5, frag_bottom - 0.12, f"In every operand lane l holds row group = l / 4 and "
            f"columns pair = 2 (l % 4) and pair + 1 of each 8 x 8 part\n(in B: column group, "
            f"rows pair and pair + 1). Lane {SHOWN_LANE} (red) is group {group}, pair {pair}:"
            f"\n{a_text};\n{b_text}: row {group} of W's tile at k {pair}..{pair + 1}, side "
            f"by side in shared memory,\nso ldmatrix loads B as W is stored; its floats are acc "
            f"rows {acc_rows[0]} and {acc_rows[1]} (group, group + 8), columns {pair}, "
            f"{pair + 1}.", fontsize=7.2, va="top", linespacing=1.4)
    ax.text(6.5, frag_bottom - 1.02, "ldmatrix.x4 fills a[0..3] in one instruction: "
            "lanes 0–15 give the addresses of A's rows 0–15 at column kk,\nlanes 16–31 the "
            "same rows at kk + 8; matrix i is the rows of lanes 8i..8i+7, so the quarters come "
            "in the\norder top left, bottom left, top right, bottom right, each lane receiving "
            "its own two values of each.", fontsize=7.2, va="top", linespacing=1.4)

    # Rows padded to kRowStride values: the 8 rows one ldmatrix reads, on the banks.
    bank_x, bank_y, slot = 7.95, 0.62, 0.42
    ax.text(6.5, 1.55, f"Rows padded to {stride * 2} bytes: ldmatrix reads 8 rows of 16 bytes "
            "at once, and the 32 banks of 4 bytes serve 128 bytes\na cycle, 8 slots of 16. "
            "Which of the 8 rows fall on each slot (row r starts at byte r x row length):",
            fontsize=7.2, va="top", linespacing=1.4)
    for index, (name, row_bytes) in enumerate(((f"rows of {depth * 2} B ({depth} values)",
                                                depth * 2),
                                               (f"rows of {stride * 2} B ({stride} values)",
                                                stride * 2))):
        y = bank_y - index * 0.32 + 0.1
        slots = {}
        for row in range(8):
            slots.setdefault(row * row_bytes // 16 % 8, []).append(row)
        ax.text(bank_x - 0.08, y + 0.12, name, ha="right", va="center", fontsize=7)
        for number in range(8):
            rows_here = slots.get(number, [])
            face = LIGHT_RED if len(rows_here) > 1 else LIGHT_GREEN if rows_here else "white"
            box(ax, bank_x + number * slot, y, slot, 0.24, face,
                " ".join(str(row) for row in rows_here), fontsize=6.5)
        worst = max(len(rows_here) for rows_here in slots.values())
        ax.text(bank_x + 8 * slot + 0.1, y + 0.12, f"{worst} pass{'es' if worst > 1 else ''}",
                va="center", fontsize=7, color=RED if worst > 1 else DARK_GREEN)
    return fig


def flash_attention_tiles():
    c = cuda_constants(cuda_sources(STEP12, STEP12_FLASH))
    queries, keys, warps = c["kFlashQueries"], c["kFlashKeys"], c["kFlashWarps"]
    warp_queries = queries // warps
    n_tokens, shown_block = 512, 5  # a 512-token prompt from position 0; the block drawn
    n_tiles = n_tokens // queries
    head_dim, n_heads = QWEN_1_5B["head_dim"], QWEN_1_5B["n_heads"]
    fig, ax = canvas(12, 7.4)
    ax.text(0.3, 7.15, "step 12's flash_attention_kernel: a prompt's attention tile by tile on "
            "the tensor cores, with no n x n score matrix", fontsize=12, fontweight="bold",
            va="center")
    ax.text(0.3, 6.83, f"A block takes {queries} queries of one head ({warps} warps of "
            f"{warp_queries}) and walks the keys in tiles of {keys}, left to right, keeping "
            "each query's running maximum m, sum l and output O in registers.\nThe grid is "
            f"(query tiles, heads): at {n_tokens} tokens and Qwen2.5-1.5B's {n_heads} heads, "
            f"{n_tiles} x {n_heads} = {n_tiles * n_heads} blocks.", fontsize=8.5, va="top",
            linespacing=1.35)

    # The (queries x keys) plane: rows are query tiles (down), columns key tiles (right).
    left, top, size = 0.95, 5.95, 3.7
    tile = size / n_tiles
    for row in range(n_tiles):
        for column in range(n_tiles):
            x, y = left + column * tile, top - (row + 1) * tile
            walked = row == shown_block and column <= row
            if column > row:
                ax.add_patch(Rectangle((x, y), tile, tile, facecolor=LIGHT_GREY,
                                       edgecolor="white", linewidth=0.8))
            elif column < row:
                ax.add_patch(Rectangle((x, y), tile, tile, facecolor=BLUE if walked else
                                       LIGHT_BLUE, edgecolor="white", linewidth=0.8))
            else:  # on the diagonal: the part above it is masked inside the tile
                ax.add_patch(Rectangle((x, y), tile, tile, facecolor=LIGHT_RED,
                                       edgecolor="white", linewidth=0.8))
                ax.add_patch(plt.Polygon([(x, y + tile), (x, y), (x + tile, y)],
                                         facecolor=PURPLE if walked else LIGHT_PURPLE,
                                         edgecolor="none"))
    ax.plot([left, left + size], [top, top - size], color=RED, linewidth=1.0)
    ax.add_patch(Rectangle((left, top - size), size, size, facecolor="none", edgecolor=INK,
                           linewidth=0.8))
    row_y = top - (shown_block + 1) * tile
    ax.add_patch(Rectangle((left, row_y), (shown_block + 1) * tile, tile, facecolor="none",
                           edgecolor=INK, linewidth=1.4, zorder=3))
    for warp in range(1, warps):
        ax.plot([left, left + (shown_block + 1) * tile], [row_y + warp * tile / warps] * 2,
                color="white", linewidth=0.5, zorder=3)
    for column in range(shown_block + 1):
        ax.text(left + (column + 0.5) * tile, row_y + tile / 2, str(column + 1), ha="center",
                va="center", fontsize=7.5, color="white" if column < shown_block else INK,
                fontweight="bold", zorder=4)
    arrow(ax, (left + 0.1, row_y - 0.1), (left + (shown_block + 1) * tile - 0.05, row_y - 0.1),
          color=INK)
    first_query = shown_block * queries
    ax.text(left - 0.08, row_y + tile / 2, f"block\n{shown_block}", ha="right", va="center",
            fontsize=7, linespacing=1.1)
    for index in range(0, n_tiles + 1, 2):
        ax.text(left + index * tile, top + 0.05, str(index * keys), ha="center", va="bottom",
                fontsize=6.5)
        ax.text(left - 0.4, top - index * tile, str(index * queries), ha="right",
                va="center", fontsize=6.5)
    ax.text(left + size / 2, top + 0.22, f"keys (positions), tiles of {keys}", ha="center",
            va="bottom", fontsize=7.5)
    ax.text(left - 0.75, top - size / 2, f"queries, tiles of {queries}", ha="center",
            va="center", fontsize=7.5, rotation=90)
    ax.text(left + size * 0.73, top - size * 0.24, "above the diagonal:\nskipped, never "
            "loaded\n(a key after its query)", ha="center", va="center", fontsize=7,
            linespacing=1.25)
    walked_tiles = n_tiles * (n_tiles + 1) // 2
    long_tiles = 4096 // queries
    ax.text(0.3, top - size - 0.3, f"Block {shown_block} (queries {first_query}–"
            f"{first_query + queries - 1}) walks key tiles 1 to {shown_block + 1} (numbered),"
            f"\nits {warps} warps {warp_queries} query rows each (white lines). The last tile "
            "lies on\nthe diagonal: inside it a score whose key comes after its query is set "
            "to\n−inf (the red half), which 2^(s − m) turns into 0. A warp whose queries all "
            "lie\nbefore a tile skips it (a prompt chunk not starting at a multiple of "
            f"{keys}).\nAt {n_tokens} tokens the blocks walk {walked_tiles} of the "
            f"{n_tiles * n_tiles} tiles, {n_tiles} of them on the diagonal;\nat 4096, "
            f"{long_tiles * (long_tiles + 1) // 2:,} of {long_tiles * long_tiles:,}: the "
            "upper half is never loaded.", fontsize=7.5, va="top", linespacing=1.4)
    legend_y = 0.42
    for index, (face, name) in enumerate(((BLUE, "walked by block 5"),
                                          (LIGHT_BLUE, "walked by other blocks"),
                                          (PURPLE, "diagonal tile: kept half"),
                                          (LIGHT_RED, "masked half (−inf)"),
                                          (LIGHT_GREY, "skipped"))):
        x = 0.3 + (index % 3) * 1.6
        y = legend_y - (index // 3) * 0.24
        box(ax, x, y, 0.18, 0.15, face)
        ax.text(x + 0.25, y + 0.075, name, va="center", fontsize=7)

    # One key tile, as one warp sees it.
    flow_x, flow_w, flow_top, flow_h, gap = 5.55, 4.1, 6.25, 0.64, 0.17
    steps = [
        (LIGHT_GREEN, "1. load (all 128 threads)",
         f"the K and V tiles, {keys} positions x head_dim, from the F32 cache into shared "
         "memory,\nrounded to F16, rows padded by 8 values (ldmatrix without bank "
         "conflicts)"),
        (LIGHT_BLUE, "2. S = Q K^T (mma)",
         f"a warp's {warp_queries} x {keys} scores, score[{keys // 8}][4] in registers "
         f"({head_dim // 16 * keys // 8} mma at head_dim {head_dim});\nQ's fragments were "
         "loaded once, before the walk; K's rows are keys: B's layout as stored"),
        (LIGHT_RED, "3. mask and scale",
         "s = key > query ? −inf : s · log2(e) / √head_dim, in F32"),
        (LIGHT_ORANGE, "4. online softmax, each query row",
         "m_new = max(m, the row's largest s) (2 shuffles over the group's 4 lanes);\n"
         "r = 2^(m − m_new); l = l · r; O = O · r; p = 2^(s − m_new); l += Σ p; m = m_new"),
        (LIGHT_PURPLE, "5. P into A, in registers",
         "S's accumulator layout (rows group, group + 8; columns pair) is A's fragment\n"
         "layout: p is packed to F16 where it lies, never through shared memory (right)"),
        (LIGHT_BLUE, "6. O += P V (mma)",
         "V through ldmatrix's transposing form (mma wants B with the key along the\n"
         f"pair); O: {warp_queries} queries x head_dim floats, acc[{2 * head_dim // 16}][4] "
         "a lane"),
    ]
    for index, (face, name, text) in enumerate(steps):
        y = flow_top - (index + 1) * flow_h - index * gap
        box(ax, flow_x, y, flow_w, flow_h, face)
        ax.text(flow_x + 0.08, y + flow_h - 0.08, name, fontsize=7.5, fontweight="bold",
                va="top")
        ax.text(flow_x + 0.08, y + flow_h - 0.26, text, fontsize=6.8, va="top",
                linespacing=1.3)
        if index:
            arrow(ax, (flow_x + flow_w / 2, y + flow_h + gap - 0.01),
                  (flow_x + flow_w / 2, y + flow_h + 0.01))
    last_y = flow_top - len(steps) * (flow_h + gap) + gap
    ax.annotate("", xy=(flow_x - 0.05, flow_top - flow_h / 2),
                xytext=(flow_x - 0.05, last_y + flow_h / 2),
                arrowprops={"arrowstyle": "-|>", "color": GREY, "linewidth": 0.9,
                            "connectionstyle": "bar,fraction=-0.12", "mutation_scale": 9})
    ax.text(flow_x - 0.42, (flow_top + last_y) / 2, "next\nkey tile", ha="center",
            va="center", fontsize=7, color=GREY, rotation=90, linespacing=1.1)
    ax.text(flow_x, last_y - 0.12, "After the last tile: l summed over the group's 4 lanes, "
            "out = O / l.\nScores, m, l and O are F32; only q, k, v and p are rounded to F16.",
            fontsize=7.2, va="top", linespacing=1.35)

    # Step 5 drawn: score columns 2kk and 2kk + 1 (two accumulator tiles) are one A tile.
    cell = 0.085
    grid_x, grid_y = 9.95, 2.75
    ax.text(grid_x - 0.1, grid_y + 16 * cell + 0.08, "step 5: score[2kk] and score[2kk + 1],"
            "\ntwo accumulator tiles (16 x 8 each)", fontsize=7, va="bottom", linespacing=1.2)
    for half in range(2):
        fragment_grid(ax, grid_x + 8 * half * cell, grid_y, 16, 8, cell, "acc", numbers=False)
    ax.text(grid_x + 16 * cell + 0.08, grid_y + 12 * cell, "acc[0..1]", fontsize=6.5,
            va="center")
    ax.text(grid_x + 16 * cell + 0.08, grid_y + 4 * cell, "acc[2..3]", fontsize=6.5,
            va="center")
    arrow(ax, (grid_x + 8 * cell, grid_y - 0.05), (grid_x + 8 * cell, grid_y - 0.33))
    ax.text(grid_x + 8 * cell + 0.08, grid_y - 0.19, "pack_pair to F16", fontsize=6.5,
            va="center")
    a_y = grid_y - 0.38 - 16 * cell
    fragment_grid(ax, grid_x, a_y, 16, 16, cell, "a", numbers=False)
    for register in range(4):
        column, row = register // 2, register % 2
        ax.text(grid_x + 16 * cell + 0.08 if column else grid_x - 0.06,
                a_y + (1 - row) * 8 * cell + 4 * cell, f"p[{register}]", fontsize=6.5,
                va="center", ha="left" if column else "right")
    ax.text(grid_x - 0.1, a_y - 0.08, f"the next mma's A: p[0..3], lane {SHOWN_LANE} (red) "
            "in\nthe same places: p[0] = score[2kk][0..1],\np[1] = score[2kk][2..3], p[2], "
            "p[3] the\nsame of score[2kk + 1]", fontsize=6.8, va="top", linespacing=1.3)
    return fig
