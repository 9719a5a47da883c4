// model_config.h - the numbers that shape the network, read from "<arch>.*" metadata keys,
// and a summary of the tokenizer keys. Nothing here is hard-coded for one model size.
// Step 13: the architecture is qwen2 or qwen3, and the head size is read from the file when it
// gives one (Qwen3's head_dim is not d_model / n_heads).
// Step 14: qwen35, the Qwen3.5 hybrid: most layers are Gated DeltaNet layers (a recurrent state
// of fixed size instead of attention over a growing cache), every full_attention_interval-th one
// full attention with an output gate and RoPE on the first rope_dims of each head.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf_metadata.h"

// Step 14: how a layer mixes the positions: softmax attention over the KV cache, or a Gated
// DeltaNet's recurrent state.
enum class LayerKind { Attention, DeltaNet };

// Step 14: the sizes of the Gated DeltaNet layers, from qwen35's "ssm.*" keys (llama.cpp names
// them after Mamba's); all 0 in a model without such layers. A layer projects each token to
// q and k (n_key_heads heads of key_dim), v and the output gate z (n_value_heads heads of
// value_dim), and one beta and one decay per value head; every value head keeps a state of
// key_dim x value_dim.
struct DeltaNetConfig {
    uint32_t n_key_heads = 0;    // <arch>.ssm.group_count
    uint32_t n_value_heads = 0;  // <arch>.ssm.time_step_rank, a multiple of n_key_heads
    uint32_t key_dim = 0;        // <arch>.ssm.state_size: dk
    uint32_t value_dim = 0;      // <arch>.ssm.inner_size / n_value_heads: dv
    uint32_t conv_kernel = 0;    // <arch>.ssm.conv_kernel: taps of the causal convolution

    uint32_t qk_width() const { return n_key_heads * key_dim; }       // q's, and k's
    uint32_t value_width() const { return n_value_heads * value_dim; }  // v's, z's, the output's
    // The convolution's channels: q, k and v side by side.
    uint32_t channels() const { return 2 * qk_width() + value_width(); }
};

struct ModelConfig {
    std::string architecture;     // general.architecture: "qwen2", "qwen3" or "qwen35"
    uint32_t n_layers = 0;        // <arch>.block_count
    uint32_t d_model = 0;         // <arch>.embedding_length (hidden size)
    uint32_t d_ff = 0;            // <arch>.feed_forward_length
    uint32_t n_heads = 0;         // <arch>.attention.head_count
    uint32_t n_kv_heads = 0;      // <arch>.attention.head_count_kv (defaults to n_heads)
    uint32_t head_dim = 0;        // <arch>.attention.key_length, else d_model / n_heads
    uint32_t context_length = 0;  // <arch>.context_length
    float rope_base = 10000.0f;   // <arch>.rope.freq_base (llama.cpp's default when absent)
    float rms_eps = 1e-6f;        // <arch>.attention.layer_norm_rms_epsilon
    uint32_t n_vocab = 0;         // length of tokenizer.ggml.tokens (0 when absent)
    // Step 14: RoPE rotates the first rope_dims elements of each head (<arch>.rope.dimension_count,
    // else head_dim): qwen35's heads of 256 turn only their first 64.
    uint32_t rope_dims = 0;
    // Step 14: each head's row of Q is followed by a gate of the same size, and the attention's
    // output is multiplied by sigmoid(gate) before Wo (qwen35).
    bool attention_output_gate = false;
    std::vector<LayerKind> layer_kinds;  // (n_layers) all Attention before qwen35
    DeltaNetConfig delta_net;            // qwen35's recurrent layers
    // Step 14: next-token-prediction (MTP) blocks the file stores after the n_layers layers
    // (<arch>.nextn_predict_layers, counted in block_count). The engine does not run them.
    uint32_t n_nextn_layers = 0;

    int count_layers(LayerKind kind) const {
        int n = 0;
        for (LayerKind k : layer_kinds) n += k == kind ? 1 : 0;
        return n;
    }
    bool has_recurrent_layers() const { return count_layers(LayerKind::DeltaNet) > 0; }
};

// True when general.architecture names an architecture whose "<arch>.block_count" is present;
// false for a vocab-only file.
bool has_model_config(const GgufMetadata& metadata);

// The architectures this engine runs: one forward pass for all, the differences (head_dim,
// biases, QK-norm, the layer kinds) read from the file.
inline constexpr const char* kArchitectures[] = {"qwen2", "qwen3", "qwen35"};

// Reads and validates: an architecture of kArchitectures, every count positive, n_heads
// divisible by n_kv_heads, head_dim even (RoPE rotates pairs), eps > 0, rope base > 0 (the one
// optional key besides head_count_kv and the head sizes). head_dim is
// <arch>.attention.key_length when present (Qwen3), else d_model / n_heads, which must then
// divide evenly (Qwen2); <arch>.attention.value_length, when present, must equal it.
// Step 14: rope_dims, when given, is even and at most head_dim. qwen35 also needs its ssm.* keys
// (heads dividing evenly) and the layer kinds: <arch>.attention.recurrent_layers (a bool per
// block), else every <arch>.full_attention_interval-th layer is attention.
// Fails with one line naming the key, e.g. "metadata key 'qwen2.block_count' is missing", or
// the architecture: "architecture 'llama' is not supported (this engine reads qwen2, qwen3,
// qwen35)".
ModelConfig read_model_config(const GgufMetadata& metadata);

struct TokenizerSummary {
    std::string model;               // tokenizer.ggml.model, "gpt2" for byte-level BPE
    std::string pre;                 // tokenizer.ggml.pre, "qwen2"
    uint64_t n_tokens = 0;           // tokenizer.ggml.tokens length
    uint64_t n_merges = 0;           // tokenizer.ggml.merges length
    int64_t bos_id = -1;             // tokenizer.ggml.bos_token_id, -1 when absent
    int64_t eos_id = -1;             // tokenizer.ggml.eos_token_id
    int64_t pad_id = -1;             // tokenizer.ggml.padding_token_id
    bool has_chat_template = false;  // tokenizer.chat_template present
};

// Fails when tokenizer.ggml.tokens is missing or a special id is outside the vocabulary.
TokenizerSummary read_tokenizer_summary(const GgufMetadata& metadata);
