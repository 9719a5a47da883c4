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
    std::vector<float> vector(const std::string& name, uint32_t n) {
        const TensorInfo& tensor = get(name, {n});
        std::vector<float> values(n);
        dequantize(tensor.type, tensor.data, values.data(), n);
        return values;
    }

private:
    const GgufFile& file_;
    size_t total_;
    size_t checked_ = 0;
    const LoadProgress& progress_;
};

// Step 13: which optional attention tensors the model has, from block 0 (every block must then
// have them).
static AttentionParts attention_parts(const GgufFile& file) {
    AttentionParts parts;
    parts.qkv_bias = file.find("blk.0.attn_q.bias") != nullptr;
    parts.qk_norm = file.find("blk.0.attn_q_norm.weight") != nullptr;
    return parts;
}

// Block `layer`'s tensors, q_dim = n_heads * head_dim wide for Q and Wo's input.
static LayerWeights read_layer(TensorChecker& checker, const ModelConfig& config,
                               const AttentionParts& parts, uint32_t layer) {
    const uint32_t d = config.d_model, d_ff = config.d_ff, head_dim = config.head_dim;
    const uint32_t q_dim = config.n_heads * head_dim, kv_dim = config.n_kv_heads * head_dim;
    const std::string prefix = "blk." + std::to_string(layer) + ".";
    LayerWeights w;
    w.attn_norm = checker.vector(prefix + "attn_norm.weight", d);
    w.attn_q = checker.matrix(prefix + "attn_q.weight", d, q_dim);
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
    w.ffn_norm = checker.vector(prefix + "ffn_norm.weight", d);
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
    const AttentionParts parts = attention_parts(file);
    const bool tied = file.find("output.weight") == nullptr;
    const size_t per_layer = 9 + (parts.qkv_bias ? 3 : 0) + (parts.qk_norm ? 2 : 0);
    const size_t total = 2 + (tied ? 0 : 1) + size_t(config.n_layers) * per_layer;
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
