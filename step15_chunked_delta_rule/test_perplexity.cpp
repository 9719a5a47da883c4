// Checks for perplexity(): logits whose answer is known by hand (uniform, two-valued, far from
// zero), chunking that changes nothing, the errors, and the CPU's ChunkLogitsFn on the tiny
// model against one forward pass. The real model's number is in test_real_model.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "forward_cpu.h"
#include "kv_cache.h"
#include "perplexity.h"
#include "test_tiny_model.h"

namespace {

// A stand-in for the model: the logits of position p are logits_at(p), whatever the tokens.
// Records what it is asked to run, to check that perplexity() runs each id once, in order.
struct FakeModel {
    int n_vocab = 0;
    std::function<std::vector<float>(int position)> logits_at;
    std::vector<int32_t> run_ids;
    std::vector<size_t> chunk_sizes;
    std::vector<float> logits;  // (chunk size, n_vocab) of the last call

    ChunkLogitsFn chunk_logits() {
        return [this](const std::vector<int32_t>& new_ids) {
            logits.clear();
            for (size_t i = 0; i < new_ids.size(); i++) {
                std::vector<float> row = logits_at(int(run_ids.size() + i));
                REQUIRE(row.size() == size_t(n_vocab));
                logits.insert(logits.end(), row.begin(), row.end());
            }
            run_ids.insert(run_ids.end(), new_ids.begin(), new_ids.end());
            chunk_sizes.push_back(new_ids.size());
            return static_cast<const float*>(logits.data());
        };
    }
};

// Logits that vary with the position and the id, with a spread like a model's (about +-10).
std::vector<float> varied_logits(int position, int n_vocab) {
    std::vector<float> row(n_vocab);
    for (int j = 0; j < n_vocab; j++)
        row[j] = float(10.0 * std::sin(0.37 * j + 1.3 * position) * std::cos(0.11 * j * j));
    return row;
}

std::vector<int32_t> varied_ids(int n, int n_vocab) {
    std::vector<int32_t> ids;
    for (int i = 0; i < n; i++) ids.push_back((i * 7 + 3) % n_vocab);
    return ids;
}

}  // namespace

TEST_CASE("uniform logits: the model is as unsure as a die with n_vocab faces") {
    FakeModel model;
    model.n_vocab = 1000;
    model.logits_at = [&](int) { return std::vector<float>(model.n_vocab, 3.25f); };
    const std::vector<int32_t> ids = varied_ids(9, model.n_vocab);
    Perplexity result = perplexity(model.chunk_logits(), ids, model.n_vocab, 4);
    CHECK(result.n_predicted == 8);
    CHECK(result.mean_nll == doctest::Approx(std::log(1000.0)).epsilon(1e-14));
    CHECK(result.value == doctest::Approx(1000.0).epsilon(1e-12));
}

TEST_CASE("logits whose softmax is (1/8 2/8 5/8): the perplexity worked by hand") {
    FakeModel model;
    model.n_vocab = 3;
    model.logits_at = [](int) { return std::vector<float>{0.0f, std::log(2.0f), std::log(5.0f)}; };
    // Tokens 2 and 0 follow: probabilities 5/8 and 1/8, so the perplexity is
    // (5/8 * 1/8)^(-1/2) = 8 / sqrt(5).
    Perplexity result = perplexity(model.chunk_logits(), {1, 2, 0}, model.n_vocab, 1);
    CHECK(result.n_predicted == 2);
    CHECK(result.value == doctest::Approx(8.0 / std::sqrt(5.0)).epsilon(1e-6));
    CHECK(result.mean_nll == doctest::Approx(-0.5 * std::log(5.0 / 64.0)).epsilon(1e-6));
}

TEST_CASE("logits far from zero neither overflow nor underflow") {
    // exp(1000) is inf and exp(-1000) is 0 in double: a log-softmax that did not subtract the
    // largest logit first would give NaN for both. Two equal logits: probability 1/2 each.
    for (float level : {1000.0f, -1000.0f}) {
        CAPTURE(level);
        FakeModel model;
        model.n_vocab = 2;
        model.logits_at = [&](int) { return std::vector<float>{level, level}; };
        Perplexity result = perplexity(model.chunk_logits(), {0, 1, 1, 0}, model.n_vocab, 2);
        CHECK(result.value == doctest::Approx(2.0).epsilon(1e-14));
    }
}

TEST_CASE("any chunk size gives the same sum; each id is run once in order and the last never") {
    FakeModel one_chunk;
    one_chunk.n_vocab = 301;
    one_chunk.logits_at = [](int position) { return varied_logits(position, 301); };
    const std::vector<int32_t> ids = varied_ids(40, one_chunk.n_vocab);
    const Perplexity reference = perplexity(one_chunk.chunk_logits(), ids, one_chunk.n_vocab, 39);
    REQUIRE(one_chunk.chunk_sizes == std::vector<size_t>{39});
    const std::vector<int32_t> all_but_last(ids.begin(), ids.end() - 1);
    for (int chunk_tokens : {1, 2, 7, 13, 38, 39, 1000}) {
        CAPTURE(chunk_tokens);
        FakeModel model = one_chunk;
        model.run_ids.clear();
        model.chunk_sizes.clear();
        const Perplexity result =
            perplexity(model.chunk_logits(), ids, model.n_vocab, chunk_tokens);
        // Each position's term is computed alone and the terms are added in order: bit for bit.
        CHECK(result.value == reference.value);
        CHECK(result.mean_nll == reference.mean_nll);
        CHECK(result.n_predicted == 39);
        CHECK(model.run_ids == all_but_last);
        for (size_t size : model.chunk_sizes) CHECK(size <= size_t(chunk_tokens));
    }
}

TEST_CASE("progress is reported after each chunk up to every predicted token") {
    FakeModel model;
    model.n_vocab = 5;
    model.logits_at = [](int position) { return varied_logits(position, 5); };
    std::vector<std::pair<int, int>> calls;
    perplexity(model.chunk_logits(), varied_ids(6, 5), model.n_vocab, 2,
               [&](int n_run, int n_total) { calls.emplace_back(n_run, n_total); });
    CHECK(calls == std::vector<std::pair<int, int>>{{2, 5}, {4, 5}, {5, 5}});
}

TEST_CASE("the result as the command line prints it") {
    Perplexity result;
    result.value = 8.43214;
    result.mean_nll = std::log(8.43214);
    result.n_predicted = 511;
    CHECK(format_perplexity(result) == "perplexity: 8.4321 over 511 predicted tokens");
}

TEST_CASE("perplexity fails with one line on what it cannot compute") {
    FakeModel model;
    model.n_vocab = 4;
    model.logits_at = [](int) { return std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f}; };
    const ChunkLogitsFn run = model.chunk_logits();
    CHECK_THROWS_WITH(perplexity(run, {}, 4, 8),
                      "perplexity needs at least 2 tokens (the first is only context), the text "
                      "has 0");
    CHECK_THROWS_WITH(perplexity(run, {3}, 4, 8),
                      "perplexity needs at least 2 tokens (the first is only context), the text "
                      "has 1");
    CHECK_THROWS_WITH(perplexity(run, {1, 2}, 4, 0), "perplexity: chunk size 0 must be at least 1");
    // The last id is never run, so the model would not catch it: perplexity() must.
    CHECK_THROWS_WITH(perplexity(run, {1, 2, 4}, 4, 8),
                      "token id 4 at position 2 is outside the vocabulary (0..3)");
    CHECK_THROWS_WITH(perplexity(run, {-1, 2}, 4, 8),
                      "token id -1 at position 0 is outside the vocabulary (0..3)");
    CHECK(model.run_ids.empty());

    model.logits_at = [](int position) {
        return std::vector<float>{1.0f, position == 2 ? NAN : 2.0f, 3.0f, 4.0f};
    };
    CHECK_THROWS_WITH(perplexity(model.chunk_logits(), {0, 1, 2, 3, 0}, 4, 8),
                      "perplexity: the logits at position 2 are not all finite");
}

TEST_CASE("the CPU's chunks on the cache give the perplexity of one forward pass") {
    const LoadedModel& model = tiny_model();
    const int n_vocab = model.weights.n_vocab;
    const std::vector<int32_t> ids = varied_ids(30, n_vocab);

    // The reference: every position's logits from one pass, the log-softmax written out.
    KVCache whole_cache = make_kv_cache(model.config, int(ids.size()));
    RunState whole_state;
    forward(model.config, model.weights, std::vector<int32_t>(ids.begin(), ids.end() - 1),
            whole_cache, whole_state, LogitRows::All);
    double total = 0.0;
    for (size_t p = 0; p + 1 < ids.size(); p++) {
        const float* row = whole_state.logits.data() + p * n_vocab;  // (n_vocab)
        double top = row[0], sum = 0.0;
        for (int j = 1; j < n_vocab; j++) top = std::max(top, double(row[j]));
        for (int j = 0; j < n_vocab; j++) sum += std::exp(row[j] - top);
        total += std::log(sum) + top - row[ids[p + 1]];
    }
    const double expected = std::exp(total / double(ids.size() - 1));

    KVCache cache = make_kv_cache(model.config, int(ids.size()));
    RunState state;
    const Perplexity result =
        perplexity(cpu_chunk_logits(model.config, model.weights, cache, state), ids, n_vocab, 8);
    CHECK(cache.n_filled == int(ids.size()) - 1);
    CHECK(result.n_predicted == int(ids.size()) - 1);
    // Chunks of 8 read earlier positions from the cache instead of computing them in the same
    // pass: the logits agree to about 1e-5 (test_kv_cache.cpp), not bit for bit.
    CHECK(result.value == doctest::Approx(expected).epsilon(1e-5));
}
