// fused_decode.cu - the kernels of one token's pass (the decode step), each several of the
// operators of ops_cuda.h in one launch, and each checked against the composition of their CPU
// twins. A block matrix's products take their input rounded to 8 bits, as the CPU's do, and
// gate_up_swiglu rounds its own output for the down projection. Written in step 10; last
// changed in step 13 (QK-norm in qkv_rope_cache, the biases optional).
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
// before it is finishing. The products wait for that kernel once their first weight loads are
// on their way (normed_dot_2rows, dot_rows_q8), and every thread waits again before it reads
// the slots or writes anything (wait_for_previous_kernel, a no-op once it has returned).
#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cache_elements.cuh"
#include "cuda_check.h"
#include "dependent_launch.cuh"
#include "head_norm.cuh"
#include "ops_cuda.h"
#include "quant_blocks_cuda.cuh"
#include "reduce.cuh"
#include "weight_pieces.cuh"

namespace gpu {

// Sum of w[j] * x[j] * g[j] over the weights of piece p.
template <typename Weight, typename Piece>
__device__ float dot_piece_normed(const Piece& piece, int p, const float* x, const float* g,
                                  const Weight* row) {
    constexpr int kWeights = kPieceWeights<Weight>;
    float w[kWeights];
    unpack(piece, p, w, row);
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kWeights; j += 4) {
        const float4 xs = __ldg(reinterpret_cast<const float4*>(x + j));
        const float4 gs = __ldg(reinterpret_cast<const float4*>(g + j));
        sum += w[j] * (xs.x * gs.x) + w[j + 1] * (xs.y * gs.y) + w[j + 2] * (xs.z * gs.z) +
               w[j + 3] * (xs.w * gs.w);
    }
    return sum;
}

// The warp's dot products of two rows of W with x * g, in every lane: the rows' loads are
// interleaved, so each lane has both rows' pieces in flight at once.
// For a block type, x_q8 holds rmsnorm(x) rounded to 8 bits already (the CPU's values), and the
// rows are multiplied with it a chunk a lane (dot_rows_q8): the sums need no 1 / rms.
template <typename Weight>
__device__ float2 normed_dot_2rows(const Weight* row_a, const Weight* row_b, const float* x,
                                   const float* g, int dim, bool vectorized, Q8Vector x_q8) {
    constexpr int kPerLoad = kPieceWeights<Weight>, kBatch = kLoadBatchOf<Weight>;
    const int lane = threadIdx.x % kWarpSize;
    float sum_a = 0.0f, sum_b = 0.0f;
    if constexpr (kIsBlockType<Weight>) {
        const Weight* rows[2] = {row_a, row_b};
        float sums[2];
        dot_rows_q8(rows, x_q8, dim, lane, kWarpSize, sums);
        sum_a = sums[0], sum_b = sums[1];
    } else if (vectorized) {
        const int n_pieces = dim / kPerLoad;
        for (int first = lane; first < n_pieces; first += kBatch * kWarpSize) {
            // both rows' loads, then the sums
            decltype(load_piece(row_a, 0)) batch_a[kBatch], batch_b[kBatch];
#pragma unroll
            for (int j = 0; j < kBatch; j++) {
                const int p = first + j * kWarpSize;
                if (p < n_pieces)
                    batch_a[j] = load_piece(row_a, p), batch_b[j] = load_piece(row_b, p);
            }
            wait_for_previous_kernel();  // x is the earlier kernels'
            allow_next_kernel();
#pragma unroll
            for (int j = 0; j < kBatch; j++) {
                const int p = first + j * kWarpSize;
                if (p >= n_pieces) continue;
                sum_a += dot_piece_normed(batch_a[j], p, x + p * kPerLoad, g + p * kPerLoad, row_a);
                sum_b += dot_piece_normed(batch_b[j], p, x + p * kPerLoad, g + p * kPerLoad, row_b);
            }
        }
    } else {
        wait_for_previous_kernel();
        allow_next_kernel();
        for (int i = lane; i < dim; i += kWarpSize) {
            const float xg = x[i] * g[i];
            sum_a += weight_at(row_a, i) * xg;
            sum_b += weight_at(row_b, i) * xg;
        }
    }
    return make_float2(warp_sum(sum_a), warp_sum(sum_b));
}

// 1 / rms(x) for the block, in every thread; every thread of the block must call it. It reads
// x, the previous kernel's: it waits for that kernel first. A block type's products are taken
// with the normalized x (x_q8), and need no scale: 1.
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

// ---- qkv_rope_cache: rmsnorm, Q/K/V products, biases, RoPE and the cache write ----
//
// RoPE turns element i of a head together with element i + head_dim/2, so the warp that owns
// a pair of output rows can rotate them as soon as it has both sums. The pairs are numbered
// through Q's, then K's, then V's (which are not rotated, but are computed two rows a warp
// all the same). A launch covers pairs [first_pair, end_pair): all of them when Q and K are of
// type WeightQK and V of WeightV (Qwen's published files pair Q4_K with a Q6_K V and Q5_0 with
// a Q8_0 V), else one matrix a launch.
//
// Step 13: QK-norm (Qwen3) divides a whole head of Q or K by its rms before RoPE, and a block
// holds only 4 of the head's pairs. So each block writes its pairs' values to the head's row of
// a scratch buffer and counts itself done in the head's counter (last_block_done, as gate/up's
// 8-bit groups do); the last of the head's blocks then normalizes, rotates and writes the whole
// head (norm_rope_head, head_norm.cuh). A model without QK-norm takes the path of step 11.

// A pair of a head of Q (matrix 0) or K (1) under QK-norm: its values a and b (biased, not yet
// normalized) go to the head's scratch row, and the last of the head's blocks finishes the head
// into q or the cache row of the position. Every thread of the block calls it, all for the
// same head.
template <typename Cache>
__device__ void finish_normed_head(float* q, Cache* k_cache, int matrix, int pair, float a,
                                   float b, const float* q_norm, const float* k_norm, float eps,
                                   HeadShape heads, float rope_base, const DecodeSlots* slots,
                                   HeadNormScratch scratch) {
    const int head_dim = heads.head_dim, half = head_dim / 2;
    const int head = pair / half, i = pair % half;
    const int slot = matrix == 0 ? head : heads.n_heads + head;  // the head's scratch row
    float* row = scratch.rows + int64_t(slot) * head_dim;
    if (threadIdx.x % kWarpSize == 0) {
        row[i] = a;
        row[i + half] = b;
    }
    if (!last_block_done(scratch.done + slot, half / kMatvecWarps)) return;
    const int position = slots->position;
    if (matrix == 0)
        norm_rope_head(q + int64_t(head) * head_dim, row, q_norm, eps, head_dim, head_dim,
                       position, rope_base);
    else
        norm_rope_head(k_cache + int64_t(position) * heads.n_kv_heads * head_dim +
                           int64_t(head) * head_dim,
                       row, k_norm, eps, head_dim, head_dim, position, rope_base);
}

template <typename WeightQK, typename WeightV, typename Cache>
__global__ void qkv_rope_cache_kernel(float* q, Cache* k_cache, Cache* v_cache, const float* x,
                                      const float* norm_weight, float eps, const WeightQK* wq,
                                      const WeightQK* wk, const WeightV* wv, const float* q_bias,
                                      const float* k_bias, const float* v_bias,
                                      const float* q_norm, const float* k_norm, int d_model,
                                      HeadShape heads, float rope_base, const DecodeSlots* slots,
                                      HeadNormScratch scratch, int first_pair, int end_pair,
                                      bool vectorized, Q8Vector x_q8) {
    // BEGIN SOLUTION step10 qkv_rope_cache_kernel
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int head_dim = heads.head_dim, half = head_dim / 2;
    const int kv_dim = heads.n_kv_heads * head_dim;
    const int q_pairs = heads.n_heads * half, kv_pairs = heads.n_kv_heads * half;
    int pair = first_pair + blockIdx.x * kMatvecWarps + warp;
    const bool active = pair < end_pair;
    // Step 13: a pair of Q or K under QK-norm (the same for the block's 4 warps, one head's).
    const bool normed = q_norm != nullptr && pair < q_pairs + kv_pairs;
    // Which matrix the pair is in, and where its two values go (K's and V's to the cache row of
    // the position, read once the kernel has waited for the previous one).
    const float* bias = q_bias;
    Cache* cache = nullptr;  // K's or V's cache, where the pair goes instead of q
    int matrix = 0;          // Q, K, V
    if (pair >= q_pairs) {
        pair -= q_pairs;
        bias = k_bias, cache = k_cache, matrix = 1;
        if (pair >= kv_pairs) {
            pair -= kv_pairs;
            bias = v_bias, cache = v_cache, matrix = 2;
        }
    }
    const int i = pair % half;  // the pair's place in its head
    const int row_a = (pair / half) * head_dim + i, row_b = row_a + half;
    // The two rows times x * g (floats, scaled by 1 / rms below) or times the 8-bit h.
    float2 sums = make_float2(0.0f, 0.0f);
    if (active && matrix == 2) {
        sums = normed_dot_2rows(row_start(wv, row_a, d_model), row_start(wv, row_b, d_model), x,
                                norm_weight, d_model, vectorized, x_q8);
    } else if (active) {
        const WeightQK* w = matrix == 0 ? wq : wk;
        sums = normed_dot_2rows(row_start(w, row_a, d_model), row_start(w, row_b, d_model), x,
                                norm_weight, d_model, vectorized, x_q8);
    }
    // every warp, active or not; a float product's sums are scaled by it
    const bool all_blocks = kIsBlockType<WeightQK> && kIsBlockType<WeightV>;
    const float inv_rms = all_blocks ? 1.0f : block_inv_rms(x, d_model, eps);
    wait_for_previous_kernel();  // every thread, also those with no pair
    allow_next_kernel();
    if (!active) return;
    const bool blocks = matrix == 2 ? kIsBlockType<WeightV> : kIsBlockType<WeightQK>;
    if (!blocks) sums = make_float2(sums.x * inv_rms, sums.y * inv_rms);
    float a = sums.x, b = sums.y;
    if (bias) a += bias[row_a], b += bias[row_b];  // Qwen3 has none
    if (normed) {
        finish_normed_head(q, k_cache, matrix, pair, a, b, q_norm, k_norm, eps, heads, rope_base,
                           slots, scratch);
        return;
    }
    if (lane != 0) return;
    const int position = slots->position;
    if (matrix < 2) rotate_pair(a, b, position, i, head_dim, rope_base);
    if (cache) {
        store(cache + int64_t(position) * kv_dim, row_a, a);
        store(cache + int64_t(position) * kv_dim, row_b, b);
    } else {
        q[row_a] = a;
        q[row_b] = b;
    }
    // END SOLUTION
}

// Calls launch(TypeTag<V>{}) with V the device type of ggml type v_type, for the types a
// published file gives V next to another Q and K type: the Q and K type itself, Q6_K or Q8_0.
// Returns false for any other.
template <typename WeightQK, typename Launch>
static bool with_v_type(uint32_t qk_type, uint32_t v_type, Launch&& launch) {
    if (v_type == qk_type) launch(TypeTag<WeightQK>{});
    else if (GgmlType(v_type) == GgmlType::Q6_K) launch(TypeTag<BlockQ6_K>{});
    else if (GgmlType(v_type) == GgmlType::Q8_0) launch(TypeTag<BlockQ8_0>{});
    else return false;
    return true;
}

void qkv_rope_cache(float* q, void* k_cache, void* v_cache, CacheType cache_type, const float* x,
                    const float* norm_weight, float eps, const QkvWeights& w, int d_model,
                    HeadShape heads, float rope_base, const DecodeSlots* slots,
                    HeadNormScratch scratch, Q8Vector x_q8, bool x_q8_written, Stream stream) {
    if (heads.head_dim % 2 != 0)
        fail("gpu::qkv_rope_cache needs an even head_dim, not %d", heads.head_dim);
    // A block's 4 pairs must lie in one head, and every launch's first pair start a block of them.
    if (w.q_norm && heads.head_dim % (2 * kMatvecWarps) != 0)
        fail("gpu::qkv_rope_cache normalizes heads of a multiple of %d values, not %d",
             2 * kMatvecWarps, heads.head_dim);
    const bool any_blocks =
        is_block_type(w.q_type) || is_block_type(w.k_type) || is_block_type(w.v_type);
    if (any_blocks && !x_q8_written) quantize_q8(x_q8, x, norm_weight, eps, d_model, stream);
    const int q_pairs = heads.n_heads * heads.head_dim / 2;
    const int kv_pairs = heads.n_kv_heads * heads.head_dim / 2;
    // Pairs [first, end), Q and K of type qk_type and V of v_type.
    auto launch = [&](uint32_t qk_type, uint32_t v_type, int first, int end) -> bool {
        const unsigned blocks = unsigned((end - first + kMatvecWarps - 1) / kMatvecWarps);
        bool launched = false;
        with_weight_type(qk_type, "qkv_rope_cache", [&](auto qk_tag) {
            using WeightQK = typename decltype(qk_tag)::type;
            launched = with_v_type<WeightQK>(qk_type, v_type, [&](auto v_tag) {
                using WeightV = typename decltype(v_tag)::type;
                const bool vectorized = pieces_fit<WeightQK>(d_model, w.q, x, norm_weight) &&
                                        pieces_fit<WeightQK>(d_model, w.k, x, norm_weight) &&
                                        pieces_fit<WeightV>(d_model, w.v, x, norm_weight);
                with_cache_type(cache_type, [&](auto cache_tag) {
                    using Cache = typename decltype(cache_tag)::type;
                    launch_kernel("qkv_rope_cache_kernel",
                                  qkv_rope_cache_kernel<WeightQK, WeightV, Cache>, blocks,
                                  kMatvecWarps * kWarpSize, stream, q,
                                  static_cast<Cache*>(k_cache), static_cast<Cache*>(v_cache), x,
                                  norm_weight, eps, static_cast<const WeightQK*>(w.q),
                                  static_cast<const WeightQK*>(w.k),
                                  static_cast<const WeightV*>(w.v), w.q_bias, w.k_bias, w.v_bias,
                                  w.q_norm, w.k_norm, d_model, heads, rope_base, slots, scratch,
                                  first, end, vectorized, x_q8);
                });
            });
        });
        return launched;
    };
    if (w.q_type == w.k_type && launch(w.q_type, w.v_type, 0, q_pairs + 2 * kv_pairs)) return;
    // e.g. the tiny model's F16 and BF16 matrices: a launch a matrix, each of one type
    launch(w.q_type, w.q_type, 0, q_pairs);
    launch(w.k_type, w.k_type, q_pairs, q_pairs + kv_pairs);
    launch(w.v_type, w.v_type, q_pairs + kv_pairs, q_pairs + 2 * kv_pairs);
}

// ---- gate_up_swiglu: rmsnorm, the gate and up products, and swiglu ----
//
// The down projection reads this output rounded to 8 bits, a block of 32 rows with one scale:
// the rows of kGroupBlocks blocks. Each block counts itself done in its group's counter, and
// the last one rounds the group's 32 outputs, which the others have written by then.

constexpr int kGroupBlocks = kQ8BlockSize / kMatvecWarps;

// Blocks a multiprocessor keeps of gate_up_swiglu_kernel: a block product is one trip to memory
// a warp for Qwen's widths, so the more warps are resident, the fewer waves of them wait for
// memory one after the other. 8 blocks of 4 warps leave a thread 64 registers, which the block
// types' two rows fit; the float pieces' batches do not, and keep the compiler's choice.
template <typename Weight>
constexpr int kGateUpBlocksPerSM = kIsBlockType<Weight> ? 8 : 1;
static_assert(kQ8BlockSize % kMatvecWarps == 0, "a group of whole blocks makes an 8-bit block");

template <typename Weight>
__global__ void __launch_bounds__(kMatvecWarps * kWarpSize, kGateUpBlocksPerSM<Weight>)
gate_up_swiglu_kernel(float* out, const float* x, const float* norm_weight,
                                      float eps, const Weight* w_gate, const Weight* w_up,
                                      int d_model, int d_ff, bool vectorized, Q8Vector x_q8,
                                      Q8Vector out_q8, int* group_done) {
    // BEGIN SOLUTION step10 gate_up_swiglu_kernel
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const int64_t row = int64_t(blockIdx.x) * kMatvecWarps + warp;
    float2 sums = make_float2(0.0f, 0.0f);
    if (row < d_ff)
        sums = normed_dot_2rows(row_start(w_gate, row, d_model), row_start(w_up, row, d_model), x,
                                norm_weight, d_model, vectorized, x_q8);
    const float inv_rms = kIsBlockType<Weight> ? 1.0f : block_inv_rms(x, d_model, eps);
    wait_for_previous_kernel();  // every thread, also those with no row
    allow_next_kernel();
    if (row < d_ff && lane == 0) {
        const float gate = sums.x * inv_rms, up = sums.y * inv_rms;
        out[row] = gate / (1.0f + expf(-gate)) * up;  // swiglu_kernel's formula
    }
    // END SOLUTION
    if (!out_q8.q) return;
    const int group = blockIdx.x / kGroupBlocks;
    if (last_block_done(group_done + group, kGroupBlocks) && warp == 0)
        quantize_in_warp(__ldcg(out + group * kQ8BlockSize + lane), out_q8, group);
}

void gate_up_swiglu(float* out, const float* x, const float* norm_weight, float eps,
                    const void* w_gate, const void* w_up, uint32_t w_type, int d_model, int d_ff,
                    Q8Vector x_q8, bool x_q8_written, Q8Vector out_q8, int* group_done,
                    Stream stream) {
    if (d_ff == 0) return;
    if (out_q8.q && d_ff % kQ8BlockSize != 0)
        fail("gpu::gate_up_swiglu rounds whole blocks of 32 outputs, not %d", d_ff);
    const unsigned blocks = unsigned((d_ff + kMatvecWarps - 1) / kMatvecWarps);
    with_weight_type(w_type, "gate_up_swiglu", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        const bool vectorized = pieces_fit<Weight>(d_model, w_gate, x, norm_weight) &&
                                pieces_fit<Weight>(d_model, w_up, x, norm_weight);
        if (kIsBlockType<Weight> && !x_q8_written)
            quantize_q8(x_q8, x, norm_weight, eps, d_model, stream);
        launch_kernel("gate_up_swiglu_kernel", gate_up_swiglu_kernel<Weight>, blocks,
                      kMatvecWarps * kWarpSize, stream, out, x, norm_weight, eps,
                      static_cast<const Weight*>(w_gate), static_cast<const Weight*>(w_up), d_model,
                      d_ff, vectorized, x_q8, out_q8, group_done);
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
                                      int d_model, int n_vocab, bool vectorized,
                                      Q8Vector x_q8) {
    __shared__ Candidate warp_winners[kMatvecWarps];
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    const float inv_rms = kIsBlockType<Weight> ? 1.0f : block_inv_rms(x, d_model, eps);
    Candidate best{-INFINITY, n_vocab};
    // Two rows a warp at a time, as in the other fused products.
    const int64_t stride = int64_t(gridDim.x) * kMatvecWarps;
    for (int64_t row = int64_t(blockIdx.x) * kMatvecWarps + warp; row < n_vocab;
         row += 2 * stride) {
        const int64_t other = row + stride < n_vocab ? row + stride : row;
        const float2 sums =
            normed_dot_2rows(row_start(w, row, d_model), row_start(w, other, d_model), x,
                             norm_weight, d_model, vectorized, x_q8);
        const float logit = sums.x * inv_rms, other_logit = sums.y * inv_rms;
        if (lane == 0) {
            logits[row] = logit;
            logits[other] = other_logit;
        }
        best = better(best, Candidate{logit, int(row)});
        best = better(best, Candidate{other_logit, int(other)});
    }
    wait_for_previous_kernel();  // every thread, also those with no row
    allow_next_kernel();
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
                    DecodeSlots* slots, Q8Vector x_q8, bool x_q8_written, Stream stream) {
    if (n_vocab <= 0) fail("gpu::lm_head_argmax of %d logits", n_vocab);
    // Every block gets at least one row, so every winner is a real row.
    const int n_blocks = std::min(kLmHeadBlocks, (n_vocab + kMatvecWarps - 1) / kMatvecWarps);
    Candidate* winners = static_cast<Candidate*>(scratch);
    with_weight_type(w_type, "lm_head_argmax", [&](auto tag) {
        using Weight = typename decltype(tag)::type;
        const bool vectorized = pieces_fit<Weight>(d_model, w, x, norm_weight);
        if (kIsBlockType<Weight> && !x_q8_written)
            quantize_q8(x_q8, x, norm_weight, eps, d_model, stream);
        launch_kernel("lm_head_argmax_kernel", lm_head_argmax_kernel<Weight>, n_blocks,
                      kMatvecWarps * kWarpSize, stream, logits, winners, x, norm_weight, eps,
                      static_cast<const Weight*>(w), d_model, n_vocab, vectorized, x_q8);
    });
    launch_kernel("pick_next_token_kernel", pick_next_token_kernel, 1, kArgmaxThreads, stream,
                  slots, winners, n_blocks, logits, n_vocab);
}

}  // namespace gpu
