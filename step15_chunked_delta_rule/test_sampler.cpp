// Checks for the sampler: each stage on hand-made logits whose answer follows from the
// definitions, and the frequencies of many seeded draws against the closed-form distribution.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "ops_cpu.h"
#include "sampler.h"

namespace {

// Logits whose softmax at temperature 1 is exactly `probabilities`.
std::vector<float> logits_of(const std::vector<double>& probabilities) {
    std::vector<float> logits;
    for (double p : probabilities) logits.push_back(float(std::log(p)));
    return logits;
}

std::vector<int32_t> ids_of(const std::vector<Candidate>& candidates) {
    std::vector<int32_t> ids;
    for (const Candidate& candidate : candidates) ids.push_back(candidate.id);
    return ids;
}

std::vector<Candidate> candidates_of(const std::vector<double>& probabilities) {
    std::vector<Candidate> candidates = sorted_candidates(logits_of(probabilities), 1.0f, 0);
    compute_probabilities(candidates);
    return candidates;
}

SamplerSettings plain_settings(float temperature) {
    SamplerSettings settings;
    settings.temperature = temperature;
    settings.top_k = 0;
    settings.top_p = 1.0f;
    settings.min_p = 0.0f;
    settings.repeat_penalty = 1.0f;
    return settings;
}

// Draws n tokens with `settings` from `logits` and counts them per id.
std::vector<int> count_draws(const SamplerSettings& settings, const std::vector<float>& logits,
                             int n) {
    Sampler sampler = make_sampler(settings);
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < n; i++) counts[sample_token(sampler, logits.data(), int(logits.size()))]++;
    return counts;
}

// Each count must lie within 5 binomial standard deviations sqrt(n p (1 - p)) of n p. The draws
// are seeded, so the check gives the same answer on every run; a correct sampler lands outside
// 5 sigma with probability 6e-7 per count, so whatever seed is fixed, a failure means a wrong
// distribution, not bad luck. At n = 20000 the bound is still tight: 5 sigma at p = 0.25 is
// 0.015, far less than the errors the checks below are built to catch.
void check_frequencies(const std::vector<int>& counts, const std::vector<double>& expected, int n) {
    for (size_t id = 0; id < expected.size(); id++) {
        const double mean = n * expected[id];
        const double sigma = std::sqrt(n * expected[id] * (1.0 - expected[id]));
        CAPTURE(id);
        CAPTURE(expected[id]);
        if (expected[id] == 0.0) CHECK(counts[id] == 0);
        else CHECK(std::fabs(counts[id] - mean) <= 5.0 * sigma);
    }
}

}  // namespace

TEST_CASE("the generator is the standard's mt19937_64 and uniform_unit keeps its top 53 bits") {
    // [rand.predef]: the 10000th output of a default-constructed mt19937_64.
    std::mt19937_64 standard;
    standard.discard(9999);
    CHECK(standard() == 9981545732273789042ull);

    std::mt19937_64 bits(42), generator(42);
    for (int i = 0; i < 1000; i++) {
        const double u = uniform_unit(generator);
        CHECK(u == double(bits() >> 11) / 9007199254740992.0);  // 2^53
        CHECK(u >= 0.0);
        CHECK(u < 1.0);
    }
}

TEST_CASE("the same seed gives the same draws, another seed other draws") {
    const std::vector<float> logits(50, 0.0f);  // uniform over 50 tokens
    auto draws = [&](uint64_t seed) {
        SamplerSettings settings = plain_settings(1.0f);
        settings.seed = seed;
        Sampler sampler = make_sampler(settings);
        std::vector<int32_t> ids;
        for (int i = 0; i < 200; i++) ids.push_back(sample_token(sampler, logits.data(), 50));
        return ids;
    };
    CHECK(draws(1234) == draws(1234));
    CHECK(draws(1234) != draws(1235));
}

TEST_CASE("repetition penalty: positive logits divided, negative multiplied, each token once") {
    std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.5f, -1.0f, 3.0f};
    apply_repetition_penalty(logits, {0, 1, 0, 0, 4}, 2.0f);
    CHECK(logits == std::vector<float>{1.0f, -4.0f, 1.0f, 0.5f, -2.0f, 3.0f});

    std::vector<float> unchanged = {2.0f, -2.0f};
    apply_repetition_penalty(unchanged, {0, 1}, 1.0f);
    CHECK(unchanged == std::vector<float>{2.0f, -2.0f});
}

TEST_CASE("the penalty looks only at the last repeat_last_n tokens") {
    SamplerSettings settings = plain_settings(0.0f);
    settings.repeat_last_n = 3;
    settings.repeat_penalty = 2.0f;
    Sampler sampler = make_sampler(settings);
    for (int32_t id : {0, 1, 2, 3, 4}) remember_token(sampler, id);
    CHECK(sampler.recent == std::deque<int32_t>{2, 3, 4});

    // Tokens 2, 3 and 4 are halved; token 0 is too old to be.
    std::vector<float> logits = {4.0f, 1.0f, 3.5f, 1.0f, 1.0f, 3.0f};
    apply_repetition_penalty(logits, sampler.recent, settings.repeat_penalty);
    CHECK(logits == std::vector<float>{4.0f, 1.0f, 1.75f, 0.5f, 0.5f, 3.0f});

    settings.repeat_last_n = 0;
    Sampler forgetful = make_sampler(settings);
    remember_token(forgetful, 0);
    CHECK(forgetful.recent.empty());
}

TEST_CASE("temperature divides the logits; candidates come most likely first, ties by id") {
    std::vector<Candidate> candidates = sorted_candidates({1.0f, 3.0f, 2.0f, 3.0f}, 0.5f, 0);
    CHECK(ids_of(candidates) == std::vector<int32_t>{1, 3, 2, 0});
    CHECK(candidates[0].logit == 6.0f);
    CHECK(candidates[3].logit == 2.0f);

    // softmax at T: exp(l_i / T) / sum. With l = ln p and T = 1/2 it is p^2 / sum p^2.
    candidates = sorted_candidates(logits_of({0.5, 0.3, 0.2}), 0.5f, 0);
    compute_probabilities(candidates);
    CHECK(candidates[0].probability == doctest::Approx(0.25 / 0.38).epsilon(1e-6));
    CHECK(candidates[1].probability == doctest::Approx(0.09 / 0.38).epsilon(1e-6));
    CHECK(candidates[2].probability == doctest::Approx(0.04 / 0.38).epsilon(1e-6));
}

TEST_CASE("top-k keeps the k largest logits") {
    const std::vector<float> logits = {0.1f, 5.0f, -1.0f, 4.0f, 3.0f, 2.0f, 4.5f};
    CHECK(ids_of(sorted_candidates(logits, 1.0f, 3)) == std::vector<int32_t>{1, 6, 3});
    CHECK(ids_of(sorted_candidates(logits, 1.0f, 1)) == std::vector<int32_t>{1});
    CHECK(sorted_candidates(logits, 1.0f, 0).size() == 7);   // 0 is off
    CHECK(sorted_candidates(logits, 1.0f, 99).size() == 7);  // more than there are
}

TEST_CASE("top-p keeps the smallest most-likely-first set with probability >= p") {
    const std::vector<double> p = {0.1, 0.4, 0.2, 0.3};  // sorted: 1 (0.4), 3 (0.3), 2, 0
    auto kept = [&](float top_p) {
        std::vector<Candidate> candidates = candidates_of(p);
        keep_top_p(candidates, top_p);
        return ids_of(candidates);
    };
    CHECK(kept(0.35f) == std::vector<int32_t>{1});           // 0.4 >= 0.35
    CHECK(kept(0.45f) == std::vector<int32_t>{1, 3});        // 0.4 < 0.45 <= 0.7
    CHECK(kept(0.75f) == std::vector<int32_t>{1, 3, 2});     // 0.7 < 0.75 <= 0.9
    CHECK(kept(0.95f) == std::vector<int32_t>{1, 3, 2, 0});  // needs all four
    CHECK(kept(1.0f) == std::vector<int32_t>{1, 3, 2, 0});
    CHECK(kept(0.01f) == std::vector<int32_t>{1});  // never less than one
}

TEST_CASE("min-p keeps the tokens at least min_p times as likely as the best") {
    const std::vector<double> p = {0.5, 0.25, 0.15, 0.1};
    auto kept = [&](float min_p) {
        std::vector<Candidate> candidates = candidates_of(p);
        keep_min_p(candidates, min_p);
        return ids_of(candidates);
    };
    CHECK(kept(0.0f) == std::vector<int32_t>{0, 1, 2, 3});
    CHECK(kept(0.25f) == std::vector<int32_t>{0, 1, 2});  // p >= 0.125
    CHECK(kept(0.4f) == std::vector<int32_t>{0, 1});      // p >= 0.2
    CHECK(kept(0.9f) == std::vector<int32_t>{0});         // p >= 0.45
}

TEST_CASE("draw walks the cumulative probabilities of what the filters left") {
    std::vector<Candidate> candidates = {{7, 0, 0.5}, {3, 0, 0.3}, {9, 0, 0.2}};
    CHECK(draw(candidates, 0.0) == 7);
    CHECK(draw(candidates, 0.49) == 7);
    CHECK(draw(candidates, 0.5) == 3);
    CHECK(draw(candidates, 0.79) == 3);
    CHECK(draw(candidates, 0.81) == 9);
    CHECK(draw(candidates, 0.999999) == 9);
    // After a filter the sum is below 1: 0.4 + 0.2, so 7 takes two thirds of [0, 1).
    candidates = {{7, 0, 0.4}, {3, 0, 0.2}};
    CHECK(draw(candidates, 0.66) == 7);
    CHECK(draw(candidates, 0.67) == 3);
}

TEST_CASE("temperature 0, and a temperature near 0, are greedy") {
    std::mt19937 random(7);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (int trial = 0; trial < 20; trial++) {
        std::vector<float> logits(3000);
        for (float& logit : logits) logit = normal(random);
        const int best = argmax(logits.data(), 3000);
        logits[best] += 1.0f;      // a clear winner: at T = 0.01 the runner-up has p < e^-100
        SamplerSettings settings;  // Qwen's defaults, but for the temperature
        settings.repeat_penalty = 1.0f;
        settings.seed = trial;
        settings.temperature = 0.0f;
        Sampler greedy = make_sampler(settings);
        settings.temperature = 0.01f;
        Sampler cold = make_sampler(settings);
        CHECK(sample_token(greedy, logits.data(), 3000) == best);
        CHECK(sample_token(cold, logits.data(), 3000) == best);

        // Temperature 0 is step07's argmax of the model's logits: no penalty applies, even
        // one that would demote the best token below the others.
        settings.temperature = 0.0f;
        settings.repeat_penalty = 100.0f;
        Sampler penalized = make_sampler(settings);
        remember_token(penalized, best);
        CHECK(sample_token(penalized, logits.data(), 3000) == best);
    }
}

TEST_CASE("top-k never draws outside the k best, and draws each of them") {
    std::mt19937 random(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> logits(1000);
    for (float& logit : logits) logit = normal(random);
    const std::vector<int32_t> best = ids_of(sorted_candidates(logits, 1.0f, 5));
    SamplerSettings settings = plain_settings(3.0f);  // hot: without top-k any token could come
    settings.top_k = 5;
    const std::vector<int> counts = count_draws(settings, logits, 10000);
    int inside = 0;
    for (int32_t id : best) {
        CHECK(counts[id] > 0);
        inside += counts[id];
    }
    CHECK(inside == 10000);
}

TEST_CASE("20000 draws follow softmax(logits / T) restricted by top-k and top-p") {
    // p = (0.4, 0.25, 0.15, 0.1, 0.06, 0.04) at T = 1/2 is proportional to p^2. Top-k 4 keeps
    // 0.16, 0.0625, 0.0225, 0.01 (sum 0.255); their cumulative probabilities 0.627, 0.873, 0.961
    // reach top-p 0.9 at the third, so the draws follow 0.16 : 0.0625 : 0.0225 (sum 0.245).
    // Temperature applied after the filters instead would keep a fourth token with p = 0.039.
    const std::vector<double> p = {0.4, 0.25, 0.15, 0.1, 0.06, 0.04};
    SamplerSettings settings = plain_settings(0.5f);
    settings.top_k = 4;
    settings.top_p = 0.9f;
    settings.seed = 2024;
    const int n = 20000;
    check_frequencies(count_draws(settings, logits_of(p), n),
                      {0.16 / 0.245, 0.0625 / 0.245, 0.0225 / 0.245, 0, 0, 0}, n);
}

TEST_CASE("20000 draws follow the distribution min-p leaves") {
    // min-p 0.25 of the best 0.5: p >= 0.125 keeps 0.5, 0.2, 0.15 (sum 0.85).
    const std::vector<double> p = {0.5, 0.2, 0.15, 0.1, 0.05};
    SamplerSettings settings = plain_settings(1.0f);
    settings.min_p = 0.25f;
    settings.seed = 99;
    const int n = 20000;
    check_frequencies(count_draws(settings, logits_of(p), n),
                      {0.5 / 0.85, 0.2 / 0.85, 0.15 / 0.85, 0, 0}, n);
}
