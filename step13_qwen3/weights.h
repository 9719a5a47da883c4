// weights.h - the model's tensors, found by name and checked against the config.
//
// A Qwen2 GGUF file holds, for n_layers blocks N (GGUF shapes list ne0, the row length, first):
//   token_embd.weight          [d_model, n_vocab]
//   blk.N.attn_norm.weight     [d_model]
//   blk.N.attn_q.weight/.bias  [d_model, q_dim] / [q_dim]      q_dim  = n_heads * head_dim
//   blk.N.attn_k.weight/.bias  [d_model, kv_dim] / [kv_dim]    kv_dim = n_kv_heads * head_dim
//   blk.N.attn_v.weight/.bias  [d_model, kv_dim] / [kv_dim]
//   blk.N.attn_output.weight   [q_dim, d_model]
//   blk.N.ffn_norm.weight      [d_model]
//   blk.N.ffn_gate.weight      [d_model, d_ff]
//   blk.N.ffn_up.weight        [d_model, d_ff]
//   blk.N.ffn_down.weight      [d_ff, d_model]
//   output_norm.weight         [d_model]
//   output.weight              [d_model, n_vocab]   absent when tied to token_embd
// Matrices stay in the memory-mapped file in their own type; only the small 1-D tensors
// (norm weights and biases) are turned into float here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "gguf_tensors.h"
#include "model_config.h"

// A matrix in the mapped file: `rows` rows of `cols` elements, each row stored as ggml type
// `type`. An HF Linear weight [out, in] has rows = out and cols = in.
struct WeightMatrix {
    const void* data = nullptr;
    uint32_t type = 0;
    int rows = 0;
    int cols = 0;
};

struct LayerWeights {
    std::vector<float> attn_norm;    // (d_model)
    WeightMatrix attn_q;             // (q_dim, d_model)
    std::vector<float> attn_q_bias;  // (q_dim)
    WeightMatrix attn_k;             // (kv_dim, d_model)
    std::vector<float> attn_k_bias;  // (kv_dim)
    WeightMatrix attn_v;             // (kv_dim, d_model)
    std::vector<float> attn_v_bias;  // (kv_dim)
    WeightMatrix attn_output;        // (d_model, q_dim)
    std::vector<float> ffn_norm;     // (d_model)
    WeightMatrix ffn_gate;           // (d_ff, d_model)
    WeightMatrix ffn_up;             // (d_ff, d_model)
    WeightMatrix ffn_down;           // (d_model, d_ff)
};

struct Weights {
    int n_vocab = 0;                   // rows of token_embd
    WeightMatrix token_embd;           // (n_vocab, d_model)
    std::vector<LayerWeights> layers;  // (n_layers)
    std::vector<float> output_norm;    // (d_model)
    WeightMatrix output;               // (n_vocab, d_model): token_embd itself when tied
    bool tied_output = false;          // output.weight was absent
};

// Called after each tensor is checked, e.g. to print "loading: 12/38 tensors checked".
using LoadProgress = std::function<void(size_t checked, size_t total)>;

// Finds and checks every tensor the forward pass needs. Fails with one line for: an
// architecture other than qwen2, a missing tensor ("tensor 'NAME' is missing"), a shape that
// disagrees with the config ("tensor 'NAME' has shape [256, 128], expected [256, 256]") and a
// type with no dequantization routine. `file` must outlive the returned views.
Weights load_weights(const GgufFile& file, const ModelConfig& config,
                     const LoadProgress& progress = LoadProgress());
