// decode_attention.cu - the attention of one new token over the cached positions, split over
// the positions ("flash-decoding"): split_attention_kernel computes each chunk's partial
// result, merge_chunks_kernel combines them. Its CPU twin is ops_cpu.cpp's attention with one
// query; attention.cu chooses it. decode_attention runs the same kernels for the decode step,
// which reads the number of positions from device memory (a CUDA graph replays the same
// arguments for every token).
// The decode step's merge can also write the heads' outputs as 8-bit blocks, the input of a
// block-type Wo.
// Written in step 9; last changed in step 14 (templates on a lane's slots, kSlots: heads of 256).
//
// One thread per query head would keep 12 threads busy for a 1.5B model, each reading every
// cached key and value alone. The work is a read of the cache, (positions, kv_dim) floats of K
// and of V, so it wants the whole GPU reading it. Here the positions are cut into chunks and
// each block takes one chunk of one KV head, for two of the query heads that share that head
// (kBlockHeads; grouped-query attention). A chunk is a whole number of passes of 32 positions,
// as few as makes about two blocks per multiprocessor (a short cache has fewer: one pass a
// chunk). In a pass each of the 8 warps takes 4 positions, a whole row each, lanes reading
// neighbouring floats (or, from an F16 cache, neighbouring runs of 4 halves: cache_elements.cuh).
//
// Why not all of a group's heads in one block, reading each cache row once? A decode step's
// cache is short (513 positions after a 512-token prompt: 17 passes), so the grid is small, and
// a block's time is the chain of its warps' instructions: for every position, a dot product and
// a shuffle tree per head. With all six of Qwen2.5-1.5B's heads in a block, 34 blocks on 132
// multiprocessors ran those chains six heads deep; with two heads a block there are three times
// the blocks, their chains a third as long. The group's blocks read the same rows at about the
// same time, so the second and third reads mostly come from L2, not from the memory. For the
// same reason a pass is 8 warps of 4 positions, not 4 of 8: each warp's chain half as long.
//
// A softmax needs the maximum and the sum over *all* positions, which no chunk has. So each
// chunk keeps its own: its largest score m, the sum l of exp(score - m) and the sum of the
// values weighted by exp(score - m). Two such partial results combine exactly: with
// M = max(m1, m2), l = l1 e^(m1-M) + l2 e^(m2-M), and likewise for the weighted values (the
// "online softmax"). A block does that from pass to pass; merge_chunks_kernel does it over
// the chunks, and divides by l.
#include <algorithm>

#include "attention.cuh"
#include "cache_elements.cuh"
#include "cuda_check.h"
#include "cuda_device.h"
#include "dependent_launch.cuh"
#include "device_buffer.h"
#include "ops_cuda.h"
#include "reduce.cuh"

namespace gpu {

constexpr int kDecodeWarps = 8;
constexpr int kPositionsPerWarp = 4;
constexpr int kPassPositions = kDecodeWarps * kPositionsPerWarp;  // 32: one per lane, later
constexpr int kBlockHeads = 2;               // query heads a block takes, of its KV head's group
constexpr int kBlocksPerMultiprocessor = 2;  // the grid a long cache gets
static_assert(kBlockHeads <= kDecodeWarps, "the online softmax takes one warp per head");

// A KV head's query heads in blocks of kBlockHeads (the last may have fewer).
__host__ __device__ int head_blocks(int n_heads, int n_kv_heads) {
    return (n_heads / n_kv_heads + kBlockHeads - 1) / kBlockHeads;
}

// Every KV head's blocks of query heads: the split grid's second dimension.
static int all_head_blocks(int n_heads, int n_kv_heads) {
    return n_kv_heads * head_blocks(n_heads, n_kv_heads);
}

// How the positions are cut: chunks of whole passes, as few passes a chunk as keeps the
// number of chunks at most max_chunks. The host and the kernels work it out alike (a decode
// step's graph knows the number of positions only on the device).
struct ChunkLayout {
    int chunk_positions;
    int n_chunks;
};

__host__ __device__ ChunkLayout chunk_layout(int n_positions, int max_chunks) {
    const int n_passes = (n_positions + kPassPositions - 1) / kPassPositions;
    const int passes_per_chunk = (n_passes + max_chunks - 1) / max_chunks;
    const int chunk_positions = passes_per_chunk * kPassPositions;
    return ChunkLayout{chunk_positions, (n_positions + chunk_positions - 1) / chunk_positions};
}

// The chunks' partial results, for each (chunk, query head).
struct ChunkPartials {
    float* max;     // (n_chunks, n_heads)
    float* sum;     // (n_chunks, n_heads)
    float* values;  // (n_chunks, n_heads, head_dim)
};

// Block (chunk, y) takes chunk `chunk` of block y % head_blocks of KV head y / head_blocks' query
// heads. With `position`, the query is at *position and n_positions is *position + 1, and a
// grid sized for the longest context has blocks with no chunk to do. Cache: the cache's
// element type (cache_elements.cuh), which also sets the dimensions a lane holds (slot_dim);
// kSlots: how many (attention.cuh), for heads of up to 32 kSlots values.
// Everything it reads is an earlier kernel's, so it waits for the previous kernel first
// (dependent_launch.cuh), in the blocks with no chunk too.
template <typename Cache, int kSlots>
__global__ void split_attention_kernel(ChunkPartials partials, const float* q, const Cache* k,
                                       const Cache* v, int n_positions, const int32_t* position,
                                       int max_chunks, int n_heads, int n_kv_heads, int head_dim) {
    wait_for_previous_kernel();
    allow_next_kernel();
    if (position) n_positions = *position + 1;
    const ChunkLayout layout = chunk_layout(n_positions, max_chunks);
    if (int(blockIdx.x) >= layout.n_chunks) return;
    const int chunk_positions = layout.chunk_positions;
    // BEGIN SOLUTION step09 split_attention_kernel
    // The block's query heads, scaled, in slot order: entry lane + 32 s holds the dimension
    // slot_dim(lane, s), so the lanes read neighbouring entries whatever the cache's type.
    constexpr int kDims = kSlots * kWarpSize;  // the longest head this instance holds
    __shared__ float queries[kBlockHeads][kDims];
    __shared__ float weights[kBlockHeads][kPassPositions];  // scores, then exp(score - max)
    __shared__ float running_max[kBlockHeads], running_sum[kBlockHeads], rescale[kBlockHeads];
    __shared__ float warp_values[kDecodeWarps][kBlockHeads][kDims];
    const int chunk = blockIdx.x, group = n_heads / n_kv_heads;
    const int blocks = head_blocks(n_heads, n_kv_heads), kv_head = blockIdx.y / blocks;
    const int first_head = kv_head * group + blockIdx.y % blocks * kBlockHeads;
    const int heads = min(kBlockHeads, (kv_head + 1) * group - first_head);  // 1 or 2
    const int kv_dim = n_kv_heads * head_dim;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const float scale = 1.0f / sqrtf(float(head_dim));
#pragma unroll  // every load of q issued before the first store
    for (int i = threadIdx.x; i < kBlockHeads * kDims; i += kDecodeWarps * kWarpSize) {
        const int g = i / kDims, slot = i % kDims;
        const int d = slot_dim<Cache, kSlots>(slot % kWarpSize, slot / kWarpSize);
        queries[g][slot] =
            g < heads && d < head_dim ? q[(first_head + g) * head_dim + d] * scale : 0;
    }
    if (threadIdx.x < heads) {
        running_max[threadIdx.x] = -INFINITY;
        running_sum[threadIdx.x] = 0.0f;
    }
    const int chunk_end = min(n_positions, (chunk + 1) * chunk_positions);
    float value_sum[kBlockHeads][kSlots] = {};  // this warp's share, lane's dimensions

    for (int pass = chunk * chunk_positions; pass < chunk_end; pass += kPassPositions) {
        __syncthreads();  // the queries are stored; the last pass's weights are used
        // The warp's 4 key rows and 4 value rows, all loaded before the first is used (the
        // loops are unrolled): 8 loads in flight per lane instead of one at a time.
        float key[kPositionsPerWarp][kSlots], value[kPositionsPerWarp][kSlots];
#pragma unroll
        for (int p = 0; p < kPositionsPerWarp; p++) {
            const int position = pass + warp + p * kDecodeWarps;
            const bool inside = position < chunk_end;
            const int64_t at = int64_t(position) * kv_dim + kv_head * head_dim;
            load_slots(k + at, lane, head_dim, inside, key[p]);
            load_slots(v + at, lane, head_dim, inside, value[p]);
        }
#pragma unroll
        for (int p = 0; p < kPositionsPerWarp; p++) {
            const int slot = warp + p * kDecodeWarps;  // the position's place in the pass
            // The scores of the block's heads, reduced together: each step of the shuffle tree
            // moves both, so they wait for the tree once, not once a head. A row past the
            // group is zeros, computed and never kept.
            float partial[kBlockHeads];
#pragma unroll
            for (int g = 0; g < kBlockHeads; g++) {
                partial[g] = 0.0f;
#pragma unroll
                for (int s = 0; s < kSlots; s++)
                    if (slot_dim<Cache, kSlots>(lane, s) < head_dim)
                        partial[g] += queries[g][lane + s * kWarpSize] * key[p][s];
            }
            for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
#pragma unroll
                for (int g = 0; g < kBlockHeads; g++)
                    partial[g] += __shfl_xor_sync(kFullWarp, partial[g], offset);
            if (lane == 0)
                for (int g = 0; g < heads; g++)
                    weights[g][slot] = pass + slot < chunk_end ? partial[g] : -INFINITY;
        }
        __syncthreads();
        // The online softmax, one warp per query head: lane j holds position pass + j. The
        // pass holds at least one position, so the new maximum is finite.
        for (int g = warp; g < heads; g += kDecodeWarps) {
            const float score = weights[g][lane], old_max = running_max[g];
            const float new_max = fmaxf(old_max, warp_max(score));
            const float weight = expf(score - new_max);  // 0 for the masked slots
            const float weight_sum = warp_sum(weight);
            weights[g][lane] = weight;
            __syncwarp();  // every lane has read running_max[g] before lane 0 replaces it
            if (lane == 0) {
                rescale[g] = expf(old_max - new_max);  // 0 in the first pass
                running_sum[g] = running_sum[g] * rescale[g] + weight_sum;
                running_max[g] = new_max;
            }
        }
        __syncthreads();
        // The weighted values (a masked slot's weight is 0, its value row 0).
#pragma unroll
        for (int g = 0; g < kBlockHeads; g++)
            if (g < heads) {
#pragma unroll
                for (int s = 0; s < kSlots; s++) value_sum[g][s] *= rescale[g];
#pragma unroll
                for (int p = 0; p < kPositionsPerWarp; p++) {
                    const float weight = weights[g][warp + p * kDecodeWarps];
#pragma unroll
                    for (int s = 0; s < kSlots; s++) value_sum[g][s] += weight * value[p][s];
                }
            }
    }

    // The warps' sums, added up: the chunk's result.
#pragma unroll
    for (int g = 0; g < kBlockHeads; g++)
#pragma unroll
        for (int s = 0; s < kSlots; s++)
            if (g < heads && slot_dim<Cache, kSlots>(lane, s) < head_dim)
                warp_values[warp][g][slot_dim<Cache, kSlots>(lane, s)] = value_sum[g][s];
    __syncthreads();
    for (int i = threadIdx.x; i < heads * head_dim; i += blockDim.x) {
        const int g = i / head_dim, d = i % head_dim;
        float total = 0.0f;
        for (int w = 0; w < kDecodeWarps; w++) total += warp_values[w][g][d];
        partials.values[(int64_t(chunk) * n_heads + first_head + g) * head_dim + d] = total;
        if (d == 0) {
            partials.max[chunk * n_heads + first_head + g] = running_max[g];
            partials.sum[chunk * n_heads + first_head + g] = running_sum[g];
        }
    }
    // END SOLUTION
}

// One block per query head. Its 8 warps take every 8th chunk, lanes the head's dimensions,
// so the chunks' rows are read coalesced and 8 at a time; then the warps' sums are added. It
// waits for the split first, as split_attention_kernel does for the kernel before it.
// With out_q8.q, the head's outputs are also written rounded to 8 bits, the input of a
// block-type Wo (warp w quantizes outputs 32w .. 32w + 31, then 32w + 256 ..; head_dim must be a
// multiple of 32).
template <int kSlots>
__global__ void merge_chunks_kernel(float* out, ChunkPartials partials, int n_positions,
                                    const int32_t* position, int max_chunks, int n_heads,
                                    int head_dim, Q8Vector out_q8) {
    wait_for_previous_kernel();
    allow_next_kernel();
    if (position) n_positions = *position + 1;
    const int n_chunks = chunk_layout(n_positions, max_chunks).n_chunks;
    // BEGIN SOLUTION step09 merge_chunks_kernel
    __shared__ float warp_maxima[kDecodeWarps];
    __shared__ float warp_sums[kDecodeWarps];
    __shared__ float warp_values[kDecodeWarps][kSlots * kWarpSize];
    const int head = blockIdx.x;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    float max = -INFINITY;
    for (int c = threadIdx.x; c < n_chunks; c += blockDim.x)
        max = fmaxf(max, partials.max[c * n_heads + head]);
    max = warp_max(max);
    if (lane == 0) warp_maxima[warp] = max;
    __syncthreads();
    for (int i = 0; i < kDecodeWarps; i++) max = fmaxf(max, warp_maxima[i]);

    float sum = 0.0f, weighted[kSlots] = {};
#pragma unroll 4
    for (int c = warp; c < n_chunks; c += kDecodeWarps) {
        const float rescale = expf(partials.max[c * n_heads + head] - max);
        sum += partials.sum[c * n_heads + head] * rescale;
        const float* values = partials.values + (int64_t(c) * n_heads + head) * head_dim;
#pragma unroll
        for (int s = 0; s < kSlots; s++)
            if (lane + s * kWarpSize < head_dim)
                weighted[s] += values[lane + s * kWarpSize] * rescale;
    }
    if (lane == 0) warp_sums[warp] = sum;
#pragma unroll
    for (int s = 0; s < kSlots; s++)
        if (lane + s * kWarpSize < head_dim) warp_values[warp][lane + s * kWarpSize] = weighted[s];
    __syncthreads();
    float total = 0.0f;
    for (int i = 0; i < kDecodeWarps; i++) total += warp_sums[i];
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float value = 0.0f;
        for (int i = 0; i < kDecodeWarps; i++) value += warp_values[i][d];
        out[head * head_dim + d] = value / total;
    }
    // END SOLUTION
    if (!out_q8.q) return;
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {  // whole warps: head_dim % 32 == 0
        float value = 0.0f;
        for (int i = 0; i < kDecodeWarps; i++) value += warp_values[i][d];
        quantize_in_warp(value / total, out_q8, (head * head_dim + d) / kQ8BlockSize);
    }
}

// The three arrays of ChunkPartials for n_chunks chunks, in one buffer of
// n_chunks * n_heads * (head_dim + 2) floats.
static ChunkPartials partials_in(float* scratch, int n_chunks, int n_heads) {
    const size_t stats = size_t(n_chunks) * n_heads;
    return ChunkPartials{scratch, scratch + stats, scratch + 2 * stats};
}

// The chunks' partial results, in device memory kept between calls (a cudaMalloc per call
// would cost more than the kernels). There are at most ~2 chunks per multiprocessor, so it
// stays small at any context length. (A CUDA graph cannot allocate while it replays:
// decode_attention() takes scratch sized once, with the KV cache.)
static ChunkPartials chunk_partials(int n_chunks, int n_heads, int head_dim) {
    static DeviceBuffer<float> scratch;
    scratch.resize(size_t(n_chunks) * n_heads * (head_dim + 2));
    return partials_in(scratch.data(), n_chunks, n_heads);
}

// About kBlocksPerMultiprocessor blocks per multiprocessor: as many chunks as that takes for
// all the blocks of query heads.
static int max_decode_chunks(int n_heads, int n_kv_heads) {
    return std::max(1, kBlocksPerMultiprocessor * multiprocessor_count() /
                           all_head_blocks(n_heads, n_kv_heads));
}

// The split kernel over grid_chunks chunks of each KV head, then the merge, both instances
// chosen by the head's slots (attention.cuh) and the cache's type. split_attention and
// decode_attention differ only in where the number of positions comes from.
static void launch_split_and_merge(float* out, const float* q, const void* k, const void* v,
                                   CacheType cache_type, ChunkPartials partials, int grid_chunks,
                                   int n_positions, const int32_t* position, int max_chunks,
                                   HeadShape heads, Q8Vector out_q8, Stream stream) {
    const dim3 grid(grid_chunks, all_head_blocks(heads.n_heads, heads.n_kv_heads));
    with_head_slots(heads.head_dim, [&](auto head_slots) {
        constexpr int kSlots = decltype(head_slots)::value;
        with_cache_type(cache_type, [&](auto tag) {
            using Cache = typename decltype(tag)::type;
            launch_kernel("split_attention_kernel", split_attention_kernel<Cache, kSlots>, grid,
                          kDecodeWarps * kWarpSize, stream, partials, q,
                          static_cast<const Cache*>(k), static_cast<const Cache*>(v), n_positions,
                          position, max_chunks, heads.n_heads, heads.n_kv_heads, heads.head_dim);
        });
        launch_kernel("merge_chunks_kernel", merge_chunks_kernel<kSlots>, heads.n_heads,
                      kDecodeWarps * kWarpSize, stream, out, partials, n_positions, position,
                      max_chunks, heads.n_heads, heads.head_dim, out_q8);
    });
}

void split_attention(float* out, const float* q, const void* k, const void* v, int first_position,
                     int n_heads, int n_kv_heads, int head_dim, CacheType cache_type) {
    check_cache_shape(cache_type, head_dim, "attention");
    const int n_positions = first_position + 1;
    const int max_chunks = max_decode_chunks(n_heads, n_kv_heads);
    const int n_chunks = chunk_layout(n_positions, max_chunks).n_chunks;
    const ChunkPartials partials = chunk_partials(n_chunks, n_heads, head_dim);
    launch_split_and_merge(out, q, k, v, cache_type, partials, n_chunks, n_positions, nullptr,
                           max_chunks, HeadShape{n_heads, n_kv_heads, head_dim}, Q8Vector{},
                           nullptr);
}

// The grid is sized for the longest context: at most max_decode_chunks() chunks, and never
// more chunks than a full cache has passes.
static int decode_grid_chunks(int capacity, HeadShape heads) {
    return std::min(max_decode_chunks(heads.n_heads, heads.n_kv_heads),
                    (capacity + kPassPositions - 1) / kPassPositions);
}

int64_t decode_attention_scratch(int capacity, HeadShape heads) {
    return int64_t(decode_grid_chunks(capacity, heads)) * heads.n_heads * (heads.head_dim + 2);
}

void decode_attention(float* out, const float* q, const void* k_cache, const void* v_cache,
                      CacheType cache_type, float* scratch, int capacity, HeadShape heads,
                      const DecodeSlots* slots, Q8Vector out_q8, Stream stream) {
    check_attention_shape(heads.n_heads, heads.n_kv_heads, heads.head_dim);
    check_cache_shape(cache_type, heads.head_dim, "decode_attention");
    if (out_q8.q && heads.head_dim % kQ8BlockSize != 0)
        fail("gpu::decode_attention writes 8-bit blocks of heads of a multiple of 32, not %d",
             heads.head_dim);
    const int grid_chunks = decode_grid_chunks(capacity, heads);
    const int max_chunks = max_decode_chunks(heads.n_heads, heads.n_kv_heads);
    const ChunkPartials partials = partials_in(scratch, grid_chunks, heads.n_heads);
    launch_split_and_merge(out, q, k_cache, v_cache, cache_type, partials, grid_chunks, 0,
                           &slots->position, max_chunks, heads, out_q8, stream);
}

}  // namespace gpu
