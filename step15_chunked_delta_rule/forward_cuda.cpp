// forward_cuda.cpp - forward_cpu.cpp with gpu:: in front of every operator, and step 10's
// Decoder, which runs one token as a replayed CUDA graph. Plain C++: the CUDA code is all in
// the .cu files. Step 13: Qwen3's QK-norm joins RoPE in the prompt (qk_norm_rope) and the fused
// QKV kernel in the decode step, so a Qwen3 step has as many kernels as a Qwen2 one.
// Step 14: a layer mixes the positions by its kind, in sublayer functions as on the CPU: qwen35's
// gated attention (partial RoPE inside qk_norm_partial_rope) or its Gated DeltaNet.
// Step 15: a prompt's Gated DeltaNet runs its delta rule in chunks (chunked_delta_rule.cu).
#include "forward_cuda.h"

#include <algorithm>
#include <cmath>

#include "error.h"
#include "flash_attention.h"
#include "gemm_tensor_cores.h"
#include "ggml_types.h"
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
    s.k.resize(n * config.n_kv_heads * config.head_dim);
    s.v.resize(n * config.n_kv_heads * config.head_dim);
    s.attn.resize(n * config.n_heads * config.head_dim);
    s.delta.resize(n * config.d_model);
    s.gate.resize(n * config.d_ff);
    s.up.resize(n * config.d_ff);
    s.logits.resize(size_t(n_logit_rows) * n_vocab);
    // Step 14: the buffers of the gated attention and of the DeltaNet, only for a model that has
    // them.
    const size_t q_dim = size_t(config.n_heads) * config.head_dim;
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
    s.delta_chunks.reserve(int(recurrent), int(dn.n_value_heads), int(dn.value_dim));
}

// transformers' l2norm of q and k in the Gated DeltaNet: a fixed epsilon (forward_cpu.cpp's).
constexpr float kL2NormEps = 1e-6f;

// y = x W^T for every token: the weight matrix's shape gives the sizes.
static void linear(float* y, const float* x, const DeviceMatrix& w, int n_tokens) {
    matmul(y, x, w.data.data(), w.type, n_tokens, w.cols, w.rows);
}

// The CPU's checks, word for word: an id outside the table would read past its end, and
// positions past the cache's capacity would be written past its end. (The Decoder's one-token
// steps make them too.)
static void check_new_tokens(const std::vector<int32_t>& ids, const DeviceKVCache& cache,
                             int n_vocab) {
    if (ids.empty()) fail("cannot run the model on an empty sequence");
    if (ids.size() > size_t(cache.capacity - cache.n_filled))
        fail("the context is full: %d positions used, %zu more do not fit in %d", cache.n_filled,
             ids.size(), cache.capacity);
    for (int32_t id : ids)
        if (id < 0 || id >= n_vocab)
            fail("token id %d is outside the vocabulary (0..%d)", id, n_vocab - 1);
}

// Step 12: whether layer l's prompt attention runs on the tensor cores (flash_attention.h).
// F32 matrices are the checks' exact path (WeightPrecision::F32), and keep step 9's kernel,
// as does a GPU older than Ampere.
static bool attention_on_tensor_cores(const DeviceLayerWeights& layer, int head_dim) {
    return layer.attn_q.type != uint32_t(GgmlType::F32) && flash_attention_takes(head_dim) &&
           gpu_has_tensor_core_mma();
}

// The attention sublayer of layer l on s.h (the normalized input), its output in s.delta.
static void attention_sublayer(const ModelConfig& config, const DeviceWeights& weights, int l,
                               DeviceKVCache& cache, DeviceRunState& s, int n) {
    const DeviceLayerWeights& layer = weights.layers[l];
    const int n_heads = int(config.n_heads);
    const int n_kv_heads = int(config.n_kv_heads);
    const int head_dim = int(config.head_dim);
    const int q_dim = n_heads * head_dim;
    const int kv_dim = n_kv_heads * head_dim;
    const int first_position = cache.n_filled;
    // The new positions' keys and values are computed straight into their rows of the
    // cache, after the rows of earlier passes; attention then reads all of them. (Step 11:
    // an F16 cache's rows take them rounded, once computed as floats in s.k and s.v.)
    const bool f16_cache = cache.type == CacheType::F16;
    // BEGIN SOLUTION step07 gpu_forward_cache_rows
    float* k = f16_cache ? s.k.data() : static_cast<float*>(cache.key_rows(l, first_position));
    float* v =
        f16_cache ? s.v.data() : static_cast<float*>(cache.value_rows(l, first_position));
    // END SOLUTION
    // Step 14: a gated Q projection holds each head's query and gate; they part here.
    if (config.attention_output_gate) {
        linear(s.query_gate.data(), s.h.data(), layer.attn_q, n);
        split_query_gate(s.q.data(), s.attn_gate.data(), s.query_gate.data(), n, n_heads,
                         head_dim);
    } else {
        linear(s.q.data(), s.h.data(), layer.attn_q, n);
    }
    linear(k, s.h.data(), layer.attn_k, n);
    linear(v, s.h.data(), layer.attn_v, n);
    if (weights.attention.qkv_bias) {
        add_bias(s.q.data(), layer.attn_q_bias.data(), n, q_dim);
        add_bias(k, layer.attn_k_bias.data(), n, kv_dim);
        add_bias(v, layer.attn_v_bias.data(), n, kv_dim);
    }
    // Step 14: rope_dims is head_dim before qwen35, and the partial kernels then the whole ones.
    const int rope_dims = int(config.rope_dims);
    if (weights.attention.qk_norm) {  // step 13: the norm joins RoPE's pass (head_norm.cu)
        qk_norm_partial_rope(s.q.data(), layer.attn_q_norm.data(), n, n_heads, head_dim,
                             rope_dims, first_position, config.rope_base, config.rms_eps);
        qk_norm_partial_rope(k, layer.attn_k_norm.data(), n, n_kv_heads, head_dim, rope_dims,
                             first_position, config.rope_base, config.rms_eps);
    } else {
        partial_rope(s.q.data(), n, n_heads, head_dim, rope_dims, first_position,
                     config.rope_base);
        partial_rope(k, n, n_kv_heads, head_dim, rope_dims, first_position, config.rope_base);
    }
    if (f16_cache) {
        store_cache_rows(cache.key_rows(l, first_position), cache.type, k, int64_t(n) * kv_dim);
        store_cache_rows(cache.value_rows(l, first_position), cache.type, v,
                         int64_t(n) * kv_dim);
    }
    if (n > 1 && attention_on_tensor_cores(layer, head_dim))  // step 12
        flash_attention(s.attn.data(), s.q.data(), cache.keys(l), cache.values(l), n,
                        first_position, n_heads, n_kv_heads, head_dim, cache.type);
    else
        attention(s.attn.data(), s.q.data(), cache.keys(l), cache.values(l), n, first_position,
                  n_heads, n_kv_heads, head_dim, cache.type);
    if (config.attention_output_gate)
        sigmoid_gate(s.attn.data(), s.attn_gate.data(), int64_t(n) * q_dim);
    linear(s.delta.data(), s.attn.data(), layer.attn_output, n);
}

// Step 14: the Gated DeltaNet sublayer of layer l on s.h, its output in s.delta; its conv
// window and state in the cache carry the earlier positions. forward_cpu.cpp's calls, in order.
static void delta_net_sublayer(const ModelConfig& config, const DeviceWeights& weights, int l,
                               DeviceKVCache& cache, DeviceRunState& s, int n) {
    const DeviceLayerWeights& layer = weights.layers[l];
    const DeltaNetConfig& dn = config.delta_net;
    const int hk = int(dn.n_key_heads), hv = int(dn.n_value_heads);
    const int dk = int(dn.key_dim), dv = int(dn.value_dim);
    linear(s.mixed_qkv.data(), s.h.data(), layer.attn_qkv, n);
    linear(s.z.data(), s.h.data(), layer.attn_gate, n);
    linear(s.beta_in.data(), s.h.data(), layer.ssm_beta, n);
    linear(s.alpha_in.data(), s.h.data(), layer.ssm_alpha, n);

    causal_conv1d_silu(s.qkv.data(), s.mixed_qkv.data(), cache.conv_window(l),
                       layer.ssm_conv1d.data(), n, int(dn.channels()), int(dn.conv_kernel));
    split_qkv(s.q_heads.data(), s.k_heads.data(), s.v_heads.data(), s.qkv.data(), n,
              int(dn.qk_width()), int(dn.value_width()));
    l2_normalize_rows(s.q_heads.data(), n * hk, dk, kL2NormEps, 1.0f / std::sqrt(float(dk)));
    l2_normalize_rows(s.k_heads.data(), n * hk, dk, kL2NormEps, 1.0f);
    delta_net_gates(s.beta.data(), s.decay.data(), s.beta_in.data(), s.alpha_in.data(),
                    layer.ssm_a.data(), layer.ssm_dt_bias.data(), n, hv);
    // Step 15: more than one token in chunks on the tensor cores, as on the CPU
    // (test_chunked_delta_rule_cuda.cpp); a GPU without mma.sync (Turing) keeps the recurrence.
    if (n > 1 && gpu_has_tensor_core_mma())
        chunked_gated_delta_rule(s.recurrent.data(), cache.delta_state(l), s.q_heads.data(),
                                 s.k_heads.data(), s.v_heads.data(), s.decay.data(), s.beta.data(),
                                 n, hk, hv, dk, dv, s.delta_chunks);
    else
        gated_delta_rule(s.recurrent.data(), cache.delta_state(l), s.q_heads.data(),
                         s.k_heads.data(), s.v_heads.data(), s.decay.data(), s.beta.data(), n, hk,
                         hv, dk, dv);
    gated_rmsnorm(s.recurrent.data(), s.recurrent.data(), s.z.data(), layer.ssm_norm.data(),
                  n * hv, dv, config.rms_eps);
    linear(s.delta.data(), s.recurrent.data(), layer.ssm_out, n);
}

// The feed-forward sublayer (SwiGLU) of layer l, added to s.x.
static void ffn_sublayer(const ModelConfig& config, const DeviceLayerWeights& layer,
                         DeviceRunState& s, int n) {
    const int d = int(config.d_model), d_ff = int(config.d_ff);
    rmsnorm(s.h.data(), s.x.data(), layer.ffn_norm.data(), n, d, config.rms_eps);
    linear(s.gate.data(), s.h.data(), layer.ffn_gate, n);
    linear(s.up.data(), s.h.data(), layer.ffn_up, n);
    swiglu(s.gate.data(), s.gate.data(), s.up.data(), int64_t(n) * d_ff);
    linear(s.delta.data(), s.gate.data(), layer.ffn_down, n);
    residual_add(s.x.data(), s.delta.data(), int64_t(n) * d);
}

// One chunk of a prompt: the n tokens of `ids` at the positions after the cache's, with the
// logits of the last n_logit_rows of them written to `logits`.
static void forward_chunk(const ModelConfig& config, const DeviceWeights& weights,
                          const int32_t* ids, int n, DeviceKVCache& cache, DeviceRunState& state,
                          float* logits, int n_logit_rows) {
    const int d = int(config.d_model);
    DeviceRunState& s = state;
    copy_to_device(s.ids.data(), ids, size_t(n) * sizeof(int32_t));

    embedding(s.x.data(), weights.token_embd.data.data(), weights.token_embd.type, s.ids.data(), n,
              d);
    for (int l = 0; l < int(weights.layers.size()); l++) {
        const DeviceLayerWeights& layer = weights.layers[l];
        rmsnorm(s.h.data(), s.x.data(), layer.attn_norm.data(), n, d, config.rms_eps);
        if (config.layer_kinds[l] == LayerKind::DeltaNet)
            delta_net_sublayer(config, weights, l, cache, s, n);
        else attention_sublayer(config, weights, l, cache, s, n);
        residual_add(s.x.data(), s.delta.data(), int64_t(n) * d);
        ffn_sublayer(config, layer, s, n);
    }

    // Final norm and LM head, only for the positions whose logits were asked for.
    if (n_logit_rows > 0) {
        const float* last_rows = s.x.data() + int64_t(n - n_logit_rows) * d;
        rmsnorm(s.h.data(), last_rows, weights.output_norm.data(), n_logit_rows, d, config.rms_eps);
        linear(logits, s.h.data(), lm_head(weights), n_logit_rows);
    }
    cache.n_filled += n;
}

void forward(const ModelConfig& config, const DeviceWeights& weights,
             const std::vector<int32_t>& ids, DeviceKVCache& cache, DeviceRunState& state,
             LogitRows rows) {
    check_new_tokens(ids, cache, weights.n_vocab);
    const int n = int(ids.size());
    const int n_logit_rows = rows == LogitRows::All ? n : 1;
    const int chunk = std::min(n, kPromptChunk);
    resize_state(state, config, chunk, weights.n_vocab, n_logit_rows);
    // Chunk after chunk, each attending to the cache the chunks before it filled.
    for (int first = 0; first < n; first += kPromptChunk) {
        const int n_chunk = std::min(kPromptChunk, n - first);
        const bool last = first + n_chunk == n;
        // LogitRows::All: every chunk's rows of logits; LastOnly: the last chunk's last row.
        float* logits =
            state.logits.data() + (rows == LogitRows::All ? int64_t(first) * weights.n_vocab : 0);
        const int chunk_logit_rows = rows == LogitRows::All ? n_chunk : last ? 1 : 0;
        forward_chunk(config, weights, ids.data() + first, n_chunk, cache, state, logits,
                      chunk_logit_rows);
    }
}

int32_t next_token(const ModelConfig& config, const DeviceWeights& weights,
                   const std::vector<int32_t>& new_ids, DeviceKVCache& cache, DeviceRunState& state,
                   std::vector<float>* logits) {
    forward(config, weights, new_ids, cache, state, LogitRows::LastOnly);
    if (logits) *logits = state.logits.download();
    return argmax(state.logits.data(), weights.n_vocab);
}

// ---- Step 10 ----

static bool wo_reads_merged_q8(const DeviceLayerWeights& layer, HeadShape heads) {
    return is_block_type(layer.attn_output.type) && heads.head_dim % kQ8BlockSize == 0;
}

static bool qkv_reads_blocks(const DeviceLayerWeights& layer) {
    return is_block_type(layer.attn_q.type) || is_block_type(layer.attn_k.type) ||
           is_block_type(layer.attn_v.type);
}

// Step 14: the products of a layer's normalized input, by its kind (a matrix that a layer of the
// other kind lacks has type 0, F32); whether one is a block type, which reads the 8 bits of
// rmsnorm(x), and whether one is not, which reads the floats.
static std::vector<const DeviceMatrix*> input_products(const DeviceLayerWeights& layer,
                                                       LayerKind kind) {
    if (kind == LayerKind::DeltaNet)
        return {&layer.attn_qkv, &layer.attn_gate, &layer.ssm_beta, &layer.ssm_alpha};
    return {&layer.attn_q, &layer.attn_k, &layer.attn_v};
}
static bool delta_net_reads_blocks(const DeviceLayerWeights& layer) {
    for (const DeviceMatrix* w : input_products(layer, LayerKind::DeltaNet))
        if (is_block_type(w->type)) return true;
    return false;
}
static bool mixer_reads_floats(const DeviceLayerWeights& layer, LayerKind kind) {
    for (const DeviceMatrix* w : input_products(layer, kind))
        if (!is_block_type(w->type)) return true;
    return false;
}

// Whether the normalized input of layer l (of the LM head, for l = the number of layers) is
// read as 8 bits, and the norm it takes: a quantize_q8 rounds it once x is complete.
static bool normed_input_reads_blocks(const DeviceWeights& weights, int l) {
    return l == int(weights.layers.size()) ? is_block_type(lm_head(weights).type)
                                           : qkv_reads_blocks(weights.layers[l]) ||
                                                 delta_net_reads_blocks(weights.layers[l]);
}
static const float* input_norm(const DeviceWeights& weights, int l) {
    return l == int(weights.layers.size()) ? weights.output_norm.data()
                                           : weights.layers[l].attn_norm.data();
}

// qkv_rope_cache's launches: one for Q and K of one type with V's the same, Q6_K or Q8_0.
static int qkv_launches(const DeviceLayerWeights& layer) {
    const uint32_t q = layer.attn_q.type, v = layer.attn_v.type;
    const bool paired = v == q || v == uint32_t(GgmlType::Q6_K) || v == uint32_t(GgmlType::Q8_0);
    return layer.attn_k.type == q && paired ? 1 : 3;
}

// Step 14: the kernels of a hybrid layer's mixing before its output projection (decode_delta_net,
// decode_gated_attention), the rmsnorm for its float matrices included.
static int hybrid_mixer_launches(const DeviceLayerWeights& layer, LayerKind kind) {
    const int floats = mixer_reads_floats(layer, kind);
    // 4 products, the conv, 2 L2 norms, the gates, the delta rule and the gated norm
    if (kind == LayerKind::DeltaNet) return floats + 10;
    return floats + 7;  // 3 products, norm/RoPE/cache, the split attention's 2, the gate
}

int kernels_per_decode_step(const ModelConfig& config, const DeviceWeights& weights) {
    const HeadShape heads{int(config.n_heads), int(config.n_kv_heads), int(config.head_dim)};
    const int n_layers = int(weights.layers.size());
    int n = 1 + 2;  // embedding; LM head, next token
    n += normed_input_reads_blocks(weights, 0);  // step 11: rounded after the embedding
    for (int l = 0; l < n_layers; l++) {
        const DeviceLayerWeights& layer = weights.layers[l];
        if (config.has_recurrent_layers()) {  // step 14
            const LayerKind kind = config.layer_kinds[l];
            n += hybrid_mixer_launches(layer, kind) + 3;  // output, gate/up, down
            const DeviceMatrix& out = kind == LayerKind::DeltaNet ? layer.ssm_out : layer.attn_output;
            n += is_block_type(out.type);  // its input rounded by matvec_add
        } else {
            n += qkv_launches(layer) + 5;  // attention's 2, Wo, gate/up, down
            // Wo's input, when the attention cannot round it.
            if (is_block_type(layer.attn_output.type) && !wo_reads_merged_q8(layer, heads)) n++;
        }
        // The feed-forward's input after Wo, the next layer's (or the LM head's) after down.
        n += is_block_type(layer.ffn_gate.type) + normed_input_reads_blocks(weights, l + 1);
    }
    return n;
}

// The biases and QK-norm weights are null where the model has none (empty buffers).
static QkvWeights qkv_weights(const DeviceLayerWeights& layer) {
    return QkvWeights{layer.attn_q.data.data(), layer.attn_k.data.data(), layer.attn_v.data.data(),
                      layer.attn_q_bias.data(), layer.attn_k_bias.data(), layer.attn_v_bias.data(),
                      layer.attn_q.type,        layer.attn_k.type,        layer.attn_v.type,
                      layer.attn_q_norm.data(), layer.attn_k_norm.data()};
}

// The attention sublayer of one token: x += Wo attention(rope(Wq h + bq), cache), h = rmsnorm(x).
// (h's 8 bits, when a matrix reads them, were rounded once x was complete.)
static void decode_attention_sublayer(const ModelConfig& config, const DeviceWeights& weights,
                                      int l, DeviceKVCache& cache, DecodeBuffers& b,
                                      Stream stream) {
    const DeviceLayerWeights& layer = weights.layers[l];
    const HeadShape heads{int(config.n_heads), int(config.n_kv_heads), int(config.head_dim)};
    DecodeSlots* slots = reinterpret_cast<DecodeSlots*>(b.slots.data());
    const Q8Vector normed_q8 = b.normed_q8.view(), input_q8 = b.input_q8.view();
    const HeadNormScratch head_scratch{b.head_rows.data(), b.head_done.data()};  // step 13
    qkv_rope_cache(b.q.data(), cache.keys(l), cache.values(l), cache.type, b.x.data(),
                   layer.attn_norm.data(), config.rms_eps, qkv_weights(layer), int(config.d_model),
                   heads, config.rope_base, slots, head_scratch, normed_q8, true, stream);
    // A block-type Wo takes the attention's output rounded to 8 bits by its last kernel.
    const bool merge_writes_q8 = wo_reads_merged_q8(layer, heads);
    decode_attention(b.attn.data(), b.q.data(), cache.keys(l), cache.values(l), cache.type,
                     b.attention_scratch.data(), cache.capacity, heads, slots,
                     merge_writes_q8 ? input_q8 : Q8Vector{}, stream);
    matvec_add(b.x.data(), b.attn.data(), layer.attn_output.data.data(), layer.attn_output.type,
               heads.n_heads * heads.head_dim, int(config.d_model), input_q8, merge_writes_q8,
               stream);
}

// ---- Step 14: the hybrid's layers, one token ----

// out = W h for a product of a layer's normalized input: a block matrix reads its 8 bits (rounded
// once x was complete), a float one b.h (decode_normed_floats).
static void decode_input_product(float* out, const DeviceMatrix& w, DecodeBuffers& b,
                                 Stream stream) {
    matvec_decode(out, b.h.data(), w.data.data(), w.type, w.cols, w.rows, b.normed_q8.view(),
                  true, stream);
}
static void decode_normed_floats(const ModelConfig& config, const DeviceLayerWeights& layer,
                                 LayerKind kind, DecodeBuffers& b, Stream stream) {
    if (mixer_reads_floats(layer, kind))
        rmsnorm(b.h.data(), b.x.data(), layer.attn_norm.data(), 1, int(config.d_model),
                config.rms_eps, stream);
}

// A Gated DeltaNet layer: delta_net_sublayer's operators on one token, its window and state
// updated in place. For one token the convolved row q | k | v needs no split: q, k and v are
// its three parts.
static void decode_delta_net(const ModelConfig& config, const DeviceWeights& weights, int l,
                             DeviceKVCache& cache, DecodeBuffers& b, Stream stream) {
    const DeviceLayerWeights& layer = weights.layers[l];
    const DeltaNetConfig& dn = config.delta_net;
    const int hk = int(dn.n_key_heads), hv = int(dn.n_value_heads);
    const int dk = int(dn.key_dim), dv = int(dn.value_dim), qk_width = int(dn.qk_width());
    decode_normed_floats(config, layer, LayerKind::DeltaNet, b, stream);
    decode_input_product(b.mixed_qkv.data(), layer.attn_qkv, b, stream);
    decode_input_product(b.z.data(), layer.attn_gate, b, stream);
    decode_input_product(b.beta_in.data(), layer.ssm_beta, b, stream);
    decode_input_product(b.alpha_in.data(), layer.ssm_alpha, b, stream);
    causal_conv1d_silu(b.qkv.data(), b.mixed_qkv.data(), cache.conv_window(l),
                       layer.ssm_conv1d.data(), 1, int(dn.channels()), int(dn.conv_kernel), stream);
    float* q = b.qkv.data();  // (Hk, dk)
    float* k = q + qk_width;  // (Hk, dk)
    float* v = k + qk_width;  // (Hv, dv)
    l2_normalize_rows(q, hk, dk, kL2NormEps, 1.0f / std::sqrt(float(dk)), stream);
    l2_normalize_rows(k, hk, dk, kL2NormEps, 1.0f, stream);
    // beta replaces b in place: each thread reads its b before it writes its beta.
    delta_net_gates(b.beta_in.data(), b.decay.data(), b.beta_in.data(), b.alpha_in.data(),
                    layer.ssm_a.data(), layer.ssm_dt_bias.data(), 1, hv, stream);
    gated_delta_rule(b.recurrent.data(), cache.delta_state(l), q, k, v, b.decay.data(),
                     b.beta_in.data(), 1, hk, hv, dk, dv, stream);
    gated_rmsnorm(b.recurrent.data(), b.recurrent.data(), b.z.data(), layer.ssm_norm.data(), hv, dv,
                  config.rms_eps, stream);
    matvec_add(b.x.data(), b.recurrent.data(), layer.ssm_out.data.data(), layer.ssm_out.type,
               hv * dv, int(config.d_model), b.input_q8.view(), false, stream);
}

// The gated attention: the three products, then gated_qk_norm_rope_cache (QK-norm, partial RoPE
// at the slots' position, K and V into the cache), the split attention, its gate, Wo.
static void decode_gated_attention(const ModelConfig& config, const DeviceWeights& weights, int l,
                                   DeviceKVCache& cache, DecodeBuffers& b, Stream stream) {
    const DeviceLayerWeights& layer = weights.layers[l];
    const HeadShape heads{int(config.n_heads), int(config.n_kv_heads), int(config.head_dim)};
    const int q_dim = heads.n_heads * heads.head_dim;
    const DecodeSlots* slots = reinterpret_cast<const DecodeSlots*>(b.slots.data());
    decode_normed_floats(config, layer, LayerKind::Attention, b, stream);
    decode_input_product(b.query_gate.data(), layer.attn_q, b, stream);
    decode_input_product(b.k.data(), layer.attn_k, b, stream);
    decode_input_product(b.v.data(), layer.attn_v, b, stream);
    gated_qk_norm_rope_cache(b.q.data(), b.attn_gate.data(), cache.keys(l), cache.values(l),
                             cache.type, b.query_gate.data(), b.k.data(), b.v.data(),
                             layer.attn_q_norm.data(), layer.attn_k_norm.data(), heads,
                             int(config.rope_dims), config.rope_base, config.rms_eps, slots,
                             stream);
    decode_attention(b.attn.data(), b.q.data(), cache.keys(l), cache.values(l), cache.type,
                     b.attention_scratch.data(), cache.capacity, heads, slots, Q8Vector{}, stream);
    sigmoid_gate(b.attn.data(), b.attn_gate.data(), q_dim, stream);
    matvec_add(b.x.data(), b.attn.data(), layer.attn_output.data.data(), layer.attn_output.type,
               q_dim, int(config.d_model), b.input_q8.view(), false, stream);
}

void launch_decode_step(const ModelConfig& config, const DeviceWeights& weights,
                        DeviceKVCache& cache, DecodeBuffers& b, Stream stream) {
    const int d = int(config.d_model);
    const int d_ff = int(config.d_ff);
    const float eps = config.rms_eps;
    DecodeSlots* slots = reinterpret_cast<DecodeSlots*>(b.slots.data());
    const int32_t* token = b.slots.data();  // DecodeSlots::token comes first
    const int n_layers = int(weights.layers.size());
    const DeviceMatrix& head = lm_head(weights);
    const Q8Vector normed_q8 = b.normed_q8.view(), input_q8 = b.input_q8.view();

    embedding(b.x.data(), weights.token_embd.data.data(), weights.token_embd.type, token, 1, d,
              stream);
    if (normed_input_reads_blocks(weights, 0))
        quantize_q8(normed_q8, b.x.data(), input_norm(weights, 0), eps, d, stream);
    for (int l = 0; l < n_layers; l++) {
        const DeviceLayerWeights& layer = weights.layers[l];
        // Step 14: a hybrid's layer mixes the positions by its kind.
        if (config.has_recurrent_layers()) {
            if (config.layer_kinds[l] == LayerKind::DeltaNet)
                decode_delta_net(config, weights, l, cache, b, stream);
            else decode_gated_attention(config, weights, l, cache, b, stream);
        } else {
            decode_attention_sublayer(config, weights, l, cache, b, stream);
        }
        // The output projection completed x; the feed-forward's normalized input is rounded.
        if (is_block_type(layer.ffn_gate.type))
            quantize_q8(normed_q8, b.x.data(), layer.ffn_norm.data(), eps, d, stream);
        // Feed-forward sublayer: x += Wdown swiglu(Wgate h, Wup h), h = rmsnorm(x).
        const bool down_blocks = is_block_type(layer.ffn_down.type);
        gate_up_swiglu(b.ffn.data(), b.x.data(), layer.ffn_norm.data(), eps,
                       layer.ffn_gate.data.data(), layer.ffn_up.data.data(), layer.ffn_gate.type, d,
                       d_ff, normed_q8, true, down_blocks ? input_q8 : Q8Vector{}, b.group_done.data(),
                       stream);
        // down completes x; the next layer's (or the LM head's) input is rounded after it.
        matvec_add(b.x.data(), b.ffn.data(), layer.ffn_down.data.data(), layer.ffn_down.type, d_ff,
                   d, input_q8, true, stream);
        if (normed_input_reads_blocks(weights, l + 1))
            quantize_q8(normed_q8, b.x.data(), input_norm(weights, l + 1), eps, d, stream);
    }
    // (the LM head's 8-bit input was rounded after the last down, or after the embedding)
    lm_head_argmax(b.logits.data(), b.argmax_scratch.data(), b.x.data(), weights.output_norm.data(),
                   eps, head.data.data(), head.type, d, weights.n_vocab, slots, normed_q8, true,
                   stream);
}

// gate_up_swiglu reads a row of each matrix in one loop, so they must share a type. (The
// upload gives the two one type, F16, when the file's differ: only a file that mixes BF16
// with other types in these two fails here.)
static void check_fused_types(const DeviceWeights& weights) {
    for (size_t l = 0; l < weights.layers.size(); l++) {
        const DeviceLayerWeights& layer = weights.layers[l];
        if (layer.ffn_up.type != layer.ffn_gate.type)
            fail(
                "layer %zu: ffn_gate and ffn_up are of different types on the device, which "
                "the fused gate/up kernel does not read",
                l);
    }
}

Decoder::Decoder(const ModelConfig& config, const DeviceWeights& weights, DeviceKVCache& cache,
                 bool use_graph)
    : config_(config), weights_(weights), cache_(cache), use_graph_(use_graph) {
    check_fused_types(weights);
    const HeadShape heads{int(config.n_heads), int(config.n_kv_heads), int(config.head_dim)};
    buffers_.slots.resize(2);
    buffers_.x.resize(config.d_model);
    buffers_.q.resize(size_t(heads.n_heads) * heads.head_dim);
    buffers_.attn.resize(size_t(heads.n_heads) * heads.head_dim);
    buffers_.ffn.resize(config.d_ff);
    buffers_.logits.resize(weights.n_vocab);
    buffers_.attention_scratch.resize(decode_attention_scratch(cache.capacity, heads));
    buffers_.argmax_scratch.resize(lm_head_argmax_scratch());
    auto whole_blocks = [](int n) { return (n + kQ8BlockSize - 1) / kQ8BlockSize * kQ8BlockSize; };
    buffers_.normed_q8.resize(whole_blocks(int(config.d_model)));
    const int value_width = int(config.delta_net.value_width());  // step 14: ssm_out's input
    buffers_.input_q8.resize(
        whole_blocks(std::max({heads.n_heads * heads.head_dim, int(config.d_ff), value_width})));
    buffers_.group_done.upload(std::vector<int>(whole_blocks(int(config.d_ff)) / kQ8BlockSize, 0));
    if (weights.attention.qk_norm) {  // step 13
        const int n_rows = heads.n_heads + heads.n_kv_heads;
        buffers_.head_rows.resize(size_t(n_rows) * heads.head_dim);
        buffers_.head_done.upload(std::vector<int>(n_rows, 0));
    }
    if (config.has_recurrent_layers()) allocate_hybrid_buffers(config);
}

// Step 14: the hybrid's own decode buffers (DecodeBuffers says what each holds).
void Decoder::allocate_hybrid_buffers(const ModelConfig& config) {
    const size_t q_dim = size_t(config.n_heads) * config.head_dim;
    const size_t kv_dim = size_t(config.n_kv_heads) * config.head_dim;
    const DeltaNetConfig& dn = config.delta_net;
    buffers_.h.resize(config.d_model);
    buffers_.query_gate.resize(2 * q_dim);
    buffers_.attn_gate.resize(q_dim);
    buffers_.k.resize(kv_dim);
    buffers_.v.resize(kv_dim);
    buffers_.mixed_qkv.resize(dn.channels());
    buffers_.qkv.resize(dn.channels());
    buffers_.z.resize(dn.value_width());
    buffers_.beta_in.resize(dn.n_value_heads);
    buffers_.alpha_in.resize(dn.n_value_heads);
    buffers_.decay.resize(dn.n_value_heads);
    buffers_.recurrent.resize(dn.value_width());
}

int32_t Decoder::next_token(const std::vector<int32_t>& new_ids, std::vector<float>* logits) {
    if (new_ids.size() != 1) {  // a prompt: the eager path, on the default stream
        slots_known_ = false;
        return gpu::next_token(config_, weights_, new_ids, cache_, prompt_state_, logits);
    }
    check_new_tokens(new_ids, cache_, weights_.n_vocab);
    const int32_t id = new_ids[0];

    if (!slots_known_ || host_slots_.token != id || host_slots_.position != cache_.n_filled) {
        host_slots_ = DecodeSlots{id, cache_.n_filled};
        copy_to_device_async(buffers_.slots.data(), &host_slots_, sizeof host_slots_,
                             stream_.get());
    }
    auto launch_all = [&] {
        launch_decode_step(config_, weights_, cache_, buffers_, stream_.get());
    };
    if (use_graph_) {
        if (!graph_.captured()) graph_.capture(stream_.get(), launch_all);
        graph_.replay(stream_.get());
    } else {
        launch_all();
    }
    copy_to_host_async(&host_slots_, buffers_.slots.data(), sizeof host_slots_, stream_.get());
    if (logits) {
        logits->resize(weights_.n_vocab);
        copy_to_host_async(logits->data(), buffers_.logits.data(), logits->size() * sizeof(float),
                           stream_.get());
    }
    stream_.synchronize();
    slots_known_ = true;
    cache_.n_filled++;
    return host_slots_.token;
}

}  // namespace gpu
