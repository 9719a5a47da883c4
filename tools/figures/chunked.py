"""chunked.py - step 15's pictures of the chunked delta rule on the GPU, their sizes read from
step 15's sources (ops_cpu.h's kDeltaChunkSize, chunked_delta_rule.cu's constants):

chunk_matrices: one chunk of one value head in chunk_prepare_kernel, every matrix at its shape,
  the warps' rows, the shared array that holds A^T above its diagonal and T on and below it,
  and what the block leaves in the scratch.
chunk_state_pass: the two launches over a prompt: chunk_prepare's blocks, every chunk at once,
  then chunk_state_pass's, each walking the chunks with its slice of the state in registers.
"""
import os

from matplotlib.patches import Polygon

from style import (
    BLUE, DARK_ORANGE, GREY, LIGHT_BLUE, LIGHT_GREEN, LIGHT_ORANGE, LIGHT_PURPLE, LIGHT_RED,
    ORANGE, RED, ROOT, arrow, box, canvas)
from kernels import cuda_constants

STEP15 = os.path.join(ROOT, "step15_chunked_delta_rule")
STEP15_CHUNKED = [os.path.join(STEP15, name) for name in ("ops_cpu.h", "chunked_delta_rule.cu")]
QWEN35_0_8B_VALUE_HEADS = 16  # Qwen3.5-0.8B's Gated DeltaNet: 16 value heads of dk = dv = 128


def step15_constants():
    c = cuda_constants(STEP15_CHUNKED)
    return c["kChunk"], c["kMaxHeadDim"], c["kChunkWarps"], c["kSliceColumns"], c["kRowPad"]


def matrix(ax, x, top, rows, columns, unit, face, name, shape, warps=0):
    """A matrix of rows x columns drawn `unit` inches an element, its top left at (x, top), its
    name inside and its shape below; `warps` white lines part its rows into that many bands."""
    width, height = columns * unit, rows * unit
    box(ax, x, top - height, width, height, face)
    for band in range(1, warps):
        y = top - band * height / warps
        ax.plot([x, x + width], [y, y], color="white", linewidth=0.9)
    ax.text(x + width / 2, top - height / 2, name, ha="center", va="center", fontsize=8.5)
    ax.text(x + width / 2, top - height - 0.06, shape, ha="center", va="top", fontsize=7)
    return x + width


def triangle(ax, x, top, size, face, lower):
    """The lower (or upper) triangle of a size x size square whose top left is (x, top)."""
    corner = (x, top - size) if lower else (x + size, top)
    ax.add_patch(Polygon([(x, top), corner, (x + size, top - size)], facecolor=face,
                         edgecolor="none"))


def chunk_matrices():
    chunk, head_dim, warps, _, pad = step15_constants()
    warp_rows = chunk // warps
    unit = 1.25 / chunk  # inches an element
    tall = chunk * unit
    fig, ax = canvas(12, 7.6)
    ax.text(0.3, 7.35, f"step 15's chunk_prepare_kernel: one chunk of C = {chunk} tokens of "
            "one value head, everything that needs no state", fontsize=12, fontweight="bold",
            va="center")
    ax.text(0.3, 7.03, f"A block per (chunk, value head), all of them in one launch; {warps} "
            f"warps, warp w owning rows {warp_rows} w to {warp_rows} w + {warp_rows - 1} of "
            f"every (C, x) product (white lines). dk = dv = {head_dim} (shorter heads padded "
            "with zeros).\nEvery product is mma.sync m16n8k16 in split F16: hi and lo operands, "
            "three mma a tile (hi·lo + lo·hi + hi·hi), float accumulators.", fontsize=8.5,
            va="top", linespacing=1.35)

    # Row 1: the chunk's inputs.
    top = 6.2
    ax.text(0.3, top + 0.12, "1. in: the chunk's rows (from the prompt; K and V also into "
            "shared memory, as hi and lo F16 tiles)", fontsize=9, fontweight="bold")
    x = matrix(ax, 0.45, top - 0.1, chunk, head_dim, unit, LIGHT_BLUE, "Q",
               f"({chunk}, dk)", warps)
    x = matrix(ax, x + 0.3, top - 0.1, chunk, head_dim, unit, LIGHT_BLUE, "K",
               f"({chunk}, dk)", warps)
    x = matrix(ax, x + 0.3, top - 0.1, chunk, head_dim, unit, LIGHT_GREEN, "V",
               f"({chunk}, dv)", warps)
    for name in ("β", "G"):
        x = matrix(ax, x + 0.3, top - 0.1, chunk, 6, unit, LIGHT_ORANGE, name, f"({chunk})")
    ax.text(x + 0.3, top - 0.15, "G_t = g_0 + ... + g_t, summed in\ndouble by one thread "
            "(section 3);\ne^(G_last) goes to the scratch\nfor the state pass.\n"
            "Past a short chunk's last token,\nβ and g are 0.", fontsize=7.5,
            va="top", linespacing=1.35)
    for band in range(warps):
        ax.text(0.4, top - 0.1 - (band + 0.5) * warp_rows * unit, f"w{band}", ha="right",
                va="center", fontsize=6.5)

    # Row 2: the two score products and the shared array A^T / T.
    top = 4.2
    ax.text(0.3, top + 0.12, "2. K Kᵀ and Q Kᵀ (C x C x dk): each warp its 16 rows, kept in "
            "registers; then the forward substitution", fontsize=9, fontweight="bold")
    left = 0.45
    box(ax, left, top - 0.1 - tall, tall, tall, "white")
    triangle(ax, left, top - 0.1, tall, LIGHT_PURPLE, lower=True)
    ax.text(left + tall / 2, top - 0.1 - tall - 0.06, f"P = Q Kᵀ ⊙ L ({chunk}, {chunk})",
            ha="center", va="top", fontsize=7)
    ax.text(left + tall * 0.3, top - 0.1 - tall * 0.7, "s ≤ t", ha="center", va="center",
            fontsize=7.5)
    ax.text(left + tall * 0.72, top - 0.1 - tall * 0.28, "0", ha="center", va="center",
            fontsize=7.5, color=GREY)
    arrow(ax, (left + tall + 0.05, top - 0.1 - tall / 2), (left + tall + 0.45, top - 0.1 - tall / 2))
    ax.text(left + tall + 0.25, top - 0.1 - tall / 2 + 0.08, "scratch", ha="center",
            va="bottom", fontsize=6.5)
    shared = left + tall + 0.7
    box(ax, shared, top - 0.1 - tall, tall, tall, "white")
    triangle(ax, shared, top - 0.1, tall, LIGHT_RED, lower=False)
    triangle(ax, shared, top - 0.1, tall, LIGHT_GREEN, lower=True)
    ax.text(shared + tall * 0.8, top - 0.1 - tall * 0.3, "Aᵀ\nr < t", ha="center",
            va="center", fontsize=7.5, linespacing=1.1)
    ax.text(shared + tall * 0.22, top - 0.1 - tall * 0.84, "T\nr ≤ t", ha="center",
            va="center", fontsize=7.5, linespacing=1.1)
    row_t = 40  # the row the picture shows being solved
    y = top - 0.1 - (row_t + 0.5) * unit
    ax.plot([shared, shared + (row_t + 1) * unit], [y, y], color=RED, linewidth=2.0)
    ax.plot([shared + (row_t + 0.5) * unit] * 2, [top - 0.1, top - 0.1 - row_t * unit],
            color=BLUE, linewidth=2.0)
    ax.text(shared + tall / 2, top - 0.1 - tall - 0.06, f"shared at[{chunk}][{chunk} + 1] "
            "(floats)", ha="center", va="top", fontsize=7)
    ax.text(shared + tall + 0.2, top - 0.1, f"A_tr = β_t (k_t · k_r) e^(G_t − G_r), r < t, "
            "stored transposed above the diagonal.\n"
            f"T = (I + A)⁻¹ row after row, t = 0 .. {chunk - 1}, a barrier each:\n"
            "    T_t = e_t − Σ_(r<t) A_tr T_r\n"
            f"thread j ≤ t computes T_tj (red: row t = {row_t}) from column t of Aᵀ\n"
            "(blue) and the rows of T above; it writes row t on and left of the\n"
            "diagonal, which no thread reads before the next row.\n"
            f"{chunk} dependent rows, each a dot product of at most {chunk - 1}:\n"
            "the one sequential part inside a chunk, and it is short.\n"
            "|A_tr| < 1 and |T_tr| < 1 (section 3), so F16's range holds both.",
            fontsize=7.5, va="top", linespacing=1.35)

    # Row 3: W and U, products with the lower triangular T.
    top = 1.95
    ax.text(0.3, top + 0.12, "3. W = T diag(β e^G) K and U = T diag(β) V (C x dk x C), into "
            "the scratch for chunk_state_pass", fontsize=9, fontweight="bold")
    left = 0.45
    box(ax, left, top - 0.1 - tall, tall, tall, "white")
    block = tall / warps
    for row in range(warps):
        for column in range(row + 1):
            face = ORANGE if row == 2 else LIGHT_ORANGE
            box(ax, left + column * block, top - 0.1 - (row + 1) * block, block, block, face)
    ax.text(left + tall / 2, top - 0.1 - tall - 0.06, "T diag(...) in 16 x 16 tiles",
            ha="center", va="top", fontsize=7)
    ax.text(left + tall + 0.15, top - 0.1 - tall / 2, "·", ha="center", va="center",
            fontsize=16)
    x = matrix(ax, left + tall + 0.3, top - 0.1, chunk, head_dim, unit, LIGHT_BLUE, "K or V",
               f"({chunk}, dk or dv)")
    ax.text(x + 0.15, top - 0.1 - tall / 2, "=", ha="center", va="center", fontsize=12)
    x = matrix(ax, x + 0.3, top - 0.1, chunk, head_dim, unit, LIGHT_GREEN, "W or U",
               f"({chunk}, dk or dv), to the scratch:\nW as fragments, U as floats", warps)
    ax.text(x + 0.25, top - 0.1, f"The left operand is lower triangular: warp w's rows "
            f"need only its tiles\nof columns below {warp_rows} (w + 1) (dark: warp 2, three "
            "of four). Each warp\nbuilds its left operand in registers, split as it is read "
            "from T;\nthe right one, K or V, comes from the shared tiles through\nldmatrix "
            f"(.trans). Shared memory: K and V as hi and lo, rows padded by\n{pad} halves, "
            f"2 x 2 x {chunk} x ({head_dim} + {pad}) x 2 B, at[][] and the gates: "
            f"{shared_bytes(chunk, head_dim, pad) // 1024} KB a block.",
            fontsize=7.5, va="top", linespacing=1.35)
    return fig


def shared_bytes(chunk, head_dim, pad):
    """sizeof(PrepareTiles): K and V as hi and lo tiles, at[C][C + 1], G (double), decay,
    key_decay, beta."""
    return 2 * 2 * chunk * (head_dim + pad) * 2 + chunk * (chunk + 1) * 4 + chunk * (8 + 4 + 4 + 4)


def chunk_state_pass():
    chunk, head_dim, warps, slice_columns, _ = step15_constants()
    prompt = 512  # one of the prompt path's chunks (forward_cuda.h's kPromptChunk)
    n_chunks, heads = prompt // chunk, QWEN35_0_8B_VALUE_HEADS
    slices = head_dim // slice_columns
    warp_state_rows = head_dim // warps
    fig, ax = canvas(12, 7.6)
    ax.text(0.3, 7.35, f"step 15's two launches over a prompt of {prompt} tokens: every chunk "
            "at once, then the state from chunk to chunk", fontsize=12, fontweight="bold",
            va="center")
    ax.text(0.3, 7.03, f"Qwen3.5-0.8B's Gated DeltaNet: {heads} value heads, S of dk x dv = "
            f"{head_dim} x {head_dim} floats each. {prompt} tokens are {n_chunks} chunks of "
            f"{chunk}.", fontsize=8.5, va="top")

    # Launch 1: the grid (chunks, value heads), all independent.
    cell, height, left, top = 0.22, 0.12, 0.55, 6.45
    ax.text(0.3, top + 0.12, f"1. chunk_prepare_kernel: {n_chunks} x {heads} = "
            f"{n_chunks * heads} blocks", fontsize=9, fontweight="bold")
    for head in range(heads):
        for c in range(n_chunks):
            box(ax, left + c * cell, top - 0.1 - (head + 1) * height, cell, height,
                ORANGE if head == 0 else LIGHT_ORANGE)
    grid_bottom = top - 0.1 - heads * height
    ax.text(left + n_chunks * cell / 2, grid_bottom - 0.06, "chunks →", ha="center", va="top",
            fontsize=7)
    ax.text(left - 0.08, top - 0.1 - heads * height / 2, "value heads", ha="right",
            va="center", fontsize=7, rotation=90)
    ax.text(left + n_chunks * cell + 0.2, top - 0.1, "Each block: A, T, W, U and P of its\n"
            "chunk (chunk_matrices.svg). To the caller's\nDeltaChunkScratch: W, diag(e^G) Q, "
            "P and\nthe decayed Kᵀ as split F16 fragments in\nthe lanes' order, "
            f"U ({heads}, {n_chunks}, {chunk}, {head_dim})\nas floats, and e^(G_last).\n"
            "Nothing here reads the state: a prompt's\nchunks all run side by side, as a\n"
            "GEMM's tiles do. Dark: head 0, whose\nchunks the state pass walks (right).",
            fontsize=7.5, va="top", linespacing=1.35)

    # Launch 2: head 0's slices, each a block walking the chunks.
    walk_left, walk_top = 5.3, 6.45
    step = 0.72
    ax.text(walk_left - 0.1, walk_top + 0.12, f"2. chunk_state_pass_kernel: a block per (head, "
            f"{slice_columns} columns of S), {heads} x {slices} = {heads * slices} blocks",
            fontsize=9, fontweight="bold")
    row_h = 0.24
    for s in range(slices):
        y = walk_top - 0.35 - (s + 1) * row_h
        ax.text(walk_left + 0.55, y + row_h / 2, f"columns {s * slice_columns}–"
                f"{(s + 1) * slice_columns - 1}", ha="right", va="center", fontsize=6.5)
        for c in range(n_chunks):
            x = walk_left + 0.65 + c * step
            box(ax, x, y + 0.03, step - 0.2, row_h - 0.06, BLUE if s == 0 else LIGHT_BLUE)
            if c + 1 < n_chunks:
                arrow(ax, (x + step - 0.2, y + row_h / 2), (x + step, y + row_h / 2))
    for c in range(n_chunks):
        ax.text(walk_left + 0.65 + c * step + (step - 0.2) / 2, walk_top - 0.3, f"chunk {c}",
                ha="center", va="bottom", fontsize=6.5)
    walk_bottom = walk_top - 0.35 - slices * row_h
    ax.text(walk_left - 0.1, walk_bottom - 0.1, f"Head 0's {slices} blocks (one row each): "
            f"they start together and each walks its {n_chunks} chunks in order,\nits slice of "
            "S carried from chunk to chunk (arrows) in registers. A column of S evolves on its "
            "own,\nas in the recurrence, so the slices never meet. The other heads' blocks run "
            "beside them.", fontsize=7.5, va="top", linespacing=1.35)

    # One step of the walk, for one block: its slice and the three products.
    top = 3.2
    ax.text(0.3, top + 0.12, "One chunk of the walk, one block (4 warps):", fontsize=9,
            fontweight="bold")
    unit = 1.7 / head_dim
    slice_left = 0.6
    height, width = head_dim * unit, slice_columns * unit
    for w in range(warps):
        for m in range(2):
            y = top - 0.1 - (w * warp_state_rows + (m + 1) * 16) * unit
            box(ax, slice_left, y, width, 16 * unit, [LIGHT_GREEN, LIGHT_BLUE][w % 2])
        ax.text(slice_left - 0.06, top - 0.1 - (w + 0.5) * warp_state_rows * unit, f"warp {w}",
                ha="right", va="center", fontsize=6.5)
    ax.text(slice_left + width / 2, top - 0.1 - height - 0.06, f"S's slice\n({head_dim}, "
            f"{slice_columns})", ha="center", va="top", fontsize=7, linespacing=1.15)
    ax.text(slice_left + width + 0.15, top - 0.1, f"Warp w holds rows {warp_state_rows} w to "
            f"{warp_state_rows} w + {warp_state_rows - 1}: two\nrow tiles of 16 x two column "
            "tiles of 8, mma\naccumulators, float S[2][2][4] a lane. They\nstay in registers "
            "from the first chunk to the\nlast; shared memory gets a split copy only\nas the "
            "right operand of the products.", fontsize=7.5, va="top", linespacing=1.35)
    flow_x, flow_w, flow_h, gap = 5.3, 6.4, 0.5, 0.12
    steps = [
        (LIGHT_ORANGE, "V' = U − W S   (C x 16 x dk)",
         "the chunk's deltas: warp w's 16 rows of W (fragments from the scratch) times the "
         "shared slice;\n"
         "stored to shared memory as hi and lo, every warp's rows needed next"),
        (LIGHT_PURPLE, "O = diag(e^G) Q S + P V'   (C x 16 x dk, then C x 16 x C)",
         "the outputs of the chunk's tokens for these 16 columns, Q S in the same k loop as "
         "W S;\nP is lower triangular: warp w reads V' rows below 16 (w + 1)"),
        (LIGHT_GREEN, "S ← e^(G_last) S + (diag(e^(G_last − G)) K)ᵀ V'   (dk x 16 x C)",
         "the accumulators scaled, then the chunk's writes added by mma in place:\n"
         "the state for the next chunk, never leaving the registers"),
    ]
    for index, (face, name, text) in enumerate(steps):
        y = top - 0.1 - (index + 1) * flow_h - index * gap
        box(ax, flow_x, y, flow_w, flow_h, face)
        ax.text(flow_x + 0.08, y + flow_h - 0.07, name, fontsize=7.5, fontweight="bold",
                va="top")
        ax.text(flow_x + 0.08, y + flow_h - 0.22, text, fontsize=6.8, va="top",
                linespacing=1.3)
        if index:
            arrow(ax, (flow_x + flow_w / 2, y + flow_h + gap - 0.01),
                  (flow_x + flow_w / 2, y + flow_h + 0.01))
    last_y = top - 0.1 - len(steps) * (flow_h + gap) + gap
    ax.text(flow_x, last_y - 0.1, f"Per chunk a block issues, per warp, 3 mma a tile: "
            f"{3 * 2 * 2 * head_dim // 16} for W S and Q S, up to {3 * 2 * chunk // 16} for "
            f"P V', {3 * 2 * 2 * chunk // 16} for the state.\nThe walk is {n_chunks} steps at "
            f"{prompt} tokens where the recurrence takes {prompt}.", fontsize=7.5, va="top",
            linespacing=1.35, color=DARK_ORANGE)
    return fig
