// fused_decode.cu - the kernels of one token's pass (the decode step), each several of the
// operators of ops_cuda.h in one launch, and each checked against the composition of their CPU
// twins. Written in step 10.
//
// A layer's 19 launches become 6:
//   qkv_rope_cache_kernel   rmsnorm + 3 matvecs + 3 bias adds + 2 ropes (and the cache write)
//   split + merge           attention (decode_attention.cu), the length read from device memory
//   matvec_kernel           attention output projection + residual add (matvec_add, matvec.cu)
//   gate_up_swiglu_kernel   rmsnorm + 2 matvecs + swiglu
//   matvec_kernel           down projection + residual add
// and lm_head_argmax_kernel is the final rmsnorm, the LM head and the first stage of argmax.
// What the fusion saves is launches and the round trips of small vectors through memory, not
// weight bytes: every weight is still read exactly once.
//
// RMSNorm folds into the product that follows it because the norm is a per-row scale:
// W (x * g / rms) = (W (x * g)) / rms, g being the norm's weights. Each block multiplies
// W with x * g at once (x comes from L1, as in matvec.cu) and works out 1/rms itself, a block
// sum of x's squares: x is a few KB, read by every block from the L2 cache, and the weight
// loads do not wait for it.
//
// Each kernel is a dependent launch (dependent_launch.cuh): it may start while the kernel
// before it is finishing. normed_dot_2rows waits for that kernel once its first weight loads
// are on their way, and block_inv_rms, which every thread calls before it reads x, waits too
// (for the threads that had no row to load); lm_head_argmax_kernel calls it first, and
// pick_next_token_kernel waits before anything.
#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.h"
#include "dependent_launch.cuh"
#include "ops_cuda.h"
#include "reduce.cuh"
#include "weight_pieces.cuh"

namespace gpu {

// The weights of one 16-byte load, as floats: 4 of F32, 8 of F16 or BF16.
__device__ void unpack_16_bytes(uint4 bytes, float (&w)[4], const float*) {
    w[0] = __uint_as_float(bytes.x), w[1] = __uint_as_float(bytes.y);
    w[2] = __uint_as_float(bytes.z), w[3] = __uint_as_float(bytes.w);
}
__device__ void unpack_16_bytes(uint4 bytes, float (&w)[8], const __half*) {
    const __half2* pairs = reinterpret_cast<const __half2*>(&bytes);
    for (int j = 0; j < 4; j++) {
        const float2 pair = __half22float2(pairs[j]);
        w[2 * j] = pair.x, w[2 * j + 1] = pair.y;
    }
}
__device__ void unpack_16_bytes(uint4 bytes, float (&w)[8], const __nv_bfloat16*) {
    const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&bytes);
    for (int j = 0; j < 4; j++) {
        const float2 pair = __bfloat1622float2(pairs[j]);
        w[2 * j] = pair.x, w[2 * j + 1] = pair.y;
    }
}

// Sum of w[j] * x[j] * g[j] over the weights of one 16-byte load.
template <typename Weight>
__device__ float dot_16_bytes_normed(uint4 bytes, const float* x, const float* g,
                                     const Weight* tag) {
    constexpr int kPerLoad = 16 / sizeof(Weight);
    float w[kPerLoad];
    unpack_16_bytes(bytes, w, tag);
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kPerLoad; j += 4) {
        const float4 xs = __ldg(reinterpret_cast<const float4*>(x + j));
        const float4 gs = __ldg(reinterpret_cast<const float4*>(g + j));
        sum += w[j] * (xs.x * gs.x) + w[j + 1] * (xs.y * gs.y) + w[j + 2] * (xs.z * gs.z) +
               w[j + 3] * (xs.w * gs.w);
    }
    return sum;
}

// The warp's dot products of two rows of W with x * g, in every lane: the rows' loads are
// interleaved, so each lane has both rows' pieces in flight at once.
template <typename Weight>
__device__ float2 normed_dot_2rows(const Weight* row_a, const Weight* row_b, const float* x,
                                   const float* g, int dim, bool vectorized) {
    constexpr int kPerLoad = 16 / sizeof(Weight);
    const int lane = threadIdx.x % kWarpSize;
    float sum_a = 0.0f, sum_b = 0.0f;
    if (vectorized) {
        const uint4* pieces_a = reinterpret_cast<const uint4*>(row_a);
        const uint4* pieces_b = reinterpret_cast<const uint4*>(row_b);
        const int n_pieces = dim / kPerLoad;
        for (int first = lane; first < n_pieces; first += kLoadBatch * kWarpSize) {
            uint4 batch_a[kLoadBatch], batch_b[kLoadBatch];  // both rows' loads, then the sums
#pragma unroll
            for (int j = 0; j < kLoadBatch; j++) {
                const int p = first + j * kWarpSize;
                if (p < n_pieces) batch_a[j] = pieces_a[p], batch_b[j] = pieces_b[p];
            }
            // x is the earlier kernels': the first batch waits for them with its weight loads
            // in flight; later batches pass at once.
            wait_for_previous_kernel();
            allow_next_kernel();
#pragma unroll
            for (int j = 0; j < kLoadBatch; j++) {
                const int p = first + j * kWarpSize;
                if (p >= n_pieces) continue;
                sum_a += dot_16_bytes_normed(batch_a[j], x + p * kPerLoad, g + p * kPerLoad, row_a);
                sum_b += dot_16_bytes_normed(batch_b[j], x + p * kPerLoad, g + p * kPerLoad, row_b);
            }
        }
    } else {
        wait_for_previous_kernel();
        allow_next_kernel();
        for (int i = lane; i < dim; i += kWarpSize) {
            const float xg = x[i] * g[i];
            sum_a += to_float(row_a[i]) * xg;
            sum_b += to_float(row_b[i]) * xg;
        }
    }
    return make_float2(warp_sum(sum_a), warp_sum(sum_b));
}

// 1 / rms(x) for the block, in every thread; every thread of the block must call it, before
// anything reads an earlier kernel's output or writes: it waits for the previous kernel.
__device__ float block_inv_rms(const float* x, int dim, float eps) {
    __shared__ float warp_sums[kMatvecWarps];
    wait_for_previous_kernel();
    allow_next_kernel();
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    float sum = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) sum += x[i] * x[i];
    sum = warp_sum(sum);
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();
    sum = 0.0f;
    for (int w = 0; w < kMatvecWarps; w++) sum += warp_sums[w];
    return 1.0f / sqrtf(sum / dim + eps);
}

// The 16-byte loads need every row, x and g aligned to 16 bytes, as in matvec_kernel.
static bool loads_align(int dim, int weight_bytes, const void* w, const float* x, const float* g) {
    return dim % (16 / weight_bytes) == 0 && uintptr_t(w) % 16 == 0 && uintptr_t(x) % 16 == 0 &&
           uintptr_t(g) % 16 == 0;
}

// ---- qkv_rope_cache: rmsnorm, Q/K/V products, biases, RoPE and the cache write ----
//
// RoPE turns element i of a head together with element i + head_dim/2, so the warp that owns
// a pair of output rows can rotate them as soon as it has both sums. The pairs are numbered
// through Q's, then K's, then V's (which are not rotated, but are computed two rows a warp
// all the same). A launch covers pairs [first_pair, end_pair): all of them when the three
// matrices share a type, else one matrix a launch, each with its own Weight.

template <typename Weight>
__global__ void qkv_rope_cache_kernel(float* q, float* k_cache, float* v_cache, const float* x,
                                      const float* norm_weight, float eps, const Weight* wq,
                                      const Weight* wk, const Weight* wv, const float* q_bias,
                                      const float* k_bias, const float* v_bias, int d_model,
                                      HeadShape heads, float rope_base, const DecodeSlots* slots,
                                      int first_pair, int end_pair, bool vectorized) {
    // BEGIN SOLUTION step10 qkv_rope_cache_kernel
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int head_dim = heads.head_dim, half = head_dim / 2;
    const int kv_dim = heads.n_kv_heads * head_dim;
    const int q_pairs = heads.n_heads * half, kv_pairs = heads.n_kv_heads * half;
    int pair = first_pair + blockIdx.x * kMatvecWarps + warp;
    const bool active = pair < end_pair;
    // Which matrix the pair is in, and where its two values go (K's and V's to the cache row
    // of the position, read once the kernel has waited for the previous one).
    const Weight* w = wq;
    const float* bias = q_bias;
    float* out = q;
    bool rotate = true, to_cache = false;
    if (pair >= q_pairs) {
        pair -= q_pairs;
        w = wk, bias = k_bias, out = k_cache, to_cache = true;
        if (pair >= kv_pairs) {
            pair -= kv_pairs;
            w = wv, bias = v_bias, out = v_cache, rotate = false;
        }
    }
    const int i = pair % half;  // the pair's place in its head
    const int row_a = (pair / half) * head_dim + i, row_b = row_a + half;
    float2 sums = make_float2(0.0f, 0.0f);
    if (active)
        sums = normed_dot_2rows(w + int64_t(row_a) * d_model, w + int64_t(row_b) * d_model, x,
                                norm_weight, d_model, vectorized);
    const float inv_rms = block_inv_rms(x, d_model, eps);  // every warp, active or not
    if (!active || lane != 0) return;
    const int position = slots->position;
    if (to_cache) out += int64_t(position) * kv_dim;
    float a = sums.x * inv_rms + bias[row_a], b = sums.y * inv_rms + bias[row_b];
    if (rotate) {  // the angle as rope_kernel computes it, in double
        const double angle = double(position) * pow(double(rope_base), -2.0 * i / head_dim);
        const float c = float(cos(angle)), s = float(sin(angle));
        const float first = a, second = b;
        a = first * c - second * s;
        b = second * c + first * s;
    }
    out[row_a] = a;
    out[row_b] = b;
    // END SOLUTION
}

void qkv_rope_cache(float* q, float* k_cache, float* v_cache, const float* x,
                    const float* norm_weight, float eps, const QkvWeights& w, int d_model,
                    HeadShape heads, float rope_base, const DecodeSlots* slots, Stream stream) {
    if (heads.head_dim % 2 != 0)
        fail("gpu::qkv_rope_cache needs an even head_dim, not %d", heads.head_dim);
    const int q_pairs = heads.n_heads * heads.head_dim / 2;
    const int kv_pairs = heads.n_kv_heads * heads.head_dim / 2;
    // Pairs [first, end) of the matrix of type `type` (or of all three).
    auto launch = [&](uint32_t type, int first, int end) {
        const unsigned blocks = unsigned((end - first + kMatvecWarps - 1) / kMatvecWarps);
        with_weight_type(type, "qkv_rope_cache", [&](auto tag) {
            using Weight = typename decltype(tag)::type;
            const bool vectorized = loads_align(d_model, sizeof(Weight), w.q, x, norm_weight) &&
                                    uintptr_t(w.k) % 16 == 0 && uintptr_t(w.v) % 16 == 0;
            launch_kernel("qkv_rope_cache_kernel", qkv_rope_cache_kernel<Weight>, blocks,
                          kMatvecWarps * kWarpSize, stream, q, k_cache, v_cache, x, norm_weight,
                          eps, static_cast<const Weight*>(w.q), static_cast<const Weight*>(w.k),
                          static_cast<const Weight*>(w.v), w.q_bias, w.k_bias, w.v_bias, d_model,
                          heads, rope_base, slots, first, end, vectorized);
        });
    };
    if (w.q_type == w.k_type && w.q_type == w.v_type) {
        launch(w.q_type, 0, q_pairs + 2 * kv_pairs);
    } else {  // e.g. the tiny model's F16 and BF16 matrices
        launch(w.q_type, 0, q_pairs);
        launch(w.k_type, q_pairs, q_pairs + kv_pairs);
        launch(w.v_type, q_pairs + kv_pairs, q_pairs + 2 * kv_pairs);
    }
}

// ---- gate_up_swiglu: rmsnorm, the gate and up products, and swiglu ----

template <typename Weight>
__global__ void gate_up_swiglu_kernel(float* out, const float* x, const float* norm_weight,
                                      float eps, const Weight* w_gate, const Weight* w_up,
                                      int d_model, int d_ff, bool vectorized) {
    // BEGIN SOLUTION step10 gate_up_swiglu_kernel
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int64_t row = int64_t(blockIdx.x) * kMatvecWarps + warp;
    float2 sums = make_float2(0.0f, 0.0f);
    if (row < d_ff)
        sums = normed_dot_2rows(w_gate + row * d_model, w_up + row * d_model, x, norm_weight,
                                d_model, vectorized);
    const float inv_rms = block_inv_rms(x, d_model, eps);
    if (row >= d_ff || lane != 0) return;
    const float gate = sums.x * inv_rms, up = sums.y * inv_rms;
    out[row] = gate / (1.0f + expf(-gate)) * up;  // swiglu_kernel's formula
    // END SOLUTION
}

void gate_up_swiglu(float* out, const float* x, const float* norm_weight, float eps,
                    const void* w_gate, const void* w_up, uint32_t w_type, int d_model, int d_ff,
                    Stream stream) {
    if (d_ff == 0) return;
    const unsigned blocks = unsigned((d_ff + kMatvecWarps - 1) / kMatvecWarps);
    with_weight_type(w_type, "gate_up_swiglu", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        const bool vectorized = loads_align(d_model, sizeof(Weight), w_gate, x, norm_weight) &&
                                uintptr_t(w_up) % 16 == 0;
        launch_kernel("gate_up_swiglu_kernel", gate_up_swiglu_kernel<Weight>, blocks,
                      kMatvecWarps * kWarpSize, stream, out, x, norm_weight, eps,
                      static_cast<const Weight*>(w_gate), static_cast<const Weight*>(w_up), d_model,
                      d_ff, vectorized);
    });
}

// ---- lm_head_argmax: the final rmsnorm, the LM head and argmax ----
//
// The LM head is the largest matrix (151936 rows). Its blocks loop over rows (block b, warp w
// take rows 4b + w, then 4b + w + 4 * blocks, ...) so that there are only kLmHeadBlocks of
// them; each keeps the best logit it has seen, and one block of pick_next_token_kernel picks
// the best of those: argmax()'s two stages, the first one inside the product.

constexpr int kLmHeadBlocks = 1024;

template <typename Weight>
__global__ void lm_head_argmax_kernel(float* logits, Candidate* block_winners, const float* x,
                                      const float* norm_weight, float eps, const Weight* w,
                                      int d_model, int n_vocab, bool vectorized) {
    __shared__ Candidate warp_winners[kMatvecWarps];
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const float inv_rms = block_inv_rms(x, d_model, eps);
    Candidate best{-INFINITY, n_vocab};
    // Two rows a warp at a time, as in the other fused products.
    const int64_t stride = int64_t(gridDim.x) * kMatvecWarps;
    for (int64_t row = int64_t(blockIdx.x) * kMatvecWarps + warp; row < n_vocab;
         row += 2 * stride) {
        const int64_t other = row + stride < n_vocab ? row + stride : row;
        const float2 sums = normed_dot_2rows(w + row * d_model, w + other * d_model, x, norm_weight,
                                             d_model, vectorized);
        const float logit = sums.x * inv_rms, other_logit = sums.y * inv_rms;
        if (lane == 0) {
            logits[row] = logit;
            logits[other] = other_logit;
        }
        best = better(best, Candidate{logit, int(row)});
        best = better(best, Candidate{other_logit, int(other)});
    }
    if (lane == 0) warp_winners[warp] = best;
    __syncthreads();
    if (threadIdx.x != 0) return;  // lane 0 of warp 0, which holds warp 0's winner
    for (int i = 1; i < kMatvecWarps; i++) best = better(best, warp_winners[i]);
    block_winners[blockIdx.x] = best;
}

// The best of the blocks' winners becomes the next step's token, at the next position.
__global__ void pick_next_token_kernel(DecodeSlots* slots, const Candidate* block_winners,
                                       int n_blocks, const float* logits, int n_vocab) {
    wait_for_previous_kernel();
    allow_next_kernel();
    const Candidate best = block_best(nullptr, block_winners, n_blocks, threadIdx.x, blockDim.x);
    if (threadIdx.x != 0) return;
    slots->token = isnan(logits[0]) || best.index >= n_vocab ? 0 : best.index;  // as argmax()
    slots->position += 1;
}

int64_t lm_head_argmax_scratch() { return int64_t(kLmHeadBlocks) * sizeof(Candidate); }

void lm_head_argmax(float* logits, void* scratch, const float* x, const float* norm_weight,
                    float eps, const void* w, uint32_t w_type, int d_model, int n_vocab,
                    DecodeSlots* slots, Stream stream) {
    if (n_vocab <= 0) fail("gpu::lm_head_argmax of %d logits", n_vocab);
    // Every block gets at least one row, so every winner is a real row.
    const int n_blocks = std::min(kLmHeadBlocks, (n_vocab + kMatvecWarps - 1) / kMatvecWarps);
    Candidate* winners = static_cast<Candidate*>(scratch);
    with_weight_type(w_type, "lm_head_argmax", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        const bool vectorized = loads_align(d_model, sizeof(Weight), w, x, norm_weight);
        launch_kernel("lm_head_argmax_kernel", lm_head_argmax_kernel<Weight>, n_blocks,
                      kMatvecWarps * kWarpSize, stream, logits, winners, x, norm_weight, eps,
                      static_cast<const Weight*>(w), d_model, n_vocab, vectorized);
    });
    launch_kernel("pick_next_token_kernel", pick_next_token_kernel, 1, kArgmaxThreads, stream,
                  slots, winners, n_blocks, logits, n_vocab);
}

}  // namespace gpu
