// sampler.cpp - the sampling stages and the seeded draw.
#include "sampler.h"

#include <algorithm>
#include <cmath>

#include "error.h"
#include "ops_cpu.h"

Sampler make_sampler(const SamplerSettings& settings) {
    Sampler sampler;
    sampler.settings = settings;
    sampler.generator.seed(settings.seed);
    return sampler;
}

void remember_token(Sampler& sampler, int32_t id) {
    if (sampler.settings.repeat_last_n <= 0) return;
    sampler.recent.push_back(id);
    while (int(sampler.recent.size()) > sampler.settings.repeat_last_n) sampler.recent.pop_front();
}

void apply_repetition_penalty(std::vector<float>& logits, const std::deque<int32_t>& recent,
                              float penalty) {
    // BEGIN SOLUTION step08 apply_repetition_penalty
    if (penalty == 1.0f) return;
    // Each distinct token once, however often it occurs: the penalty says "seen", not "how often".
    std::vector<int32_t> seen(recent.begin(), recent.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t id : seen) {
        if (id < 0 || size_t(id) >= logits.size())
            fail("token id %d is outside the vocabulary of %zu", id, logits.size());
        // Dividing a negative logit would raise it, so it is multiplied: both make it less likely.
        float& logit = logits[id];
        logit = logit > 0.0f ? logit / penalty : logit * penalty;
    }
    // END SOLUTION
}

std::vector<Candidate> sorted_candidates(const std::vector<float>& logits, float temperature,
                                         int top_k) {
    // BEGIN SOLUTION step08 sorted_candidates
    std::vector<Candidate> candidates(logits.size());
    for (size_t id = 0; id < logits.size(); id++)
        candidates[id] = {int32_t(id), logits[id] / temperature, 0.0};
    // Ties go to the lower id, so the order (and every draw) does not depend on the sort.
    auto more_likely = [](const Candidate& a, const Candidate& b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    if (top_k > 0 && size_t(top_k) < candidates.size()) {
        std::partial_sort(candidates.begin(), candidates.begin() + top_k, candidates.end(),
                          more_likely);
        candidates.resize(top_k);
    } else {
        std::sort(candidates.begin(), candidates.end(), more_likely);
    }
    return candidates;
    // END SOLUTION
}

void compute_probabilities(std::vector<Candidate>& candidates) {
    // In double and relative to the largest logit, so exp() neither overflows nor underflows
    // the likely tokens.
    const double largest = candidates.front().logit;
    double sum = 0.0;
    for (Candidate& candidate : candidates) {
        candidate.probability = std::exp(double(candidate.logit) - largest);
        sum += candidate.probability;
    }
    for (Candidate& candidate : candidates) candidate.probability /= sum;
}

void keep_top_p(std::vector<Candidate>& candidates, float top_p) {
    // BEGIN SOLUTION step08 keep_top_p
    if (top_p >= 1.0f) return;  // a sum that rounds to just under 1 must not drop the tail
    double mass = 0.0;
    size_t kept = 0;
    while (kept < candidates.size() && mass < top_p) mass += candidates[kept++].probability;
    candidates.resize(std::max<size_t>(kept, 1));
    // END SOLUTION
}

void keep_min_p(std::vector<Candidate>& candidates, float min_p) {
    // BEGIN SOLUTION step08 keep_min_p
    if (min_p <= 0.0f) return;
    const double threshold = min_p * candidates.front().probability;
    size_t kept = 1;
    while (kept < candidates.size() && candidates[kept].probability >= threshold) kept++;
    candidates.resize(kept);
    // END SOLUTION
}

int32_t draw(const std::vector<Candidate>& candidates, double uniform) {
    // The filters leave probabilities that sum to less than 1; scaling the target instead of
    // renormalizing every candidate gives the same choice.
    // BEGIN SOLUTION step08 draw
    double total = 0.0;
    for (const Candidate& candidate : candidates) total += candidate.probability;
    const double target = uniform * total;
    double cumulative = 0.0;
    for (const Candidate& candidate : candidates) {
        cumulative += candidate.probability;
        if (target < cumulative) return candidate.id;
    }
    return candidates.back().id;  // only when rounding leaves target at the very top
    // END SOLUTION
}

double uniform_unit(std::mt19937_64& generator) { return double(generator() >> 11) * 0x1.0p-53; }

int32_t sample_token(Sampler& sampler, const float* logits, int n_vocab) {
    const SamplerSettings& settings = sampler.settings;
    if (settings.temperature <= 0.0f) return argmax(logits, n_vocab);
    sampler.logits.assign(logits, logits + n_vocab);
    apply_repetition_penalty(sampler.logits, sampler.recent, settings.repeat_penalty);

    sampler.candidates = sorted_candidates(sampler.logits, settings.temperature, settings.top_k);
    compute_probabilities(sampler.candidates);
    keep_top_p(sampler.candidates, settings.top_p);
    keep_min_p(sampler.candidates, settings.min_p);
    return draw(sampler.candidates, uniform_unit(sampler.generator));
}
