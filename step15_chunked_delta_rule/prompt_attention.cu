// prompt_attention.cu - the attention of a prompt's new tokens over the cached positions and
// one another: a block per tile of 16 queries of one head. Its CPU twin is ops_cpu.cpp's
// attention with several queries; attention.cu chooses it. Written in step 9; last changed in
// step 14 (heads of 256: a template on a lane's slots, the tiles in dynamic shared memory).
//
// With many new tokens the same keys serve many queries, so a block takes 16 queries of one
// head and walks the cached keys and values in tiles of 32 rows, copied to shared memory once
// for all 16. Each warp owns two queries: lane j scores key j of the tile, the warp keeps a
// running max and sum per query (the online softmax of decode_attention.cu, one tile at a
// time) and the lanes hold the query's output, lane d owning dimensions d, d + 32, ... No
// score matrix is ever stored: a tile's scores live in registers until its values are added.
#include "attention.cuh"
#include "cache_elements.cuh"
#include "cuda_check.h"
#include "ops_cuda.h"
#include "reduce.cuh"

namespace gpu {

constexpr int kPrefillWarps = 8;
constexpr int kQueriesPerWarp = 2;
constexpr int kQueryTile = kPrefillWarps * kQueriesPerWarp;  // 16
constexpr int kKeyTile = kWarpSize;                          // 32: one key per lane

// A block's tiles: 40 KB for heads of up to 128 values, 81 KB up to 256 (past the 48 KB of a
// static array, so they live in dynamic shared memory).
template <int kSlots>
struct PrefillTiles {
    static constexpr int kDims = kSlots * kWarpSize;
    float queries[kQueryTile][kDims];
    float keys[kKeyTile][kDims + 1];  // +1: lanes read a column, not a row
    float values[kKeyTile][kDims];
};

template <typename Cache, int kSlots>
__global__ void prefill_attention_kernel(float* out, const float* q, const Cache* k, const Cache* v,
                                         int n_tokens, int first_position, int n_heads,
                                         int n_kv_heads, int head_dim) {
    extern __shared__ __align__(16) uint8_t shared_bytes[];
    PrefillTiles<kSlots>& tiles = *reinterpret_cast<PrefillTiles<kSlots>*>(shared_bytes);
    auto& queries = tiles.queries;
    auto& keys = tiles.keys;
    auto& values = tiles.values;
    const int first_query = blockIdx.x * kQueryTile, head = blockIdx.y;
    const int kv_head = head / (n_heads / n_kv_heads);
    const int q_dim = n_heads * head_dim, kv_dim = n_kv_heads * head_dim;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const float scale = 1.0f / sqrtf(float(head_dim));
    for (int i = threadIdx.x; i < kQueryTile * head_dim; i += blockDim.x) {
        const int row = i / head_dim, d = i % head_dim, t = first_query + row;
        queries[row][d] = t < n_tokens ? q[int64_t(t) * q_dim + head * head_dim + d] * scale : 0;
    }

    float max[kQueriesPerWarp], sum[kQueriesPerWarp], acc[kQueriesPerWarp][kSlots];
    for (int r = 0; r < kQueriesPerWarp; r++) {
        max[r] = -INFINITY;
        sum[r] = 0.0f;
        for (int s = 0; s < kSlots; s++) acc[r][s] = 0.0f;
    }
    // Queries past n_tokens are padding: they compute like the others and are never written.
    const int last_query = min(first_query + kQueryTile, n_tokens) - 1;
    const int n_keys = first_position + last_query + 1;  // what the tile's last query sees
    for (int first_key = 0; first_key < n_keys; first_key += kKeyTile) {
        __syncthreads();  // the previous tile is no longer read (and the queries are stored)
        for (int i = threadIdx.x; i < kKeyTile * head_dim; i += blockDim.x) {
            const int row = i / head_dim, d = i % head_dim, position = first_key + row;
            const int64_t at = int64_t(position) * kv_dim + kv_head * head_dim + d;
            keys[row][d] = position < n_keys ? as_float(k[at]) : 0.0f;
            values[row][d] = position < n_keys ? as_float(v[at]) : 0.0f;
        }
        __syncthreads();
        for (int r = 0; r < kQueriesPerWarp; r++) {
            const int row = warp * kQueriesPerWarp + r;
            const int query_position = first_position + first_query + row;
            const int position = first_key + lane;
            float score = 0.0f;
            for (int d = 0; d < head_dim; d++) score += queries[row][d] * keys[lane][d];
            if (position > query_position) score = -INFINITY;  // the causal mask
            // The first tile holds position 0, which every query sees: max is finite from
            // there on, so no exp(-inf - -inf) ever happens.
            const float new_max = fmaxf(max[r], warp_max(score));
            const float rescale = expf(max[r] - new_max);
            const float weight = expf(score - new_max);
            sum[r] = sum[r] * rescale + warp_sum(weight);
            max[r] = new_max;
            for (int s = 0; s < kSlots; s++) acc[r][s] *= rescale;
            for (int j = 0; j < kKeyTile; j++) {
                const float weight_j = __shfl_sync(kFullWarp, weight, j);
                for (int s = 0; s < kSlots; s++) {
                    const int d = lane + s * kWarpSize;
                    if (d < head_dim) acc[r][s] += weight_j * values[j][d];
                }
            }
        }
    }
    for (int r = 0; r < kQueriesPerWarp; r++) {
        const int t = first_query + warp * kQueriesPerWarp + r;
        if (t >= n_tokens) continue;
        for (int s = 0; s < kSlots; s++) {
            const int d = lane + s * kWarpSize;
            if (d < head_dim) out[int64_t(t) * q_dim + head * head_dim + d] = acc[r][s] / sum[r];
        }
    }
}

template <typename Cache, int kSlots>
static void launch_prefill(float* out, const float* q, const Cache* k, const Cache* v,
                           int n_tokens, int first_position, int n_heads, int n_kv_heads,
                           int head_dim) {
    const dim3 grid((n_tokens + kQueryTile - 1) / kQueryTile, n_heads);
    auto* kernel = prefill_attention_kernel<Cache, kSlots>;
    const int shared_bytes = sizeof(PrefillTiles<kSlots>);
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
    kernel<<<grid, kPrefillWarps * kWarpSize, shared_bytes>>>(out, q, k, v, n_tokens,
                                                              first_position, n_heads, n_kv_heads,
                                                              head_dim);
    check_launch("prefill_attention_kernel");
}

void prefill_attention(float* out, const float* q, const void* k, const void* v, int n_tokens,
                       int first_position, int n_heads, int n_kv_heads, int head_dim,
                       CacheType cache_type) {
    with_head_slots(head_dim, [&](auto slots) {
        with_cache_type(cache_type, [&](auto tag) {
            using Cache = typename decltype(tag)::type;
            launch_prefill<Cache, decltype(slots)::value>(
                out, q, static_cast<const Cache*>(k), static_cast<const Cache*>(v), n_tokens,
                first_position, n_heads, n_kv_heads, head_dim);
        });
    });
}

}  // namespace gpu
