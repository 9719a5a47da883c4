// model_config.h - the numbers that shape the network, read from "<arch>.*" metadata keys,
// and a summary of the tokenizer keys. Nothing here is hard-coded for one model size.
// Step 13: the architecture is qwen2 or qwen3, and the head size is read from the file when it
// gives one (Qwen3's head_dim is not d_model / n_heads).
#pragma once

#include <cstdint>
#include <string>

#include "gguf_metadata.h"

struct ModelConfig {
    std::string architecture;     // general.architecture: "qwen2" or "qwen3"
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
};

// True when general.architecture names an architecture whose "<arch>.block_count" is present;
// false for a vocab-only file.
bool has_model_config(const GgufMetadata& metadata);

// The architectures this engine runs: one forward pass for both, the differences (head_dim,
// biases, QK-norm) read from the file.
inline constexpr const char* kArchitectures[] = {"qwen2", "qwen3"};

// Reads and validates: an architecture of kArchitectures, every count positive, n_heads
// divisible by n_kv_heads, head_dim even (RoPE rotates pairs), eps > 0, rope base > 0 (the one
// optional key besides head_count_kv and the head sizes). head_dim is
// <arch>.attention.key_length when present (Qwen3), else d_model / n_heads, which must then
// divide evenly (Qwen2); <arch>.attention.value_length, when present, must equal it.
// Fails with one line naming the key, e.g. "metadata key 'qwen2.block_count' is missing", or
// the architecture: "architecture 'llama' is not supported (this engine reads qwen2, qwen3)".
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
