// weights.cpp - look every tensor up by name and refuse anything the forward pass could not
// use, before a single number is computed.
#include "weights.h"

#include <cstdint>
#include <string>

#include "dequantize.h"
#include "error.h"
#include "ggml_types.h"

static std::string format_shape(const std::vector<uint64_t>& dims) {
    std::string text = "[";
    for (size_t i = 0; i < dims.size(); i++) {
        if (i > 0) text += ", ";
        text += std::to_string(dims[i]);
    }
    return text + "]";
}

// Walks the tensors in a fixed order, checking each and reporting progress.
class TensorChecker {
public:
    TensorChecker(const GgufFile& file, size_t total, const LoadProgress& progress)
        : file_(file), total_(total), progress_(progress) {}

    // The tensor `name`, present, of shape `expected` (GGUF order, ne0 first) and of a type
    // that dequantize() can read.
    const TensorInfo& get(const std::string& name, const std::vector<uint64_t>& expected) {
        const TensorInfo& tensor = file_.get(name);
        if (tensor.dims != expected)
            fail("tensor '%s' has shape %s, expected %s", name.c_str(),
                 format_shape(tensor.dims).c_str(), format_shape(expected).c_str());
        const GgmlTypeInfo& type = ggml_type_info(tensor.type);
        if (!type.can_dequantize)
            fail("tensor '%s' has type %s, which this program cannot dequantize", name.c_str(),
                 type.name);
        checked_++;
        if (progress_) progress_(checked_, total_);
        return tensor;
    }

    // A matrix [cols, rows] in GGUF order, left in the file.
    WeightMatrix matrix(const std::string& name, uint32_t cols, uint32_t rows) {
        const TensorInfo& tensor = get(name, {cols, rows});
        return WeightMatrix{tensor.data, tensor.type, int(rows), int(cols)};
    }

    // A 1-D tensor of n values, turned into float once.
    std::vector<float> vector(const std::string& name, uint32_t n) { return floats(name, {n}); }

    // Step 14: a small tensor of any shape, e.g. the convolution's taps, turned into float once.
    std::vector<float> floats(const std::string& name, const std::vector<uint64_t>& dims) {
        const TensorInfo& tensor = get(name, dims);
        uint64_t n = 1;
        for (uint64_t dim : dims) n *= dim;
        std::vector<float> values(n);
        dequantize(tensor.type, tensor.data, values.data(), int64_t(n));
        return values;
    }

private:
    const GgufFile& file_;
    size_t total_;
    size_t checked_ = 0;
    const LoadProgress& progress_;
};

// Step 13: which optional attention tensors the model has, from the first attention block (every
// attention block must then have them; step 14: qwen35's block 0 has no attention).
static AttentionParts attention_parts(const GgufFile& file, const ModelConfig& config) {
    AttentionParts parts;
    for (size_t layer = 0; layer < config.layer_kinds.size(); layer++) {
        if (config.layer_kinds[layer] != LayerKind::Attention) continue;
        const std::string prefix = "blk." + std::to_string(layer) + ".";
        parts.qkv_bias = file.find(prefix + "attn_q.bias") != nullptr;
        parts.qk_norm = file.find(prefix + "attn_q_norm.weight") != nullptr;
        break;
    }
    return parts;
}

// An attention block's tensors, q_dim = n_heads * head_dim wide for Q and Wo's input (step 14:
// Q's projection twice that with the output gate).
static void read_attention(TensorChecker& checker, const ModelConfig& config,
                           const AttentionParts& parts, const std::string& prefix,
                           LayerWeights& w) {
    const uint32_t d = config.d_model, head_dim = config.head_dim;
    const uint32_t q_dim = config.n_heads * head_dim, kv_dim = config.n_kv_heads * head_dim;
    w.attn_q = checker.matrix(prefix + "attn_q.weight", d,
                              config.attention_output_gate ? 2 * q_dim : q_dim);
    w.attn_k = checker.matrix(prefix + "attn_k.weight", d, kv_dim);
    w.attn_v = checker.matrix(prefix + "attn_v.weight", d, kv_dim);
    if (parts.qkv_bias) {
        w.attn_q_bias = checker.vector(prefix + "attn_q.bias", q_dim);
        w.attn_k_bias = checker.vector(prefix + "attn_k.bias", kv_dim);
        w.attn_v_bias = checker.vector(prefix + "attn_v.bias", kv_dim);
    }
    if (parts.qk_norm) {
        w.attn_q_norm = checker.vector(prefix + "attn_q_norm.weight", head_dim);
        w.attn_k_norm = checker.vector(prefix + "attn_k_norm.weight", head_dim);
    }
    w.attn_output = checker.matrix(prefix + "attn_output.weight", q_dim, d);
}

// Step 14: a Gated DeltaNet block's tensors (weights.h).
static void read_delta_net(TensorChecker& checker, const ModelConfig& config,
                           const std::string& prefix, LayerWeights& w) {
    const DeltaNetConfig& dn = config.delta_net;
    const uint32_t d = config.d_model;
    w.attn_qkv = checker.matrix(prefix + "attn_qkv.weight", d, dn.channels());
    w.attn_gate = checker.matrix(prefix + "attn_gate.weight", d, dn.value_width());
    w.ssm_conv1d = checker.floats(prefix + "ssm_conv1d.weight", {dn.conv_kernel, dn.channels()});
    w.ssm_beta = checker.matrix(prefix + "ssm_beta.weight", d, dn.n_value_heads);
    w.ssm_alpha = checker.matrix(prefix + "ssm_alpha.weight", d, dn.n_value_heads);
    w.ssm_dt_bias = checker.vector(prefix + "ssm_dt.bias", dn.n_value_heads);
    w.ssm_a = checker.vector(prefix + "ssm_a", dn.n_value_heads);
    w.ssm_norm = checker.vector(prefix + "ssm_norm.weight", dn.value_dim);
    w.ssm_out = checker.matrix(prefix + "ssm_out.weight", dn.value_width(), d);
}

// Block `layer`'s tensors: the mixing of its kind, then the feed-forward sublayer's.
static LayerWeights read_layer(TensorChecker& checker, const ModelConfig& config,
                               const AttentionParts& parts, uint32_t layer) {
    const uint32_t d = config.d_model, d_ff = config.d_ff;
    const std::string prefix = "blk." + std::to_string(layer) + ".";
    LayerWeights w;
    w.attn_norm = checker.vector(prefix + "attn_norm.weight", d);
    if (config.layer_kinds[layer] == LayerKind::DeltaNet)
        read_delta_net(checker, config, prefix, w);
    else read_attention(checker, config, parts, prefix, w);
    // Step 14: qwen35 names the FFN's input norm after the attention it follows.
    const bool post_attention = config.architecture == "qwen35";
    w.ffn_norm =
        checker.vector(prefix + (post_attention ? "post_attention_norm.weight" : "ffn_norm.weight"), d);
    w.ffn_gate = checker.matrix(prefix + "ffn_gate.weight", d, d_ff);
    w.ffn_up = checker.matrix(prefix + "ffn_up.weight", d, d_ff);
    w.ffn_down = checker.matrix(prefix + "ffn_down.weight", d_ff, d);
    return w;
}

Weights load_weights(const GgufFile& file, const ModelConfig& config,
                     const LoadProgress& progress) {
    const TensorInfo& embeddings = file.get("token_embd.weight");
    // The vocabulary size comes from the tokenizer's token list when the file has one.
    uint64_t n_vocab = config.n_vocab > 0 ? config.n_vocab : embeddings.n_rows();
    if (n_vocab > uint64_t(INT32_MAX))
        fail("tensor 'token_embd.weight' has %llu rows, too many for 32-bit token ids",
             (unsigned long long)n_vocab);

    const uint32_t d = config.d_model;
    const AttentionParts parts = attention_parts(file, config);
    const bool tied = file.find("output.weight") == nullptr;
    // A layer's 2 norms and 3 FFN matrices, then its kind's: attention's 4 matrices and the
    // optional parts, a Gated DeltaNet's 9 tensors.
    const size_t per_attention = 9 + (parts.qkv_bias ? 3 : 0) + (parts.qk_norm ? 2 : 0);
    const size_t per_delta_net = 5 + 9;
    const size_t total = 2 + (tied ? 0 : 1) +
                         size_t(config.count_layers(LayerKind::Attention)) * per_attention +
                         size_t(config.count_layers(LayerKind::DeltaNet)) * per_delta_net;
    TensorChecker checker(file, total, progress);

    Weights weights;
    weights.n_vocab = int(n_vocab);
    weights.attention = parts;
    weights.token_embd = checker.matrix("token_embd.weight", d, uint32_t(n_vocab));
    for (uint32_t layer = 0; layer < config.n_layers; layer++)
        weights.layers.push_back(read_layer(checker, config, parts, layer));
    weights.output_norm = checker.vector("output_norm.weight", d);
    weights.tied_output = tied;
    weights.output =
        tied ? weights.token_embd : checker.matrix("output.weight", d, uint32_t(n_vocab));
    return weights;
}
