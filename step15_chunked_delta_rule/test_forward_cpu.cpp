// Checks for the whole model: the tiny model's logits at every position and its greedy
// continuations equal what transformers (fp32, eager attention) computes from the same GGUF
// (tests/fixtures/forward/, written by tools/fixtures/make_logit_fixtures.py), and every kind of
// bad model or prompt fails with one clear line.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "chat_template.h"
#include "error.h"
#include "forward_cpu.h"
#include "generate.h"
#include "ggml_types.h"
#include "gguf_tensors.h"
#include "kv_cache.h"
#include "model_config.h"
#include "test_forward_fixtures.h"
#include "test_tiny_model.h"
#include "test_tolerance.h"
#include "tokenizer.h"
#include "weights.h"

// Logits agree when |ours - reference| <= 1e-4 + 1e-4 * |reference|.
static const Tolerance kAgainstTransformers = {1e-4, 1e-4};

TEST_CASE("the fixtures cover 1 to ~50 tokens") {
    std::vector<ForwardFixture> cases = forward_fixtures();
    REQUIRE(cases.size() >= 4);
    int shortest = cases[0].n_tokens, longest = cases[0].n_tokens;
    for (const ForwardFixture& c : cases) {
        shortest = std::min(shortest, c.n_tokens);
        longest = std::max(longest, c.n_tokens);
    }
    CHECK(shortest == 1);
    CHECK(longest >= 40);
}

TEST_CASE("logits at every position equal transformers on the tiny model") {
    const LoadedModel& model = tiny_model();
    RunState state;
    for (const ForwardFixture& c : forward_fixtures()) {
        CAPTURE(c.name);
        std::vector<int32_t> ids = read_fixture_ids(kForwardFixtures + c.name + ".ids.txt");
        std::vector<float> reference = read_fixture_f32(kForwardFixtures + c.name + ".logits.f32");
        REQUIRE(int(ids.size()) == c.n_tokens);
        REQUIRE(c.n_vocab == model.weights.n_vocab);
        REQUIRE(reference.size() == size_t(c.n_tokens) * c.n_vocab);

        KVCache cache = make_kv_cache(model.config, c.n_tokens);
        forward(model.config, model.weights, ids, cache, state, LogitRows::All);
        check_close(state.logits, reference, kAgainstTransformers, c.n_vocab);  // (position, token)
    }
}

TEST_CASE("greedy continuations equal transformers' 16 tokens") {
    const LoadedModel& model = tiny_model();
    RunState state;
    for (const ForwardFixture& c : forward_fixtures()) {
        CAPTURE(c.name);
        std::vector<int32_t> prompt = read_fixture_ids(kForwardFixtures + c.name + ".ids.txt");
        std::vector<int32_t> expected = read_fixture_ids(kForwardFixtures + c.name + ".greedy.txt");
        REQUIRE(expected.size() == 16);
        std::vector<int32_t> generated;
        KVCache cache = make_kv_cache(model.config, int(model.config.context_length));
        GenerationStats stats =
            generate_greedy(model.config, model.weights, prompt, 16, cache, state, [&](int32_t id) {
                generated.push_back(id);
                return true;
            });
        CHECK(generated == expected);
        CHECK(stats.n_prompt == c.n_tokens);
        CHECK(stats.n_generated == 16);
        CHECK(stats.n_passes == 15);               // the first token comes from the prompt's pass
        CHECK(cache.n_filled == c.n_tokens + 15);  // the last token was never run
    }
}

TEST_CASE("the last position's logits do not depend on asking for all of them") {
    const LoadedModel& model = tiny_model();
    std::vector<int32_t> ids = {785, 3001, 12, 2999, 0};
    RunState all, last;
    KVCache cache = make_kv_cache(model.config, 8);
    forward(model.config, model.weights, ids, cache, all, LogitRows::All);
    cache.clear();
    forward(model.config, model.weights, ids, cache, last, LogitRows::LastOnly);
    int n_vocab = model.weights.n_vocab;
    REQUIRE(last.logits.size() == size_t(n_vocab));
    std::vector<float> last_row(all.logits.end() - n_vocab, all.logits.end());
    CHECK(last.logits == last_row);
}

TEST_CASE("the tiny model's LM head is tied to the embedding and loading reports progress") {
    const LoadedModel& model = tiny_model();
    CHECK(model.weights.tied_output);
    CHECK(model.weights.output.data == model.weights.token_embd.data);
    CHECK(model.weights.n_vocab == 3005);
    CHECK(model.weights.layers.size() == 3);

    std::vector<size_t> seen;
    size_t total_seen = 0;
    load_weights(model.file, model.config, [&](size_t checked, size_t total) {
        seen.push_back(checked);
        total_seen = total;
    });
    CHECK(total_seen == 38);  // embedding + 3 x 12 + output_norm
    REQUIRE(seen.size() == 38);
    CHECK(seen.front() == 1);
    CHECK(seen.back() == 38);
}

TEST_CASE("generation stops at the context limit and when the callback says so") {
    const LoadedModel& model = tiny_model();
    RunState state;
    std::vector<int32_t> prompt = {785, 2347, 13};
    int calls = 0;
    KVCache small = make_kv_cache(model.config, 5);
    GenerationStats stats = generate_greedy(model.config, model.weights, prompt, 10, small, state,
                                            [&](int32_t) { return ++calls < 100; });
    CHECK(stats.n_generated == 2);  // 3 + 2 = the limit of 5
    CHECK(calls == 2);
    CHECK(stats.context_full);
    CHECK(small.n_filled == 4);  // the last token is part of the sequence but was never run

    calls = 0;
    KVCache cache = make_kv_cache(model.config, 64);
    stats = generate_greedy(model.config, model.weights, prompt, 10, cache, state,
                            [&](int32_t) { return ++calls < 3; });
    CHECK(calls == 3);
    CHECK(stats.n_generated == 2);  // the third token was refused, like a stop token
    CHECK(stats.n_passes == 2);     // but the pass that chose it was run
    CHECK_FALSE(stats.context_full);

    std::vector<float> prompt_logits;
    cache.clear();
    stats = generate_greedy(
        model.config, model.weights, prompt, 0, cache, state, [](int32_t) { return true; },
        &prompt_logits);
    CHECK(stats.n_generated == 0);
    CHECK(prompt_logits.size() == size_t(model.weights.n_vocab));
}

TEST_CASE("a bad prompt fails with one clear line") {
    const LoadedModel& model = tiny_model();
    RunState state;
    auto keep_going = [](int32_t) { return true; };
    KVCache cache = make_kv_cache(model.config, 4);
    CHECK_THROWS_WITH_AS(
        generate_greedy(model.config, model.weights, {}, 4, cache, state, keep_going),
        "the prompt is empty: there is nothing to continue", Error);
    CHECK_THROWS_WITH_AS(
        generate_greedy(model.config, model.weights, {1, 2, 3, 4, 5}, 4, cache, state, keep_going),
        "the prompt has 5 tokens, more than the 4 positions left in the context", Error);
    CHECK_THROWS_WITH_AS(
        forward(model.config, model.weights, {1, 3005}, cache, state, LogitRows::LastOnly),
        "token id 3005 is outside the vocabulary (0..3004)", Error);
    CHECK_THROWS_WITH_AS(
        forward(model.config, model.weights, {}, cache, state, LogitRows::LastOnly),
        "cannot run the model on an empty sequence", Error);
    CHECK(cache.n_filled == 0);  // nothing was added by the refused passes
    forward(model.config, model.weights, {1, 2, 3}, cache, state, LogitRows::All);
    CHECK_THROWS_WITH_AS(forward(model.config, model.weights, {4, 5}, cache, state, LogitRows::All),
                         "the context is full: 3 positions used, 2 more do not fit in 4", Error);
    CHECK(cache.n_filled == 3);
    CHECK_THROWS_WITH_AS(make_kv_cache(model.config, 0),
                         "a KV cache of 0 positions does not fit the model's context length 1024",
                         Error);
    CHECK_THROWS_WITH_AS(
        make_kv_cache(model.config, 1025),
        "a KV cache of 1025 positions does not fit the model's context length 1024", Error);
}

// A copy of the tiny model's directory (same metadata, tensors pointing into the same
// mapping) that a check can break one tensor at a time.
static GgufFile copy_of_tiny_model() {
    const GgufFile& original = tiny_model().file;
    GgufFile copy;
    copy.header = original.header;
    copy.metadata = original.metadata;
    copy.tensors = original.tensors;
    copy.alignment = original.alignment;
    copy.data_offset = original.data_offset;
    return copy;
}

static TensorInfo& tensor_named(GgufFile& file, const std::string& name) {
    for (TensorInfo& tensor : file.tensors)
        if (tensor.name == name) return tensor;
    FAIL("no tensor " << name);
    throw Error(name);
}

TEST_CASE("a model the forward pass cannot run is refused with one clear line") {
    const ModelConfig& config = tiny_model().config;

    GgufFile missing = copy_of_tiny_model();
    std::vector<TensorInfo>& tensors = missing.tensors;
    for (size_t i = 0; i < tensors.size(); i++)
        if (tensors[i].name == "blk.2.ffn_down.weight") tensors.erase(tensors.begin() + i);
    REQUIRE(tensors.size() == 37);
    CHECK_THROWS_WITH_AS(load_weights(missing, config), "tensor 'blk.2.ffn_down.weight' is missing",
                         Error);

    GgufFile narrow = copy_of_tiny_model();
    tensor_named(narrow, "blk.1.attn_k.weight").dims = {256, 64};
    CHECK_THROWS_WITH_AS(load_weights(narrow, config),
                         "tensor 'blk.1.attn_k.weight' has shape [256, 64], expected [256, 128]",
                         Error);

    GgufFile bias = copy_of_tiny_model();
    tensor_named(bias, "blk.2.attn_q.bias").dims = {256, 1};
    CHECK_THROWS_WITH_AS(load_weights(bias, config),
                         "tensor 'blk.2.attn_q.bias' has shape [256, 1], expected [256]", Error);

    ModelConfig wider = config;
    wider.d_ff = 640;
    CHECK_THROWS_WITH_AS(load_weights(tiny_model().file, wider),
                         "tensor 'blk.0.ffn_gate.weight' has shape [256, 512], expected [256, 640]",
                         Error);

    ModelConfig bigger_vocab = config;
    bigger_vocab.n_vocab = 4000;
    CHECK_THROWS_WITH_AS(load_weights(tiny_model().file, bigger_vocab),
                         "tensor 'token_embd.weight' has shape [256, 3005], expected [256, 4000]",
                         Error);

    GgufFile exotic = copy_of_tiny_model();
    tensor_named(exotic, "blk.0.ffn_up.weight").type = uint32_t(GgmlType::IQ2_XXS);
    CHECK_THROWS_WITH_AS(
        load_weights(exotic, config),
        "tensor 'blk.0.ffn_up.weight' has type IQ2_XXS, which this program cannot dequantize",
        Error);
}

// The official 0.5B q2_k and q3_k_m files store their 896-wide rows as IQ4_NL. The data is not
// read here (it is still the tiny model's own type): only the loader's type check is tested.
TEST_CASE("a model with IQ4_NL matrices loads") {
    GgufFile iq4_nl = copy_of_tiny_model();
    tensor_named(iq4_nl, "blk.0.ffn_up.weight").type = uint32_t(GgmlType::IQ4_NL);
    CHECK_NOTHROW(load_weights(iq4_nl, tiny_model().config));
}

// What main() does with -p TEXT and --chat must give the fixtures' ids: the chat case's text
// is render_chatml's output, and step04's tokenizer turns every prompt into transformers' ids.
TEST_CASE("the fixtures' prompts are what step05's command line feeds the model") {
    Tokenizer tokenizer(read_vocabulary(tiny_model().file.metadata));
    for (const ForwardFixture& c : forward_fixtures()) {
        CAPTURE(c.name);
        std::string text = read_fixture_text(kForwardFixtures + c.name + ".prompt.txt");
        CHECK(tokenizer.encode(text) == read_fixture_ids(kForwardFixtures + c.name + ".ids.txt"));
    }
    std::string chat = render_chatml(
        {{"system", kDefaultSystemPrompt}, {"user", "What is the capital of France?"}}, true);
    CHECK(chat == read_fixture_text(std::string(kForwardFixtures) + "chat.prompt.txt"));
}
