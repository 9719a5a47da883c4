#!/usr/bin/env python3
"""Draws the articles' figures into docs/figures/ as SVG: `make figures`.

Every picture is computed from the repository, never typed in by hand:

gguf_layout.svg (steps 1-3)
    models/tiny-qwen2.gguf from byte 0: the 24-byte header, the metadata key/value pairs, the
    tensor infos, the padding to general.alignment and the tensor data, with the true byte
    offsets of that file, read by a small parser below (the header, every pair and every tensor
    info, with struct). The type names come from the enum in step03_tensors/ggml_types.h.
naive_matmul_threads.svg (step 6)
    The loads of one warp in step06_cuda_kernels/ops_cuda.cu's matmul_kernel at one loop step:
    lane k computes out[t][o + k], so the 32 lanes read W[o + k][i], one F16 element in each of
    32 rows, in_dim elements apart; beside it the coalesced read of 32 consecutive elements of
    one row. in_dim is Qwen2.5-1.5B's d_model (1536), as in step 6's kernel table.
kv_cache_layout.svg (step 7)
    The layout of step07_kv_cache/kv_cache.h (KVCache; DeviceKVCache is the same): k and v are
    (n_layers, capacity, kv_dim); one layer's block, the rows the prefill writes, the row one
    decode step writes, the rows its attention reads, and the query heads sharing each KV head
    (grouped-query attention, with Qwen2.5-1.5B's 12 query heads and 2 KV heads of 128).
sampler_pipeline.svg (step 8)
    The stages of step08_sampling/sampler.cpp's sample_token in its order, on twelve made-up
    logits: repetition penalty, temperature, top-k, softmax over the top k, top-p, min-p and the
    draw. The numbers follow the same rules as sampler.cpp, with a Python mt19937_64 for the draw;
    the settings are exaggerated (as in the article's five-token example) so that every stage
    removes or moves something.
matvec_warp_per_row.svg (step 9)
    step09_coalesced_kernels/ops_cuda.cu's matvec_kernel, the one-token product: a warp per row of
    W, lane k loading the 16-byte pieces k, k+32, ... (8 F16 weights each), so that one warp load
    is 512 consecutive bytes, 16 whole 32-byte sectors; one lane's dot product with its piece; a
    small contrast with step 6's load (naive_matmul_threads.svg draws it in detail); and how a
    block's 4 warps take 4 short rows (Wq) or share one long row (Wdown: launch_matmul's split at
    kPiecesToSplitRow pieces), the shared row's partial sums meeting in shared memory.
warp_shuffle_sum.svg (step 9)
    warp_sum's butterfly (__shfl_xor_sync, the offset halving each step) for 8 lanes on made-up
    values, every lane ending with the total; then rmsnorm_kernel's block reduction: 256 threads,
    8 warp sums in shared memory, one more warp_sum.
split_attention.svg (step 9)
    split_attention_kernel and merge_chunks_kernel: a block per (chunk, KV head), serving every
    query head of its group (Qwen2.5-1.5B's 6 per KV head); the chunk counts gpu::attention picks
    on an H200 (132 multiprocessors) by the code's rule; and a worked example, three chunks of four
    made-up scores, whose merge (M, l, out) the script computes and checks against the softmax
    over every position at once.
tiled_gemm.svg (step 9)
    tiled_gemm_kernel: out in 64 x 64 tiles, a block each (Wq at 512 tokens); one k step's 64 x 16
    slices of x and W, copied transposed (k-major, padded) into shared memory; the tile as the 128
    threads share it, 4 tokens x 8 outputs each in registers, and one thread's 4 + 8 reads for 32
    multiply-adds at each k; and the prefetch of the next step's slices, as a timeline with
    made-up durations beside the first version's load-then-compute.
step09_kernels.svg (step 9)
    docs/bench/kernels-2026-12-01/: per operator and shape (Qwen2.5-1.5B, F16), the time of
    step08's kernels, of step 9's first version and of step 9, all from one device call, log
    scale, the one-token rows and the 512-token rows as two panels; hatched, the rows that
    graph_step09.tsv (another call) also times replayed in a CUDA graph.
series_speed.svg (overview, steps 5 to 12)
    Decode tokens/s of every step and of transformers, log scale: one panel per model size on the
    H200, merging docs/bench/h200-series.md (steps 05-08, transformers), h200-step09.md (step08,
    step09 and llama.cpp, on the same GPU and F16 files), step 10's record
    (step10-2026-12-01/series-*-512-*.md: step09, step10 with and without its graph, llama.cpp),
    step 11's (step11-2026-12-02/record-series-512.md) and step 12's
    (step12-2026-12-02/series-512-q4_k_m.md: step11, step12 and llama.cpp on files laid out as
    Qwen's published Q4_K_M ones), and one for docs/bench/cpu-real-0.5b.md;
    each row's roofline, and llama.cpp as a line (a band for a table with several of its
    settings). Where both records hold a row of the same engine at the same size, the newer
    file's is drawn: step08 is h200-step09.md's row at every size (8 generated tokens), not
    h200-series.md's 128-token rows (which at 7B had timed out). Tables are read by their column
    names and by the model size their "## " heading names (0.5B, 1.5B, 7B in a title or a file
    name), so rows and records added later appear by adding the file to SPEED_SOURCES.

decode_timeline.svg (step 10)
    One decode token of the Qwen2.5-1.5B-shaped F16 model, kernel by kernel, as
    tools/bench/decode_timeline.py measured it on the H200 (docs/bench/step10-2026-12-01/timeline-*):
    each kernel a bar as long as Nsight Compute timed it alone, back to back, coloured by what it
    does, with the token's measured time marked on each row: step09 (537 kernels, call 2),
    step10 --no-graph and step10 (171 kernels, call 3). Below, the first layer of step09 and of
    step10 with the kernels named: 19 against 6.
block_formats.svg (step 11)
    The byte layouts of the four weight blocks step 11 reads as stored, Q8_0, Q5_0, Q4_K and Q6_K,
    with their fields' sizes and offsets parsed from the tables in step03_tensors/dequantize.cpp
    (block_layout), and the CPU's 8-bit activation block from the BlockQ8 struct of
    step11_quantized_weights/quant_dot.h: which byte holds which weight, Q4_K's 12 bytes of 6-bit
    scales and minimums bit by bit, and the bits a weight of each type (F16 beside them), split
    into the quants' low bits, their high bits and the scales' share. Widths are to scale within
    the 32-weight rows and within the 256-weight ones.
tensor_core_gemm.svg (step 12)
    step12_tensor_cores/gemm_tensor_cores.cu's tensor_core_gemm_kernel, its sizes from the file's
    constexpr lines: a block's 128 x 128 tile of out as 2 x 2 warps of 64 x 64 (4 x 8 mma tiles
    of 16 x 8 each), the 32-deep slices of x and W in shared memory, the ring of kStages stages
    iteration by iteration by the loop's rule (step k multiplied out of stage k % 4 while steps
    k+1 .. k+3 are in flight), and rows padded to 80 bytes: which 16-byte bank slot each of the
    8 rows one ldmatrix reads falls on, with and without the padding. Beside it the mma m16n8k16
    fragments of tensor_core_ptx.cuh, every pair of values labelled with the lane that holds it
    (row group = l / 4, columns pair = 2 (l % 4) and +1; A's quarters a[0..3] top left, bottom
    left, top right, bottom right; B's pair along k; acc rows group and group + 8), one lane
    followed through all three.
flash_attention_tiles.svg (step 12)
    step12_tensor_cores/flash_attention.cu's flash_attention_kernel, its tile sizes from the file:
    the (queries x keys) plane of a 512-token prompt in 64 x 64 tiles, the causal diagonal, one
    64-query block walking its key tiles left to right (4 warps of 16 rows), the tiles above the
    diagonal never loaded and the diagonal tile masked inside, with the walked tiles counted at
    512 and 4096 tokens; then one tile as a warp sees it: the load, S = Q K^T by mma, the mask
    and scale, the online softmax (m, l, the rescale by 2^(m_old - m_new)), P packed from S's
    accumulator registers straight into the next mma's A operand (the two layouts drawn, one
    lane in red) and O += P V.
series_staircase.svg (overview, steps 05 to 12)
    Prompt and generated tokens/s of every step as two lines of points, log scale, a panel per
    model size on the H200: SPEED_SOURCES' H200 records, step 11's record
    (step11-2026-12-02/record-series-512.md) and step 12's (step12-2026-12-02/series-512-q4_k_m.md:
    step11, step12, llama.cpp in one call), later files winning per engine and size (a row
    without a number does not replace one with). Each step's decode roofline is a dashed line,
    its value at the panel's foot; llama.cpp's prompt and decode speeds of the newest record are
    horizontal lines. A step without a row at a size is no point, and the picture says which
    are missing. The subtitle and the foot say where each step's rows come from (files, dates).
    `tools/figures/plots.py --source FILE` draws the same picture from other bench_series.py tables
    alone: `make bench` does so on the table it has just written (build/bench/).

The four pictures of step 9's kernels take their tile sizes, warp counts and thresholds from
ops_cuda.cu's constexpr lines (cuda_constants), so they follow the kernels when those change.

The SVGs are byte-identical from run to run (fixed hash salt, no date) and keep their text as
text (svg.fonttype 'none'), so they stay small and diff well.

Usage: python3 tools/figures/plots.py [--out docs/figures] [--source TABLE.md ...] [NAME ...]
       (default: every figure; with --source only series_staircase, from those tables)
Needs matplotlib (`make setup` installs it); the rest is the standard library.
"""
import argparse
import glob
import math
import os
import re
import struct
import sys

import matplotlib
import matplotlib.ticker

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


# ---- gguf_layout ----

GGUF_SCALAR_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
                       10: "Q", 11: "q", 12: "d"}
GGUF_STRING, GGUF_ARRAY = 8, 9
GGUF_HEADER_BYTES = 24  # magic, version u32, tensor count u64, key/value count u64
GGUF_VALUE_TYPE_NAMES = {0: "u8", 1: "i8", 2: "u16", 3: "i16", 4: "u32", 5: "i32", 6: "f32",
                         7: "bool", 8: "string", 9: "array", 10: "u64", 11: "i64", 12: "f64"}


class GgufCursor:
    """Reads little-endian GGUF fields from a byte string, remembering where each one started."""

    def __init__(self, data):
        self.data = data
        self.offset = 0

    def number(self, fmt):
        (value,) = struct.unpack_from("<" + fmt, self.data, self.offset)
        self.offset += struct.calcsize("<" + fmt)
        return value

    def string(self):
        length = self.number("Q")
        text = self.data[self.offset:self.offset + length].decode("utf-8", errors="replace")
        self.offset += length
        return text

    def value(self, value_type):
        if value_type == GGUF_STRING:
            return self.string()
        if value_type == GGUF_ARRAY:
            element_type, count = self.number("I"), self.number("Q")
            return [self.value(element_type) for _ in range(count)]
        return self.number(GGUF_SCALAR_FORMATS[value_type])


def read_gguf_layout(path):
    """Where every part of a GGUF file lies: the header, each pair, each tensor info, the data."""
    data = open(path, "rb").read()
    cursor = GgufCursor(data)
    magic = data[:4].decode("ascii")
    cursor.offset = 4
    version, tensor_count, kv_count = cursor.number("I"), cursor.number("Q"), cursor.number("Q")
    pairs = []
    for _ in range(kv_count):
        start = cursor.offset
        key = cursor.string()
        value_type = cursor.number("I")
        value = cursor.value(value_type)
        pairs.append({"key": key, "type": value_type, "value": value,
                      "start": start, "end": cursor.offset})
    infos = []
    for _ in range(tensor_count):
        start = cursor.offset
        name = cursor.string()
        dims = [cursor.number("Q") for _ in range(cursor.number("I"))]
        infos.append({"name": name, "dims": dims, "type": cursor.number("I"),
                      "offset": cursor.number("Q"), "start": start, "end": cursor.offset})
    alignment = next((p["value"] for p in pairs if p["key"] == "general.alignment"), 32)
    end_of_infos = cursor.offset
    data_start = end_of_infos + (alignment - end_of_infos % alignment) % alignment
    return {"magic": magic, "version": version, "tensor_count": tensor_count,
            "kv_count": kv_count, "pairs": pairs, "infos": infos, "alignment": alignment,
            "end_of_infos": end_of_infos, "data_start": data_start, "file_size": len(data),
            "has_alignment_key": any(p["key"] == "general.alignment" for p in pairs)}


def ggml_type_names():
    """{type id: name} from the GgmlType enum of step 3, so the picture names types as the code."""
    source = open(os.path.join(ROOT, "step03_tensors", "ggml_types.h"), encoding="utf-8").read()
    enum = re.search(r"enum class GgmlType[^{]*\{(.*?)\};", source, re.S).group(1)
    return {int(number): name for name, number in re.findall(r"(\w+) = (\d+)", enum)}


def field_strip(ax, x, y, height, fields, face, byte_width, min_width):
    """Boxes for consecutive fields (name, bytes, value, offset), the offset under every border;
    a box is byte_width per byte but at least min_width, so that its name fits."""
    ax.text(x, y - 0.06, thousands(fields[0][3]), ha="center", va="top", fontsize=7.5,
            color=GREY)
    for name, size, value, start in fields:
        width = max(size * byte_width, min_width)
        box(ax, x, y, width, height, face)
        ax.text(x + width / 2, y + height * 0.72, name, ha="center", va="center", fontsize=7.5,
                color=INK)
        ax.text(x + width / 2, y + height * 0.32, value, ha="center", va="center", fontsize=8.5,
                family="monospace", fontweight="bold")
        x += width
        ax.text(x, y - 0.06, thousands(start + size), ha="center", va="top", fontsize=7.5,
                color=GREY)
    return x


def gguf_layout():
    layout = read_gguf_layout(os.path.join(ROOT, "models", "tiny-qwen2.gguf"))
    type_names = ggml_type_names()
    pairs, infos = layout["pairs"], layout["infos"]
    data_start, file_size = layout["data_start"], layout["file_size"]
    metadata_end, end_of_infos = pairs[-1]["end"], layout["end_of_infos"]
    fig, ax = canvas(12, 7.4)
    ax.text(0.3, 7.1, f"A GGUF file from byte 0: models/tiny-qwen2.gguf "
            f"({thousands(file_size)} bytes)", fontsize=12, fontweight="bold", va="center")

    # The whole file as one strip, not to scale: the header is 24 bytes, the data 2.3 MB.
    sections = [
        ("header", f"{GGUF_HEADER_BYTES} B", 0, GGUF_HEADER_BYTES, LIGHT_BLUE, 1.2),
        ("metadata key/values", f"{layout['kv_count']} pairs, "
         f"{thousands(metadata_end - GGUF_HEADER_BYTES)} B", GGUF_HEADER_BYTES, metadata_end,
         LIGHT_GREEN, 3.3),
        ("tensor infos", f"{layout['tensor_count']} records, "
         f"{thousands(end_of_infos - metadata_end)} B", metadata_end, end_of_infos,
         LIGHT_ORANGE, 2.7),
        ("padding", f"{data_start - end_of_infos} zero bytes", end_of_infos, data_start, LIGHT_GREY,
         0.95),
        ("tensor data", f"{layout['tensor_count']} tensors, "
         f"{thousands(file_size - data_start)} B", data_start, file_size, LIGHT_PURPLE, 3.05),
    ]
    x, strip_y, strip_height = 0.3, 5.85, 0.75
    ax.text(x, strip_y + strip_height + 0.12, "the whole file (boxes not to scale)",
            fontsize=8, color=GREY)
    ax.text(x, strip_y - 0.06, "0", ha="center", va="top", fontsize=8, color=GREY)
    for name, detail, start, end, face, width in sections:
        box(ax, x, strip_y, width, strip_height, face)
        ax.text(x + width / 2, strip_y + 0.5, name, ha="center", va="center", fontsize=9.5,
                fontweight="bold")
        ax.text(x + width / 2, strip_y + 0.22, detail, ha="center", va="center", fontsize=8)
        x += width
        ax.text(x, strip_y - 0.06, thousands(end), ha="center", va="top", fontsize=8, color=GREY)
    ax.text(x + 0.02, strip_y - 0.24, "byte offsets", ha="right", va="top", fontsize=7.5,
            color=GREY)

    label_x, fields_x, row_height = 0.3, 2.75, 0.5

    def row_label(y, face, title, detail):
        ax.add_patch(Rectangle((label_x, y - 0.3), 0.09, row_height + 0.3, facecolor=face,
                               edgecolor="none"))
        ax.text(label_x + 0.2, y + row_height - 0.05, title, fontsize=9.5, fontweight="bold",
                va="top")
        ax.text(label_x + 0.2, y + row_height - 0.3, detail, fontsize=8, va="top", color=INK,
                linespacing=1.35)

    # The header's four fields.
    y = 4.55
    row_label(y, LIGHT_BLUE, "header", f"bytes 0 to {GGUF_HEADER_BYTES}")
    field_strip(ax, fields_x, y, row_height, [
        ("magic", 4, f'"{layout["magic"]}"', 0),
        ("version u32", 4, str(layout["version"]), 4),
        ("tensor_count u64", 8, str(layout["tensor_count"]), 8),
        ("metadata_kv_count u64", 8, str(layout["kv_count"]), 16),
    ], LIGHT_BLUE, byte_width=0.24, min_width=0.95)

    # The first key/value pair, field by field, and what the rest are.
    first = pairs[0]
    key_bytes = len(first["key"].encode())
    value_start = first["start"] + 8 + key_bytes + 4
    y = 3.35
    vocabulary = [p for p in pairs if isinstance(p["value"], list)]
    vocabulary_bytes = sum(p["end"] - p["start"] for p in vocabulary)
    row_label(y, LIGHT_GREEN, "one key/value pair",
              f"the first of {len(pairs)}, bytes\n{first['start']} to {first['end']}")
    end = field_strip(ax, fields_x, y, row_height, [
        ("key length u64", 8, str(key_bytes), first["start"]),
        ("key bytes", key_bytes, first["key"], first["start"] + 8),
        ("value type u32", 4, f"{first['type']} = {GGUF_VALUE_TYPE_NAMES[first['type']]}",
         first["start"] + 8 + key_bytes),
        ("string length u64", 8, str(len(first["value"])), value_start),
        ("string bytes", len(first["value"]), first["value"], value_start + 8),
    ], LIGHT_GREEN, byte_width=0.105, min_width=1.1)
    ax.text(end + 0.2, y + row_height / 2,
            f"then {len(pairs) - 1} more pairs; the {len(vocabulary)} arrays of the\n"
            f"vocabulary ({', '.join(p['key'].split('.')[-1] for p in vocabulary)})\n"
            f"take {thousands(vocabulary_bytes)} of the "
            f"{thousands(metadata_end - GGUF_HEADER_BYTES)} bytes",
            va="center", fontsize=8, linespacing=1.35)

    # The first tensor info.
    info = infos[0]
    name_bytes = len(info["name"].encode())
    y = 2.15
    row_label(y, LIGHT_ORANGE, "one tensor info",
              f"the first of {len(infos)}, bytes\n{thousands(info['start'])} to "
              f"{thousands(info['end'])}")
    dims_start = info["start"] + 8 + name_bytes + 4
    end = field_strip(ax, fields_x, y, row_height, [
        ("name length u64", 8, str(name_bytes), info["start"]),
        ("name bytes", name_bytes, info["name"], info["start"] + 8),
        ("n_dims u32", 4, str(len(info["dims"])), info["start"] + 8 + name_bytes),
        (f"dims {len(info['dims'])} x u64 (ne)", 8 * len(info["dims"]),
         ", ".join(str(d) for d in info["dims"]), dims_start),
        ("type u32", 4, f"{info['type']} = {type_names[info['type']]}",
         dims_start + 8 * len(info["dims"])),
        ("offset u64", 8, str(info["offset"]), dims_start + 8 * len(info["dims"]) + 4),
    ], LIGHT_ORANGE, byte_width=0.085, min_width=1.05)
    ax.text(end + 0.2, y + row_height / 2,
            "offset: where its bytes\nstart, counted from the\nstart of the tensor data",
            va="center", fontsize=8, linespacing=1.35)

    # The data section to scale, tensors grouped by block, each group at its first offset.
    y, data_width = 0.75, 12 - 0.3 - fields_x
    row_label(y, LIGHT_PURPLE, "tensor data",
              f"bytes {thousands(data_start)} to\n{thousands(file_size)}, to scale")
    ax.text(label_x + 0.2, y - 0.42,
            f"starts at {thousands(end_of_infos)} rounded up to a multiple of "
            f"general.alignment = {layout['alignment']}"
            + ("" if layout["has_alignment_key"] else " (the default)"),
            fontsize=8, va="top")
    data_bytes = file_size - data_start
    scale = data_width / data_bytes
    groups = []
    for tensor in sorted(infos, key=lambda t: t["offset"]):
        group = re.match(r"blk\.\d+|[^.]+", tensor["name"]).group(0)
        if not groups or groups[-1][0] != group:
            groups.append([group, tensor["offset"], 0])
        groups[-1][2] += 1
    for index, (group, offset, count) in enumerate(groups):
        next_offset = groups[index + 1][1] if index + 1 < len(groups) else data_bytes
        x0, width = fields_x + offset * scale, (next_offset - offset) * scale
        box(ax, x0, y, width, row_height, LIGHT_PURPLE if index % 2 == 0 else PURPLE)
        members = [t for t in infos if t["name"].startswith(group + ".")]
        for tensor in members[1:]:  # the borders between a group's tensors, to scale too
            tx = fields_x + tensor["offset"] * scale
            ax.plot([tx, tx], [y, y + row_height * 0.35], color=INK, linewidth=0.5)
        label = f"{group}.* ({count} tensors)" if count > 1 else members[0]["name"]
        if width > 1.0:
            ax.text(x0 + width / 2, y + row_height * 0.64, label, ha="center", va="center",
                    fontsize=8, family="monospace")
            ax.text(x0 + 0.04, y - 0.06, f"+{thousands(offset)}", ha="left", va="top",
                    fontsize=7.5, color=GREY)
        else:  # too thin to hold its name: a label above, pointing down at it
            ax.annotate(f"{label} at +{thousands(offset)}", xy=(x0 + width / 2, y + row_height),
                        xytext=(x0 + width / 2 - 0.05, y + row_height + 0.22), ha="right",
                        va="center", fontsize=7.5, family="monospace",
                        arrowprops={"arrowstyle": "-", "color": INK, "linewidth": 0.6})
    ax.text(fields_x + data_width, y - 0.24, "+offset = tensor info's offset; absolute byte = "
            f"{thousands(data_start)} + offset (every offset a multiple of {layout['alignment']})",
            ha="right", va="top", fontsize=7.5, color=GREY)
    return fig


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


# ---- kv_cache_layout ----

def kv_cache_layout():
    n_heads, n_kv_heads, head_dim = 12, 2, 128  # Qwen2.5-1.5B
    heads_per_kv = n_heads // n_kv_heads
    n_prompt, drawn_rows, row_height = 5, 12, 0.27
    decode_row = n_prompt  # n_filled before the first decode step
    gap_row = drawn_rows - 2  # stands for the rows up to capacity - 2
    fig, ax = canvas(12, 6.7)
    ax.text(0.3, 6.45, "The KV cache of one layer: kv_cache.h's KVCache (DeviceKVCache is the "
            "same on the GPU)", fontsize=12, fontweight="bold", va="center")

    # cache.k is n_layers such blocks, one after another; cache.v likewise.
    strip_y, strip_x, layer_width = 5.75, 1.5, 1.25
    layers = ["layer 0", "layer 1", "...", "this layer", "...", "layer n_layers-1"]
    ax.text(0.3, strip_y + 0.17, "cache.k", fontsize=9.5, family="monospace", va="center",
            fontweight="bold")
    shown = layers.index("this layer")
    for index, name in enumerate(layers):
        box(ax, strip_x + index * layer_width, strip_y, layer_width, 0.34,
            LIGHT_BLUE if index == shown else "white", name, fontsize=8)
    ax.text(strip_x + len(layers) * layer_width + 0.15, strip_y + 0.17,
            "(n_layers, capacity, kv_dim) floats;\ncache.v the same", fontsize=8, va="center")

    block_width, blocks_top = 3.5, 4.8
    k_x, v_x = 2.95, 7.0
    blocks_bottom = blocks_top - drawn_rows * row_height
    shown_x = strip_x + shown * layer_width
    for corner_x in (k_x, k_x + block_width):  # the zoom from one layer to its block
        ax.plot([shown_x + (corner_x > k_x) * layer_width, corner_x],
                [strip_y, blocks_top + 0.62], color=LIGHT_BLUE, linewidth=0.8, zorder=0)

    def row_y(row):
        return blocks_top - (row + 1) * row_height

    for x0, title in ((k_x, "keys(layer): this layer's keys"),
                      (v_x, "values(layer): its values")):
        ax.text(x0 + block_width / 2, blocks_top + 0.5, title, ha="center", va="bottom",
                fontsize=9.5, fontweight="bold", family="monospace")
        for row in range(drawn_rows):
            if row < n_prompt:
                face = LIGHT_BLUE
            elif row == decode_row:
                face = ORANGE
            else:
                face = "white"
            for head in range(n_kv_heads):
                slice_width = block_width / n_kv_heads
                if row == gap_row:
                    ax.text(x0 + (head + 0.5) * slice_width, row_y(row) + row_height / 2, "...",
                            ha="center", va="center", fontsize=9, color=GREY)
                    continue
                ax.add_patch(Rectangle((x0 + head * slice_width, row_y(row)), slice_width,
                                       row_height, facecolor=face, edgecolor=INK, linewidth=0.6))
        ax.add_patch(Rectangle((x0, blocks_bottom), block_width, drawn_rows * row_height,
                               facecolor="none", edgecolor=INK, linewidth=1.1))
        for head in range(n_kv_heads):
            slice_width = block_width / n_kv_heads
            ax.text(x0 + (head + 0.5) * slice_width, blocks_bottom - 0.07,
                    f"KV head {head}\nhead_dim = {head_dim} floats", ha="center", va="top",
                    fontsize=8, linespacing=1.3)
        ax.annotate("", xy=(x0 + block_width, blocks_bottom - 0.62),
                    xytext=(x0, blocks_bottom - 0.62),
                    arrowprops={"arrowstyle": "<->", "color": INK, "linewidth": 0.8,
                                "shrinkA": 0, "shrinkB": 0})
        ax.text(x0 + block_width / 2, blocks_bottom - 0.68,
                f"one row = kv_dim = n_kv_heads x head_dim = {n_kv_heads * head_dim} floats",
                ha="center", va="top", fontsize=8)

    # The query heads of the new token, grouped onto the KV heads they read.
    query_width = (block_width / n_kv_heads - 0.2) / heads_per_kv
    for head in range(n_heads):
        kv_head = head // heads_per_kv
        x = k_x + kv_head * block_width / n_kv_heads + 0.1 + (head % heads_per_kv) * query_width
        box(ax, x, blocks_top + 0.08, query_width, 0.24, LIGHT_ORANGE, f"q{head}", fontsize=7)
    ax.text(k_x - 0.1, blocks_top + 0.2, "query heads of\nthe new token:", ha="right",
            va="center", fontsize=8, linespacing=1.2, color=DARK_ORANGE)

    # Row numbers, on the left of the keys.
    for row, label in ((0, "0"), (n_prompt - 1, "n_prompt-1"), (decode_row, "n_filled"),
                       (drawn_rows - 1, "capacity-1")):
        ax.text(k_x - 0.07, row_y(row) + row_height / 2, label, ha="right", va="center",
                fontsize=8, family="monospace")

    # What writes which rows, on the left; what attention reads, on the right.
    bracket(ax, 2.05, row_y(n_prompt - 1) + 0.02, blocks_top - 0.02, side=+1, color=BLUE)
    ax.text(1.87, (row_y(n_prompt - 1) + blocks_top) / 2,
            "prefill: one pass\nover the prompt\nwrites rows\n0 .. n_prompt-1\n"
            "(rows = positions)", ha="right", va="center", fontsize=8, color=BLUE,
            linespacing=1.25)
    arrow(ax, (1.95, row_y(decode_row) - 0.62), (k_x - 0.72, row_y(decode_row) + 0.02),
          color=ORANGE, connectionstyle="arc3,rad=0.3")
    ax.text(1.87, row_y(decode_row) - 0.3,
            "a decode step: the\nnew token's K and V\nprojections write\nrow n_filled "
            "(= n_prompt\nat the first step),\nthen n_filled += 1", ha="right", va="top",
            fontsize=8, color=DARK_ORANGE, linespacing=1.25)
    read_x = v_x + block_width + 0.2
    bracket(ax, read_x, row_y(decode_row) + 0.02, blocks_top - 0.02, side=-1, color=RED)
    ax.text(read_x + 0.12, (row_y(decode_row) + blocks_top) / 2,
            "its attention reads\nrows 0 .. n_filled,\nin K (scores) and\nV (weighted sum),\n"
            "each query head in\nthe slice of its KV head", ha="left", va="center", fontsize=8,
            color=RED, linespacing=1.25)
    ax.text(read_x + 0.12, row_y(gap_row) + 0.1, "rows past n_filled:\nallocated, not yet\n"
            "written", ha="left", va="center", fontsize=8, color=GREY, linespacing=1.25)

    ax.text(0.3, 0.3,
            f"Grouped-query attention, Qwen2.5-1.5B: {n_heads} query heads share {n_kv_heads} KV "
            f"heads, {heads_per_kv} each (query head h reads KV head h / {heads_per_kv}), so a "
            f"row holds {n_kv_heads} x {head_dim} floats, not {n_heads} x {head_dim}.",
            fontsize=8.5, va="center")
    return fig


# ---- sampler_pipeline ----

SAMPLER_TOKENS = ["mat", "floor", "sofa", "bed", "cat", "chair", "rug", "table", "the", "roof",
                  "grass", "moon"]
SAMPLER_LOGITS = [4.0, 3.5, 3.1, 2.8, 2.6, 2.3, 1.9, 1.5, 1.0, 0.6, 0.2, -0.6]
SAMPLER_RECENT = {"cat", "the", "moon"}  # tokens the sequence already holds
SAMPLER_SETTINGS = {"repeat_penalty": 1.5, "temperature": 0.7, "top_k": 8, "top_p": 0.85,
                    "min_p": 0.2, "seed": 42}


class Mt19937_64:
    """std::mt19937_64, whose output sequence for a seed the C++ standard fixes (the constants
    are the standard's), so the picture's draw is the one sampler.cpp makes with that seed."""
    WORDS, SHIFT = 312, 156
    MASK = (1 << 64) - 1
    LOWER = (1 << 31) - 1
    UPPER = MASK ^ LOWER

    def __init__(self, seed):
        self.state = [seed & self.MASK]
        for i in range(1, self.WORDS):
            previous = self.state[-1]
            self.state.append((6364136223846793005 * (previous ^ (previous >> 62)) + i)
                              & self.MASK)
        self.index = self.WORDS

    def __call__(self):
        if self.index == self.WORDS:
            for i in range(self.WORDS):
                bits = ((self.state[i] & self.UPPER)
                        | (self.state[(i + 1) % self.WORDS] & self.LOWER))
                twisted = (bits >> 1) ^ (0xB5026F5AA96619E9 if bits & 1 else 0)
                self.state[i] = self.state[(i + self.SHIFT) % self.WORDS] ^ twisted
            self.index = 0
        y = self.state[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        return (y ^ (y >> 43)) & self.MASK


def softmax(logits):
    largest = max(logits)
    weights = [math.exp(x - largest) for x in logits]
    return [w / sum(weights) for w in weights]


def sampler_stages():
    """[(title, {token index: probability}, kept token indices)] for each stage, as sample_token
    runs them; the stages before top-k show the softmax of the logits so far, for comparison."""
    s = SAMPLER_SETTINGS
    everyone = range(len(SAMPLER_TOKENS))

    def as_shown(logits):
        return dict(zip(everyone, softmax(logits)))

    stages = [("1  model logits\n(softmax shown)", as_shown(SAMPLER_LOGITS), set(everyone))]

    penalized = [(x / s["repeat_penalty"] if x > 0 else x * s["repeat_penalty"])
                 if token in SAMPLER_RECENT else x
                 for token, x in zip(SAMPLER_TOKENS, SAMPLER_LOGITS)]
    stages.append((f"2  repetition penalty\n{s['repeat_penalty']} on recent tokens",
                   as_shown(penalized), set(everyone)))
    tempered = [x / s["temperature"] for x in penalized]
    stages.append((f"3  temperature\nlogits / {s['temperature']}", as_shown(tempered),
                   set(everyone)))

    # sorted_candidates: most likely first, ties to the lower id; then softmax over the top k.
    order = sorted(everyone, key=lambda i: (-tempered[i], i))[:s["top_k"]]
    probability = dict(zip(order, softmax([tempered[i] for i in order])))
    stages.append((f"4  top-k {s['top_k']}, then\nsoftmax over them", probability, set(order)))

    mass, kept = 0.0, 0
    while kept < len(order) and mass < s["top_p"]:
        mass += probability[order[kept]]
        kept += 1
    order = order[:max(kept, 1)]
    stages.append((f"5  top-p {s['top_p']}\n(no renormalizing)", probability, set(order)))

    threshold = s["min_p"] * probability[order[0]]
    kept = 1
    while kept < len(order) and probability[order[kept]] >= threshold:
        kept += 1
    order = order[:kept]
    stages.append((f"6  min-p {s['min_p']}\n>= {threshold:.3f} (= {s['min_p']} x best)",
                   probability, set(order)))

    # draw: one uniform number, scaled by what is left, walks the cumulative probabilities.
    uniform = (Mt19937_64(s["seed"])() >> 11) * 2.0 ** -53
    total = sum(probability[i] for i in order)
    cumulative, chosen = 0.0, order[-1]
    for i in order:
        cumulative += probability[i]
        if uniform * total < cumulative:
            chosen = i
            break
    renormalized = {i: probability[i] / total for i in order}
    stages.append((f"7  draw, --seed {s['seed']}\n(shown renormalized)", renormalized,
                   set(order)))
    return stages, chosen, uniform


def sampler_pipeline():
    stages, chosen, uniform = sampler_stages()
    fig, axes = plt.subplots(1, len(stages), figsize=(12, 4.6), sharey=True)
    fig.subplots_adjust(left=0.06, right=0.99, top=0.74, bottom=0.17, wspace=0.16)
    fig.text(0.01, 0.96, "sample_token's stages, in sampler.cpp's order, on twelve made-up "
             "logits", fontsize=12, fontweight="bold", va="center")
    fig.text(0.01, 0.9, f"Tokens already in the sequence (*): "
             f"{', '.join(sorted(SAMPLER_RECENT))}. The settings are exaggerated so that every "
             "stage acts; step 8's defaults are penalty 1.05, temperature 0.7, top-k 20, "
             "top-p 0.8, min-p 0.", fontsize=8.5, va="center")
    rows = range(len(SAMPLER_TOKENS))
    kept_before = set(rows)
    for ax, (title, probability, kept) in zip(axes, stages):
        for row in rows:
            if row in kept:
                face = RED if ax is axes[-1] and row == chosen else BLUE
                ax.barh(row, probability[row], color=face, height=0.72)
                ax.text(probability[row] + 0.03, row, f"{probability[row]:.2f}", va="center",
                        fontsize=7)
            elif row in kept_before:  # this stage removes it
                ax.barh(row, probability.get(row, 0.0), color=LIGHT_GREY, height=0.72)
                ax.text(probability.get(row, 0.0) + 0.03, row, "out", va="center", fontsize=7,
                        color=GREY)
        kept_before = kept
        ax.set_title(title, fontsize=8.5, loc="left", pad=6, linespacing=1.3)
        ax.set_xlim(0, 1.0)
        ax.set_xticks([0, 0.5, 1])
        ax.set_xticklabels(["0", "0.5", "1"], fontsize=7.5)
        ax.tick_params(axis="y", length=0)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[0].set_yticks(list(rows))
    labels = [f"{token} *" if token in SAMPLER_RECENT else token for token in SAMPLER_TOKENS]
    axes[0].set_yticklabels(labels, fontsize=8.5, family="monospace")
    axes[0].invert_yaxis()

    # The draw as the code does it: u against the cumulative probabilities of what is left.
    draw_axes, (_, renormalized, _) = axes[-1], stages[-1]
    strip_top, strip_height, left = 6.0, 0.9, 0.0
    draw_axes.text(0, strip_top - 0.45, "cumulative:", fontsize=7.5, va="center")
    for token, share in renormalized.items():
        draw_axes.add_patch(Rectangle((left, strip_top), share, strip_height,
                                      facecolor=RED if token == chosen else LIGHT_BLUE,
                                      edgecolor="white", linewidth=1.0))
        draw_axes.text(left + share / 2, strip_top + strip_height + 0.45, SAMPLER_TOKENS[token],
                       ha="center", va="center", fontsize=6.5, rotation=90 if share < 0.2 else 0)
        left += share
    draw_axes.plot([uniform, uniform], [strip_top - 0.15, strip_top + strip_height + 0.15],
                   color=INK, linewidth=1.2)
    draw_axes.text(uniform, strip_top + strip_height + 1.45, f"u = {uniform:.3f}\n"
                   f"falls in {SAMPLER_TOKENS[chosen]}", ha="center", va="top", fontsize=7.5,
                   color=RED)

    fig.text(0.06, 0.045, "Bars: probability. In stages 1 to 3 it is the softmax of the logits "
             "so far, for comparison: the code computes probabilities from stage 4 on.\n"
             "Stages 5 and 6 only cut the list; the draw scales u by the sum of what is left, "
             "which is the same as renormalizing.", fontsize=8, va="center", linespacing=1.4)
    for left_axes, right_axes in zip(axes[:-1], axes[1:]):  # from each stage to the next
        start, end = left_axes.get_position(), right_axes.get_position()
        middle = (start.y0 + start.y1) / 2
        fig.patches.append(FancyArrowPatch((start.x1 - 0.006, middle), (end.x0 - 0.002, middle),
                                           transform=fig.transFigure, arrowstyle="-|>",
                                           mutation_scale=9, color=GREY, linewidth=1.0))
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


# ---- series_speed ----

SPEED_SOURCES = [  # (files, panel title: {size} is the model size its headings name, {threads}
    # the largest thread count of its table). Later files win: see series_speed in the docstring.
    (("docs/bench/h200-series.md", "docs/bench/h200-step09.md",
      "docs/bench/step10-2026-12-01/series-512-call3.md",
      "docs/bench/step10-2026-12-01/series-7b-512-call5.md",
      "docs/bench/step11-2026-12-02/record-series-512.md",    # step 11's record (call 3)
      "docs/bench/step12-2026-12-02/series-512-q4_k_m.md"),   # step11, step12, llama.cpp, one call
     "H200 GPU\nQwen2.5-{size} shape"),
    (("docs/bench/cpu-real-0.5b.md",), "2-core CPU, {threads} threads\nreal Qwen2.5-0.5B"),
]


def markdown_tables(path):
    """[(heading, [{column name: cell}])] for every table of a markdown file, under its "## "."""
    tables, heading, lines = [], "", open(path, encoding="utf-8").read().split("\n")

    def cells(line):
        return [cell.strip() for cell in line.strip().strip("|").split("|")]

    i = 0
    while i < len(lines):
        if lines[i].startswith("## "):
            heading = lines[i][3:].strip()
        is_header = (lines[i].startswith("|") and i + 1 < len(lines)
                     and re.match(r"^\|[\s:|-]+\|\s*$", lines[i + 1]))
        if not is_header:
            i += 1
            continue
        names = [name.lower() for name in cells(lines[i])]
        rows, i = [], i + 2
        while i < len(lines) and lines[i].startswith("|"):
            rows.append(dict(zip(names, cells(lines[i]))))
            i += 1
        tables.append((heading, rows))
    return tables


def number_in(cell):
    match = re.match(r"[\d,]*\.?\d+", (cell or "").replace("*", ""))
    return float(match.group(0).replace(",", "")) if match else None


def model_size(heading):
    """"0.5B" for a heading naming Qwen2.5-0.5B in any form (a title, a file name), else None."""
    match = re.search(r"(?<![\w.])(\d+(?:\.\d+)?)b(?![a-z])", heading, re.I)
    return match.group(1) + "B" if match else None


def speed_panels():
    """One panel per model size of each source (per table, for a heading that names none): our
    steps and transformers as bars, llama.cpp as a range. A row of a later file replaces the
    earlier file's row of the same engine (stepNN, or the engine's whole name)."""
    panels = []
    for paths, title in SPEED_SOURCES:
        tables = {}  # model size or heading: {"threads": ..., "rows": {engine: row}}
        for path in paths:
            for heading, rows in markdown_tables(os.path.join(ROOT, path)):
                if not rows or "engine" not in rows[0] or "gen tok/s" not in rows[0]:
                    continue
                threads = "all"
                if "threads" in rows[0]:  # one bar per engine: the rows with every thread in use
                    most = max(number_in(row["threads"]) or 0 for row in rows)
                    rows = [row for row in rows if number_in(row["threads"]) == most]
                    threads = f"{most:.0f}"
                table = tables.setdefault(model_size(heading) or heading,
                                          {"threads": threads, "rows": {}})
                for row in rows:
                    engine = row["engine"].replace("`", "")
                    step = re.match(r"step\d+", engine)
                    table["rows"][step.group(0) if step else engine] = row
        for key, table in sorted(tables.items(), key=lambda item: float(item[0][:-1])
                                 if model_size(item[0]) else math.inf):
            bars, llama_cpp = [], []
            for engine, row in table["rows"].items():
                speed = number_in(row["gen tok/s"])
                if engine.startswith("llama.cpp") and speed:
                    llama_cpp.append(speed)
                elif engine.startswith(("step", "transformers")):
                    ours = engine.startswith("step")
                    bars.append({
                        "label": engine if ours else engine[len("transformers"):].strip(),
                        "speed": speed,
                        "as_written": row["gen tok/s"],
                        "roofline": number_in(row.get("roofline tok/s")),
                        "no_cache": "no KV cache" in " ".join(row.values()),
                        "ours": ours})
            bars.sort(key=lambda bar: (not bar["ours"], bar["label"] if bar["ours"] else ""))
            panels.append({"title": title.format(size=key, threads=table["threads"]),
                           "bars": bars, "llama_cpp": llama_cpp})
    return panels


def series_speed():
    panels = speed_panels()
    speeds = [bar["speed"] for panel in panels for bar in panel["bars"] if bar["speed"]]
    ceilings = [bar["roofline"] or 0 for panel in panels for bar in panel["bars"]]
    low = 10 ** math.floor(math.log10(min(speeds)) - 0.3)
    high = 10 ** math.ceil(math.log10(max(speeds + ceilings)) + 0.3)
    widths = [len(panel["bars"]) + 0.4 for panel in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(16, 5.0), sharey=True,
                             gridspec_kw={"width_ratios": widths})
    fig.subplots_adjust(left=0.05, right=0.995, top=0.74, bottom=0.17, wspace=0.05)
    fig.text(0.01, 0.965, "Generated tokens per second of every step, after a 512-token prompt "
             "(the tables of docs/bench/)", fontsize=12, fontweight="bold", va="center")
    kinds = {"no KV cache": LIGHT_BLUE, "KV cache": BLUE, "transformers": ORANGE}
    for ax, panel in zip(axes, panels):
        ax.set_yscale("log")
        ax.set_ylim(low, high)
        ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        bars = panel["bars"]
        for index, bar in enumerate(bars):
            if not bar["ours"]:
                face = kinds["transformers"]
            else:
                face = kinds["no KV cache"] if bar["no_cache"] else kinds["KV cache"]
            if bar["speed"]:
                ax.bar(index, bar["speed"] - low, width=0.72, color=face, bottom=low)
                ax.text(index, bar["speed"] * 1.15, bar["as_written"], ha="center",
                        va="bottom", fontsize=6.5,  # white behind it: a llama.cpp line may cross
                        bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.6})
            else:
                ax.text(index, low * 1.5, "not\nmeasured", ha="center", va="bottom",
                        fontsize=7, color=GREY, linespacing=1.1)
            if bar["roofline"]:
                ax.plot([index - 0.42, index + 0.42], [bar["roofline"]] * 2, color=INK,
                        linewidth=1.2, linestyle=(0, (3, 1.5)))
        rooflines = [bar["roofline"] for bar in bars if bar["roofline"]]
        if rooflines:
            ax.text(len(bars) - 0.5, max(rooflines) * 1.25, f"roofline {max(rooflines):.0f}",
                    ha="right", va="bottom", fontsize=7.5)
        if panel["llama_cpp"]:
            slowest, fastest = min(panel["llama_cpp"]), max(panel["llama_cpp"])
            ax.axhspan(slowest, fastest, color=LIGHT_GREEN, alpha=0.7, zorder=0)
            for value in (slowest, fastest):
                ax.axhline(value, color=GREEN, linewidth=1.0, zorder=0)
            settings = len(panel["llama_cpp"])
            ax.text(-0.45, slowest / 1.2, f"llama.cpp: {slowest:g} to {fastest:g}\n({settings} "
                    "settings)" if settings > 1 else f"llama.cpp: {fastest:g}", fontsize=7.5,
                    color=DARK_GREEN, va="top", linespacing=1.15)
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([bar["label"] + ("\n(no KV\ncache)" if bar["no_cache"] else "")
                            for bar in bars], fontsize=7.5, linespacing=1.1)
        # transformers' rows are labelled by dtype, with the engine's name once under them all.
        others = [index for index, bar in enumerate(bars) if not bar["ours"]]
        if others:
            ax.text(sum(others) / len(others), -0.11, "transformers",
                    transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=7.5)
        ax.tick_params(axis="x", length=0)
        ax.set_xlim(-0.6, len(bars) - 0.4)
        ax.set_title(panel["title"], fontsize=9, linespacing=1.3)
        ax.grid(axis="y", color=LIGHT_GREY, linewidth=0.6)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        if ax is not axes[0]:
            ax.tick_params(axis="y", left=False)
    axes[0].set_ylabel("generated tokens/s (log scale)")
    legend = [Rectangle((0, 0), 1, 1, color=color) for color in kinds.values()]
    legend += [plt.Line2D([0], [0], color=INK, linestyle=(0, (3, 1.5)), linewidth=1.2),
               Rectangle((0, 0), 1, 1, facecolor=LIGHT_GREEN, edgecolor=GREEN)]
    fig.legend(legend, ["our step, no KV cache: each token re-runs every position",
                        "our step, KV cache", "transformers generate()",
                        "roofline of that row: copy bandwidth / weight bytes per token",
                        "llama.cpp, same machine and model file (a band: its settings' range)"],
               loc="upper left", bbox_to_anchor=(0.055, 0.935), ncol=3, fontsize=8,
               frameon=False, handlelength=2.2, columnspacing=1.6)
    return fig


# ---- series_staircase ----

STAIRCASE_SOURCES = SPEED_SOURCES[0][0]  # oldest first: a later file's row replaces


def table_notes(path):
    """{heading: its "- " lines before the table} of a markdown file: a record's date, machine
    and model under each "## " of bench_series.py's tables."""
    notes, heading = {}, ""
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.startswith("## "):
            heading = line[3:].strip()
            notes.setdefault(heading, [])
        elif line.startswith("- ") and heading in notes:
            notes[heading].append(line[2:])
    return notes


def staircase_panels(paths):
    """{model size: {"stepNN" or "llama.cpp": point}} of bench_series.py tables: each point the
    row's prompt and generated tokens/s, its roofline, device and where it came from. A row of a
    later file replaces the earlier one of the same engine and size, unless it holds no number
    (a row that timed out keeps the earlier measurement). Only the plain stepNN rows are steps
    (not step10-no-graph or a variant's name), and transformers' rows are left out."""
    panels = {}
    for path in paths:
        full = path if os.path.isabs(path) else os.path.join(ROOT, path)
        notes = table_notes(full)
        for heading, rows in markdown_tables(full):
            size = model_size(heading)
            if not rows or not size or "engine" not in rows[0] or "gen tok/s" not in rows[0]:
                continue
            prompt_column = next((name for name in rows[0] if name.startswith("prompt tok/s")),
                                 None)
            lines = notes.get(heading, [])
            date = next((re.match(r"\d{4}-\d\d-\d\d", line).group(0) for line in lines
                         if re.match(r"\d{4}-\d\d-\d\d", line)), "")
            gpu = next((match.group(1) for match in (re.search(r"GPU (.+?) \(driver", line)
                                                     for line in lines) if match), None)
            for row in rows:
                engine = row["engine"].replace("`", "").strip()
                key = engine if re.fullmatch(r"step\d\d", engine) else \
                    "llama.cpp" if engine.startswith("llama.cpp") else None
                point = {"prompt": number_in(row.get(prompt_column)),
                         "gen": number_in(row["gen tok/s"]),
                         "roofline": number_in(row.get("roofline tok/s")),
                         "device": row.get("device", ""), "gpu": gpu,
                         "no_cache": "no KV cache" in row.get("notes", ""),
                         "source": os.path.relpath(full, os.path.join(ROOT, "docs", "bench"))
                         if full.startswith(os.path.join(ROOT, "docs", "bench")) else
                         os.path.relpath(full, ROOT), "date": date}
                if key and (point["prompt"] or point["gen"]):
                    panels.setdefault(size, {})[key] = point
    return dict(sorted(panels.items(), key=lambda item: float(item[0][:-1])))


def speed_text(value):
    """A speed as the tables round it: 25,363, 571, 4.83, 0.06."""
    if value >= 1000:
        return thousands(round(value))
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def step_runs(steps):
    """"step05–07" for consecutive step numbers, runs joined by ", "."""
    numbers, runs = sorted(int(step[4:]) for step in steps), []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ", ".join(f"step{a:02d}" + (f"–{b:02d}" if b > a else "") for a, b in runs)


def series_staircase(sources=None):
    """The staircase: prompt and generated tokens/s of every step, a panel per model size, from
    the records of docs/bench/ (STAIRCASE_SOURCES) or from the tables given (tools/figures/plots.py
    --source FILE, which bench_series.py calls on the table it has just written)."""
    committed = sources is None
    panels = staircase_panels(STAIRCASE_SOURCES if committed else sources)
    if not panels:
        sys.exit(f"plots.py: no table with engine, prompt tok/s and gen tok/s columns in "
                 f"{', '.join(sources)}")
    numbers = sorted({int(key[4:]) for panel in panels.values() for key in panel
                      if key.startswith("step")})
    steps = [f"step{n:02d}" for n in range(numbers[0], numbers[-1] + 1)]
    values = [point[kind] for panel in panels.values() for point in panel.values()
              for kind in ("prompt", "gen", "roofline") if point[kind]]
    low = 10 ** math.floor(math.log10(min(values)) - 0.6)
    high = 10 ** math.ceil(math.log10(max(values)) + 0.3)
    fig, axes = plt.subplots(1, len(panels), figsize=(12, 6.2), sharey=True, squeeze=False)
    axes = axes[0]
    fig.subplots_adjust(left=0.065, right=0.995, top=0.74, bottom=0.22, wspace=0.06)
    if committed:
        title = ("The staircase: prompt and generated tokens per second of every step, "
                 "a 512-token prompt, greedy decoding")
        subtitle = ("One H200, random weights in Qwen2.5's shapes. The rows come from several "
                    "records, made on different days (their dates and device calls in "
                    "docs/bench/; the files are listed below).\nstep05 runs on the CPU, reading "
                    "the Q4_K_M file's blocks; steps 06–10 hold F16 copies of its matrices on "
                    "the GPU (08 and 09 were timed on F16 files: the same bytes there); steps "
                    "11–12 read the Q4_K_M blocks.")
    else:
        title = ("Prompt and generated tokens per second of each step: "
                 + ", ".join(os.path.relpath(source) for source in sources))
        subtitle = "The rows of bench_series.py's tables (listed below)."
    fig.text(0.01, 0.972, title, fontsize=12, fontweight="bold", va="center")
    fig.text(0.01, 0.94, subtitle, fontsize=8, va="top", linespacing=1.4)

    # Where each step's rows come from: consecutive steps of the same records named together.
    origins = {}
    for panel in panels.values():
        for key, point in panel.items():
            origins.setdefault(key, set()).add((point["source"], point["date"]))
    groups = {}
    for key, found in origins.items():
        groups.setdefault(tuple(sorted(found)), []).append(key)
    parts = []
    for found, keys in sorted(groups.items(), key=lambda item: min(
            int(key[4:]) if key.startswith("step") else 99 for key in item[1])):
        names = step_runs([key for key in keys if key.startswith("step")])
        names = " and ".join(filter(None, [names, "llama.cpp" if "llama.cpp" in keys else ""]))
        files, dates = [], sorted({date for _, date in found if date})
        for source, _ in found:  # a folder named once: step10-.../series-512-call3.md, series-...
            folder, name = os.path.split(source)
            shown = name if files and os.path.dirname(files[-1][0]) == folder else source
            files.append((source, shown))
        parts.append(f"{names}: {', '.join(shown for _, shown in files)}"
                     + (f" ({', '.join(dates)})" if dates else ""))

    missing, roofline_style = [], (0, (3, 1.5))
    for ax, (size, panel) in zip(axes, panels.items()):
        ax.set_yscale("log")
        ax.set_ylim(low, high)
        ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        xs = range(len(steps))
        for kind, colour, text_colour, marker, label_offset in (
                ("prompt", ORANGE, DARK_ORANGE, "s", 1.4), ("gen", BLUE, BLUE, "o", 1 / 1.4)):
            points = [(x, panel[step][kind]) for x, step in zip(xs, steps)
                      if step in panel and panel[step][kind]]
            missing += [f"{step} {'prompt' if kind == 'prompt' else 'decode'} at {size}"
                        for step in steps if not (step in panel and panel[step][kind])]
            ax.plot([x for x, _ in points], [v for _, v in points], color=colour,
                    marker=marker, markersize=5, linewidth=1.4, zorder=4)
            for x, value in points:
                ax.text(x, value * label_offset, speed_text(value), ha="center",
                        va="bottom" if kind == "prompt" else "top", fontsize=6.5,
                        color=text_colour, zorder=5,
                        bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.3})
        # The decode roofline of each step's row, dashed and joined from step to step; its
        # values in a row at the foot of the panel.
        line_x, line_y = [], []
        for x, step in zip(xs, steps):
            roofline = panel.get(step, {}).get("roofline")
            if roofline:
                line_x += [x - 0.5, x + 0.5]
                line_y += [roofline, roofline]
                ax.text(x, low * 1.8, speed_text(roofline), ha="center", va="center",
                        fontsize=6, color=INK)
            elif line_x:
                ax.plot(line_x, line_y, color=INK, linewidth=1.0, linestyle=roofline_style)
                line_x, line_y = [], []
        if line_x:
            ax.plot(line_x, line_y, color=INK, linewidth=1.0, linestyle=roofline_style)
        ax.axhline(low * 3.6, color=LIGHT_GREY, linewidth=0.6)
        llama = panel.get("llama.cpp")
        if llama:
            for kind, style, where in (("prompt", "-", "prompt"),
                                       ("gen", (0, (1, 1.2)), "decode")):
                if llama[kind]:
                    ax.axhline(llama[kind], color=GREEN, linewidth=1.2, linestyle=style,
                               zorder=2)
                    ax.text(-0.5, llama[kind] * 1.12, f"llama.cpp {where} "
                            f"{speed_text(llama[kind])}", fontsize=6.5, color=DARK_GREEN,
                            va="bottom", zorder=3,
                            bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.3})
        labels = []
        for step in steps:
            point = panel.get(step)
            extra = [] if not point else (["CPU"] if point["device"] == "CPU" else []) + \
                (["no KV", "cache"] if point["no_cache"] else [])
            labels.append("\n".join([step[4:]] + extra))
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=7.5, linespacing=1.1)
        ax.tick_params(axis="x", length=0)
        ax.set_xlim(-0.6, len(steps) - 0.4)
        gpus = {point["gpu"] for point in panel.values() if point["gpu"]}
        machine = " / ".join(sorted(gpus)) if gpus else "CPU"
        ax.set_title(f"{machine}\nQwen2.5-{size} shape", fontsize=9, linespacing=1.3)
        ax.grid(axis="y", color=LIGHT_GREY, linewidth=0.6)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        if ax is not axes[0]:
            ax.tick_params(axis="y", left=False)
        ax.set_xlabel("step", fontsize=8)
    axes[0].set_ylabel("tokens/s (log scale)")
    legend = [(plt.Line2D([0], [0], color=ORANGE, marker="s", markersize=5, linewidth=1.4),
               "prompt (prefill) tokens/s"),
              (plt.Line2D([0], [0], color=BLUE, marker="o", markersize=5, linewidth=1.4),
               "generated (decode) tokens/s"),
              (plt.Line2D([0], [0], color=INK, linestyle=roofline_style, linewidth=1.0),
               "decode roofline of the step's row: copy bandwidth / weight bytes a token (its "
               "value at the panel's foot)")]
    if any("llama.cpp" in panel for panel in panels.values()):
        legend += [(plt.Line2D([0], [0], color=GREEN, linewidth=1.2),
                    "llama.cpp, prompt (its newest row)"),
                   (plt.Line2D([0], [0], color=GREEN, linestyle=(0, (1, 1.2)), linewidth=1.2),
                    "llama.cpp, decode")]
    fig.legend([handle for handle, _ in legend], [text for _, text in legend],
               loc="upper left", bbox_to_anchor=(0.055, 0.875), ncol=3, fontsize=7.5,
               frameon=False, handlelength=2.2, columnspacing=1.6)
    no_cache = sorted({step for panel in panels.values() for step, point in panel.items()
                       if point["no_cache"]})
    note = ("Rows: " + "; ".join(parts) + ". A later record's row of an engine replaces an "
            "earlier one's.\nA step without a point at a size has no row there; none is "
            "invented. " + (f"Missing: {', '.join(missing)}." if missing else
                            "Here every step has both points at every size.")
            + (f" {' and '.join(no_cache)} {'have' if len(no_cache) > 1 else 'has'} no KV "
               "cache: each generated token re-runs the whole sequence." if no_cache else ""))
    fig.text(0.01, 0.015, note, fontsize=7, va="bottom", linespacing=1.45, wrap=True)
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


# ---- block_formats ----

DEQUANTIZE_CPP = os.path.join(ROOT, "step03_tensors", "dequantize.cpp")
QUANT_DOT_H = os.path.join(ROOT, "step11_quantized_weights", "quant_dot.h")
C_TYPE_BYTES = {"float": 4, "int32_t": 4, "int8_t": 1, "uint8_t": 1}


def block_layout(name):
    """(bytes, elements, [(field, bytes, offset)]) of ggml's block_NAME as dequantize.cpp's
    table above its routine lists it: "//   qs[32]  int8  32 bytes  offset 2"."""
    source = open(DEQUANTIZE_CPP, encoding="utf-8").read()
    header = re.search(rf"// block_{name} \((\d+) bytes, (\d+) elements", source)
    fields = []
    for line in source[header.end():].splitlines()[1:]:
        found = re.match(r"\s*//\s+(\w+)(?:\[\d+\])?\s+\w+\s+(\d+) bytes\s+offset (\d+)", line)
        if found:
            fields.append((found[1], int(found[2]), int(found[3])))
        elif not line.strip().startswith("//"):
            break
    n_bytes, n_elements = int(header[1]), int(header[2])
    assert sum(size for _, size, _ in fields) == n_bytes, f"block_{name}'s fields"
    return n_bytes, n_elements, fields


def activation_layout():
    """The same for quant_dot.h's BlockQ8, from its struct's members."""
    source = open(QUANT_DOT_H, encoding="utf-8").read()
    body = re.search(r"struct BlockQ8 \{(.*?)\};", source, re.S)[1]
    fields, offset = [], 0
    for c_type, field, count in re.findall(r"(\w+) (\w+)(?:\[(\d+)\])?;", body):
        size = C_TYPE_BYTES[c_type] * int(count or 1)
        fields.append((field, size, offset))
        offset += size
    elements = int(re.search(r"constexpr int kQ8BlockSize = (\d+);", source)[1])
    return offset, elements, fields


# What each field is for: its colour, and which part of a weight's bits it carries.
SCALE_FACE, MIN_FACE, LOW_FACE, HIGH_FACE, ACT_FACE = (LIGHT_ORANGE, LIGHT_GREEN, LIGHT_BLUE,
                                                       LIGHT_PURPLE, LIGHT_RED)
FIELD_FACES = {"d": SCALE_FACE, "scales": SCALE_FACE, "dmin": MIN_FACE, "sum": MIN_FACE,
               "qs": LOW_FACE, "ql": LOW_FACE, "qh": HIGH_FACE, "q": ACT_FACE}


def block_formats():
    formats = {name: block_layout(name) for name in ("q8_0", "q5_0", "q4_K", "q6_K")}
    activation = activation_layout()
    fig, ax = canvas(12, 12.1)
    ax.text(0.3, 11.85, "The blocks step 11 reads as the file stores them, and the 8-bit "
            "activation block the CPU makes", fontsize=12, fontweight="bold", va="center")
    legend = [(SCALE_FACE, "a scale: multiplies q"), (MIN_FACE, "a minimum: subtracted"),
              (LOW_FACE, "the low 4 or 8 bits of each q"), (HIGH_FACE, "its high bits"),
              (ACT_FACE, "8-bit activations")]
    x = 0.3
    for face, label in legend:
        box(ax, x, 11.42, 0.26, 0.18, face)
        ax.text(x + 0.33, 11.51, label, va="center", fontsize=8)
        x += 0.45 + 0.062 * len(label)
    ax.text(11.7, 11.51, "f16 = IEEE half float; every field little-endian", ha="right",
            va="center", fontsize=7.5, color=GREY)

    strip_x, small, large = 2.1, 0.18, 0.045  # inches a byte: 32-weight blocks, super-blocks
    ax.text(11.7, 11.27, f"widths to scale: {small / large:g} times wider a byte in the rows of 32 "
            "than in those of 256", ha="right", va="center", fontsize=7.5, color=GREY)

    def title(y, name, n_bytes, n_elements, things="weights", one="a weight"):
        ax.text(0.3, y + 0.36, name, fontsize=11, fontweight="bold", va="center")
        ax.text(0.3, y + 0.1, f"{n_elements} {things} in {n_bytes} B", fontsize=8, va="center")
        bits = 8 * n_bytes / n_elements
        ax.text(0.3, y - 0.12, f"{bits:g} bits {one}", fontsize=8, va="center",
                fontweight="bold", color=BLUE)

    def strip(y, layout, scale, height=0.46):
        """The block's fields side by side, scale inches a byte; {field: (x0, x1)}."""
        _, _, fields = layout
        spans = {}
        for field, size, offset in fields:
            x0 = strip_x + offset * scale
            box(ax, x0, y, size * scale, height, FIELD_FACES[field])
            spans[field] = (x0, x0 + size * scale)
        # The byte offset under every border, but none crowding another (the block's start
        # and end always shown): Q4_K's 2 and 4 and Q6_K's 208 are left to the field names.
        offsets = [offset for _, _, offset in fields]
        shown = [0]
        for offset in offsets[1:]:
            if (offset - shown[-1]) * scale >= 0.3 and (layout[0] - offset) * scale >= 0.3:
                shown.append(offset)
        shown.append(layout[0])
        for offset in shown:
            ax.text(strip_x + offset * scale, y - 0.05, str(offset), ha="center", va="top",
                    fontsize=7, color=GREY)
        return spans

    def cells(x0, y, width, height, count, labels, fontsize=6):
        """count equal cells from x0, thin borders between them, a label in each."""
        cell = width / count
        ax.vlines([x0 + i * cell for i in range(1, count)], y, y + height, color=INK,
                  linewidth=0.35)
        for i, label in enumerate(labels):
            ax.text(x0 + (i + 0.5) * cell, y + height / 2, label, ha="center", va="center",
                    fontsize=fontsize)

    def field_name(x0, x1, y, text):
        """A field's name, centred above it."""
        ax.text((x0 + x1) / 2, y + 0.06, text, ha="center", va="bottom", fontsize=7.5,
                family="monospace")

    def leader(x, y, text, dx):
        """A label for a field too narrow to hold it, above the strip and to one side."""
        ax.annotate(text, xy=(x, y), xytext=(x + dx, y + 0.2), fontsize=7.5,
                    family="monospace", ha="right" if dx < 0 else "left", va="center",
                    arrowprops={"arrowstyle": "-", "color": INK, "linewidth": 0.6})

    # Q8_0: a scale and 32 bytes.
    y = 10.3
    n_bytes, n_elements, _ = formats["q8_0"]
    title(y, "Q8_0", n_bytes, n_elements)
    spans = strip(y, formats["q8_0"], small)
    x0, x1 = spans["d"]
    ax.text((x0 + x1) / 2, y + 0.23, "d\nf16", ha="center", va="center", fontsize=7,
            linespacing=1.1)
    x0, x1 = spans["qs"]
    cells(x0, y, x1 - x0, 0.46, 32, [str(i) for i in range(32)])
    field_name(x0, x1, y + 0.46, "qs[32]: int8 q of weight i in byte i")
    ax.text(x1 + 0.25, y + 0.23, "w[i] = d · qs[i]", va="center", fontsize=9,
            family="monospace")

    # Q5_0: a scale, 32 fifth bits, 16 bytes of nibble pairs.
    y = 8.85
    n_bytes, n_elements, _ = formats["q5_0"]
    title(y, "Q5_0", n_bytes, n_elements)
    spans = strip(y, formats["q5_0"], small)
    x0, x1 = spans["d"]
    ax.text((x0 + x1) / 2, y + 0.23, "d\nf16", ha="center", va="center", fontsize=7,
            linespacing=1.1)
    x0, x1 = spans["qh"]
    cells(x0, y, x1 - x0, 0.46, 4, [])
    ax.text((x0 + x1) / 2, y + 0.23, "32 bits", ha="center", va="center", fontsize=6.5,
            bbox={"facecolor": HIGH_FACE, "edgecolor": "none", "pad": 0.5})
    field_name(x0, x1, y + 0.46, "qh")
    x0, x1 = spans["qs"]
    ax.hlines(y + 0.23, x0, x1, color=INK, linewidth=0.35)
    cells(x0, y + 0.23, x1 - x0, 0.23, 16, [str(j + 16) for j in range(16)])
    cells(x0, y, x1 - x0, 0.23, 16, [str(j) for j in range(16)])
    field_name(x0, x1, y + 0.46, "qs[16]")
    ax.text(x1 + 0.08, y + 0.345, "← high nibble of qs[j]: weight j + 16", va="center",
            fontsize=7.5)
    ax.text(x1 + 0.08, y + 0.115, "← low nibble of qs[j]: weight j", va="center", fontsize=7.5)
    ax.text(x1 + 0.08, y + 0.6, "qh, a u32: bit j is weight j's 5th bit", va="center",
            fontsize=7.5)
    ax.text(strip_x, y - 0.3, "q = 4 bits from qs | the 5th bit from qh << 4  (0 … 31);   "
            "w = d · (q − 16)", va="center", fontsize=8.5, family="monospace")

    # Q4_K: a super-block of 8 sub-blocks of 32, each with a 6-bit scale and a 6-bit min.
    y = 7.2
    n_bytes, n_elements, _ = formats["q4_K"]
    title(y, "Q4_K", n_bytes, n_elements)
    ax.text(0.3, y - 0.34, "8 sub-blocks of 32", fontsize=8, va="center")
    height = 0.5
    spans = strip(y, formats["q4_K"], large, height)
    leader(sum(spans["d"]) / 2, y + height, "d f16", -0.25)
    leader(sum(spans["dmin"]) / 2, y + height, "dmin f16", 0.28)
    x0, x1 = spans["scales"]
    ax.text((x0 + x1) / 2, y + height / 2, "12 B\nscales,\nmins", ha="center", va="center",
            fontsize=6, linespacing=1.0)
    x0, x1 = spans["qs"]
    chunk = (x1 - x0) / 4
    ax.hlines(y + height / 2, x0, x1, color=INK, linewidth=0.35)
    ax.vlines([x0 + c * chunk for c in range(1, 4)], y, y + height, color=INK, linewidth=0.8)
    for c in range(4):
        middle = x0 + (c + 0.5) * chunk
        ax.text(middle, y + 0.75 * height, f"high: sub-block {2 * c + 1}, w {64 * c + 32}–"
                f"{64 * c + 63}", ha="center", va="center", fontsize=6.5)
        ax.text(middle, y + 0.25 * height, f"low: sub-block {2 * c}, w {64 * c}–{64 * c + 31}",
                ha="center", va="center", fontsize=6.5)
    field_name(x0, x1, y + height, "qs[128]: 4 runs of 32 bytes, one pair of sub-blocks each "
               "(low nibbles the even one)")
    ax.text(x1 + 0.2, y + height / 2, "w = (d · scale_s) · q\n    − dmin · min_s\n"
            "s: the weight's sub-block,\nq: its 4 bits (0 … 15)", va="center", fontsize=8.5,
            family="monospace", linespacing=1.3)

    # The 12 bytes of scales and mins, bit by bit, under the strip.
    zoom_y, zoom_x, zoom_byte, zoom_height = y - 1.05, strip_x + 0.25, 0.56, 0.3
    x0, x1 = spans["scales"]
    for corner, target in ((x0, zoom_x), (x1, zoom_x + 12 * zoom_byte)):
        ax.plot([corner, target], [y, zoom_y + zoom_height + 0.17], color=GREY, linewidth=0.6,
                linestyle=(0, (2, 2)))
    for k in range(12):
        left = zoom_x + k * zoom_byte
        ax.text(left + zoom_byte / 2, zoom_y + zoom_height + 0.03, f"byte {k}", ha="center",
                va="bottom", fontsize=6.5, color=GREY)
        if k < 8:  # 2 high bits of sub-block k % 4 + 4's value, 6 bits of sub-block k % 4's
            kind, face = ("s", SCALE_FACE) if k < 4 else ("m", MIN_FACE)
            parts = [(2, f"{kind}{k % 4 + 4}", face), (6, f"{kind}{k % 4}", face)]
        else:  # low 4 bits of min and scale of sub-block k - 4
            parts = [(4, f"m{k - 4}", MIN_FACE), (4, f"s{k - 4}", SCALE_FACE)]
        bit_x = left
        for bits, label, face in parts:
            width = zoom_byte * bits / 8
            box(ax, bit_x, zoom_y, width, zoom_height, face)
            ax.text(bit_x + width / 2, zoom_y + zoom_height / 2, label, ha="center",
                    va="center", fontsize=6 if bits == 2 else 7)
            bit_x += width
    note_x = zoom_x + 12 * zoom_byte + 0.2
    ax.text(note_x, zoom_y + zoom_height / 2,
            "sN, mN: sub-block N's 6-bit scale\nand min; bit 7 of a byte on the left.\n"
            "Sub-blocks 0-3: the low 6 bits of\nbytes 0-3 (scales) and 4-7 (mins).\n"
            "Sub-blocks 4-7: 4 bits in bytes 8-11,\nthe top 2 in the top of bytes 0-7.",
            va="center", fontsize=7, linespacing=1.3)

    # Q6_K: 16 sub-blocks of 16, int8 scales, 6-bit q from two arrays.
    y = 4.75
    n_bytes, n_elements, _ = formats["q6_K"]
    title(y, "Q6_K", n_bytes, n_elements)
    ax.text(0.3, y - 0.34, "16 sub-blocks of 16", fontsize=8, va="center")
    spans = strip(y, formats["q6_K"], large, height)
    x0, x1 = spans["ql"]
    chunk = (x1 - x0) / 4
    ax.hlines(y + height / 2, x0, x1, color=INK, linewidth=0.35)
    ax.vlines([x0 + c * chunk for c in range(1, 4)], y, y + height, color=INK, linewidth=0.8)
    for c in range(4):  # ql[32c + l]: half c // 2, the low nibbles quarter c % 2, high + 2
        first = 128 * (c // 2) + 32 * (c % 2)
        middle = x0 + (c + 0.5) * chunk
        ax.text(middle, y + 0.75 * height, f"high: w {first + 64}–{first + 95}", ha="center",
                va="center", fontsize=6.5)
        ax.text(middle, y + 0.25 * height, f"low: w {first}–{first + 31}", ha="center",
                va="center", fontsize=6.5)
    field_name(x0, x1, y + height, "ql[128]: the low 4 bits of each q")
    x0, x1 = spans["qh"]
    chunk = (x1 - x0) / 2
    ax.vlines([x0 + chunk], y, y + height, color=INK, linewidth=0.8)
    for c in range(2):
        ax.text(x0 + (c + 0.5) * chunk, y + height / 2, f"2 bits each of\nw l, l+32, l+64, "
                f"l+96\n(l = {128 * c}…{128 * c + 31})", ha="center", va="center", fontsize=6,
                linespacing=1.1)
    field_name(x0, x1, y + height, "qh[64]: high 2 bits, 4 a byte")
    x0, x1 = spans["scales"]
    ax.text((x0 + x1) / 2, y + height / 2, "16 int8\nscales", ha="center", va="center",
            fontsize=6.5, linespacing=1.1)
    leader(sum(spans["d"]) / 2, y + height, "d f16", -0.3)
    ax.text(strip_x, y - 0.3, "w = (d · scales[i / 16]) · (q − 32),   q = 4 bits from ql | "
            "2 bits from qh << 4  (0 … 63)", va="center", fontsize=8.5, family="monospace")
    ax.text(strip_x, y - 0.52, "weight i = 128h + 32k + l (k < 4, l < 32): nibble k / 2 of "
            "ql[64h + 32(k % 2) + l], bits 2k and 2k+1 of qh[32h + l]", va="center",
            fontsize=7.5, color=INK)

    # The CPU's activation block.
    ax.plot([0.3, 11.7], [3.85, 3.85], color=LIGHT_GREY, linewidth=0.8)
    y = 3.05
    n_bytes, n_elements, fields = activation
    title(y, "BlockQ8", n_bytes, n_elements, "activations", "an activation")
    spans = strip(y, activation, small)
    for field, size, _ in fields:
        x0, x1 = spans[field]
        if field == "q":
            cells(x0, y, x1 - x0, 0.46, size, [str(i) for i in range(size)])
            field_name(x0, x1, y + 0.46, f"q[{size}]: int8, |q| ≤ 127")
        else:
            c_type = "float" if field == "d" else "int32"
            ax.text((x0 + x1) / 2, y + 0.23, f"{field}\n{c_type}", ha="center", va="center",
                    fontsize=7, linespacing=1.1)
    ax.text(strip_x, y - 0.3, "x[i] ≈ d · q[i],  d = max |x| / 127,  q[i] = round(x[i] / d),  "
            "sum = q[0] + … + q[31]", va="center", fontsize=8.5, family="monospace")
    ax.text(strip_x, y - 0.52, "quant_dot.h: made from each token's 32 floats at every CPU "
            "matmul; sum is what a K-quant's minimums multiply. The GPU keeps x in floats.",
            va="center", fontsize=7.5)

    # Bits a weight, to one scale: what decoding reads for each weight.
    ax.plot([0.3, 11.7], [2.1, 2.1], color=LIGHT_GREY, linewidth=0.8)
    ax.text(0.3, 1.8, "Bits a weight", fontsize=11, fontweight="bold", va="center")
    ax.text(0.3, 1.55, "to one scale: what a\ndecoded token reads\nfor each weight; past "
            "the\nblue and purple, the\nscales' and minimums'\nshare", fontsize=8, va="top",
            linespacing=1.3)
    rank = {"qs": 0, "ql": 0, "qh": 1, "d": 2, "scales": 2, "dmin": 3}
    rows = [("F16", 2, 1, [(16.0, LIGHT_GREY)])]
    for name in ("q8_0", "q6_K", "q5_0", "q4_K"):
        n_bytes, n_elements, fields = formats[name]
        parts = [(8 * size / n_elements, FIELD_FACES[field])
                 for field, size, _ in sorted(fields, key=lambda field: rank[field[0]])]
        rows.append((name.upper(), n_bytes, n_elements, parts))
    per_bit, bar_height = 0.4, 0.2
    for index, (name, n_bytes, n_elements, parts) in enumerate(rows):
        row_y = 1.6 - index * 0.3
        ax.text(strip_x - 0.08, row_y + bar_height / 2, name, ha="right", va="center",
                fontsize=8, family="monospace", fontweight="bold")
        left = strip_x
        for bits, face in parts:
            ax.add_patch(Rectangle((left, row_y), bits * per_bit, bar_height, facecolor=face,
                                   edgecolor=INK, linewidth=0.5))
            left += bits * per_bit
        total = 8 * n_bytes / n_elements
        ax.text(left + 0.1, row_y + bar_height / 2,
                f"{total:g} bits = {f'{n_bytes / n_elements:.7f}'.rstrip('0').rstrip('.')} bytes"
                + ("" if n_elements == 1 else f"  ({n_bytes} B / {n_elements})"),
                va="center", fontsize=8)
    return fig


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


# ---- main ----

FIGURES = {
    "gguf_layout": gguf_layout,
    "naive_matmul_threads": naive_matmul_threads,
    "kv_cache_layout": kv_cache_layout,
    "sampler_pipeline": sampler_pipeline,
    "matvec_warp_per_row": matvec_warp_per_row,
    "warp_shuffle_sum": warp_shuffle_sum,
    "split_attention": split_attention,
    "tiled_gemm": tiled_gemm,
    "step09_kernels": step09_kernels,
    "series_speed": series_speed,
    "decode_timeline": decode_timeline,
    "block_formats": block_formats,
    "tensor_core_gemm": tensor_core_gemm,
    "flash_attention_tiles": flash_attention_tiles,
    "series_staircase": series_staircase,
}


def main():
    parser = argparse.ArgumentParser(description="Draws the articles' figures as SVG.")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "figures"),
                        help="directory for the SVG files (default: docs/figures)")
    parser.add_argument("--source", action="append", default=[], metavar="MD",
                        help="draw series_staircase from these tables of tools/bench/bench_series.py "
                        "instead of the records of docs/bench/ (repeatable, later files win; "
                        "alone it draws only series_staircase): `make bench` does, on the table "
                        "it has just written")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"figures to draw (default: all): {', '.join(FIGURES)}")
    args = parser.parse_args()
    unknown = [name for name in args.names if name not in FIGURES]
    if unknown:
        parser.error(f"no figure named {', '.join(unknown)}; there are {', '.join(FIGURES)}")
    missing = [source for source in args.source if not os.path.isfile(source)]
    if missing:
        parser.error(f"--source: no file {', '.join(missing)}")
    names = args.names or (["series_staircase"] if args.source else list(FIGURES))
    os.makedirs(args.out, exist_ok=True)
    for name in names:
        if name == "series_staircase" and args.source:
            fig = series_staircase([os.path.abspath(source) for source in args.source])
        else:
            fig = FIGURES[name]()
        path = os.path.join(args.out, name + ".svg")
        fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight",
                    pad_inches=0.12)
        plt.close(fig)
        print(f"{os.path.relpath(path)}: {os.path.getsize(path):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
