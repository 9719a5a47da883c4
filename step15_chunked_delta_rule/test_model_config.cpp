// Checks for step02's ModelConfig and TokenizerSummary: a happy path from small made-up numbers
// (nothing from a real Qwen size) and one check per validation error.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "error.h"
#include "gguf_metadata.h"
#include "model_config.h"
#include "test_gguf_values.h"

using Pairs = std::vector<std::pair<std::string, GgufValue>>;

static GgufValue strings(size_t count) {
    std::vector<std::string> texts;
    for (size_t i = 0; i < count; i++) texts.push_back("t" + std::to_string(i));
    return gguf_string_array(texts);
}

// A small, valid model: 2 layers, width 48, 6 heads of 8 sharing 3 KV heads, 10 tokens.
static Pairs model_pairs() {
    return {
        {"general.architecture", gguf_string("qwen2")},
        {"qwen2.block_count", gguf_u32(2)},
        {"qwen2.context_length", gguf_u32(128)},
        {"qwen2.embedding_length", gguf_u32(48)},
        {"qwen2.feed_forward_length", gguf_u32(80)},
        {"qwen2.attention.head_count", gguf_u32(6)},
        {"qwen2.attention.head_count_kv", gguf_u32(3)},
        {"qwen2.rope.freq_base", gguf_f32(5000.0f)},
        {"qwen2.attention.layer_norm_rms_epsilon", gguf_f32(1e-5f)},
        {"tokenizer.ggml.model", gguf_string("gpt2")},
        {"tokenizer.ggml.pre", gguf_string("qwen2")},
        {"tokenizer.ggml.tokens", strings(10)},
        {"tokenizer.ggml.merges", strings(4)},
        {"tokenizer.ggml.bos_token_id", gguf_u32(9)},
        {"tokenizer.ggml.eos_token_id", gguf_u32(8)},
        {"tokenizer.chat_template", gguf_string("{{ messages }}")},
    };
}

static GgufMetadata to_metadata(const Pairs& pairs) {
    GgufMetadata metadata;
    for (auto& [key, value] : pairs) metadata.add(key, value);
    return metadata;
}

// The pairs with `key` set to `value` (appended if absent).
static Pairs set(Pairs pairs, const std::string& key, const GgufValue& value) {
    bool replaced = false;
    for (auto& pair : pairs)
        if (pair.first == key) pair.second = value, replaced = true;
    if (!replaced) pairs.emplace_back(key, value);
    return pairs;
}

// The same, as metadata.
static GgufMetadata with(Pairs pairs, const std::string& key, const GgufValue& value) {
    return to_metadata(set(std::move(pairs), key, value));
}

static GgufMetadata without(Pairs pairs, const std::string& key) {
    Pairs kept;
    for (auto& pair : pairs)
        if (pair.first != key) kept.push_back(pair);
    return to_metadata(kept);
}

static GgufMetadata model_metadata() { return to_metadata(model_pairs()); }

TEST_CASE("a valid model config is read from <arch>.* keys") {
    ModelConfig config = read_model_config(model_metadata());
    CHECK(config.architecture == "qwen2");
    CHECK(config.n_layers == 2);
    CHECK(config.d_model == 48);
    CHECK(config.d_ff == 80);
    CHECK(config.n_heads == 6);
    CHECK(config.n_kv_heads == 3);
    CHECK(config.head_dim == 8);
    CHECK(config.context_length == 128);
    CHECK(config.rope_base == 5000.0f);
    CHECK(config.rms_eps == 1e-5f);
    CHECK(config.n_vocab == 10);
    CHECK(has_model_config(model_metadata()));
}

TEST_CASE("optional keys take their defaults") {
    Pairs pairs = model_pairs();
    pairs.erase(pairs.begin() + 6, pairs.begin() + 8);  // head_count_kv and rope.freq_base
    pairs.erase(pairs.begin() + 9);                     // tokenizer.ggml.tokens
    ModelConfig config = read_model_config(to_metadata(pairs));
    CHECK(config.n_kv_heads == 6);        // one KV head per query head
    CHECK(config.rope_base == 10000.0f);  // llama.cpp's default
    CHECK(config.n_vocab == 0);
}

TEST_CASE("the architecture name picks the key prefix: qwen2 or qwen3, no other") {
    Pairs pairs;
    for (auto& [key, value] : model_pairs()) {
        std::string renamed = key.rfind("qwen2.", 0) == 0 ? "qwen3." + key.substr(6) : key;
        pairs.emplace_back(renamed, value);
    }
    ModelConfig config =
        read_model_config(with(pairs, "general.architecture", gguf_string("qwen3")));
    CHECK(config.architecture == "qwen3");
    CHECK(config.n_layers == 2);
    CHECK_THROWS_WITH_AS(
        read_model_config(with(model_pairs(), "general.architecture", gguf_string("qwen3"))),
        "metadata key 'qwen3.block_count' is missing", Error);
    // Step 13: an architecture the forward pass does not know is refused by name, whatever keys
    // it brings.
    for (auto& pair : pairs)
        if (pair.first.rfind("qwen3.", 0) == 0) pair.first = "llama." + pair.first.substr(6);
    CHECK_THROWS_WITH_AS(
        read_model_config(with(pairs, "general.architecture", gguf_string("llama"))),
        "architecture 'llama' is not supported (this engine reads qwen2, qwen3, qwen35)", Error);
}

TEST_CASE("a vocab-only file has no model config") {
    GgufMetadata vocab_only = without(model_pairs(), "qwen2.block_count");
    CHECK_FALSE(has_model_config(vocab_only));
    CHECK_FALSE(has_model_config(without(model_pairs(), "general.architecture")));
    CHECK_FALSE(has_model_config(with(model_pairs(), "general.architecture", gguf_u32(1))));
}

TEST_CASE("missing and mistyped keys are named") {
    CHECK_THROWS_WITH_AS(read_model_config(without(model_pairs(), "general.architecture")),
                         "metadata key 'general.architecture' is missing", Error);
    for (const char* key : {"qwen2.block_count", "qwen2.context_length", "qwen2.embedding_length",
                            "qwen2.feed_forward_length", "qwen2.attention.head_count",
                            "qwen2.attention.layer_norm_rms_epsilon"}) {
        CAPTURE(key);
        CHECK_THROWS_WITH_AS(read_model_config(without(model_pairs(), key)),
                             ("metadata key '" + std::string(key) + "' is missing").c_str(), Error);
    }
    CHECK_THROWS_WITH_AS(read_model_config(with(model_pairs(), "qwen2.block_count", gguf_f32(2))),
                         "metadata key 'qwen2.block_count' has type FLOAT32, expected UINT32",
                         Error);
    CHECK_THROWS_WITH_AS(
        read_model_config(with(model_pairs(), "qwen2.rope.freq_base", gguf_u32(10000))),
        "metadata key 'qwen2.rope.freq_base' has type UINT32, expected FLOAT32", Error);
    CHECK_THROWS_WITH_AS(
        read_model_config(with(model_pairs(), "tokenizer.ggml.tokens", gguf_u32(3))),
        "metadata key 'tokenizer.ggml.tokens' has type UINT32, expected "
        "ARRAY[STRING]",
        Error);
}

TEST_CASE("every count must be positive") {
    for (const char* key : {"qwen2.block_count", "qwen2.context_length", "qwen2.embedding_length",
                            "qwen2.feed_forward_length", "qwen2.attention.head_count",
                            "qwen2.attention.head_count_kv"}) {
        CAPTURE(key);
        CHECK_THROWS_WITH_AS(
            read_model_config(with(model_pairs(), key, gguf_u32(0))),
            ("metadata key '" + std::string(key) + "' must be positive, got 0").c_str(), Error);
    }
}

TEST_CASE("epsilon and rope base must be positive numbers") {
    CHECK_THROWS_WITH_AS(
        read_model_config(
            with(model_pairs(), "qwen2.attention.layer_norm_rms_epsilon", gguf_f32(0))),
        "metadata key 'qwen2.attention.layer_norm_rms_epsilon' must be a positive number, got 0",
        Error);
    CHECK_THROWS_WITH_AS(
        read_model_config(
            with(model_pairs(), "qwen2.attention.layer_norm_rms_epsilon", gguf_f32(NAN))),
        "metadata key 'qwen2.attention.layer_norm_rms_epsilon' must be a positive number, got nan",
        Error);
    CHECK_THROWS_WITH_AS(
        read_model_config(with(model_pairs(), "qwen2.rope.freq_base", gguf_f32(-1))),
        "metadata key 'qwen2.rope.freq_base' must be a positive number, got -1", Error);
    CHECK_THROWS_WITH_AS(
        read_model_config(with(model_pairs(), "qwen2.rope.freq_base", gguf_f32(INFINITY))),
        "metadata key 'qwen2.rope.freq_base' must be a positive number, got inf", Error);
}

TEST_CASE("the head layout must divide evenly") {
    CHECK_THROWS_WITH_AS(
        read_model_config(with(model_pairs(), "qwen2.attention.head_count", gguf_u32(5))),
        "qwen2.embedding_length 48 is not divisible by qwen2.attention.head_count 5", Error);
    CHECK_THROWS_WITH_AS(
        read_model_config(with(model_pairs(), "qwen2.attention.head_count_kv", gguf_u32(4))),
        "qwen2.attention.head_count 6 is not divisible by qwen2.attention.head_count_kv 4", Error);
    CHECK_THROWS_WITH_AS(
        read_model_config(with(model_pairs(), "qwen2.attention.head_count_kv", gguf_u32(12))),
        "qwen2.attention.head_count 6 is not divisible by qwen2.attention.head_count_kv 12", Error);
    CHECK_THROWS_WITH_AS(
        read_model_config(with(model_pairs(), "qwen2.embedding_length", gguf_u32(42))),
        "head_dim 7 (qwen2.embedding_length / qwen2.attention.head_count) must be even for RoPE",
        Error);
}

// Step 13: Qwen3 sets its head size apart from the width (Qwen3-0.6B: 16 heads of 128 on a width
// of 1024), and Q is then n_heads * head_dim wide, not d_model.
TEST_CASE("the head size is attention.key_length when the file gives it, else d_model / n_heads") {
    CHECK(read_model_config(with(model_pairs(), "qwen2.attention.key_length", gguf_u32(8)))
              .head_dim == 8);
    CHECK(read_model_config(with(model_pairs(), "qwen2.attention.key_length", gguf_u32(16)))
              .head_dim == 16);
    // The width need not divide among the heads when the size is given.
    Pairs five_heads = set(set(model_pairs(), "qwen2.attention.head_count_kv", gguf_u32(5)),
                           "qwen2.attention.key_length", gguf_u32(12));
    ModelConfig config =
        read_model_config(with(five_heads, "qwen2.attention.head_count", gguf_u32(5)));
    CHECK(config.head_dim == 12);
    CHECK(config.n_heads * config.head_dim == 60);  // Q's width, beside d_model 48
    CHECK_THROWS_WITH_AS(
        read_model_config(with(model_pairs(), "qwen2.attention.value_length", gguf_u32(4))),
        "metadata key 'qwen2.attention.value_length' is 4, but this engine needs it to equal "
        "head_dim 8",
        Error);
    Pairs keys_of_16 = set(model_pairs(), "qwen2.attention.key_length", gguf_u32(16));
    CHECK_THROWS_WITH_AS(
        read_model_config(with(keys_of_16, "qwen2.attention.value_length", gguf_u32(8))),
        "metadata key 'qwen2.attention.value_length' is 8, but this engine needs it to equal "
        "head_dim 16",
        Error);
    CHECK_THROWS_WITH_AS(
        read_model_config(with(model_pairs(), "qwen2.attention.key_length", gguf_u32(7))),
        "head_dim 7 (qwen2.attention.key_length) must be even for RoPE", Error);
    CHECK_THROWS_WITH_AS(
        read_model_config(with(model_pairs(), "qwen2.attention.key_length", gguf_u32(0))),
        "metadata key 'qwen2.attention.key_length' must be positive, got 0", Error);
}

TEST_CASE("the tokenizer summary reads the tokenizer keys") {
    TokenizerSummary summary = read_tokenizer_summary(model_metadata());
    CHECK(summary.model == "gpt2");
    CHECK(summary.pre == "qwen2");
    CHECK(summary.n_tokens == 10);
    CHECK(summary.n_merges == 4);
    CHECK(summary.bos_id == 9);
    CHECK(summary.eos_id == 8);
    CHECK(summary.pad_id == -1);
    CHECK(summary.has_chat_template);

    Pairs pairs = model_pairs();
    pairs.back() = {"tokenizer.ggml.padding_token_id",
                    gguf_u32(0)};  // instead of the chat template
    TokenizerSummary bare = read_tokenizer_summary(to_metadata(pairs));
    CHECK(bare.pad_id == 0);
    CHECK_FALSE(bare.has_chat_template);
}

TEST_CASE("the tokenizer summary rejects a missing vocabulary and ids outside it") {
    CHECK_THROWS_WITH_AS(read_tokenizer_summary(without(model_pairs(), "tokenizer.ggml.tokens")),
                         "metadata key 'tokenizer.ggml.tokens' is missing", Error);
    CHECK_THROWS_WITH_AS(
        read_tokenizer_summary(with(model_pairs(), "tokenizer.ggml.eos_token_id", gguf_u32(10))),
        "metadata key 'tokenizer.ggml.eos_token_id' is 10, outside the vocabulary of 10 tokens",
        Error);
    CHECK_THROWS_WITH_AS(
        read_tokenizer_summary(
            with(model_pairs(), "tokenizer.ggml.padding_token_id", gguf_u32(99))),
        "metadata key 'tokenizer.ggml.padding_token_id' is 99, outside the vocabulary of 10 tokens",
        Error);
    CHECK_THROWS_WITH_AS(
        read_tokenizer_summary(with(model_pairs(), "tokenizer.ggml.merges", gguf_u32(1))),
        "metadata key 'tokenizer.ggml.merges' has type UINT32, expected ARRAY[STRING]", Error);
    CHECK_THROWS_WITH_AS(
        read_tokenizer_summary(with(model_pairs(), "tokenizer.ggml.model", gguf_u32(1))),
        "metadata key 'tokenizer.ggml.model' has type UINT32, expected STRING", Error);
}
