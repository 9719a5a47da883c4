// forward_cpu.cpp - the network as a sequence of operator calls; every number is in ops_cpu.
// Step 13: one pass for Qwen2 and Qwen3, the differences read from the weights (AttentionParts)
// and the config (head_dim: Q and the attention's output are q_dim wide, Wo maps them to d_model).
// Step 14: each layer mixes the positions by its kind, attention or Gated DeltaNet (qwen35).
// Step 15: a prompt's Gated DeltaNet layers run the delta rule in chunks, one token its recurrence.
#include "forward_cpu.h"

#include <cmath>

#include "error.h"
#include "ops_cpu.h"
#include "quant_dot.h"

// transformers' l2norm of q and k in the Gated DeltaNet: a fixed epsilon, not the file's.
constexpr float kL2NormEps = 1e-6f;

// Grows or shrinks every buffer to hold n_tokens positions.
static void resize_state(RunState& s, const ModelConfig& config, int n_tokens, int n_vocab,
                         int n_logit_rows) {
    const size_t n = size_t(n_tokens);
    const size_t q_dim = size_t(config.n_heads) * config.head_dim;
    s.n_tokens = n_tokens;
    s.x.resize(n * config.d_model);
    s.h.resize(n * config.d_model);
    s.q.resize(n * q_dim);
    s.attn.resize(n * q_dim);
    s.delta.resize(n * config.d_model);
    s.gate.resize(n * config.d_ff);
    s.up.resize(n * config.d_ff);
    s.logits.resize(size_t(n_logit_rows) * n_vocab);
    // Step 14: the buffers of the gated attention and of the DeltaNet, only for a model that has
    // them.
    const size_t gated = config.attention_output_gate ? n : 0;
    s.query_gate.resize(gated * 2 * q_dim);
    s.attn_gate.resize(gated * q_dim);
    const DeltaNetConfig& dn = config.delta_net;
    const size_t recurrent = config.has_recurrent_layers() ? n : 0;
    s.mixed_qkv.resize(recurrent * dn.channels());
    s.qkv.resize(recurrent * dn.channels());
    s.q_heads.resize(recurrent * dn.qk_width());
    s.k_heads.resize(recurrent * dn.qk_width());
    s.v_heads.resize(recurrent * dn.value_width());
    s.z.resize(recurrent * dn.value_width());
    s.beta_in.resize(recurrent * dn.n_value_heads);
    s.alpha_in.resize(recurrent * dn.n_value_heads);
    s.beta.resize(recurrent * dn.n_value_heads);
    s.decay.resize(recurrent * dn.n_value_heads);
    s.recurrent.resize(recurrent * dn.value_width());
}

// y = x W^T for every token: the weight matrix's shape gives the sizes. Step 11: a
// block-quantized W is multiplied with x rounded to 8-bit blocks, in integers (quant_dot.h).
static void linear(float* y, const float* x, const WeightMatrix& w, int n_tokens,
                   const RunState& s) {
    if (s.int8_activations) matmul_q8(y, x, w.data, w.type, n_tokens, w.cols, w.rows, s.dot_kernel);
    else matmul(y, x, w.data, w.type, n_tokens, w.cols, w.rows);
}

// The attention sublayer of layer l on s.h (the normalized input), its output in s.delta.
static void attention_sublayer(const ModelConfig& config, const Weights& weights, int l,
                               KVCache& cache, RunState& s, int n) {
    const LayerWeights& layer = weights.layers[l];
    const int n_heads = int(config.n_heads);
    const int n_kv_heads = int(config.n_kv_heads);
    const int head_dim = int(config.head_dim);
    const int q_dim = n_heads * head_dim;
    const int kv_dim = n_kv_heads * head_dim;
    const int first_position = cache.n_filled;
    // The new positions' keys and values are computed straight into their rows of the
    // cache, after the rows of earlier passes; attention then reads all of them.
    // BEGIN SOLUTION step07 forward_cache_rows
    float* k = cache.keys(l) + int64_t(first_position) * kv_dim;    // (n, kv_dim)
    float* v = cache.values(l) + int64_t(first_position) * kv_dim;  // (n, kv_dim)
    // END SOLUTION
    // Step 14: a gated Q projection holds each head's query and gate; they part here.
    if (config.attention_output_gate) {
        linear(s.query_gate.data(), s.h.data(), layer.attn_q, n, s);
        split_query_gate(s.q.data(), s.attn_gate.data(), s.query_gate.data(), n, n_heads,
                         head_dim);
    } else {
        linear(s.q.data(), s.h.data(), layer.attn_q, n, s);
    }
    linear(k, s.h.data(), layer.attn_k, n, s);
    linear(v, s.h.data(), layer.attn_v, n, s);
    // Step 13: what the file has, Qwen2's biases or Qwen3's norm of each head of Q and K.
    if (weights.attention.qkv_bias) {
        add_bias(s.q.data(), layer.attn_q_bias.data(), n, q_dim);
        add_bias(k, layer.attn_k_bias.data(), n, kv_dim);
        add_bias(v, layer.attn_v_bias.data(), n, kv_dim);
    }
    if (weights.attention.qk_norm) {
        qk_norm(s.q.data(), layer.attn_q_norm.data(), n, n_heads, head_dim, config.rms_eps);
        qk_norm(k, layer.attn_k_norm.data(), n, n_kv_heads, head_dim, config.rms_eps);
    }
    // Step 14: rope_dims is head_dim before qwen35, and partial_rope() then rope().
    const int rope_dims = int(config.rope_dims);
    partial_rope(s.q.data(), n, n_heads, head_dim, rope_dims, first_position, config.rope_base);
    partial_rope(k, n, n_kv_heads, head_dim, rope_dims, first_position, config.rope_base);
    attention(s.attn.data(), s.q.data(), cache.keys(l), cache.values(l), n, first_position,
              n_heads, n_kv_heads, head_dim);
    if (config.attention_output_gate)
        sigmoid_gate(s.attn.data(), s.attn_gate.data(), int64_t(n) * q_dim);
    linear(s.delta.data(), s.attn.data(), layer.attn_output, n, s);
}

// Step 14: each token's convolved row q | k | v into the three head-major buffers.
static void split_qkv(RunState& s, const DeltaNetConfig& dn, int n) {
    const int qk = int(dn.qk_width()), vw = int(dn.value_width()), c = int(dn.channels());
    for (int t = 0; t < n; t++) {
        const float* row = s.qkv.data() + int64_t(t) * c;  // (C)
        for (int i = 0; i < qk; i++) s.q_heads[int64_t(t) * qk + i] = row[i];
        for (int i = 0; i < qk; i++) s.k_heads[int64_t(t) * qk + i] = row[qk + i];
        for (int i = 0; i < vw; i++) s.v_heads[int64_t(t) * vw + i] = row[2 * qk + i];
    }
}

// Step 14: the Gated DeltaNet sublayer of layer l on s.h, its output in s.delta; its conv
// window and state in the cache carry the earlier positions.
static void delta_net_sublayer(const ModelConfig& config, const Weights& weights, int l,
                               KVCache& cache, RunState& s, int n) {
    const LayerWeights& layer = weights.layers[l];
    const DeltaNetConfig& dn = config.delta_net;
    const int hk = int(dn.n_key_heads), hv = int(dn.n_value_heads);
    const int dk = int(dn.key_dim), dv = int(dn.value_dim);
    linear(s.mixed_qkv.data(), s.h.data(), layer.attn_qkv, n, s);
    linear(s.z.data(), s.h.data(), layer.attn_gate, n, s);
    linear(s.beta_in.data(), s.h.data(), layer.ssm_beta, n, s);
    linear(s.alpha_in.data(), s.h.data(), layer.ssm_alpha, n, s);

    causal_conv1d_silu(s.qkv.data(), s.mixed_qkv.data(), cache.conv_window(l),
                       layer.ssm_conv1d.data(), n, int(dn.channels()), int(dn.conv_kernel));
    split_qkv(s, dn, n);
    l2_normalize_rows(s.q_heads.data(), n * hk, dk, kL2NormEps, 1.0f / std::sqrt(float(dk)));
    l2_normalize_rows(s.k_heads.data(), n * hk, dk, kL2NormEps, 1.0f);
    delta_net_gates(s.beta.data(), s.decay.data(), s.beta_in.data(), s.alpha_in.data(),
                    layer.ssm_a.data(), layer.ssm_dt_bias.data(), n, hv);
    // Step 15: more than one token in chunks (the same rule, test_chunked_delta_rule.cpp).
    if (n > 1)
        chunked_gated_delta_rule(s.recurrent.data(), cache.delta_state(l), s.q_heads.data(),
                                 s.k_heads.data(), s.v_heads.data(), s.decay.data(),
                                 s.beta.data(), n, hk, hv, dk, dv);
    else
        gated_delta_rule(s.recurrent.data(), cache.delta_state(l), s.q_heads.data(),
                         s.k_heads.data(), s.v_heads.data(), s.decay.data(), s.beta.data(), n, hk,
                         hv, dk, dv);
    gated_rmsnorm(s.recurrent.data(), s.recurrent.data(), s.z.data(), layer.ssm_norm.data(),
                  n * hv, dv, config.rms_eps);
    linear(s.delta.data(), s.recurrent.data(), layer.ssm_out, n, s);
}

// The feed-forward sublayer (SwiGLU) of layer l, added to s.x.
static void ffn_sublayer(const ModelConfig& config, const LayerWeights& layer, RunState& s,
                         int n) {
    const int d = int(config.d_model), d_ff = int(config.d_ff);
    rmsnorm(s.h.data(), s.x.data(), layer.ffn_norm.data(), n, d, config.rms_eps);
    linear(s.gate.data(), s.h.data(), layer.ffn_gate, n, s);
    linear(s.up.data(), s.h.data(), layer.ffn_up, n, s);
    swiglu(s.gate.data(), s.gate.data(), s.up.data(), int64_t(n) * d_ff);
    linear(s.delta.data(), s.gate.data(), layer.ffn_down, n, s);
    residual_add(s.x.data(), s.delta.data(), int64_t(n) * d);
}

void forward(const ModelConfig& config, const Weights& weights, const std::vector<int32_t>& ids,
             KVCache& cache, RunState& state, LogitRows rows) {
    if (ids.empty()) fail("cannot run the model on an empty sequence");
    if (ids.size() > size_t(cache.capacity - cache.n_filled))
        fail("the context is full: %d positions used, %zu more do not fit in %d", cache.n_filled,
             ids.size(), cache.capacity);
    for (int32_t id : ids)
        if (id < 0 || id >= weights.n_vocab)
            fail("token id %d is outside the vocabulary (0..%d)", id, weights.n_vocab - 1);

    const int n = int(ids.size());
    const int d = int(config.d_model);
    const int n_logit_rows = rows == LogitRows::All ? n : 1;
    RunState& s = state;
    resize_state(s, config, n, weights.n_vocab, n_logit_rows);

    embedding(s.x.data(), weights.token_embd.data, weights.token_embd.type, ids.data(), n, d);

    for (int l = 0; l < int(weights.layers.size()); l++) {
        const LayerWeights& layer = weights.layers[l];
        rmsnorm(s.h.data(), s.x.data(), layer.attn_norm.data(), n, d, config.rms_eps);
        if (config.layer_kinds[l] == LayerKind::DeltaNet)
            delta_net_sublayer(config, weights, l, cache, s, n);
        else attention_sublayer(config, weights, l, cache, s, n);
        residual_add(s.x.data(), s.delta.data(), int64_t(n) * d);
        ffn_sublayer(config, layer, s, n);
    }

    // Final norm and LM head, only for the positions whose logits were asked for.
    const float* last_rows = s.x.data() + int64_t(n - n_logit_rows) * d;
    rmsnorm(s.h.data(), last_rows, weights.output_norm.data(), n_logit_rows, d, config.rms_eps);
    linear(s.logits.data(), s.h.data(), weights.output, n_logit_rows, s);
    cache.n_filled += n;
}
