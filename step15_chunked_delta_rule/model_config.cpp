#include "model_config.h"

#include <cmath>

#include "error.h"

// A count that must be at least 1: a zero layer count or width would make every later loop empty.
static uint32_t read_positive(const GgufMetadata& metadata, const std::string& key) {
    uint32_t value = metadata.get_u32(key);
    if (value == 0) fail("metadata key '%s' must be positive, got 0", key.c_str());
    return value;
}

static float read_positive_float(const GgufMetadata& metadata, const std::string& key) {
    float value = metadata.get_f32(key);
    if (!(value > 0.0f) || !std::isfinite(value))  // also rejects NaN
        fail("metadata key '%s' must be a positive number, got %g", key.c_str(), double(value));
    return value;
}

bool has_model_config(const GgufMetadata& metadata) {
    if (!metadata.has("general.architecture")) return false;
    const GgufValue& architecture = metadata.get("general.architecture");
    return architecture.type == GgufType::STRING &&
           metadata.has(architecture.string_value + ".block_count");
}

// Fails unless `architecture` is one of kArchitectures, naming them.
static void check_architecture(const std::string& architecture) {
    std::string supported;
    for (const char* name : kArchitectures) {
        if (architecture == name) return;
        supported += supported.empty() ? name : std::string(", ") + name;
    }
    fail("architecture '%s' is not supported (this engine reads %s)", architecture.c_str(),
         supported.c_str());
}

// Step 13: a query's and a key's head size. Qwen3 gives it (key_length: 128 on a width of 1024
// with 16 heads, so Q is 2048 wide); Qwen2's files may leave it out, and it is then the width
// shared among the heads. Values are heads of the same size (value_length), and RoPE rotates
// pairs of a head's elements (even).
static uint32_t read_head_dim(const GgufMetadata& metadata, const std::string& prefix,
                              uint32_t d_model, uint32_t n_heads) {
    const std::string key_length = prefix + "attention.key_length";
    const bool given = metadata.has(key_length);
    if (!given && d_model % n_heads != 0)
        fail("%sembedding_length %u is not divisible by %sattention.head_count %u", prefix.c_str(),
             d_model, prefix.c_str(), n_heads);
    const uint32_t head_dim = given ? read_positive(metadata, key_length) : d_model / n_heads;
    const std::string value_length = prefix + "attention.value_length";
    if (metadata.has(value_length) && metadata.get_u32(value_length) != head_dim)
        fail("metadata key '%s' is %u, but this engine needs it to equal head_dim %u",
             value_length.c_str(), metadata.get_u32(value_length), head_dim);
    if (head_dim % 2 != 0) {
        const std::string source = given ? key_length
                                         : prefix + "embedding_length / " + prefix +
                                               "attention.head_count";
        fail("head_dim %u (%s) must be even for RoPE", head_dim, source.c_str());
    }
    return head_dim;
}

// Step 14: the rotated part of a head, all of it unless <arch>.rope.dimension_count says less.
static uint32_t read_rope_dims(const GgufMetadata& metadata, const std::string& prefix,
                               uint32_t head_dim) {
    const std::string key = prefix + "rope.dimension_count";
    if (!metadata.has(key)) return head_dim;
    const uint32_t rope_dims = read_positive(metadata, key);
    if (rope_dims % 2 != 0 || rope_dims > head_dim)
        fail("metadata key '%s' is %u, but RoPE needs an even count of at most head_dim %u",
             key.c_str(), rope_dims, head_dim);
    return rope_dims;
}

// Step 14: the Gated DeltaNet layers' sizes. The value head size has no key of its own: it is
// the value width shared among the value heads.
static DeltaNetConfig read_delta_net_config(const GgufMetadata& metadata,
                                            const std::string& prefix) {
    DeltaNetConfig d;
    d.n_key_heads = read_positive(metadata, prefix + "ssm.group_count");
    d.n_value_heads = read_positive(metadata, prefix + "ssm.time_step_rank");
    d.key_dim = read_positive(metadata, prefix + "ssm.state_size");
    const uint32_t value_width = read_positive(metadata, prefix + "ssm.inner_size");
    d.conv_kernel = read_positive(metadata, prefix + "ssm.conv_kernel");
    if (d.n_value_heads % d.n_key_heads != 0)
        fail("%sssm.time_step_rank %u (value heads) is not divisible by %sssm.group_count %u "
             "(key heads)",
             prefix.c_str(), d.n_value_heads, prefix.c_str(), d.n_key_heads);
    if (value_width % d.n_value_heads != 0)
        fail("%sssm.inner_size %u is not divisible by %sssm.time_step_rank %u", prefix.c_str(),
             value_width, prefix.c_str(), d.n_value_heads);
    d.value_dim = value_width / d.n_value_heads;
    return d;
}

// Step 14: which layers are Gated DeltaNet layers. llama.cpp's converter writes a bool per block
// (attention.recurrent_layers, false for the MTP blocks after the n_layers layers); without it,
// layer i is attention when (i + 1) % full_attention_interval == 0 (Qwen3.5: three recurrent
// layers, then one of attention).
static std::vector<LayerKind> read_layer_kinds(const GgufMetadata& metadata,
                                               const std::string& prefix, uint32_t n_layers,
                                               uint32_t n_blocks) {
    std::vector<LayerKind> kinds(n_layers, LayerKind::Attention);
    const std::string recurrent = prefix + "attention.recurrent_layers";
    if (metadata.has(recurrent)) {
        const GgufValue& value = metadata.get(recurrent);
        if (value.type != GgufType::ARRAY || value.array_type != GgufType::BOOL)
            fail("metadata key '%s' has type %s, expected ARRAY[BOOL]", recurrent.c_str(),
                 gguf_value_type_name(value).c_str());
        if (value.array.size() != n_blocks)
            fail("metadata key '%s' has %zu entries, expected %u (%sblock_count)",
                 recurrent.c_str(), value.array.size(), n_blocks, prefix.c_str());
        for (uint32_t i = 0; i < n_layers; i++)
            if (value.array[i].uint_value != 0) kinds[i] = LayerKind::DeltaNet;
        return kinds;
    }
    const uint32_t interval = read_positive(metadata, prefix + "full_attention_interval");
    for (uint32_t i = 0; i < n_layers; i++)
        if ((i + 1) % interval != 0) kinds[i] = LayerKind::DeltaNet;
    return kinds;
}

// Step 14: the blocks the layers run, without the MTP blocks that block_count also counts.
static uint32_t read_n_nextn_layers(const GgufMetadata& metadata, const std::string& prefix,
                                    uint32_t n_blocks) {
    const std::string key = prefix + "nextn_predict_layers";
    if (!metadata.has(key)) return 0;
    const uint32_t n_nextn = metadata.get_u32(key);
    if (n_nextn >= n_blocks)
        fail("metadata key '%s' is %u, leaving no layer of the %u blocks (%sblock_count)",
             key.c_str(), n_nextn, n_blocks, prefix.c_str());
    return n_nextn;
}

ModelConfig read_model_config(const GgufMetadata& metadata) {
    ModelConfig config;
    config.architecture = metadata.get_string("general.architecture");
    check_architecture(config.architecture);
    // Every model key is "<architecture>.<name>", e.g. qwen2.block_count.
    const std::string prefix = config.architecture + ".";

    const uint32_t n_blocks = read_positive(metadata, prefix + "block_count");
    config.n_nextn_layers = read_n_nextn_layers(metadata, prefix, n_blocks);
    config.n_layers = n_blocks - config.n_nextn_layers;
    config.d_model = read_positive(metadata, prefix + "embedding_length");
    config.d_ff = read_positive(metadata, prefix + "feed_forward_length");
    config.n_heads = read_positive(metadata, prefix + "attention.head_count");
    // Without grouped-query attention every query head has its own key/value head.
    config.n_kv_heads = metadata.has(prefix + "attention.head_count_kv")
                            ? read_positive(metadata, prefix + "attention.head_count_kv")
                            : config.n_heads;
    config.context_length = read_positive(metadata, prefix + "context_length");
    if (metadata.has(prefix + "rope.freq_base"))
        config.rope_base = read_positive_float(metadata, prefix + "rope.freq_base");
    config.rms_eps = read_positive_float(metadata, prefix + "attention.layer_norm_rms_epsilon");

    config.head_dim = read_head_dim(metadata, prefix, config.d_model, config.n_heads);
    // Grouped-query attention: each key/value head serves n_heads / n_kv_heads query heads.
    if (config.n_heads % config.n_kv_heads != 0)
        fail("%sattention.head_count %u is not divisible by %sattention.head_count_kv %u",
             prefix.c_str(), config.n_heads, prefix.c_str(), config.n_kv_heads);

    config.rope_dims = read_rope_dims(metadata, prefix, config.head_dim);
    config.layer_kinds.assign(config.n_layers, LayerKind::Attention);
    if (config.architecture == "qwen35") {
        config.attention_output_gate = true;
        config.delta_net = read_delta_net_config(metadata, prefix);
        config.layer_kinds = read_layer_kinds(metadata, prefix, config.n_layers, n_blocks);
    }

    if (metadata.has("tokenizer.ggml.tokens"))
        config.n_vocab = uint32_t(metadata.string_array_length("tokenizer.ggml.tokens"));
    return config;
}

// A special token id, -1 when the key is absent; fails if it names no token.
static int64_t read_token_id(const GgufMetadata& metadata, const std::string& key,
                             uint64_t n_tokens) {
    if (!metadata.has(key)) return -1;
    uint32_t id = metadata.get_u32(key);
    if (id >= n_tokens)
        fail("metadata key '%s' is %u, outside the vocabulary of %llu tokens", key.c_str(), id,
             (unsigned long long)n_tokens);
    return id;
}

TokenizerSummary read_tokenizer_summary(const GgufMetadata& metadata) {
    TokenizerSummary summary;
    summary.n_tokens = metadata.string_array_length("tokenizer.ggml.tokens");
    if (metadata.has("tokenizer.ggml.model"))
        summary.model = metadata.get_string("tokenizer.ggml.model");
    if (metadata.has("tokenizer.ggml.pre")) summary.pre = metadata.get_string("tokenizer.ggml.pre");
    if (metadata.has("tokenizer.ggml.merges"))
        summary.n_merges = metadata.string_array_length("tokenizer.ggml.merges");
    summary.bos_id = read_token_id(metadata, "tokenizer.ggml.bos_token_id", summary.n_tokens);
    summary.eos_id = read_token_id(metadata, "tokenizer.ggml.eos_token_id", summary.n_tokens);
    summary.pad_id = read_token_id(metadata, "tokenizer.ggml.padding_token_id", summary.n_tokens);
    summary.has_chat_template = metadata.has("tokenizer.chat_template");
    return summary;
}
