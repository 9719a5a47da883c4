// weights.h - the model's tensors, found by name and checked against the config.
//
// A Qwen2 or Qwen3 GGUF file holds, for n_layers blocks N (GGUF shapes list ne0, the row length,
// first):
//   token_embd.weight          [d_model, n_vocab]
//   blk.N.attn_norm.weight     [d_model]
//   blk.N.attn_q.weight/.bias  [d_model, q_dim] / [q_dim]      q_dim  = n_heads * head_dim
//   blk.N.attn_k.weight/.bias  [d_model, kv_dim] / [kv_dim]    kv_dim = n_kv_heads * head_dim
//   blk.N.attn_v.weight/.bias  [d_model, kv_dim] / [kv_dim]    (the biases: Qwen2's only)
//   blk.N.attn_q_norm.weight   [head_dim]                      (QK-norm: Qwen3's only)
//   blk.N.attn_k_norm.weight   [head_dim]
//   blk.N.attn_output.weight   [q_dim, d_model]
//   blk.N.ffn_norm.weight      [d_model]
//   blk.N.ffn_gate.weight      [d_model, d_ff]
//   blk.N.ffn_up.weight        [d_model, d_ff]
//   blk.N.ffn_down.weight      [d_ff, d_model]
//   output_norm.weight         [d_model]
//   output.weight              [d_model, n_vocab]   absent when tied to token_embd
// Step 14, qwen35: every block has attn_norm and post_attention_norm (the FFN's input norm, read
// into ffn_norm) and the FFN's three matrices; then either attention, with attn_q twice as wide
// (per head the query's head_dim rows, then its gate's) and the QK-norm, or a Gated DeltaNet
// layer (D = ModelConfig::delta_net; Hk, Hv its key and value heads, dk, dv their sizes):
//   blk.N.attn_qkv.weight      [d_model, 2 Hk dk + Hv dv]   q, k, v of every head
//   blk.N.attn_gate.weight     [d_model, Hv dv]             z, the output's gate
//   blk.N.ssm_conv1d.weight    [conv_kernel, 2 Hk dk + Hv dv]
//   blk.N.ssm_beta.weight      [d_model, Hv]                b: beta = sigmoid(b)
//   blk.N.ssm_alpha.weight     [d_model, Hv]                a: the decay's input
//   blk.N.ssm_dt.bias          [Hv]
//   blk.N.ssm_a                [Hv]                         A = -exp(A_log), as the converter stores it
//   blk.N.ssm_norm.weight      [dv]
//   blk.N.ssm_out.weight       [Hv dv, d_model]
// llama.cpp's converter stores the value heads in a tiled order: transformers groups the value
// heads of a key head together (value head h reads key head h / (Hv / Hk)); the file's value head
// j is transformers' (j % Hk) * (Hv / Hk) + j / Hk and reads key head j % Hk. The rows of v, z,
// b, a, the V channels of the convolution, dt, A and the columns of ssm_out are all in that order,
// so the layer computes in it and needs only the key head j % Hk. Its norm weights are stored as
// they multiply (the converter adds the 1 of transformers' (1 + w) norms; ssm_norm has none).
// Matrices stay in the memory-mapped file in their own type; only the small 1-D tensors
// (norm weights and biases) are turned into float here. q_dim is not d_model in Qwen3
// (Qwen3-0.6B: 16 heads of 128 on a width of 1024), so Wq's rows and Wo's columns are q_dim.
// Which of the optional parts a model has is read from the tensors present (AttentionParts),
// not from the architecture's name.
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

// Step 13: what the attention has besides its four matrices, the same in every layer, read from
// block 0's tensors. Qwen2 adds biases to Q, K and V; Qwen3 has none, and normalizes each head of
// Q and of K instead (QK-norm: an RMSNorm over head_dim with weights of its own, after the
// projection, before RoPE).
// Step 14: read from the first attention layer (qwen35's block 0 is a Gated DeltaNet layer).
struct AttentionParts {
    bool qkv_bias = false;  // blk.N.attn_q.bias (and k, v) present
    bool qk_norm = false;   // blk.N.attn_q_norm.weight (and attn_k_norm) present
};

// Step 14: a layer holds the tensors of its LayerKind; the other kind's stay empty.
struct LayerWeights {
    std::vector<float> attn_norm;    // (d_model)
    WeightMatrix attn_q;             // (q_dim, d_model); qwen35: (2 q_dim, d_model), query + gate
    std::vector<float> attn_q_bias;  // (q_dim), empty without qkv_bias
    WeightMatrix attn_k;             // (kv_dim, d_model)
    std::vector<float> attn_k_bias;  // (kv_dim), empty without qkv_bias
    WeightMatrix attn_v;             // (kv_dim, d_model)
    std::vector<float> attn_v_bias;  // (kv_dim), empty without qkv_bias
    std::vector<float> attn_q_norm;  // (head_dim), empty without qk_norm
    std::vector<float> attn_k_norm;  // (head_dim), empty without qk_norm
    WeightMatrix attn_output;        // (d_model, q_dim)
    // Step 14: a Gated DeltaNet layer (sizes as in the header comment: C = 2 Hk dk + Hv dv).
    WeightMatrix attn_qkv;           // (C, d_model)
    WeightMatrix attn_gate;          // (Hv dv, d_model)
    std::vector<float> ssm_conv1d;   // (C, conv_kernel) each channel's taps, oldest input first
    WeightMatrix ssm_beta;           // (Hv, d_model)
    WeightMatrix ssm_alpha;          // (Hv, d_model)
    std::vector<float> ssm_dt_bias;  // (Hv)
    std::vector<float> ssm_a;        // (Hv) A = -exp(A_log) < 0
    std::vector<float> ssm_norm;     // (dv)
    WeightMatrix ssm_out;            // (d_model, Hv dv)
    std::vector<float> ffn_norm;     // (d_model); qwen35's post_attention_norm
    WeightMatrix ffn_gate;           // (d_ff, d_model)
    WeightMatrix ffn_up;             // (d_ff, d_model)
    WeightMatrix ffn_down;           // (d_model, d_ff)
};

struct Weights {
    int n_vocab = 0;                   // rows of token_embd
    AttentionParts attention;          // step 13: biases or QK-norm
    WeightMatrix token_embd;           // (n_vocab, d_model)
    std::vector<LayerWeights> layers;  // (n_layers)
    std::vector<float> output_norm;    // (d_model)
    WeightMatrix output;               // (n_vocab, d_model): token_embd itself when tied
    bool tied_output = false;          // output.weight was absent
};

// Called after each tensor is checked, e.g. to print "loading: 12/38 tensors checked".
using LoadProgress = std::function<void(size_t checked, size_t total)>;

// Finds and checks every tensor the forward pass needs. Fails with one line for: a missing
// tensor ("tensor 'NAME' is missing"; block 0 decides which optional ones every block has), a
// shape that disagrees with the config ("tensor 'NAME' has shape [256, 128], expected
// [256, 256]") and a type with no dequantization routine. `file` must outlive the returned
// views. (The architecture was checked by read_model_config.)
Weights load_weights(const GgufFile& file, const ModelConfig& config,
                     const LoadProgress& progress = LoadProgress());
