// ops_cpu.h - the operators of a Qwen2 forward pass, one plain function each.
// Step 14: and of Qwen3.5's, its gated attention with partial RoPE and its Gated DeltaNet layer.
// Step 15: the Gated DeltaNet's delta rule in chunks, for a prompt.
//
// Every function takes raw pointers and sizes and keeps no state between calls, so each one
// can stand beside its CUDA twin in step06 and be checked against it. Activations are stored
// row-major with one row per token: a buffer commented "(n_tokens, dim)" holds token t's
// vector at x[t * dim ... t * dim + dim - 1].
//
// Weight matrices stay in their file type (F16, Q8_0, Q4_K, ...): matmul() and embedding()
// dequantize one row at a time into a small float buffer, so a model never needs more memory
// than its file.
#pragma once

#include <cstdint>

// out[t] = the row ids[t] of an embedding table stored as ggml type `table_type`, with
// `dim` elements per row. The caller checks that every id is a row of the table.
void embedding(float* out, const void* table, uint32_t table_type, const int32_t* ids, int n_tokens,
               int dim);

// RMSNorm: out[t][i] = x[t][i] / sqrt(mean_i(x[t][i]^2) + eps) * weight[i].
// `out` may be `x`.
void rmsnorm(float* out, const float* x, const float* weight, int n_tokens, int dim, float eps);

// out = x @ W^T: out[t][o] = sum_i x[t][i] * W[o][i], where W has `out_dim` rows of `in_dim`
// elements stored as ggml type `w_type` (the GGUF layout of an HF Linear weight [out, in]).
// Each row of W is dequantized once and then used for every token.
void matmul(float* out, const float* x, const void* w, uint32_t w_type, int n_tokens, int in_dim,
            int out_dim);

// Step 13, Qwen3's QK-norm: RMSNorm of each head on its own. x is (n_tokens, n_heads *
// head_dim), and every head's head_dim values are divided by their own rms and multiplied by
// weight (head_dim), the same weights for every head of the matrix: rmsnorm() over rows of
// head_dim. In place.
void qk_norm(float* x, const float* weight, int n_tokens, int n_heads, int head_dim, float eps);

// x[t][i] += bias[i] for every token.
void add_bias(float* x, const float* bias, int n_tokens, int dim);

// Rotary position embedding, NEOX pairing (HF's rotate_half): in every head of `head_dim`
// elements, element i (i < head_dim/2) and element i + head_dim/2 are rotated together by the
// angle pos * base^(-2i/head_dim), where pos = first_position + t for token t.
// x is (n_tokens, n_heads * head_dim) and is rotated in place.
void rope(float* x, int n_tokens, int n_heads, int head_dim, int first_position, float base);

// Step 14: rope() on the first rope_dims elements of each head alone, the rest left as they are:
// element i (i < rope_dims/2) turns with element i + rope_dims/2 by the angle
// pos * base^(-2i/rope_dims). With rope_dims = head_dim it is rope() itself, bit for bit.
void partial_rope(float* x, int n_tokens, int n_heads, int head_dim, int rope_dims,
                  int first_position, float base);

// Step 14: qwen35's Q projection gives, for each head, the query's head_dim values then the gate's.
// Splits each token's (n_heads, 2, head_dim) row into query (n_tokens, n_heads * head_dim) and
// gate (n_tokens, n_heads * head_dim).
void split_query_gate(float* query, float* gate, const float* query_gate, int n_tokens,
                      int n_heads, int head_dim);

// Step 14: x[i] *= sigmoid(gate[i]): the gated attention's output before Wo.
void sigmoid_gate(float* x, const float* gate, int64_t n);

// In-place softmax of n values. Entries equal to -infinity (masked) come out exactly 0; at
// least one entry must be finite.
void softmax(float* x, int n);

// Causal grouped-query attention of n_tokens new queries, at positions first_position ..
// first_position + n_tokens - 1, over the keys and values of every position up to the last one
// (the cache, which already holds the new tokens' own keys and values): the query at position
// p sees positions 0..p. Query head h reads key/value head h / (n_heads / n_kv_heads); scores
// are scaled by 1/sqrt(head_dim) and later positions are masked with -infinity before the
// softmax. With first_position = 0, k and v are just the new tokens' own.
//   q:   (n_tokens, n_heads * head_dim)
//   k,v: (first_position + n_tokens, n_kv_heads * head_dim)
//   out: (n_tokens, n_heads * head_dim)
void attention(float* out, const float* q, const float* k, const float* v, int n_tokens,
               int first_position, int n_heads, int n_kv_heads, int head_dim);

// SwiGLU: out[i] = silu(gate[i]) * up[i], with silu(g) = g / (1 + exp(-g)). `out` may be
// `gate`.
void swiglu(float* out, const float* gate, const float* up, int64_t n);

// The residual connection: x[i] += delta[i].
void residual_add(float* x, const float* delta, int64_t n);

// Index of the largest of n values (the first one on a tie): greedy decoding.
int argmax(const float* x, int n);

// ---- Step 14: the Gated DeltaNet layer ----
// A token's projection to q, k and v is one row of `channels` values: q (n_key_heads, dk), then
// k (n_key_heads, dk), then v (n_value_heads, dv). Value head h reads key head h % n_key_heads:
// llama.cpp's converter stores the value heads tiled (weights.h).

// Causal depthwise convolution then SiLU: each channel c of token t becomes
//   silu(sum_j weight[c][j] * input[t - (kernel - 1) + j])
// where the inputs before token 0 are the window's: window (kernel - 1, channels) holds the last
// kernel - 1 inputs of earlier calls, oldest first (zeros before the first token), and is
// replaced by the last kernel - 1 inputs including this call's, so a sequence given in pieces
// gives what it gives at once.
//   x, out: (n_tokens, channels)   weight: (channels, kernel), the newest input's tap last
void causal_conv1d_silu(float* out, const float* x, float* window, const float* weight,
                        int n_tokens, int channels, int kernel);

// Each of the n_rows rows of dim values times 1 / sqrt(sum of its squares + eps) (transformers'
// and FLA's l2norm, eps 1e-6), then times `scale`: q's heads take scale 1 / sqrt(dk). In place.
void l2_normalize_rows(float* x, int n_rows, int dim, float eps, float scale);

// The gates of each token and value head, from the projections b and a:
//   beta = sigmoid(b)                            how much of the new value is written
//   g = A * softplus(a + dt_bias), A < 0         the state's log-decay, e^g in (0, 1)
// softplus(x) = log(1 + e^x) (x itself above 20, as torch's). The file stores A = -exp(A_log).
//   b, a, beta, g: (n_tokens, n_heads)   A, dt_bias: (n_heads)
void delta_net_gates(float* beta, float* g, const float* b, const float* a, const float* A,
                     const float* dt_bias, int n_tokens, int n_heads);

// The gated delta rule, token after token, on each value head's state S (dk, dv), fp32:
//   S = e^g S                 decay
//   delta = beta (v - S^T k)  what the state would recall for k, and how far that is from v
//   S = S + k delta^T         write the correction under k
//   o = S^T q                 read with the query
// (online regression of v on k: a step of size beta on |S^T k - v|^2 / 2.)
//   q, k: (n_tokens, n_key_heads, dk)   v, out: (n_tokens, n_value_heads, dv)
//   g, beta: (n_tokens, n_value_heads)  state: (n_value_heads, dk, dv), carried across calls
void gated_delta_rule(float* out, float* state, const float* q, const float* k, const float* v,
                      const float* g, const float* beta, int n_tokens, int n_key_heads,
                      int n_value_heads, int dk, int dv);

// Step 15: gated_delta_rule, the same outputs and state, computed chunk by chunk: within a chunk
// of C tokens the token-by-token updates are solved together as one triangular system (the WY
// form), and only the state passes from one chunk to the next. Per value head and chunk, with
// the chunk's tokens as rows (c <= C of them, the last chunk may be shorter), S the state before
// the chunk and G the running sum of the chunk's g (G_t = g_0 + ... + g_t):
//   A  = strict_lower(diag(beta) K K^T (*) e^(G_t - G_s))     (c, c)   (*): element by element
//   T  = (I + A)^-1                                           (c, c)   forward substitution
//   W  = T diag(beta e^G) K,  U = T diag(beta) V              (c, dk), (c, dv)
//   V' = U - W S                                              (c, dv)  each token's delta
//   O  = diag(e^G) Q S + (Q K^T (*) causal e^(G_t - G_s)) V'  (c, dv)  causal: s <= t
//   S  = e^(G_last) S + (diag(e^(G_last - G)) K)^T V'         (dk, dv) the next chunk's
// The rounding differs from gated_delta_rule's; docs/en/step15.md derives the form, and
// test_chunked_delta_rule.cpp states how far apart the two may be.
//   Shapes as gated_delta_rule's; chunk_size: C, at least 1.
constexpr int kDeltaChunkSize = 64;
void chunked_gated_delta_rule(float* out, float* state, const float* q, const float* k,
                              const float* v, const float* g, const float* beta, int n_tokens,
                              int n_key_heads, int n_value_heads, int dk, int dv,
                              int chunk_size = kDeltaChunkSize);

// The DeltaNet's output norm, per row of dim values: weight * rmsnorm(x) * silu(z).
//   x, z, out: (n_rows, dim)   weight: (dim)   `out` may be `x`.
void gated_rmsnorm(float* out, const float* x, const float* z, const float* weight, int n_rows,
                   int dim, float eps);
