// gated_delta_net.cu - step 14: the Gated DeltaNet layer's operators as kernels, each the twin of
// its ops_cpu.cpp function (same contract, device pointers): the causal conv1d + SiLU with its
// window, the per-row L2 norm, the gates beta and g, the gated delta rule, the gated RMSNorm.
//
// The one that shapes the layer's cost is the delta rule: a recurrence, token after token, on a
// state of dk x dv floats per value head. Column j of a head's state S evolves on its own:
//   S[:, j] = e^g S[:, j];  delta_j = beta (v[j] - S[:, j] . k);  S[:, j] += delta_j k;
//   o[j] = S[:, j] . q
// so a warp owns one column, its dk values spread over the lanes' registers (dk / 32 each), and
// the two dot products are warp shuffles. The kernel loops over the tokens itself: a prompt is
// one launch per layer, and the state goes through memory once, read at the start and written
// at the end, however many tokens it takes in (running one launch per token would read and
// write the whole state every token). The chunked form, which turns most of this work into
// matrix products, is step 15's.
//
// The other four are cheap beside the projections: a thread per element or a warp per row, as
// is split_qkv, which parts the convolved rows into q, k and v.
#include "cuda_check.h"
#include "ops_cuda.h"
#include "reduce.cuh"

namespace gpu {

constexpr int kThreads = 256;  // threads a block for the kernels below but the delta rule's

__device__ inline float silu(float x) { return x / (1.0f + expf(-x)); }
__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// ---- causal_conv1d_silu: a thread per (channel, chunk of tokens) ----
//
// A thread keeps the last `kernel` inputs of its channel in registers, newest last, and slides
// them one token at a time over its chunk. The inputs before the chunk come from x, or from the
// window before token 0. Only the first chunk reads the window (a chunk is at least `kernel`
// - 1 tokens), so its thread alone replaces the window after reading it: no other thread
// touches the window, and in place is safe.

constexpr int kMaxConvKernel = 8;  // taps the registers hold (Qwen3.5's kernel is 4)
constexpr int kConvChunk = 16;     // tokens a thread convolves
static_assert(kConvChunk >= kMaxConvKernel - 1, "only the first chunk may read the window");

__global__ void causal_conv1d_silu_kernel(float* out, const float* x, float* window,
                                          const float* weight, int n_tokens, int channels,
                                          int kernel) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= channels) return;
    const int history = kernel - 1;
    const int first = blockIdx.y * kConvChunk;
    const int end = min(first + kConvChunk, n_tokens);
    // Right-aligned: recent[kMaxConvKernel - 1 - d] is the input d tokens back, and tap[m]
    // multiplies recent[m] from m = kMaxConvKernel - kernel on, so the sum runs oldest first, as
    // the CPU's does. Constant indices after unrolling keep both arrays in registers.
    const int unused = kMaxConvKernel - kernel;  // taps in front of a shorter kernel
    float tap[kMaxConvKernel], recent[kMaxConvKernel];
#pragma unroll
    for (int m = 0; m < kMaxConvKernel; m++) {
        const int j = m - unused;  // the tap's index in weight's row
        tap[m] = j >= 0 ? weight[int64_t(c) * kernel + j] : 0.0f;
        const int source = first - (kMaxConvKernel - m);  // < 0: an input of an earlier call
        recent[m] = j < 1         ? 0.0f
                    : source >= 0 ? x[int64_t(source) * channels + c]
                                  : window[int64_t(history + source) * channels + c];
    }
    for (int t = first; t < end; t++) {
#pragma unroll
        for (int m = 0; m < kMaxConvKernel - 1; m++) recent[m] = recent[m + 1];
        recent[kMaxConvKernel - 1] = x[int64_t(t) * channels + c];
        float sum = 0.0f;
#pragma unroll
        for (int m = 0; m < kMaxConvKernel; m++)
            if (m >= unused) sum = fmaf(tap[m], recent[m], sum);
        out[int64_t(t) * channels + c] = silu(sum);
    }
    if (blockIdx.y != 0) return;
    // The window becomes the last `history` inputs of (window, x): row i is position
    // n_tokens + i of the two joined, read at or after the row written.
    for (int i = 0; i < history; i++) {
        const int joined = n_tokens + i;
        window[int64_t(i) * channels + c] = joined < history
                                                ? window[int64_t(joined) * channels + c]
                                                : x[int64_t(joined - history) * channels + c];
    }
}

void causal_conv1d_silu(float* out, const float* x, float* window, const float* weight,
                        int n_tokens, int channels, int kernel, Stream stream) {
    if (kernel < 1 || kernel > kMaxConvKernel)
        fail("gpu::causal_conv1d_silu takes kernels of 1 to %d taps, not %d", kMaxConvKernel,
             kernel);
    if (n_tokens == 0 || channels == 0) return;
    const dim3 grid((channels + kThreads - 1) / kThreads, (n_tokens + kConvChunk - 1) / kConvChunk);
    causal_conv1d_silu_kernel<<<grid, kThreads, 0, stream>>>(out, x, window, weight, n_tokens,
                                                             channels, kernel);
    check_launch("causal_conv1d_silu_kernel");
}

// ---- split_qkv: a thread per value of the convolved rows ----

__global__ void split_qkv_kernel(float* q, float* k, float* v, const float* qkv, int n_tokens,
                                 int qk_width, int value_width) {
    const int channels = 2 * qk_width + value_width;
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= int64_t(n_tokens) * channels) return;
    const int64_t t = i / channels;
    const int c = int(i % channels);
    if (c < qk_width) q[t * qk_width + c] = qkv[i];
    else if (c < 2 * qk_width) k[t * qk_width + c - qk_width] = qkv[i];
    else v[t * value_width + c - 2 * qk_width] = qkv[i];
}

void split_qkv(float* q, float* k, float* v, const float* qkv, int n_tokens, int qk_width,
               int value_width) {
    const int64_t n = int64_t(n_tokens) * (2 * qk_width + value_width);
    if (n == 0) return;
    split_qkv_kernel<<<unsigned((n + kThreads - 1) / kThreads), kThreads>>>(
        q, k, v, qkv, n_tokens, qk_width, value_width);
    check_launch("split_qkv_kernel");
}

// ---- l2_normalize_rows: a warp per row ----

constexpr int kRowsPerBlock = kThreads / kWarpSize;

__global__ void l2_normalize_rows_kernel(float* x, int n_rows, int dim, float eps, float scale) {
    const int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    if (r >= n_rows) return;  // the whole warp: its shuffles need no other
    float* row = x + r * dim;
    float sum = 0.0f;
    for (int i = lane; i < dim; i += kWarpSize) sum = fmaf(row[i], row[i], sum);
    const float factor = scale / sqrtf(warp_sum(sum) + eps);
    for (int i = lane; i < dim; i += kWarpSize) row[i] *= factor;
}

void l2_normalize_rows(float* x, int n_rows, int dim, float eps, float scale, Stream stream) {
    if (n_rows == 0) return;
    const unsigned blocks = unsigned((int64_t(n_rows) + kRowsPerBlock - 1) / kRowsPerBlock);
    l2_normalize_rows_kernel<<<blocks, kThreads, 0, stream>>>(x, n_rows, dim, eps, scale);
    check_launch("l2_normalize_rows_kernel");
}

// ---- delta_net_gates: a thread per (token, value head) ----

// torch's softplus: x itself above 20, as the CPU's.
__device__ inline float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

__global__ void delta_net_gates_kernel(float* beta, float* g, const float* b, const float* a,
                                       const float* A, const float* dt_bias, int n_tokens,
                                       int n_heads) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= int64_t(n_tokens) * n_heads) return;
    const int h = int(i % n_heads);
    beta[i] = sigmoid(b[i]);
    g[i] = A[h] * softplus(a[i] + dt_bias[h]);
}

void delta_net_gates(float* beta, float* g, const float* b, const float* a, const float* A,
                     const float* dt_bias, int n_tokens, int n_heads, Stream stream) {
    const int64_t n = int64_t(n_tokens) * n_heads;
    if (n == 0) return;
    delta_net_gates_kernel<<<unsigned((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
        beta, g, b, a, A, dt_bias, n_tokens, n_heads);
    check_launch("delta_net_gates_kernel");
}

// ---- gated_delta_rule: a warp per state column, every token in one launch ----

// Columns a block updates, a warp each: 8 neighbouring floats of every state row, one 32-byte
// memory sector, when the block reads and writes the state.
constexpr int kRuleWarps = 8;
constexpr int kRuleThreads = kRuleWarps * kWarpSize;
constexpr int kMaxKeyDim = 256;  // dk up to 8 registers a lane

// gated_delta_rule's arguments, as the kernel takes them.
struct DeltaRuleArgs {
    float* out;    // (n_tokens, n_value_heads, dv)
    float* state;  // (n_value_heads, dk, dv)
    const float* q;
    const float* k;  // (n_tokens, n_key_heads, dk)
    const float* v;  // (n_tokens, n_value_heads, dv)
    const float* g;
    const float* beta;  // (n_tokens, n_value_heads)
    int n_tokens, n_key_heads, n_value_heads, dv;
};

// What token t gives the warp of column j of value head h: the key head's q and k (the lane's
// rows), and for the column the decay e^g, beta and v[j].
template <int kRows>
struct TokenInputs {
    float q[kRows], k[kRows];
    float decay, beta, v;
};

template <int kRows>
__device__ inline TokenInputs<kRows> load_token(const DeltaRuleArgs& a, int t, int h, int j) {
    constexpr int dk = kRows * kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    const int key_head = h % a.n_key_heads;  // the file's tiled order
    const int64_t key_row = (int64_t(t) * a.n_key_heads + key_head) * dk;
    const int64_t head_index = int64_t(t) * a.n_value_heads + h;
    TokenInputs<kRows> in;
#pragma unroll
    for (int r = 0; r < kRows; r++) {
        in.q[r] = a.q[key_row + r * kWarpSize + lane];
        in.k[r] = a.k[key_row + r * kWarpSize + lane];
    }
    in.decay = expf(a.g[head_index]);
    in.beta = a.beta[head_index];
    in.v = a.v[head_index * a.dv + j];
    return in;
}

// Block (h, column group): warp w owns column j = blockIdx.y * kRuleWarps + w of value head h's
// state, lane l its rows l, l + 32, ... (kRows = dk / 32 of them).
template <int kRows>
__global__ void __launch_bounds__(kRuleThreads) gated_delta_rule_kernel(const DeltaRuleArgs a) {
    constexpr int dk = kRows * kWarpSize;
    const int h = blockIdx.x;
    const int j = blockIdx.y * kRuleWarps + threadIdx.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    if (j >= a.dv) return;  // the whole warp: its shuffles need no other
    float* column = a.state + int64_t(h) * dk * a.dv + j;  // S[i][j] at column[i * dv]
    float s[kRows];                                        // S[r * 32 + lane][j]
#pragma unroll
    for (int r = 0; r < kRows; r++) s[r] = column[int64_t(r * kWarpSize + lane) * a.dv];
    // The next token's inputs are loaded before this token's arithmetic, which does not need
    // them: their memory latency passes while the shuffles run.
    TokenInputs<kRows> next = load_token<kRows>(a, 0, h, j);
    for (int t = 0; t < a.n_tokens; t++) {
        const TokenInputs<kRows> in = next;
        if (t + 1 < a.n_tokens) next = load_token<kRows>(a, t + 1, h, j);
        // S = e^g S, and what it recalls for k: S^T k.
        float recalled = 0.0f;
#pragma unroll
        for (int r = 0; r < kRows; r++) {
            s[r] *= in.decay;
            recalled = fmaf(s[r], in.k[r], recalled);
        }
        const float delta = in.beta * (in.v - warp_sum(recalled));
        // S += k delta^T, and o = S^T q.
        float read = 0.0f;
#pragma unroll
        for (int r = 0; r < kRows; r++) {
            s[r] = fmaf(in.k[r], delta, s[r]);
            read = fmaf(s[r], in.q[r], read);
        }
        read = warp_sum(read);
        if (lane == 0) a.out[(int64_t(t) * a.n_value_heads + h) * a.dv + j] = read;
    }
#pragma unroll
    for (int r = 0; r < kRows; r++) column[int64_t(r * kWarpSize + lane) * a.dv] = s[r];
}

template <int kRows>
static void launch_gated_delta_rule(const DeltaRuleArgs& a, Stream stream) {
    const dim3 grid(a.n_value_heads, (a.dv + kRuleWarps - 1) / kRuleWarps);
    gated_delta_rule_kernel<kRows><<<grid, kRuleThreads, 0, stream>>>(a);
    check_launch("gated_delta_rule_kernel");
}

void gated_delta_rule(float* out, float* state, const float* q, const float* k, const float* v,
                      const float* g, const float* beta, int n_tokens, int n_key_heads,
                      int n_value_heads, int dk, int dv, Stream stream) {
    if (dk % kWarpSize != 0 || dk < kWarpSize || dk > kMaxKeyDim)
        fail("gpu::gated_delta_rule needs key heads of a multiple of 32 values up to %d, not %d",
             kMaxKeyDim, dk);
    if (n_tokens == 0 || n_value_heads == 0 || dv == 0) return;
    const DeltaRuleArgs a{out, state, q, k, v, g, beta, n_tokens, n_key_heads, n_value_heads, dv};
    // A register array needs its length at compile time: one kernel per dk / 32.
    static_assert(kMaxKeyDim == 8 * kWarpSize, "the cases below cover dk / 32 = 1 to 8");
    switch (dk / kWarpSize) {
        case 1: return launch_gated_delta_rule<1>(a, stream);
        case 2: return launch_gated_delta_rule<2>(a, stream);
        case 3: return launch_gated_delta_rule<3>(a, stream);
        case 4: return launch_gated_delta_rule<4>(a, stream);
        case 5: return launch_gated_delta_rule<5>(a, stream);
        case 6: return launch_gated_delta_rule<6>(a, stream);
        case 7: return launch_gated_delta_rule<7>(a, stream);
        default: return launch_gated_delta_rule<8>(a, stream);
    }
}

// ---- gated_rmsnorm: a warp per row ----

__global__ void gated_rmsnorm_kernel(float* out, const float* x, const float* z,
                                     const float* weight, int n_rows, int dim, float eps) {
    const int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
    const int lane = threadIdx.x % kWarpSize;
    if (r >= n_rows) return;  // the whole warp
    const float* row = x + r * dim;
    float sum = 0.0f;
    for (int i = lane; i < dim; i += kWarpSize) sum = fmaf(row[i], row[i], sum);
    const float inv_rms = 1.0f / sqrtf(warp_sum(sum) / dim + eps);
    // A lane writes only the elements it read, so `out` may be `x`.
    for (int i = lane; i < dim; i += kWarpSize)
        out[r * dim + i] = weight[i] * (row[i] * inv_rms) * silu(z[r * dim + i]);
}

void gated_rmsnorm(float* out, const float* x, const float* z, const float* weight, int n_rows,
                   int dim, float eps, Stream stream) {
    if (n_rows == 0) return;
    const unsigned blocks = unsigned((int64_t(n_rows) + kRowsPerBlock - 1) / kRowsPerBlock);
    gated_rmsnorm_kernel<<<blocks, kThreads, 0, stream>>>(out, x, z, weight, n_rows, dim, eps);
    check_launch("gated_rmsnorm_kernel");
}

}  // namespace gpu
