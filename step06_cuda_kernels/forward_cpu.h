// forward_cpu.h - the whole Qwen2 network on the CPU, the reference every later step is
// checked against.
//
// For a sequence of token ids at positions 0..n-1, all at once:
//   x = embedding(ids)
//   for each layer:
//     h = rmsnorm(x) * attn_norm
//     q, k, v = h Wq^T + bq, h Wk^T + bk, h Wv^T + bv;  rope(q), rope(k)
//     x += attention(q, k, v) Wo^T                    causal, grouped-query
//     h = rmsnorm(x) * ffn_norm
//     x += (silu(h Wgate^T) * (h Wup^T)) Wdown^T      SwiGLU
//   logits = rmsnorm(x) * output_norm  Woutput^T
// There is no KV cache yet: to extend the sequence by one token, the caller runs the whole
// sequence again (step07 keeps k and v instead).
#pragma once

#include <cstdint>
#include <vector>

#include "model_config.h"
#include "weights.h"

// Every activation of one forward pass, sized for the number of tokens it last ran on.
struct RunState {
    int n_tokens = 0;
    std::vector<float> x;       // (n_tokens, d_model) the residual stream
    std::vector<float> h;       // (n_tokens, d_model) normalized input of a sublayer
    std::vector<float> q;       // (n_tokens, n_heads * head_dim)
    std::vector<float> k;       // (n_tokens, n_kv_heads * head_dim)
    std::vector<float> v;       // (n_tokens, n_kv_heads * head_dim)
    std::vector<float> attn;    // (n_tokens, n_heads * head_dim) attention before Wo
    std::vector<float> delta;   // (n_tokens, d_model) a sublayer's output, added to x
    std::vector<float> gate;    // (n_tokens, d_ff) becomes silu(gate) * up
    std::vector<float> up;      // (n_tokens, d_ff)
    std::vector<float> logits;  // (n_logit_rows, n_vocab), see LogitRows
};

// Which positions get logits: generation only needs the last one, and the LM head is the
// largest matrix of a small model, so computing it for every position would waste time.
enum class LogitRows { LastOnly, All };

// Runs the model over `ids` (positions 0..ids.size()-1) and leaves the logits in
// state.logits: n_vocab values for the last position, or n_vocab for every position in
// order. Fails on an empty sequence, one longer than the model's context length, or a token
// id outside the vocabulary.
void forward(const ModelConfig& config, const Weights& weights, const std::vector<int32_t>& ids,
             RunState& state, LogitRows rows);
