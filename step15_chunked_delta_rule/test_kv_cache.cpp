// Checks for the KV cache: a pass that reads cached keys and values computes the same logits as
// recomputing the whole sequence, however the positions are split into passes.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "forward_cpu.h"
#include "generate.h"
#include "gguf_tensors.h"
#include "kv_cache.h"
#include "model_config.h"
#include "ops_cpu.h"
#include "test_tiny_model.h"
#include "test_tolerance.h"
#include "weights.h"

namespace {

// Cached and recomputed logits agree within 1e-4 + 1e-4 |reference|.
const Tolerance kAgainstRecomputed = {1e-4, 1e-4};

// The logits of every position of `ids`, running the positions in passes of the given sizes
// (which add up to ids.size()) on one cache.
std::vector<float> logits_in_passes(const LoadedModel& model, const std::vector<int32_t>& ids,
                                    const std::vector<int>& pass_sizes) {
    KVCache cache = make_kv_cache(model.config, int(ids.size()));
    RunState state;
    std::vector<float> logits;  // (ids.size(), n_vocab)
    size_t start = 0;
    for (int size : pass_sizes) {
        std::vector<int32_t> pass(ids.begin() + start, ids.begin() + start + size);
        forward(model.config, model.weights, pass, cache, state, LogitRows::All);
        logits.insert(logits.end(), state.logits.begin(), state.logits.end());
        start += size;
    }
    REQUIRE(start == ids.size());
    REQUIRE(cache.n_filled == int(ids.size()));
    return logits;
}

}  // namespace

TEST_CASE("new queries over cached keys equal the same rows of one causal pass") {
    const int n_tokens = 9, n_heads = 4, n_kv_heads = 2, head_dim = 16, first = 6;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    auto random_vector = [&](size_t n) {
        std::vector<float> values(n);
        for (float& value : values) value = normal(rng);
        return values;
    };
    std::vector<float> q = random_vector(n_tokens * n_heads * head_dim);  // (n_tokens, q_dim)
    std::vector<float> k = random_vector(n_tokens * n_kv_heads * head_dim);
    std::vector<float> v = random_vector(n_tokens * n_kv_heads * head_dim);
    std::vector<float> all(q.size()), newest(q.size() - first * n_heads * head_dim);
    attention(all.data(), q.data(), k.data(), v.data(), n_tokens, 0, n_heads, n_kv_heads, head_dim);
    attention(newest.data(), q.data() + first * n_heads * head_dim, k.data(), v.data(),
              n_tokens - first, first, n_heads, n_kv_heads, head_dim);
    // The same numbers in the same order: equal to the last bit.
    CHECK(newest == std::vector<float>(all.begin() + first * n_heads * head_dim, all.end()));
}

TEST_CASE("prefill in one pass, in chunks, and token by token give the same logits") {
    const LoadedModel& model = tiny_model();
    std::vector<int32_t> ids;
    for (int i = 0; i < 23; i++) ids.push_back((i * 331 + 17) % 3000);
    std::vector<float> one_pass = logits_in_passes(model, ids, {23});
    std::vector<int> one_by_one(23, 1);
    for (const std::vector<int>& passes :
         {std::vector<int>{5, 7, 11}, std::vector<int>{1, 21, 1}, one_by_one}) {
        CAPTURE(passes.size());
        check_close(logits_in_passes(model, ids, passes), one_pass, kAgainstRecomputed,
                    model.weights.n_vocab);  // (position, token)
    }
}

TEST_CASE("greedy decoding on the cache sees the logits of recomputing the whole sequence") {
    const LoadedModel& model = tiny_model();
    const std::vector<int32_t> prompt = {785, 2840, 315, 279, 1484, 1372, 13};
    KVCache cache = make_kv_cache(model.config, 64);
    RunState state;
    std::vector<int32_t> sequence = prompt;
    std::vector<float> cached;  // (n_generated, n_vocab) the logits each token was chosen from
    generate_greedy(model.config, model.weights, prompt, 24, cache, state, [&](int32_t id) {
        cached.insert(cached.end(), state.logits.begin(), state.logits.end());
        sequence.push_back(id);
        return true;
    });
    REQUIRE(sequence.size() == prompt.size() + 24);

    // Without the cache: every position at once, as step06 computes each token's logits.
    sequence.pop_back();  // the last token was chosen but never run
    std::vector<float> recomputed = logits_in_passes(model, sequence, {int(sequence.size())});
    const int n_vocab = model.weights.n_vocab;
    recomputed.erase(recomputed.begin(), recomputed.begin() + (prompt.size() - 1) * n_vocab);
    REQUIRE(recomputed.size() == cached.size());
    check_close(cached, recomputed, kAgainstRecomputed, n_vocab);  // (position, token)
}

TEST_CASE("the cache's size is 2 x layers x positions x kv_dim floats") {
    const LoadedModel& model = tiny_model();
    KVCache cache = make_kv_cache(model.config, 100);
    CHECK(cache.kv_dim == 2 * 64);
    CHECK(cache.k.size() == size_t(3) * 100 * 128);
    CHECK(kv_cache_bytes(model.config, 100) == 2 * 3 * 100 * 128 * sizeof(float));
    CHECK(cache.keys(2) == cache.k.data() + 2 * 100 * 128);
}
