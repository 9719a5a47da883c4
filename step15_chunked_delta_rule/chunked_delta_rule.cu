// chunked_delta_rule.cu - step 15: a prompt's gated delta rule in chunks of C = 64 tokens, the
// twin of ops_cpu.cpp's chunked_gated_delta_rule (same contract, device pointers), its matrix
// products on the tensor cores. gated_delta_net.cu's recurrence keeps the one-token step.
//
// The chunk form (ops_cpu.h) parts the work in two. What a chunk computes from its own tokens
// alone, A, T = (I + A)^-1, W, U and the masked scores P = Q K^T (*) causal e^(G_t - G_s), needs
// no state: every chunk at once, a block per (chunk, value head), in chunk_prepare_kernel. What
// needs the state before the chunk, V' = U - W S, O = diag(e^G) Q S + P V' and the next state,
// goes chunk after chunk: a block per (value head, 16 columns of the state) walks the chunks in
// chunk_state_pass_kernel, its slice of S in its warps' registers from the first chunk to the
// last (a column of S evolves on its own, as in the recurrence). Both kernels have 4 warps, a
// warp owning 16 rows of a (64, x) product or 32 rows of the state's (128, 16) slice.
//
// Products. K K^T, Q K^T (64 x 64 x dk), W = T diag(beta e^G) K, U = T diag(beta) V
// (64 x dk x 64), W S, Q S (64 x 16 x dk), P V' (64 x 16 x 64) and K^T V' (dk x 16 x 64): all
// mma.sync m16n8k16 (tensor_core_ptx.cuh) with float accumulators, as step 12's GEMM. The left
// operand of a warp's product is its own rows, so the warp builds it in registers; the right
// operand is every warp's, so it goes through shared memory once and ldmatrix. The state pass
// is a chain, chunk after chunk, so what it waits for each chunk is its time: its left
// operands (W, diag(e^G) Q, P, and diag(e^(G_last - G)) K transposed) need no state, and
// chunk_prepare leaves them ready, split (below) and in each lane's register order, so that a
// warp loads a 16 x 16 operand as two 16-byte loads a lane instead of building it from 16
// scattered floats; and the eight blocks of a head read them, not build them eight times. The
// state's slice is the accumulator of its own update and stays in the registers; shared
// memory holds it only as the next products' right operand. Shared memory: 85 KB a
// chunk_prepare block (sm_86 and sm_89 allow 99), 18 KB a chunk_state_pass block. dk and dv
// up to 128; shorter heads are padded with zeros.
//
// Precision: the split trick for every product. An operand rounded to F16 keeps 11 significant
// bits, a relative error up to u = 2^-11 (4.9e-4): the state so rounded (|S| up to ~5) moves
// each recall W S by ~1e-4, each delta with it, and with decays near 1 the state keeps what
// every chunk's rounding did to it, up to 1e-3 off after a thousand tokens (the CPU model of F16
// operands in test_chunked_delta_rule_cuda.cpp), where the recurrence is within 2e-6 of exact;
// the decode steps after the prompt start from that state. So each operand x is taken as two
// F16 values, hi = f16(x) and lo = f16((x - hi) 2^11), and a product is three mma: hi hi, and
// hi lo + lo hi in an accumulator of their own, added times 2^-11 (lo lo, below 2^-22 of the
// product, left out). x is then known to 2^-22 of itself (lo's own rounding), and each product
// term a b is off by at most 3 * 2^-22 |a| |b| = 7.2e-7 |a| |b| (fp32's FMA: 2^-24): three times
// the tensor-core work for fp32's precision within a factor of 12. lo is scaled because x - hi,
// about 2^-12 x, would be an F16 subnormal for every |x| below 0.25 (F16's normal numbers stop
// at 2^-14), known only to 2^-24 absolutely. F16's range suffices: |k| <= 1, |q| <= 1, |T| <= 1
// (test_chunked_delta_rule.cpp), the state and v far below 65504; only an x below ~6e-5, its lo
// then subnormal, is known to 2^-35 absolutely instead.
//
// The bound (test_delta_rule_inputs.h, kGpuChunkBound): the CPU chunk form is within
// (C + dk) roundings of 2^-24 of the state's size of exact (test_chunked_delta_rule.cpp), an
// error that does not grow along the prompt (each token's map e^g (I - beta k k^T) shrinks it).
// Here each of those C + dk terms is off by 12 times as much, worst case (C + dk) * 7.2e-7 =
// 1.4e-4 of the state's size, and about sqrt(C + dk) * 7.2e-7 = 1e-5 as the roundings fall
// either way (the mma's own float sums add about as much as the CPU's). Hence
// |gpu - recurrence| <= 3e-5 + 3e-5 |x| for values of order 1: three times that estimate, a
// fifth of the worst case.
#include "cuda_check.h"
#include "device_buffer.h"
#include "gemm_tensor_cores.h"
#include "ops_cpu.h"
#include "ops_cuda.h"
#include "tensor_core_ptx.cuh"

namespace gpu {

constexpr int kChunk = kDeltaChunkSize;  // C: the CPU's chunk, so both cut a prompt alike
constexpr int kMaxHeadDim = 128;         // dk and dv up to this; shorter heads padded with zeros
constexpr int kSliceColumns = 16;        // state columns a chunk_state_pass block carries
constexpr int kChunkWarps = 4;
constexpr int kChunkThreads = kChunkWarps * 32;
constexpr int kRowPad = 8;  // halves after each tile row: ldmatrix's 8 rows on 8 bank groups
static_assert(kChunk == 16 * kChunkWarps, "a warp owns one mma row tile (16) of a chunk");
static_assert(kMaxHeadDim == 32 * kChunkWarps, "a warp owns two mma row tiles of the state");
static_assert(kMaxHeadDim % 16 == 0 && kSliceColumns == 16, "whole mma steps and tile pairs");

// lo is stored times 2^11, as large as hi, so not among F16's subnormals (the header says why).
constexpr float kLoScale = 2048.0f;

// x0 and x1 as hi + lo / kLoScale, each a pair of F16 values (the split trick above).
struct SplitPair {
    __half2 hi, lo;
};
__device__ inline SplitPair split_pair(float x0, float x1) {
    const __half2 hi = __floats2half2_rn(x0, x1);
    const float2 kept = __half22float2(hi);
    return {hi, __floats2half2_rn((x0 - kept.x) * kLoScale, (x1 - kept.y) * kLoScale)};
}
__device__ inline uint32_t bits(__half2 pair) { return *reinterpret_cast<const uint32_t*>(&pair); }

// One mma operand, hi and lo: A's four 8 x 8 quarters, or B for two column tiles of 8
// (hi[0..1] and lo[0..1] the first, [2..3] the second).
struct SplitFragment {
    uint32_t hi[4], lo[4];

    // Register i, split from the pair (x0, x1).
    __device__ void set(int i, float x0, float x1) {
        const SplitPair pair = split_pair(x0, x1);
        hi[i] = bits(pair.hi);
        lo[i] = bits(pair.lo);
    }
};

// A (16 x 16) at rows m0, depth k0 of the matrix value(row, column), lane `lane`'s registers:
// quarter i holds rows group + 8 (i % 2), columns pair + 8 (i / 2) (tensor_core_ptx.cuh).
template <typename Value>
__device__ inline SplitFragment a_operand(Value value, int m0, int k0, int lane) {
    const int row = m0 + lane / 4, column = k0 + 2 * (lane % 4);
    SplitFragment f;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int r = row + 8 * (i % 2), c = column + 8 * (i / 2);
        f.set(i, value(r, c), value(r, c + 1));
    }
    return f;
}
// The calling lane's.
template <typename Value>
__device__ inline SplitFragment a_operand(Value value, int m0, int k0) {
    return a_operand(value, m0, k0, threadIdx.x % 32);
}

// A right operand in shared memory, hi and lo, its rows padded by kRowPad.
template <int kRows, int kCols>
struct SplitTile {
    alignas(16) __half hi[kRows][kCols + kRowPad];
    alignas(16) __half lo[kRows][kCols + kRowPad];
};

// x0 and x1 into (r, c) and (r, c + 1), c even.
template <int kRows, int kCols>
__device__ inline void store_pair(SplitTile<kRows, kCols>& tile, int r, int c, float x0, float x1) {
    const SplitPair pair = split_pair(x0, x1);
    *reinterpret_cast<__half2*>(&tile.hi[r][c]) = pair.hi;
    *reinterpret_cast<__half2*>(&tile.lo[r][c]) = pair.lo;
}

// Every element (r, c) of the tile set to value(r, c), the block's threads a pair each in turn.
template <int kRows, int kCols, typename Value>
__device__ inline void fill_split(SplitTile<kRows, kCols>& tile, Value value) {
    constexpr int kPairsPerRow = kCols / 2;
#pragma unroll 8  // eight pairs' loads in flight a thread
    for (int p = threadIdx.x; p < kRows * kPairsPerRow; p += kChunkThreads) {
        const int r = p / kPairsPerRow, c = 2 * (p % kPairsPerRow);
        store_pair(tile, r, c, value(r, c), value(r, c + 1));
    }
}

// B (16 deep, columns n0 .. n0 + 15) from a tile stored (n, k): step 12's load of W.
template <int kRows, int kCols>
__device__ inline SplitFragment b_operand(const SplitTile<kRows, kCols>& t, int n0, int k0) {
    const int lane = threadIdx.x % 32;
    const int r = n0 + lane % 8 + (lane / 16) * 8, c = k0 + ((lane / 8) % 2) * 8;
    SplitFragment f;
    load_matrix_x4(f.hi, &t.hi[r][c]);
    load_matrix_x4(f.lo, &t.lo[r][c]);
    return f;
}
// B from a tile stored (k, n): step 12's load of V in flash attention.
template <int kRows, int kCols>
__device__ inline SplitFragment b_operand_transposed(const SplitTile<kRows, kCols>& t, int k0,
                                                     int n0) {
    const int lane = threadIdx.x % 32;
    const int r = k0 + lane % 8 + ((lane / 8) % 2) * 8, c = n0 + (lane / 16) * 8;
    SplitFragment f;
    load_matrix_x4_transposed(f.hi, &t.hi[r][c]);
    load_matrix_x4_transposed(f.lo, &t.lo[r][c]);
    return f;
}

// acc (16 x 8) += A B, B's column tile `tile` (0 or 1): the two small terms in an accumulator of
// their own, scaled back by 2^-11 (exactly) into acc, then hi hi.
__device__ inline void mma_split(float (&acc)[4], const SplitFragment& a, const SplitFragment& b,
                                 int tile) {
    float small[4] = {};
    mma_16x8x16<__half>(small, a.hi, b.lo[2 * tile], b.lo[2 * tile + 1]);
    mma_16x8x16<__half>(small, a.lo, b.hi[2 * tile], b.hi[2 * tile + 1]);
#pragma unroll
    for (int e = 0; e < 4; e++) acc[e] += small[e] * (1.0f / kLoScale);
    mma_16x8x16<__half>(acc, a.hi, b.hi[2 * tile], b.hi[2 * tile + 1]);
}

// Where accumulator element e of column tile n sits, for a warp whose tile starts at row m0:
// rows group and group + 8, columns pair and pair + 1 (tensor_core_ptx.cuh).
__device__ inline int acc_row(int m0, int e) { return m0 + (threadIdx.x % 32) / 4 + (e / 2) * 8; }
__device__ inline int acc_column(int n, int e) { return 8 * n + 2 * (threadIdx.x % 4) + e % 2; }

// A warp's accumulators (16 rows, column tiles 2 kt and 2 kt + 1) as the left operand of a
// next product, depth tile kt: the lane holds the same rows and columns in both layouts.
template <int kTiles>
__device__ inline SplitFragment acc_as_a_operand(const float (&acc)[kTiles][4], int kt) {
    SplitFragment f;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float* pair = &acc[2 * kt + i / 2][2 * (i % 2)];
        f.set(i, pair[0], pair[1]);
    }
    return f;
}

// The caller's DeltaChunkScratch (ops_cuda.h) as the kernels take it, with the same shapes.
struct ChunkMatrices {
    uint32_t* fragments;  // (n_value_heads, n_chunks, kDeltaChunkFragments, kDeltaFragmentWords)
    float* u;             // (n_value_heads, n_chunks, C, dv)
    float* chunk_decays;  // (n_value_heads, n_chunks)
};

// A chunk's left operands, made once by chunk_prepare and read by chunk_state_pass's warps:
// fragment f (16 x 16) is kDeltaFragmentWords words, every lane's hi registers then every lane's
// lo, so a warp reads it in two loads of 512 contiguous bytes. The fragments of a chunk:
constexpr int kWFragments = 0;   // W (C, 128): row tile m, depth tile k at 8 m + k
constexpr int kQFragments = 32;  // diag(e^G) Q (C, 128): 8 m + k
constexpr int kPFragments = 64;  // P (C, C): 4 m + k
constexpr int kKFragments = 80;  // (diag(e^(G_last - G)) K)^T (128, C): 4 m + k
static_assert(kKFragments + 32 == kDeltaChunkFragments && kMaxHeadDim == 128 && kChunk == 64,
              "ops_cuda.h's count of a chunk's fragments");
static_assert(kDeltaFragmentWords == 2 * 32 * 4, "hi and lo, 32 lanes, 4 registers");

__device__ inline void store_fragment(uint32_t* chunk, int f, int lane, const SplitFragment& x) {
    uint4* at = reinterpret_cast<uint4*>(chunk + f * kDeltaFragmentWords);
    at[lane] = make_uint4(x.hi[0], x.hi[1], x.hi[2], x.hi[3]);
    at[32 + lane] = make_uint4(x.lo[0], x.lo[1], x.lo[2], x.lo[3]);
}
__device__ inline SplitFragment load_fragment(const uint32_t* chunk, int f) {
    const uint4* at = reinterpret_cast<const uint4*>(chunk + f * kDeltaFragmentWords);
    const uint4 hi = at[threadIdx.x % 32], lo = at[32 + threadIdx.x % 32];
    return {{hi.x, hi.y, hi.z, hi.w}, {lo.x, lo.y, lo.z, lo.w}};
}

// Both kernels' arguments.
struct ChunkArgs {
    float* out;    // (n_tokens, n_value_heads, dv)
    float* state;  // (n_value_heads, dk, dv)
    const float* q;
    const float* k;  // (n_tokens, n_key_heads, dk)
    const float* v;  // (n_tokens, n_value_heads, dv)
    const float* g;
    const float* beta;  // (n_tokens, n_value_heads)
    int n_tokens, n_key_heads, n_value_heads, dk, dv;
    ChunkMatrices scratch;
};

__host__ __device__ inline int chunk_count(int n_tokens) {
    return (n_tokens + kChunk - 1) / kChunk;
}

// Chunk `chunk` of value head h: its first token, its tokens, its index in the scratch.
struct ChunkPlace {
    int first, c;
    int64_t index;
};
__device__ inline ChunkPlace chunk_place(const ChunkArgs& a, int h, int chunk) {
    const int first = chunk * kChunk;
    return {first, min(kChunk, a.n_tokens - first), int64_t(h) * chunk_count(a.n_tokens) + chunk};
}
__device__ inline uint32_t* chunk_fragments(const ChunkArgs& a, ChunkPlace at) {
    return a.scratch.fragments + at.index * kDeltaChunkFragments * kDeltaFragmentWords;
}

// Value i of the chunk's token t in q or k, 0 past the chunk's tokens or dk: value head h
// reads key head h % n_key_heads (the file's tiled order).
__device__ inline float key_value(const ChunkArgs& a, const float* x, ChunkPlace at, int h, int t,
                                  int i) {
    if (t >= at.c || i >= a.dk) return 0.0f;
    return x[(int64_t(at.first + t) * a.n_key_heads + h % a.n_key_heads) * a.dk + i];
}

// ---- chunk_prepare: a block per (chunk, value head), every chunk at once ----

struct PrepareTiles {
    SplitTile<kChunk, kMaxHeadDim> keys;    // (C, dk) K
    SplitTile<kChunk, kMaxHeadDim> values;  // (C, dv) V
    // (C, C) A is strictly lower triangular and T lower triangular: A^T above the diagonal
    // (at[r][t] = A_tr, r < t), T on and below it (at[t][r] = T_tr, r <= t).
    float at[kChunk][kChunk + 1];
    double G[kChunk];         // (C) g_0 + ... + g_t, in double as on the CPU
    float decay[kChunk];      // (C) e^(G_t)
    float key_decay[kChunk];  // (C) e^(G_last - G_t)
    float beta[kChunk];       // (C) 0 past the chunk's tokens
};

// acc (C, kMaxHeadDim) = mix (C, C) rows (C, kMaxHeadDim), warp w's 16 rows, mix given as
// mix(t, r). mix is lower triangular: warp w's rows need its columns below 16 (w + 1).
template <typename Mix>
__device__ inline void mix_product(float (&acc)[kMaxHeadDim / 8][4], Mix mix,
                                   const SplitTile<kChunk, kMaxHeadDim>& rows) {
    const int m0 = 16 * (threadIdx.x / 32);
    for (int k0 = 0; k0 < m0 + 16; k0 += 16) {
        const SplitFragment a = a_operand(mix, m0, k0);
#pragma unroll
        for (int n = 0; n < kMaxHeadDim / 8; n += 2) {
            const SplitFragment b = b_operand_transposed(rows, k0, 8 * n);
            mma_split(acc[n], a, b, 0);
            mma_split(acc[n + 1], a, b, 1);
        }
    }
}

// The chunk's G, decays and beta (and the decay chunk_state_pass reads), K and V.
__device__ inline void load_prepare_inputs(PrepareTiles& s, const ChunkArgs& a, int h,
                                           ChunkPlace at) {
    if (threadIdx.x < kChunk) {  // the gates, 0 past the chunk's tokens
        const int t = threadIdx.x;
        const int64_t gate = int64_t(at.first + t) * a.n_value_heads + h;
        s.G[t] = t < at.c ? double(a.g[gate]) : 0.0;
        s.beta[t] = t < at.c ? a.beta[gate] : 0.0f;
    }
    __syncthreads();
    if (threadIdx.x == 0) {  // G summed in order, as on the CPU; past the chunk, the last one's
        for (int t = 1; t < kChunk; t++) s.G[t] += s.G[t - 1];
        a.scratch.chunk_decays[at.index] = expf(float(s.G[at.c - 1]));
    }
    fill_split(s.keys, [&](int t, int i) { return key_value(a, a.k, at, h, t, i); });
    fill_split(s.values, [&](int t, int j) {
        return t < at.c && j < a.dv ? a.v[(int64_t(at.first + t) * a.n_value_heads + h) * a.dv + j]
                                    : 0.0f;
    });
    __syncthreads();
    if (threadIdx.x < kChunk) {
        const int t = threadIdx.x;
        s.decay[t] = expf(float(s.G[t]));
        s.key_decay[t] = expf(float(s.G[at.c - 1] - s.G[t]));
    }
    __syncthreads();
}

// Warp w's 16 rows of K K^T and Q K^T: A^T (r < t) into shared memory, each times
// e^(G_t - G_r) beta_t, and P (r <= t) as fragments; and diag(e^G) Q's rows as fragments.
__device__ inline void scores(PrepareTiles& s, const ChunkArgs& a, int h, ChunkPlace at) {
    // BEGIN SOLUTION step15 chunk_scores
    const int warp = threadIdx.x / 32, m0 = 16 * warp;
    uint32_t* fragments = chunk_fragments(a, at);
    float kk[kChunk / 8][4] = {}, qk[kChunk / 8][4] = {};
#pragma unroll
    for (int k0 = 0; k0 < kMaxHeadDim; k0 += 16) {
        const SplitFragment key =
            a_operand([&](int t, int i) { return key_value(a, a.k, at, h, t, i); }, m0, k0);
        const SplitFragment query =
            a_operand([&](int t, int i) { return key_value(a, a.q, at, h, t, i); }, m0, k0);
        const SplitFragment decayed_query = a_operand(
            [&](int t, int i) { return s.decay[t] * key_value(a, a.q, at, h, t, i); }, m0, k0);
        store_fragment(fragments, kQFragments + 8 * warp + k0 / 16, threadIdx.x % 32,
                       decayed_query);
#pragma unroll
        for (int n = 0; n < kChunk / 8; n += 2) {
            const SplitFragment keys = b_operand(s.keys, 8 * n, k0);
#pragma unroll
            for (int tile = 0; tile < 2; tile++) {
                mma_split(kk[n + tile], key, keys, tile);
                mma_split(qk[n + tile], query, keys, tile);
            }
        }
    }
#pragma unroll
    for (int n = 0; n < kChunk / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int t = acc_row(m0, e), r = acc_column(n, e);
            const float decay = r <= t ? expf(float(s.G[t] - s.G[r])) : 0.0f;
            if (r < t) s.at[r][t] = s.beta[t] * kk[n][e] * decay;
            qk[n][e] *= decay;
        }
#pragma unroll
    for (int kt = 0; kt < kChunk / 16; kt++)
        store_fragment(fragments, kPFragments + 4 * warp + kt, threadIdx.x % 32,
                       acc_as_a_operand(qk, kt));
    // END SOLUTION
}

// (diag(e^(G_last - G)) K)^T (dk, C) as fragments, the block's threads a (fragment, lane) each
// in turn.
__device__ inline void decayed_keys(const PrepareTiles& s, const ChunkArgs& a, int h,
                                    ChunkPlace at) {
    uint32_t* fragments = chunk_fragments(a, at);
    for (int slot = threadIdx.x; slot < 32 * 32; slot += kChunkThreads) {
        const int f = slot / 32, lane = slot % 32;
        const SplitFragment keys = a_operand(
            [&](int i, int t) { return s.key_decay[t] * key_value(a, a.k, at, h, t, i); },
            16 * (f / 4), 16 * (f % 4), lane);
        store_fragment(fragments, kKFragments + f, lane, keys);
    }
}

// W = T diag(beta e^G) K, warp w's rows, as fragments.
__device__ inline void w_fragments(const PrepareTiles& s, const ChunkArgs& a, ChunkPlace at) {
    float w[kMaxHeadDim / 8][4] = {};
    mix_product(
        w, [&](int t, int r) { return r <= t ? s.at[t][r] * s.beta[r] * s.decay[r] : 0.0f; },
        s.keys);
#pragma unroll
    for (int kt = 0; kt < kMaxHeadDim / 16; kt++)
        store_fragment(chunk_fragments(a, at), kWFragments + 8 * (threadIdx.x / 32) + kt,
                       threadIdx.x % 32, acc_as_a_operand(w, kt));
}

// U = T diag(beta) V, warp w's rows, as floats (chunk_state_pass subtracts W S from them).
__device__ inline void u_rows(const PrepareTiles& s, const ChunkArgs& a, ChunkPlace at) {
    float u[kMaxHeadDim / 8][4] = {};
    mix_product(u, [&](int t, int r) { return r <= t ? s.at[t][r] * s.beta[r] : 0.0f; }, s.values);
    float* out = a.scratch.u + at.index * kChunk * a.dv;
    const int m0 = 16 * (threadIdx.x / 32);
#pragma unroll
    for (int n = 0; n < kMaxHeadDim / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            if (acc_column(n, e) < a.dv) out[acc_row(m0, e) * a.dv + acc_column(n, e)] = u[n][e];
}

__global__ void __launch_bounds__(kChunkThreads) chunk_prepare_kernel(const ChunkArgs a) {
    extern __shared__ __align__(16) uint8_t shared_bytes[];
    PrepareTiles& s = *reinterpret_cast<PrepareTiles*>(shared_bytes);
    // BEGIN SOLUTION step15 chunk_prepare_kernel
    const int h = blockIdx.y;
    const ChunkPlace at = chunk_place(a, h, blockIdx.x);
    load_prepare_inputs(s, a, h, at);
    scores(s, a, h, at);
    decayed_keys(s, a, h, at);
    __syncthreads();

    // T = (I + A)^-1 row after row: T_t = e_t - sum_{r<t} A_tr T_r, thread j its column j <= t,
    // summed in the CPU's order. It reads A^T above the diagonal and the rows of T before t,
    // and writes row t on and left of the diagonal, which nothing reads until the next row.
    for (int t = 0; t < kChunk; t++) {
        const int j = threadIdx.x;
        if (j <= t) {
            float x = j == t ? 1.0f : 0.0f;
            for (int r = j; r < t; r++) x -= s.at[r][t] * s.at[r][j];
            s.at[t][j] = x;
        }
        __syncthreads();
    }

    w_fragments(s, a, at);
    u_rows(s, a, at);
    // END SOLUTION
}

// ---- chunk_state_pass: a block per (value head, 16 state columns), chunk after chunk ----

struct StateTiles {
    SplitTile<kMaxHeadDim, kSliceColumns> state;  // (dk, 16) S's slice
    SplitTile<kChunk, kSliceColumns> deltas;      // (C, 16) V' = U - W S
};

// The block's slice of a value head's state as the warps hold it: warp w's rows 32 w + 16 m
// (m = 0, 1) as two row tiles of mma accumulators, 2 column tiles of 8 each.
using StateSlice = float[2][2][4];

// Element (m, n, e) of the slice: row, and column of the slice.
__device__ inline int slice_row(int m, int e) {
    return acc_row(32 * (threadIdx.x / 32) + 16 * m, e);
}

// V' = U - W S for warp w's 16 rows into s.deltas, and O = diag(e^G) Q S, the outputs' first
// part, into o.
__device__ inline void chunk_deltas(float (&o)[2][4], StateTiles& s, const ChunkArgs& a,
                                    ChunkPlace at, int j0) {
    const int warp = threadIdx.x / 32, m0 = 16 * warp;
    const uint32_t* fragments = chunk_fragments(a, at);
    float ws[2][4] = {};
#pragma unroll
    for (int kt = 0; kt < kMaxHeadDim / 16; kt++) {
        const SplitFragment S = b_operand_transposed(s.state, 16 * kt, 0);
        const SplitFragment w_rows = load_fragment(fragments, kWFragments + 8 * warp + kt);
        const SplitFragment queries = load_fragment(fragments, kQFragments + 8 * warp + kt);
#pragma unroll
        for (int tile = 0; tile < 2; tile++) {
            mma_split(ws[tile], w_rows, S, tile);
            mma_split(o[tile], queries, S, tile);
        }
    }
    const float* u = a.scratch.u + at.index * kChunk * a.dv;
#pragma unroll
    for (int n = 0; n < 2; n++)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
            const int t = acc_row(m0, e), j = j0 + acc_column(n, e);
            const float u0 = j < a.dv ? u[t * a.dv + j] : 0.0f;
            const float u1 = j + 1 < a.dv ? u[t * a.dv + j + 1] : 0.0f;
            store_pair(s.deltas, t, acc_column(n, e), u0 - ws[n][e], u1 - ws[n][e + 1]);
        }
}

// O += P V' for warp w's 16 rows, written for the chunk's tokens. Reads every warp's deltas:
// after a barrier behind chunk_deltas.
__device__ inline void chunk_outputs(float (&o)[2][4], const StateTiles& s, const ChunkArgs& a,
                                     int h, ChunkPlace at, int j0) {
    const int warp = threadIdx.x / 32, m0 = 16 * warp;
    const uint32_t* fragments = chunk_fragments(a, at);
    for (int kt = 0; kt <= warp; kt++) {  // P is lower triangular
        const SplitFragment deltas = b_operand_transposed(s.deltas, 16 * kt, 0);
        const SplitFragment scores = load_fragment(fragments, kPFragments + 4 * warp + kt);
        mma_split(o[0], scores, deltas, 0);
        mma_split(o[1], scores, deltas, 1);
    }
#pragma unroll
    for (int n = 0; n < 2; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int t = acc_row(m0, e), j = j0 + acc_column(n, e);
            if (t < at.c && j < a.dv)
                a.out[(int64_t(at.first + t) * a.n_value_heads + h) * a.dv + j] = o[n][e];
        }
}

// S = e^(G_last) S + (diag(e^(G_last - G)) K)^T V', in the registers.
__device__ inline void carry_state(StateSlice& S, const StateTiles& s, const ChunkArgs& a,
                                   ChunkPlace at) {
    const float chunk_decay = a.scratch.chunk_decays[at.index];  // e^(G_last)
#pragma unroll
    for (int m = 0; m < 2; m++)
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) S[m][n][e] *= chunk_decay;
    const int warp = threadIdx.x / 32;
    const uint32_t* fragments = chunk_fragments(a, at);
#pragma unroll
    for (int kt = 0; kt < kChunk / 16; kt++) {
        const SplitFragment deltas = b_operand_transposed(s.deltas, 16 * kt, 0);
#pragma unroll
        for (int m = 0; m < 2; m++) {
            const SplitFragment keys =
                load_fragment(fragments, kKFragments + 4 * (2 * warp + m) + kt);
            mma_split(S[m][0], keys, deltas, 0);
            mma_split(S[m][1], keys, deltas, 1);
        }
    }
}

// The slice from or to the state in memory (dk, dv); rows and columns past it are zeros.
__device__ inline void read_slice(StateSlice& S, const float* state, const ChunkArgs& a, int j0) {
#pragma unroll
    for (int m = 0; m < 2; m++)
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = slice_row(m, e), j = j0 + acc_column(n, e);
                S[m][n][e] = i < a.dk && j < a.dv ? state[int64_t(i) * a.dv + j] : 0.0f;
            }
}
__device__ inline void write_slice(float* state, const StateSlice& S, const ChunkArgs& a, int j0) {
#pragma unroll
    for (int m = 0; m < 2; m++)
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = slice_row(m, e), j = j0 + acc_column(n, e);
                if (i < a.dk && j < a.dv) state[int64_t(i) * a.dv + j] = S[m][n][e];
            }
}

// The slice as the products' right operand, every warp's rows.
__device__ inline void share_slice(StateTiles& s, const StateSlice& S) {
#pragma unroll
    for (int m = 0; m < 2; m++)
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int e = 0; e < 4; e += 2)
                store_pair(s.state, slice_row(m, e), acc_column(n, e), S[m][n][e], S[m][n][e + 1]);
}

__global__ void __launch_bounds__(kChunkThreads, 1) chunk_state_pass_kernel(const ChunkArgs a) {
    __shared__ StateTiles s;
    const int h = blockIdx.x, j0 = blockIdx.y * kSliceColumns;
    float* state = a.state + int64_t(h) * a.dk * a.dv;  // (dk, dv)
    StateSlice S;
    read_slice(S, state, a, j0);
    for (int chunk = 0; chunk < chunk_count(a.n_tokens); chunk++) {
        const ChunkPlace at = chunk_place(a, h, chunk);
        __syncthreads();  // the last chunk's tiles are read
        share_slice(s, S);
        __syncthreads();
        float o[2][4] = {};
        chunk_deltas(o, s, a, at, j0);
        __syncthreads();  // every warp's deltas are in
        chunk_outputs(o, s, a, h, at, j0);
        carry_state(S, s, a, at);
    }
    write_slice(state, S, a, j0);
}

// ---- the launch ----

// The scratch's matrices for a call, if it has room for them (DeltaChunkScratch::reserve).
static ChunkMatrices scratch_matrices(DeltaChunkScratch& scratch, int n_tokens, int n_value_heads,
                                      int dv) {
    const size_t chunks = size_t(n_value_heads) * chunk_count(n_tokens);
    if (scratch.fragments.size() < chunks * kDeltaChunkFragments * kDeltaFragmentWords ||
        scratch.u.size() < chunks * kChunk * dv || scratch.chunk_decays.size() < chunks)
        fail(
            "gpu::chunked_gated_delta_rule: the scratch has no room for %d tokens of %d heads "
            "(DeltaChunkScratch::reserve)",
            n_tokens, n_value_heads);
    return {scratch.fragments.data(), scratch.u.data(), scratch.chunk_decays.data()};
}

void chunked_gated_delta_rule(float* out, float* state, const float* q, const float* k,
                              const float* v, const float* g, const float* beta, int n_tokens,
                              int n_key_heads, int n_value_heads, int dk, int dv,
                              DeltaChunkScratch& scratch, Stream stream) {
    if (dk < 1 || dk > kMaxHeadDim || dv < 1 || dv > kMaxHeadDim)
        fail("gpu::chunked_gated_delta_rule takes heads of 1 to %d values, not dk %d and dv %d",
             kMaxHeadDim, dk, dv);
    if (n_tokens == 0 || n_value_heads == 0) return;
    ChunkArgs a{out, state, q, k, v, g, beta, n_tokens, n_key_heads, n_value_heads, dk, dv, {}};
    a.scratch = scratch_matrices(scratch, n_tokens, n_value_heads, dv);
    if (!gpu_has_tensor_core_mma())
        fail(
            "gpu::chunked_gated_delta_rule needs mma.sync: a GPU of compute capability 8.0 or "
            "later");

    // Past the 48 KB of a static array: opted into, as step 12's GEMM does.
    constexpr int kPrepareBytes = sizeof(PrepareTiles);
    static_assert(kPrepareBytes <= 99 * 1024, "fits the shared memory of a block on sm_86, sm_89");
    CUDA_CHECK(cudaFuncSetAttribute(chunk_prepare_kernel,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, kPrepareBytes));
    const dim3 chunks(chunk_count(n_tokens), n_value_heads);
    chunk_prepare_kernel<<<chunks, kChunkThreads, kPrepareBytes, stream>>>(a);
    check_launch("chunk_prepare_kernel");
    const dim3 slices(n_value_heads, (dv + kSliceColumns - 1) / kSliceColumns);
    chunk_state_pass_kernel<<<slices, kChunkThreads, 0, stream>>>(a);
    check_launch("chunk_state_pass_kernel");
}

}  // namespace gpu
