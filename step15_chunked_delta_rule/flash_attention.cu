// flash_attention.cu - a prompt's attention with both of its products on the tensor cores
// (flash attention). Written in step 12.
//
// Attention over n positions is two matrix products per head, S = Q K^T (n x n scores) and
// O = softmax(S) V, and the float kernel (prompt_attention.cu) runs both on CUDA cores, two
// queries a warp, one float multiply-add at a time. At 4096 tokens they are 1.4 TFLOP at
// 1.5B, an eighth of the matrix products' work.
// Here a block takes 64 queries of one head, a warp 16 of them, and walks the keys in tiles
// of 64 positions:
//
//   1. the K and V tiles are copied into shared memory, rounded to F16 (from an F16 cache,
//      step 11's, copied as they are: half the bytes to read, and no conversion);
//   2. S_tile = Q K_tile^T, a warp's 16 x 64 scores, by mma (Q's fragments stay in registers
//      for the whole walk, loaded once);
//   3. the online softmax: each query's running maximum m and sum l; the tile's scores become
//      p = 2^(s - m_new), and what was summed so far is rescaled by 2^(m_old - m_new);
//   4. O += P V_tile, by mma again. The trick that makes this cheap: the accumulator layout of
//      S (rows group and group + 8, columns pair) is the fragment layout mma wants for A, so P
//      goes from one mma's output to the next one's input in registers, rounded to F16, never
//      through shared memory. V is read through ldmatrix's transposing form, because mma wants
//      B with the key index along the pair, and V's rows are keys.
//
// No (n x n) score matrix exists anywhere, and a query tile stops at its last position: the
// causal mask skips the tiles above the diagonal and masks single scores inside the one on it.
// Scores, maxima, sums and O are F32; the scale 1/sqrt(head_dim) and log2(e) are applied to the
// F32 scores, so only q, k, v and p are rounded.
#include "flash_attention.h"

#include <cmath>

#include "cache_elements.cuh"
#include "cuda_check.h"
#include "error.h"
#include "tensor_core_ptx.cuh"

namespace gpu {

constexpr int kFlashWarps = 4;
constexpr int kFlashThreads = 32 * kFlashWarps;
constexpr int kFlashQueries = 16 * kFlashWarps;  // 64 queries a block, 16 a warp
constexpr int kFlashKeys = 64;                   // positions a key tile
static_assert(kFlashQueries <= kFlashKeys, "the query tile passes through the key tile's memory");

// A tile row is padded by 8 values (16 bytes): rows of 144, 272 or 528 bytes put the 8 rows that
// one ldmatrix reads on 8 different banks, as in the GEMM.
template <int kHeadDim>
struct FlashTiles {
    __half keys[kFlashKeys][kHeadDim + 8];    // (position, dim); first the query tile
    __half values[kFlashKeys][kHeadDim + 8];  // (position, dim)
};

// kRows rows of kHeadDim floats, row r at src + r * stride, rounded into tile (which has at
// least kRows rows); rows at or past n_rows are zeros. Four floats a thread at a time, 8 bytes
// of F16 stored.
template <int kRows, int kHeadDim>
__device__ void load_rows(__half (*tile)[kHeadDim + 8], const float* src, int64_t stride,
                          int n_rows) {
    constexpr int kQuads = kHeadDim / 4;
    for (int i = threadIdx.x; i < kRows * kQuads; i += kFlashThreads) {
        const int row = i / kQuads, d = (i % kQuads) * 4;
        const float4 value = row < n_rows ? *reinterpret_cast<const float4*>(src + row * stride + d)
                                          : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        *reinterpret_cast<uint2*>(&tile[row][d]) =
            make_uint2(pack_pair<__half>(value.x, value.y), pack_pair<__half>(value.z, value.w));
    }
}

// The same from rows of halves (an F16 cache): 8 bytes a thread at a time, copied as they are.
template <int kRows, int kHeadDim>
__device__ void load_rows(__half (*tile)[kHeadDim + 8], const __half* src, int64_t stride,
                          int n_rows) {
    constexpr int kQuads = kHeadDim / 4;
    for (int i = threadIdx.x; i < kRows * kQuads; i += kFlashThreads) {
        const int row = i / kQuads, d = (i % kQuads) * 4;
        *reinterpret_cast<uint2*>(&tile[row][d]) =
            row < n_rows ? *reinterpret_cast<const uint2*>(src + row * stride + d)
                         : make_uint2(0u, 0u);
    }
}

template <int kHeadDim, typename Cache>
__global__ void __launch_bounds__(kFlashThreads)
    flash_attention_kernel(float* out, const float* q, const Cache* k, const Cache* v, int n_tokens,
                           int first_position, int n_heads, int n_kv_heads) {
    constexpr int kDimSteps = kHeadDim / 16;  // mma steps along a head (Q K^T's depth)
    constexpr int kKeySteps = kFlashKeys / 16;
    // 34 KB of tiles at 128 values a head, 67 KB at 256: past the 48 KB of a static array.
    extern __shared__ __align__(128) uint8_t shared_bytes[];
    FlashTiles<kHeadDim>& tiles = *reinterpret_cast<FlashTiles<kHeadDim>*>(shared_bytes);
    const int first_query = blockIdx.x * kFlashQueries, head = blockIdx.y;
    const int kv_head = head / (n_heads / n_kv_heads);
    const int q_dim = n_heads * kHeadDim, kv_dim = n_kv_heads * kHeadDim;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int group = lane / 4, pair = 2 * (lane % 4);
    const float scale_log2 = 1.4426950408889634f / sqrtf(float(kHeadDim));  // log2(e) / sqrt(d)

    // The query tile, through the key tile's shared memory, into registers.
    load_rows<kFlashQueries, kHeadDim>(tiles.keys,
                                       q + int64_t(first_query) * q_dim + head * kHeadDim, q_dim,
                                       n_tokens - first_query);
    __syncthreads();
    uint32_t query[kDimSteps][4];
#pragma unroll
    for (int kk = 0; kk < kDimSteps; kk++)
        load_matrix_x4(query[kk], &tiles.keys[16 * warp + lane % 16][16 * kk + (lane / 16) * 8]);

    // This lane's two queries: rows group and group + 8 of the warp's 16. Past n_tokens they
    // are padding, computed and never written.
    const int warp_first = first_query + 16 * warp;
    const int my_position[2] = {first_position + warp_first + group,
                                first_position + warp_first + group + 8};
    const int warp_last_position = first_position + min(warp_first + 15, n_tokens - 1);
    const int block_last_query = min(first_query + kFlashQueries, n_tokens) - 1;
    const int n_keys = first_position + block_last_query + 1;  // what the block's last query sees
    float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
    float acc[2 * kDimSteps][4] = {};  // O: columns of 8 dims, rows group and group + 8

    for (int first_key = 0; first_key < n_keys; first_key += kFlashKeys) {
        __syncthreads();  // the last tile (or the query tile) is no longer read
        const int64_t at = int64_t(first_key) * kv_dim + kv_head * kHeadDim;
        load_rows<kFlashKeys, kHeadDim>(tiles.keys, k + at, kv_dim, n_keys - first_key);
        load_rows<kFlashKeys, kHeadDim>(tiles.values, v + at, kv_dim, n_keys - first_key);
        __syncthreads();
        // A warp whose queries all lie before the tile (or are all padding) has nothing to add.
        if (warp_first >= n_tokens || first_key > warp_last_position) continue;
        // BEGIN SOLUTION step12 flash_attention_tile
        // S = Q K^T: 8 columns of 8 keys. K's rows are keys, which is B's layout as it is.
        float score[2 * kKeySteps][4] = {};
#pragma unroll
        for (int j = 0; j < 2 * kKeySteps; j += 2)
#pragma unroll
            for (int kk = 0; kk < kDimSteps; kk++) {
                uint32_t b[4];
                load_matrix_x4(b, &tiles.keys[8 * j + lane % 8 + (lane / 16) * 8]
                                             [16 * kk + ((lane / 8) % 2) * 8]);
                mma_16x8x16<__half>(score[j], query[kk], b[0], b[1]);
                mma_16x8x16<__half>(score[j + 1], query[kk], b[2], b[3]);
            }
        // The causal mask, the scale, and each row's new maximum over the 4 lanes of its group.
        float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int j = 0; j < 2 * kKeySteps; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int position = first_key + 8 * j + pair + e % 2;
                float& s = score[j][e];
                s = position > my_position[e / 2] ? -INFINITY : s * scale_log2;
                tile_max[e / 2] = fmaxf(tile_max[e / 2], s);
            }
        float rescale[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
            tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
            // Every query sees position 0, in the first tile: from there on the maximum is
            // finite, and 2^(-inf - max) is 0 for a masked score.
            const float new_max = fmaxf(row_max[r], tile_max[r]);
            rescale[r] = exp2f(row_max[r] - new_max);  // 0 in the first tile
            row_max[r] = new_max;
            row_sum[r] *= rescale[r];
        }
        // P = 2^(S - max), in place; each lane sums its own columns (the group's 4 partial sums
        // are added at the end, all rescaled alike).
#pragma unroll
        for (int j = 0; j < 2 * kKeySteps; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                score[j][e] = exp2f(score[j][e] - row_max[e / 2]);
                row_sum[e / 2] += score[j][e];
            }
#pragma unroll
        for (int n = 0; n < 2 * kDimSteps; n++) {
#pragma unroll
            for (int e = 0; e < 4; e++) acc[n][e] *= rescale[e / 2];
        }
        // O += P V: P's columns 16 kk .. 16 kk + 15 are score columns 2 kk and 2 kk + 1, already
        // in A's layout; V through the transposing ldmatrix.
#pragma unroll
        for (int kk = 0; kk < kKeySteps; kk++) {
            const uint32_t p[4] = {pack_pair<__half>(score[2 * kk][0], score[2 * kk][1]),
                                   pack_pair<__half>(score[2 * kk][2], score[2 * kk][3]),
                                   pack_pair<__half>(score[2 * kk + 1][0], score[2 * kk + 1][1]),
                                   pack_pair<__half>(score[2 * kk + 1][2], score[2 * kk + 1][3])};
#pragma unroll
            for (int n = 0; n < 2 * kDimSteps; n += 2) {
                uint32_t b[4];
                load_matrix_x4_transposed(b,
                                          &tiles.values[16 * kk + lane % 8 + ((lane / 8) % 2) * 8]
                                                       [8 * n + (lane / 16) * 8]);
                mma_16x8x16<__half>(acc[n], p, b[0], b[1]);
                mma_16x8x16<__half>(acc[n + 1], p, b[2], b[3]);
            }
        }
        // END SOLUTION
    }

    if (warp_first >= n_tokens) return;
#pragma unroll
    for (int r = 0; r < 2; r++) {
        row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
        row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
    }
#pragma unroll
    for (int n = 0; n < 2 * kDimSteps; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int t = warp_first + group + (e / 2) * 8;
            if (t < n_tokens)
                out[int64_t(t) * q_dim + head * kHeadDim + 8 * n + pair + e % 2] =
                    acc[n][e] / row_sum[e / 2];
        }
}

bool flash_attention_takes(int head_dim) {
    return head_dim == 64 || head_dim == 128 || head_dim == 256;
}

template <int kHeadDim, typename Cache>
static void launch_flash(float* out, const float* q, const Cache* k, const Cache* v, int n_tokens,
                         int first_position, int n_heads, int n_kv_heads) {
    const dim3 grid((n_tokens + kFlashQueries - 1) / kFlashQueries, n_heads);
    auto* kernel = flash_attention_kernel<kHeadDim, Cache>;
    const int shared_bytes = sizeof(FlashTiles<kHeadDim>);
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
    kernel<<<grid, kFlashThreads, shared_bytes>>>(out, q, k, v, n_tokens, first_position, n_heads,
                                                  n_kv_heads);
    check_launch("flash_attention_kernel");
}

void flash_attention(float* out, const float* q, const void* k, const void* v, int n_tokens,
                     int first_position, int n_heads, int n_kv_heads, int head_dim,
                     CacheType cache_type) {
    if (n_tokens == 0) return;
    if (!flash_attention_takes(head_dim))
        fail("gpu::flash_attention handles heads of 64, 128 or 256 values, not %d", head_dim);
    if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
        fail("gpu::flash_attention needs n_heads (%d) a multiple of n_kv_heads (%d)", n_heads,
             n_kv_heads);
    with_cache_type(cache_type, [&](auto tag) {
        using Cache = typename decltype(tag)::type;
        const Cache* keys = static_cast<const Cache*>(k);
        const Cache* values = static_cast<const Cache*>(v);
        if (head_dim == 64)
            launch_flash<64>(out, q, keys, values, n_tokens, first_position, n_heads, n_kv_heads);
        else if (head_dim == 128)
            launch_flash<128>(out, q, keys, values, n_tokens, first_position, n_heads, n_kv_heads);
        else
            launch_flash<256>(out, q, keys, values, n_tokens, first_position, n_heads, n_kv_heads);
    });
}

}  // namespace gpu
