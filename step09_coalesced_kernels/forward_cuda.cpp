// forward_cuda.cpp - forward_cpu.cpp with gpu:: in front of every operator. Plain C++: the
// CUDA code is all in the .cu files.
#include "forward_cuda.h"

#include "error.h"
#include "ops_cuda.h"

namespace gpu {

// Grows every buffer to hold n_tokens positions.
static void resize_state(DeviceRunState& s, const ModelConfig& config, int n_tokens, int n_vocab,
                         int n_logit_rows) {
    const size_t n = size_t(n_tokens);
    s.n_tokens = n_tokens;
    s.ids.resize(n);
    s.x.resize(n * config.d_model);
    s.h.resize(n * config.d_model);
    s.q.resize(n * config.n_heads * config.head_dim);
    s.attn.resize(n * config.n_heads * config.head_dim);
    s.delta.resize(n * config.d_model);
    s.gate.resize(n * config.d_ff);
    s.up.resize(n * config.d_ff);
    s.logits.resize(size_t(n_logit_rows) * n_vocab);
}

// y = x W^T for every token: the weight matrix's shape gives the sizes.
static void linear(float* y, const float* x, const DeviceMatrix& w, int n_tokens) {
    matmul(y, x, w.data.data(), w.type, n_tokens, w.cols, w.rows);
}

void forward(const ModelConfig& config, const DeviceWeights& weights,
             const std::vector<int32_t>& ids, DeviceKVCache& cache, DeviceRunState& state,
             LogitRows rows) {
    // The CPU's checks, word for word: an id outside the table would read past its end, and
    // positions past the cache's capacity would be written past its end.
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
    DeviceRunState& s = state;
    resize_state(s, config, n, weights.n_vocab, n_logit_rows);
    copy_to_device(s.ids.data(), ids.data(), ids.size() * sizeof(int32_t));

    embedding(s.x.data(), weights.token_embd.data.data(), weights.token_embd.type, s.ids.data(), n,
              d);

    for (int l = 0; l < int(weights.layers.size()); l++) {
        const DeviceLayerWeights& layer = weights.layers[l];
        // Attention sublayer.
        rmsnorm(s.h.data(), s.x.data(), layer.attn_norm.data(), n, d, config.rms_eps);
        // The new positions' keys and values are computed straight into their rows of the
        // cache, after the rows of earlier passes; attention then reads all of them.
        // BEGIN SOLUTION step07 gpu_forward_cache_rows
        float* k = cache.keys(l) + int64_t(first_position) * kv_dim;    // (n, kv_dim)
        float* v = cache.values(l) + int64_t(first_position) * kv_dim;  // (n, kv_dim)
        // END SOLUTION
        linear(s.q.data(), s.h.data(), layer.attn_q, n);
        linear(k, s.h.data(), layer.attn_k, n);
        linear(v, s.h.data(), layer.attn_v, n);
        add_bias(s.q.data(), layer.attn_q_bias.data(), n, q_dim);
        add_bias(k, layer.attn_k_bias.data(), n, kv_dim);
        add_bias(v, layer.attn_v_bias.data(), n, kv_dim);
        rope(s.q.data(), n, n_heads, head_dim, first_position, config.rope_base);
        rope(k, n, n_kv_heads, head_dim, first_position, config.rope_base);
        attention(s.attn.data(), s.q.data(), cache.keys(l), cache.values(l), n, first_position,
                  n_heads, n_kv_heads, head_dim);
        linear(s.delta.data(), s.attn.data(), layer.attn_output, n);
        residual_add(s.x.data(), s.delta.data(), int64_t(n) * d);

        // Feed-forward sublayer (SwiGLU).
        rmsnorm(s.h.data(), s.x.data(), layer.ffn_norm.data(), n, d, config.rms_eps);
        linear(s.gate.data(), s.h.data(), layer.ffn_gate, n);
        linear(s.up.data(), s.h.data(), layer.ffn_up, n);
        swiglu(s.gate.data(), s.gate.data(), s.up.data(), int64_t(n) * d_ff);
        linear(s.delta.data(), s.gate.data(), layer.ffn_down, n);
        residual_add(s.x.data(), s.delta.data(), int64_t(n) * d);
    }

    // Final norm and LM head, only for the positions whose logits were asked for.
    const float* last_rows = s.x.data() + int64_t(n - n_logit_rows) * d;
    rmsnorm(s.h.data(), last_rows, weights.output_norm.data(), n_logit_rows, d, config.rms_eps);
    linear(s.logits.data(), s.h.data(), lm_head(weights), n_logit_rows);
    cache.n_filled += n;
}

int32_t next_token(const ModelConfig& config, const DeviceWeights& weights,
                   const std::vector<int32_t>& new_ids, DeviceKVCache& cache, DeviceRunState& state,
                   std::vector<float>* logits) {
    forward(config, weights, new_ids, cache, state, LogitRows::LastOnly);
    if (logits) *logits = state.logits.download();
    return argmax(state.logits.data(), weights.n_vocab);
}

}  // namespace gpu
