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
    step09_coalesced_kernels/matvec.cu's matvec_kernel, the one-token product: a warp per row of
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
hybrid_cache_memory.svg (step 14)
    Qwen3.5's hybrid cache against the context length, log-log, for the published shapes of
    Qwen3.5-0.8B, 4B and 9B (4B and 9B have the same cache): the KV cache of the attention layers
    (F16) growing with the positions, the Gated DeltaNet layers' states (fp32) flat, the KV cache
    the model would need with attention in every layer, and where KV and state are equal; the
    sizes counted as step14_qwen35_hybrid/kv_cache.cpp counts them (hybrid.py).
chunk_matrices.svg (step 15)
    One chunk of one value head in step15_chunked_delta_rule/chunked_delta_rule.cu's
    chunk_prepare_kernel: Q, K, V, beta and G at their shapes, the warps' rows, P, the shared
    array holding A^T above its diagonal and T on and below it (a row of the forward
    substitution drawn), and W and U as products with the lower triangular T (chunked.py).
chunk_state_pass.svg (step 15)
    The two launches over a 512-token prompt chunk at Qwen3.5-0.8B's 16 value heads:
    chunk_prepare's grid of (chunks, heads) blocks, all independent; chunk_state_pass's blocks
    of one head, each walking the chunks with its 16 columns of the state in registers; a
    block's slice by warp and the three products of one chunk (chunked.py).

The four pictures of step 9's kernels take their tile sizes, warp counts and thresholds from the
constexpr lines of step 9's CUDA files (kernels.py: cuda_constants), step 12's from its GEMM's and
flash attention's files, step 15's from chunked_delta_rule.cu, so they follow the kernels when
those change.

This file draws them; the figures live in its neighbours by family: style.py (palette, helpers),
layouts.py (bytes in memory), sampler.py, kernels.py (steps 6 to 10), speed.py (the records),
tensor_cores.py (step 12), hybrid.py (step 14), chunked.py (step 15).

The SVGs are byte-identical from run to run (fixed hash salt, no date) and keep their text as
text (svg.fonttype 'none'), so they stay small and diff well.

Usage: python3 tools/figures/plots.py [--out docs/figures] [--source TABLE.md ...] [NAME ...]
       (default: every figure; with --source only series_staircase, from those tables)
Needs matplotlib (`make setup` installs it); the rest is the standard library.
"""

import argparse
import os
import sys

from style import ROOT, plt
from layouts import block_formats, gguf_layout, kv_cache_layout
from sampler import sampler_pipeline
from kernels import (
    decode_timeline, matvec_warp_per_row, naive_matmul_threads, split_attention, step09_kernels,
    tiled_gemm, warp_shuffle_sum)
from speed import series_speed, series_staircase
from tensor_cores import flash_attention_tiles, tensor_core_gemm
from hybrid import hybrid_cache_memory
from chunked import chunk_matrices, chunk_state_pass

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
    "hybrid_cache_memory": hybrid_cache_memory,
    "chunk_matrices": chunk_matrices,
    "chunk_state_pass": chunk_state_pass,
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
