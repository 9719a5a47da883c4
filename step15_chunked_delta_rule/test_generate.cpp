// Checks for generation with a sampler on the tiny model: temperature 0 is transformers' greedy
// continuation (tests/fixtures/forward/) on the CPU and the GPU, a seed fixes the text, and the
// sampler sees the sequence its repetition penalty needs.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "device_kv_cache.h"
#include "device_weights.h"
#include "forward_cpu.h"
#include "forward_cuda.h"
#include "generate.h"
#include "gguf_tensors.h"
#include "kv_cache.h"
#include "model_config.h"
#include "sampler.h"
#include "test_forward_fixtures.h"
#include "test_gpu.h"
#include "test_tiny_model.h"
#include "weights.h"

namespace {

std::vector<int32_t> generate_ids(const std::vector<int32_t>& prompt, int n,
                                  const SamplerSettings& settings, Sampler* keep = nullptr) {
    const LoadedModel& model = tiny_model();
    KVCache cache = make_kv_cache(model.config, 256);
    RunState state;
    Sampler sampler = make_sampler(settings);
    std::vector<int32_t> ids;
    generate(model.config, model.weights, prompt, n, cache, state, sampler, [&](int32_t id) {
        ids.push_back(id);
        return true;
    });
    if (keep) *keep = sampler;
    return ids;
}

const std::vector<int32_t> kPrompt = {785, 2840, 315, 279, 1484, 1372, 13};

}  // namespace

TEST_CASE("temperature 0 is transformers' greedy continuation, whatever the other settings") {
    // Qwen's other defaults stay on (the 1.05 repetition penalty included): at temperature 0
    // none of them applies.
    SamplerSettings settings;
    settings.temperature = 0.0f;
    std::ifstream cases("tests/fixtures/forward/cases.txt");
    REQUIRE(cases.good());
    std::string name;
    int n_tokens, n_vocab, checked = 0;
    while (cases >> name >> n_tokens >> n_vocab) {
        CAPTURE(name);
        const std::string stem = "tests/fixtures/forward/" + name;
        CHECK(generate_ids(read_fixture_ids(stem + ".ids.txt"), 16, settings) ==
              read_fixture_ids(stem + ".greedy.txt"));
        checked++;
    }
    CHECK(checked >= 3);
}

TEST_CASE("a seed fixes the sampled tokens; another seed gives others") {
    SamplerSettings settings;     // Qwen's defaults
    settings.temperature = 1.5f;  // the tiny model's random weights are nearly flat; spread them
    settings.top_p = 1.0f;
    settings.seed = 5;
    const std::vector<int32_t> first = generate_ids(kPrompt, 32, settings);
    CHECK(first.size() == 32);
    CHECK(generate_ids(kPrompt, 32, settings) == first);
    settings.seed = 6;
    CHECK(generate_ids(kPrompt, 32, settings) != first);
}

TEST_CASE("the sampler remembers the prompt and each accepted token, the last N of them") {
    SamplerSettings settings;
    settings.repeat_last_n = 10;
    settings.seed = 1;
    Sampler sampler;
    std::vector<int32_t> sequence = kPrompt;
    for (int32_t id : generate_ids(kPrompt, 6, settings, &sampler)) sequence.push_back(id);
    CHECK(std::vector<int32_t>(sampler.recent.begin(), sampler.recent.end()) ==
          std::vector<int32_t>(sequence.end() - 10, sequence.end()));
}

TEST_CASE("the stats say when -n cut the generation, and format as one timing line") {
    const LoadedModel& model = tiny_model();
    auto run = [&](int max_new_tokens, int capacity, bool accept) {
        KVCache cache = make_kv_cache(model.config, capacity);
        RunState state;
        SamplerSettings settings;
        settings.seed = 3;
        Sampler sampler = make_sampler(settings);
        return generate(model.config, model.weights, kPrompt, max_new_tokens, cache, state,
                        sampler, [&](int32_t) { return accept; });
    };
    const GenerationStats cut = run(5, 256, true);
    CHECK(cut.reached_max_new_tokens);
    CHECK(stopped_by_limit_notice(cut) == "[stopped at -n 5 tokens; raise -n for more]");
    const std::string line = format_stats(cut);
    CHECK(line.rfind("prompt: 7 tokens in ", 0) == 0);
    CHECK(line.find(" | generated: 5 tokens, ") != std::string::npos);
    CHECK(line.find(" ms/token (") != std::string::npos);

    const GenerationStats refused = run(5, 256, false);  // a stop token ends it, not -n
    CHECK_FALSE(refused.reached_max_new_tokens);
    CHECK(stopped_by_limit_notice(refused).empty());
    CHECK(format_stats(refused).find("generated") == std::string::npos);  // no decode pass

    const GenerationStats full = run(5, int(kPrompt.size()) + 2, true);  // the cache ends it
    CHECK(full.context_full);
    CHECK_FALSE(full.reached_max_new_tokens);
    CHECK_FALSE(run(0, 256, true).reached_max_new_tokens);  // -n 0 asked for no tokens
}

TEST_CASE("on the GPU, temperature 0 gives the CPU's tokens") {
    if (!gpu_or_skip()) return;
    const LoadedModel& model = tiny_model();
    // F32 weights (step 12): with F16 ones the prompt's products take 16-bit operands on the
    // tensor cores, which move the tiny model's logits by up to ~0.04 and so its choice where
    // two are that close ("paragraph" does); the GPU's greedy tokens on F16 weights are held to
    // transformers' in test_forward_cuda.cpp.
    DeviceWeights weights = upload_weights(model.weights, WeightPrecision::F32);
    DeviceKVCache cache = make_device_kv_cache(model.config, 256);
    DeviceRunState state;
    NextTokenFn on_gpu = [&](const std::vector<int32_t>& new_ids, std::vector<float>* logits) {
        return gpu::next_token(model.config, weights, new_ids, cache, state, logits);
    };
    SamplerSettings settings;
    settings.temperature = 0.0f;
    std::ifstream cases("tests/fixtures/forward/cases.txt");
    std::string name;
    int n_tokens, n_vocab;
    while (cases >> name >> n_tokens >> n_vocab) {
        CAPTURE(name);
        const std::vector<int32_t> prompt =
            read_fixture_ids("tests/fixtures/forward/" + name + ".ids.txt");
        cache.clear();
        Sampler sampler = make_sampler(settings);
        std::vector<int32_t> on_the_gpu;
        generate(on_gpu, prompt, 24, cache.capacity, sampler, [&](int32_t id) {
            on_the_gpu.push_back(id);
            return true;
        });
        CHECK(on_the_gpu == generate_ids(prompt, 24, settings));
    }
}

TEST_CASE("greedy decoding asks the model step for no logits, sampling for every step's") {
    // A stand-in model step that returns ids 100, 101, ... and logits that favour id 7, and
    // records which calls asked for logits.
    std::vector<bool> asked;
    int32_t next = 100;
    NextTokenFn step = [&](const std::vector<int32_t>&, std::vector<float>* logits) {
        asked.push_back(logits != nullptr);
        if (logits) {
            logits->assign(10, 0.0f);
            (*logits)[7] = 50.0f;
        }
        return next++;
    };
    std::vector<int32_t> ids;
    auto keep = [&](int32_t id) {
        ids.push_back(id);
        return true;
    };
    // Temperature 0: the step's own argmax is the token, and no logits cross over.
    generate_greedy(step, {1, 2}, 4, 64, keep);
    CHECK(ids == std::vector<int32_t>{100, 101, 102, 103});
    CHECK(asked == std::vector<bool>{false, false, false, false});
    // Unless the prompt's logits are wanted (--dump-logits): then the first step's only.
    asked.clear();
    std::vector<float> prompt_logits;
    generate_greedy(step, {1, 2}, 2, 64, keep, &prompt_logits);
    CHECK(asked == std::vector<bool>{true, false});
    CHECK(prompt_logits.size() == 10);
    // Sampling reads the logits at every step: here they make id 7 certain.
    asked.clear();
    ids.clear();
    SamplerSettings settings;
    settings.seed = 3;
    Sampler sampler = make_sampler(settings);
    generate(step, {1, 2}, 3, 64, sampler, keep);
    CHECK(ids == std::vector<int32_t>{7, 7, 7});
    CHECK(asked == std::vector<bool>{true, true, true});
}
