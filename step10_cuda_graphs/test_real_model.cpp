// Checks on the real model (`make model && make test-real`): the last position's logits and
// the continuation at --temp 0 (the sampler's greedy case, with the default penalty settings
// that temperature 0 ignores) of six prompts equal what transformers (fp32, eager attention)
// computes from the same GGUF (tests/fixtures/real_model/, written by
// tools/fixtures/make_real_model_fixtures.py). With the cache, all 32 of the fixtures' tokens: one
// prefill, then 31 decode passes that read every earlier position from the cache.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "error.h"
#include "forward_cpu.h"
#include "generate.h"
#include "gguf_tensors.h"
#include "kv_cache.h"
#include "model_config.h"
#include "sampler.h"
#include "test_forward_fixtures.h"
#include "test_skip.h"
#include "weights.h"

static const char* kRealFixtures = "tests/fixtures/real_model/";
static const int kGreedyTokens = 32;

// |ours - reference| <= kRealAbsTolerance + kRealRelTolerance * |reference|. The logits reach
// about 24 and transformers sums the same float32 products in another order: the largest
// difference measured was 1.8e-5 (step05 on this 2-core CPU), ten times under the tolerance.
static const double kRealAbsTolerance = 2e-4;
static const double kRealRelTolerance = 1e-5;

static std::string read_real_fixture(const std::string& name) {
    return read_fixture_text(kRealFixtures + name);
}

static std::vector<int32_t> read_real_ids(const std::string& name) {
    return read_fixture_ids(kRealFixtures + name);
}

// The prompt names of cases.txt (its "#" line records the model's sha256).
static std::vector<std::string> real_cases() {
    std::istringstream in(read_real_fixture("cases.txt"));
    std::vector<std::string> names;
    std::string line;
    while (std::getline(in, line))
        if (!line.empty() && line[0] != '#') names.push_back(line.substr(0, line.find(' ')));
    return names;
}

// Compares `logits` (all n_vocab of them) at the ids the fixture NAME.logits.txt samples;
// returns the number outside the tolerance, describing the first few and the largest gap.
static int count_real_mismatches(const std::vector<float>& logits, const std::string& name,
                                 std::string& report, double& largest_difference) {
    std::istringstream in(read_real_fixture(name + ".logits.txt"));
    int mismatches = 0, compared = 0;
    int32_t id;
    double reference;
    largest_difference = 0.0;
    while (in >> id >> reference) {
        REQUIRE(id >= 0);
        REQUIRE(size_t(id) < logits.size());
        double difference = std::fabs(double(logits[id]) - reference);
        if (!(difference <= largest_difference)) largest_difference = difference;  // NaN sticks
        if (!(difference <= kRealAbsTolerance + kRealRelTolerance * std::fabs(reference))) {
            if (mismatches < 5)
                report += strprintf("  token %d: ours %.6f, transformers %.6f\n", id, logits[id],
                                    reference);
            mismatches++;
        }
        compared++;
    }
    REQUIRE(compared > 1000);
    return mismatches;
}

TEST_SUITE("real_model") {
    TEST_CASE("real model: logits and tokens at temperature 0 equal transformers'") {
        std::string why_not;
        std::string path = real_model_path(why_not);
        if (path.empty()) return skip_test(why_not);
        GgufFile file = open_gguf(path);
        ModelConfig config = read_model_config(file.metadata);
        Weights weights = load_weights(file, config);
        RunState state;
        for (const std::string& name : real_cases()) {
            CAPTURE(name);
            std::vector<int32_t> prompt = read_real_ids(name + ".ids.txt");
            std::vector<int32_t> expected = read_real_ids(name + ".greedy.txt");
            REQUIRE(expected.size() >= size_t(kGreedyTokens));
            expected.resize(kGreedyTokens);
            std::vector<int32_t> generated;
            std::vector<float> logits;  // (n_vocab) at the last prompt position
            KVCache cache = make_kv_cache(config, int(prompt.size()) + kGreedyTokens);
            SamplerSettings settings;  // Qwen's defaults, as the command line starts from
            settings.temperature = 0.0f;
            Sampler sampler = make_sampler(settings);
            generate(
                config, weights, prompt, kGreedyTokens, cache, state, sampler,
                [&](int32_t id) {
                    generated.push_back(id);
                    return true;
                },
                &logits);
            REQUIRE(logits.size() == size_t(weights.n_vocab));

            std::string report;
            double largest = 0.0;
            int mismatches = count_real_mismatches(logits, name, report, largest);
            MESSAGE(name << ": " << prompt.size() << " prompt tokens, largest logit difference "
                         << largest);
            INFO(mismatches << " sampled logits differ by more than " << kRealAbsTolerance << " + "
                            << kRealRelTolerance << " * |reference|:\n"
                            << report);
            CHECK(mismatches == 0);
            CHECK(generated == expected);
        }
    }
}
