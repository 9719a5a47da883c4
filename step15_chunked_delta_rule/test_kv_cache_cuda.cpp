// Checks for the KV cache on the GPU: the same properties as test_kv_cache.cpp's on the CPU
// (a cached pass gives the logits of recomputing the whole sequence, however the positions are
// split into passes), and the GPU's cached generation against the CPU's. Step 11: the device
// cache may hold F16 keys and values; its sizes, and the passes' property for it too.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "device_kv_cache.h"
#include "device_weights.h"
#include "forward_cpu.h"
#include "forward_cuda.h"
#include "generate.h"
#include "gguf_tensors.h"
#include "kv_cache.h"
#include "model_config.h"
#include "test_gpu.h"
#include "test_tiny_model.h"
#include "weights.h"

namespace {

// Cached and recomputed logits are the same operations on the same numbers, except that a
// one-position pass sums attention over the cache in a kernel launch of its own; the float
// sums are still made in the same order, so the difference stays at rounding level. The
// issue's bound for the GPU, 1e-3, is far above that and far below any wrong position.
const Tolerance kCachedAgainstRecomputed = {1e-3, 0.0};

// With an F16 cache the passes still compute each key and value in their own float order (a
// pass of one token multiplies in matvec_kernel, a longer one in the tiled GEMM): values that
// differ by a float rounding and lie that close to the middle between two halves round to
// neighbouring halves, 2^-11 of the value apart (up to ~1e-3 for the tiny model's keys and
// values of order 2). One such value moves a head's attention output by its weight times that,
// and the layers after it pass the move on to the logits. Measured on the H200 (2026-12-03):
// 16 of 69,115 logits moved by more than 1e-3, the largest by 1.3e-3. 4e-3 leaves 3x room over
// that and stays far below a wrong position or pass (moves of 0.1 and more).
const Tolerance kCachedF16AgainstRecomputed = {4e-3, 0.0};

// The logits of every position of `ids` on the GPU, running the positions in passes of the
// given sizes (which add up to ids.size()) on one cache of cache_type.
std::vector<float> gpu_logits_in_passes(const LoadedModel& model, const DeviceWeights& weights,
                                        const std::vector<int32_t>& ids,
                                        const std::vector<int>& pass_sizes,
                                        CacheType cache_type = CacheType::F32) {
    DeviceKVCache cache = make_device_kv_cache(model.config, int(ids.size()), cache_type);
    DeviceRunState state;
    std::vector<float> logits;  // (ids.size(), n_vocab)
    size_t start = 0;
    for (int size : pass_sizes) {
        std::vector<int32_t> pass(ids.begin() + start, ids.begin() + start + size);
        gpu::forward(model.config, weights, pass, cache, state, LogitRows::All);
        std::vector<float> pass_logits = state.logits.download();
        logits.insert(logits.end(), pass_logits.begin(), pass_logits.end());
        start += size;
    }
    REQUIRE(start == ids.size());
    REQUIRE(cache.n_filled == int(ids.size()));
    return logits;
}

}  // namespace

TEST_CASE("GPU: prefill in one pass, in chunks, and token by token give the same logits") {
    if (!gpu_or_skip()) return;
    const LoadedModel& model = tiny_model();
    DeviceWeights weights = upload_weights(model.weights, WeightPrecision::F32);
    std::vector<int32_t> ids;
    for (int i = 0; i < 23; i++) ids.push_back((i * 331 + 17) % 3000);
    std::vector<int> one_by_one(23, 1);
    // Step 11: an F16 cache too, whose keys and values the passes can round to neighbouring
    // halves (kCachedF16AgainstRecomputed).
    for (CacheType cache_type : {CacheType::F32, CacheType::F16}) {
        CAPTURE(int(cache_type));
        std::vector<float> one_pass = gpu_logits_in_passes(model, weights, ids, {23}, cache_type);
        for (const std::vector<int>& passes :
             {std::vector<int>{5, 7, 11}, std::vector<int>{1, 21, 1}, one_by_one}) {
            CAPTURE(passes.size());
            check_close(gpu_logits_in_passes(model, weights, ids, passes, cache_type), one_pass,
                        cache_type == CacheType::F16 ? kCachedF16AgainstRecomputed
                                                     : kCachedAgainstRecomputed,
                        model.weights.n_vocab);
        }
    }
}

TEST_CASE("the device cache holds 2 x layers x positions x kv_dim values of its type") {
    const LoadedModel& model = tiny_model();  // 3 layers, kv_dim 128
    CHECK(device_kv_cache_bytes(model.config, 100, CacheType::F32) ==
          kv_cache_bytes(model.config, 100));
    CHECK(device_kv_cache_bytes(model.config, 100, CacheType::F16) == 2 * 3 * 100 * 128 * 2);
    if (!gpu_or_skip()) return;
    DeviceKVCache cache = make_device_kv_cache(model.config, 100, CacheType::F16);
    CHECK(cache.k.size() == 3 * 100 * 128 * 2);
    CHECK(cache.keys(2) == cache.k.data() + 2 * 100 * 128 * 2);
    CHECK(cache.value_rows(1, 7) == cache.v.data() + (100 + 7) * 128 * 2);
}

TEST_CASE("GPU: cached greedy decoding sees the logits of recomputing, and the CPU's tokens") {
    if (!gpu_or_skip()) return;
    const LoadedModel& model = tiny_model();
    DeviceWeights weights = upload_weights(model.weights, WeightPrecision::F32);
    const std::vector<int32_t> prompt = {785, 2840, 315, 279, 1484, 1372, 13};
    const int n_vocab = model.weights.n_vocab;

    DeviceKVCache cache = make_device_kv_cache(model.config, 64);
    DeviceRunState state;
    NextTokenFn on_gpu = [&](const std::vector<int32_t>& new_ids, std::vector<float>* logits) {
        return gpu::next_token(model.config, weights, new_ids, cache, state, logits);
    };
    std::vector<int32_t> sequence = prompt;
    std::vector<float> cached;  // (n_generated, n_vocab) the logits each token was chosen from
    generate_greedy(on_gpu, prompt, 24, cache.capacity, [&](int32_t id) {
        std::vector<float> row = state.logits.download();
        cached.insert(cached.end(), row.begin(), row.end());
        sequence.push_back(id);
        return true;
    });
    REQUIRE(sequence.size() == prompt.size() + 24);

    // The CPU, with its own cache, chooses the same tokens.
    KVCache cpu_cache = make_kv_cache(model.config, 64);
    RunState cpu_state;
    std::vector<int32_t> cpu_sequence = prompt;
    generate_greedy(model.config, model.weights, prompt, 24, cpu_cache, cpu_state, [&](int32_t id) {
        cpu_sequence.push_back(id);
        return true;
    });
    CHECK(cpu_sequence == sequence);

    // Without the cache: every position at once, as step06 computes each token's logits.
    sequence.pop_back();  // the last token was chosen but never run
    std::vector<float> recomputed =
        gpu_logits_in_passes(model, weights, sequence, {int(sequence.size())});
    recomputed.erase(recomputed.begin(), recomputed.begin() + (prompt.size() - 1) * n_vocab);
    check_close(cached, recomputed, kCachedAgainstRecomputed, n_vocab);
}
