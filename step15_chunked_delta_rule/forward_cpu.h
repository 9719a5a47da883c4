// forward_cpu.h - the whole Qwen2 / Qwen3 network on the CPU, the reference every later step
// is checked against.
//
// For a sequence of token ids at positions 0..n-1, all at once:
//   x = embedding(ids)
//   for each layer:
//     h = rmsnorm(x) * attn_norm
//     q, k, v = h Wq^T + bq, h Wk^T + bk, h Wv^T + bv    (Qwen3: no biases)
//     q, k = qk_norm(q), qk_norm(k)                       (Qwen3 only: each head on its own)
//     rope(q), rope(k)
//     x += attention(q, k, v) Wo^T                    causal, grouped-query
//     h = rmsnorm(x) * ffn_norm
//     x += (silu(h Wgate^T) * (h Wup^T)) Wdown^T      SwiGLU
//   logits = rmsnorm(x) * output_norm  Woutput^T
// Step 14, qwen35 (the Qwen3.5 hybrid): a layer mixes the positions in one of two ways.
//   attention layer:  qg = h Wq^T, split per head into q and gate (query, then its gate)
//                     k, v = h Wk^T, h Wv^T; q, k = qk_norm(q), qk_norm(k)
//                     rope on the first rope_dims of each head of q and k
//                     x += (attention(q, k, v) * sigmoid(gate)) Wo^T
//   Gated DeltaNet:   qkv = causal_conv1d_silu(h Wqkv^T), split into q, k (Hk heads of dk), v
//                     (Hv heads of dv); q, k = l2_normalize(q) / sqrt(dk), l2_normalize(k)
//                     beta = sigmoid(h Wbeta^T); g = A softplus(h Walpha^T + dt_bias)
//                     o = gated_delta_rule(q, k, v, g, beta) on each value head's state
//                     x += gated_rmsnorm(o, z = h Wgate^T) Wout^T
// and the FFN's norm is the file's post_attention_norm. The attention layers' keys and values go
// to the cache; the DeltaNet layers' conv windows and states live in it as well (kv_cache.h).
// Each pass runs only the tokens it is given, at the positions after those already in the KV
// cache: their keys and values are appended to the cache, and attention reads every cached
// position. The prompt goes in one pass (prefill), then one token per pass (decode).
#pragma once

#include <cstdint>
#include <vector>

#include "kv_cache.h"
#include "model_config.h"
#include "quant_dot.h"
#include "weights.h"

// Every activation of one forward pass, sized for the number of tokens it last ran on.
struct RunState {
    int n_tokens = 0;
    std::vector<float> x;       // (n_tokens, d_model) the residual stream
    std::vector<float> h;       // (n_tokens, d_model) normalized input of a sublayer
    std::vector<float> q;       // (n_tokens, n_heads * head_dim), not d_model wide in Qwen3
    std::vector<float> attn;    // (n_tokens, n_heads * head_dim) attention before Wo
    std::vector<float> delta;   // (n_tokens, d_model) a sublayer's output, added to x
    std::vector<float> gate;    // (n_tokens, d_ff) becomes silu(gate) * up
    std::vector<float> up;      // (n_tokens, d_ff)
    std::vector<float> logits;  // (n_logit_rows, n_vocab), see LogitRows
    // Step 14: the gated attention's (empty without an output gate).
    std::vector<float> query_gate;  // (n_tokens, n_heads, 2, head_dim) Q's projection
    std::vector<float> attn_gate;   // (n_tokens, n_heads * head_dim)
    // Step 14: a Gated DeltaNet layer's (empty without such layers); C = 2 Hk dk + Hv dv.
    std::vector<float> mixed_qkv;   // (n_tokens, C) the projection, the convolution's input
    std::vector<float> qkv;         // (n_tokens, C) after the convolution: q | k | v per token
    std::vector<float> q_heads;     // (n_tokens, Hk, dk) normalized and scaled
    std::vector<float> k_heads;     // (n_tokens, Hk, dk) normalized
    std::vector<float> v_heads;     // (n_tokens, Hv, dv)
    std::vector<float> z;           // (n_tokens, Hv, dv) the output's gate
    std::vector<float> beta_in;     // (n_tokens, Hv) b
    std::vector<float> alpha_in;    // (n_tokens, Hv) a
    std::vector<float> beta;        // (n_tokens, Hv)
    std::vector<float> decay;       // (n_tokens, Hv) g, the log of the state's decay
    std::vector<float> recurrent;   // (n_tokens, Hv, dv) the delta rule's output, then normed
    // Step 11: with int8_activations, a matrix of Q8_0, Q5_0, Q4_K or Q6_K blocks is
    // multiplied with the activations rounded to 8-bit blocks, in integers, by `dot_kernel`'s
    // instructions (quant_dot.h): what the program does. Off, every matmul is step 5's, each
    // row of W turned into floats: the exact arithmetic that the checks against transformers'
    // float32 numbers expect, and so the default here.
    bool int8_activations = false;
    DotKernel dot_kernel = best_dot_kernel();
};

// Which positions get logits: generation only needs the last one, and the LM head is the
// largest matrix of a small model, so computing it for every position would waste time.
enum class LogitRows { LastOnly, All };

// Runs the model over `ids`, the tokens at positions cache.n_filled .. cache.n_filled +
// ids.size() - 1, adds their keys and values to the cache, and leaves the logits in
// state.logits: n_vocab values for the last of these positions, or n_vocab for each of them in
// order. Fails on an empty sequence, more tokens than the cache has room for, or a token id
// outside the vocabulary; the cache is then unchanged.
void forward(const ModelConfig& config, const Weights& weights, const std::vector<int32_t>& ids,
             KVCache& cache, RunState& state, LogitRows rows);
