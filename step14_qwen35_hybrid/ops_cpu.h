// ops_cpu.h - the operators of a Qwen2 forward pass, one plain function each.
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
