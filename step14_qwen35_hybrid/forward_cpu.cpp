// forward_cpu.cpp - the network as a sequence of operator calls; every number is in ops_cpu.
// Step 13: one pass for Qwen2 and Qwen3, the differences read from the weights (AttentionParts)
// and the config (head_dim: Q and the attention's output are q_dim wide, Wo maps them to d_model).
#include "forward_cpu.h"

#include "error.h"
#include "ops_cpu.h"
#include "quant_dot.h"

// Grows or shrinks every buffer to hold n_tokens positions.
static void resize_state(RunState& s, const ModelConfig& config, int n_tokens, int n_vocab,
                         int n_logit_rows) {
    const size_t n = size_t(n_tokens);
    s.n_tokens = n_tokens;
    s.x.resize(n * config.d_model);
    s.h.resize(n * config.d_model);
    s.q.resize(n * config.n_heads * config.head_dim);
    s.attn.resize(n * config.n_heads * config.head_dim);
    s.delta.resize(n * config.d_model);
    s.gate.resize(n * config.d_ff);
    s.up.resize(n * config.d_ff);
    s.logits.resize(size_t(n_logit_rows) * n_vocab);
}

// y = x W^T for every token: the weight matrix's shape gives the sizes. Step 11: a
// block-quantized W is multiplied with x rounded to 8-bit blocks, in integers (quant_dot.h).
static void linear(float* y, const float* x, const WeightMatrix& w, int n_tokens,
                   const RunState& s) {
    if (s.int8_activations) matmul_q8(y, x, w.data, w.type, n_tokens, w.cols, w.rows, s.dot_kernel);
    else matmul(y, x, w.data, w.type, n_tokens, w.cols, w.rows);
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
    const int n_heads = int(config.n_heads);
    const int n_kv_heads = int(config.n_kv_heads);
    const int head_dim = int(config.head_dim);
    const int q_dim = n_heads * head_dim;
    const int kv_dim = n_kv_heads * head_dim;
    const int d_ff = int(config.d_ff);
    const int first_position = cache.n_filled;
    const int n_logit_rows = rows == LogitRows::All ? n : 1;
    RunState& s = state;
    resize_state(s, config, n, weights.n_vocab, n_logit_rows);

    embedding(s.x.data(), weights.token_embd.data, weights.token_embd.type, ids.data(), n, d);

    for (int l = 0; l < int(weights.layers.size()); l++) {
        const LayerWeights& layer = weights.layers[l];
        // Attention sublayer.
        rmsnorm(s.h.data(), s.x.data(), layer.attn_norm.data(), n, d, config.rms_eps);
        // The new positions' keys and values are computed straight into their rows of the
        // cache, after the rows of earlier passes; attention then reads all of them.
        // BEGIN SOLUTION step07 forward_cache_rows
        float* k = cache.keys(l) + int64_t(first_position) * kv_dim;    // (n, kv_dim)
        float* v = cache.values(l) + int64_t(first_position) * kv_dim;  // (n, kv_dim)
        // END SOLUTION
        linear(s.q.data(), s.h.data(), layer.attn_q, n, s);
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
        rope(s.q.data(), n, n_heads, head_dim, first_position, config.rope_base);
        rope(k, n, n_kv_heads, head_dim, first_position, config.rope_base);
        attention(s.attn.data(), s.q.data(), cache.keys(l), cache.values(l), n, first_position,
                  n_heads, n_kv_heads, head_dim);
        linear(s.delta.data(), s.attn.data(), layer.attn_output, n, s);
        residual_add(s.x.data(), s.delta.data(), int64_t(n) * d);

        // Feed-forward sublayer (SwiGLU).
        rmsnorm(s.h.data(), s.x.data(), layer.ffn_norm.data(), n, d, config.rms_eps);
        linear(s.gate.data(), s.h.data(), layer.ffn_gate, n, s);
        linear(s.up.data(), s.h.data(), layer.ffn_up, n, s);
        swiglu(s.gate.data(), s.gate.data(), s.up.data(), int64_t(n) * d_ff);
        linear(s.delta.data(), s.gate.data(), layer.ffn_down, n, s);
        residual_add(s.x.data(), s.delta.data(), int64_t(n) * d);
    }

    // Final norm and LM head, only for the positions whose logits were asked for.
    const float* last_rows = s.x.data() + int64_t(n - n_logit_rows) * d;
    rmsnorm(s.h.data(), last_rows, weights.output_norm.data(), n_logit_rows, d, config.rms_eps);
    linear(s.logits.data(), s.h.data(), weights.output, n_logit_rows, s);
    cache.n_filled += n;
}
