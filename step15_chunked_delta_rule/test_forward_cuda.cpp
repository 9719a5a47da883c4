// Checks for the whole model on the GPU: the tiny model's logits at every position against
// transformers' (tests/fixtures/forward/) and against the CPU path, its greedy continuations,
// and the upload. The tiny model's matrices come in 13 ggml types; upload_weights() rounds
// them to F16 (BF16 ones stay BF16), which moves its logits by up to ~0.014 from transformers'
// (measured with the CPU path on the rounded weights). So the checks compare:
//   F32 on the device      with transformers, within 1e-3, and the CPU path, within 1e-4;
//   F16 on the device      with the CPU path on the same rounded weights, within 1e-4.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "chat.h"
#include "cuda_graph.h"
#include "dequantize.h"
#include "device_kv_cache.h"
#include "device_weights.h"
#include "forward_cpu.h"
#include "forward_cuda.h"
#include "generate.h"
#include "ggml_types.h"
#include "gguf_tensors.h"
#include "half.h"
#include "kv_cache.h"
#include "model_config.h"
#include "test_forward_fixtures.h"
#include "test_gpu.h"
#include "test_tiny_model.h"
#include "test_tokenizer_fixtures.h"
#include "weights.h"

// |ours - reference| <= abs + rel * |reference| on logits of magnitude up to ~15. The CPU path
// meets transformers within 1e-4 + 1e-4 relative; the GPU adds float sums in other orders.
static const Tolerance kAgainstTransformers = {1e-3, 0.0};
static const Tolerance kAgainstCpu = {1e-4, 1e-4};
// Step 12: on F16 weights a prompt's products and attention round their inputs to F16 (2^-11
// relative) on the tensor cores, where the CPU path keeps floats. Those kernels are held to
// bounds derived from that rounding in test_tensor_cores.cpp; through the tiny model's three
// random layers the roundings add up to logit moves measured at up to 0.04 (logits of up to
// ~8, on the H200). 0.1 leaves room for that and still catches a wrong row, head or chunk,
// which moves logits by their own size.
static const Tolerance kHalfOperandsAgainstCpu = {0.1, 0.0};

// A copy of a matrix rounded as upload_weights() rounds it, kept in `storage`: to F16 (or BF16
// for BF16), or (step 11) the matrix itself when the GPU reads its blocks and `keep_blocks`.
static WeightMatrix rounded_to_half(const WeightMatrix& m,
                                    std::vector<std::vector<uint16_t>>& storage,
                                    bool keep_blocks = true) {
    if (keep_blocks && ggml_type_info(m.type).gpu_reads_blocks) return m;
    const bool bf16 = m.type == uint32_t(GgmlType::BF16);
    const uint64_t row_bytes = ggml_row_bytes(m.type, uint64_t(m.cols));
    std::vector<float> row(m.cols);
    std::vector<uint16_t> halves(size_t(m.rows) * m.cols);  // (rows, cols)
    for (int r = 0; r < m.rows; r++) {
        dequantize(m.type, static_cast<const uint8_t*>(m.data) + r * row_bytes, row.data(), m.cols);
        for (int i = 0; i < m.cols; i++)
            halves[size_t(r) * m.cols + i] = bf16 ? f32_to_bf16(row[i]) : f32_to_f16(row[i]);
    }
    storage.push_back(std::move(halves));  // moving a vector keeps its data where it is
    GgmlType type = bf16 ? GgmlType::BF16 : GgmlType::F16;
    return WeightMatrix{storage.back().data(), uint32_t(type), m.rows, m.cols};
}

// The tiny model as the GPU holds it by default, for the CPU path.
struct RoundedModel {
    std::vector<std::vector<uint16_t>> storage;
    Weights weights;
};

static const RoundedModel& rounded_tiny_model() {
    static const RoundedModel model = [] {
        RoundedModel m;
        m.weights = tiny_model().weights;
        m.weights.token_embd = rounded_to_half(m.weights.token_embd, m.storage);
        m.weights.output = m.weights.token_embd;  // tied
        for (LayerWeights& layer : m.weights.layers) {
            for (WeightMatrix* w :
                 {&layer.attn_q, &layer.attn_k, &layer.attn_v, &layer.attn_output, &layer.ffn_down})
                *w = rounded_to_half(*w, m.storage);
            // Gate and up of two types on the device both become F16 (device_weights.cpp).
            const bool one_type = layer.ffn_gate.type == layer.ffn_up.type;
            layer.ffn_gate = rounded_to_half(layer.ffn_gate, m.storage, one_type);
            layer.ffn_up = rounded_to_half(layer.ffn_up, m.storage, one_type);
        }
        return m;
    }();
    return model;
}

// gpu::forward over every fixture's prompt, with all positions' logits compared with what
// `reference` returns for that case; the device cache of cache_type (step 11).
template <typename Reference>
static void check_all_positions(WeightPrecision precision, Tolerance tolerance, Reference reference,
                                CacheType cache_type = CacheType::F32) {
    const LoadedModel& model = tiny_model();
    DeviceWeights weights = upload_weights(model.weights, precision);
    DeviceRunState state;
    for (const ForwardFixture& c : forward_fixtures()) {
        CAPTURE(c.name);
        std::vector<int32_t> ids = read_fixture_ids(kForwardFixtures + c.name + ".ids.txt");
        REQUIRE(int(ids.size()) == c.n_tokens);
        DeviceKVCache cache = make_device_kv_cache(model.config, c.n_tokens, cache_type);
        gpu::forward(model.config, weights, ids, cache, state, LogitRows::All);
        check_close(state.logits.download(), reference(c, ids), tolerance, c.n_vocab);
    }
}

TEST_CASE("GPU logits at every position equal transformers on the tiny model (F32 weights)") {
    if (!gpu_or_skip()) return;
    check_all_positions(WeightPrecision::F32, kAgainstTransformers,
                        [](const ForwardFixture& c, const std::vector<int32_t>&) {
                            return read_fixture_f32(kForwardFixtures + c.name + ".logits.f32");
                        });
}

TEST_CASE("GPU logits at every position equal the CPU path's (F32 weights)") {
    if (!gpu_or_skip()) return;
    RunState cpu;
    check_all_positions(WeightPrecision::F32, kAgainstCpu,
                        [&](const ForwardFixture&, const std::vector<int32_t>& ids) {
                            KVCache cache = make_kv_cache(tiny_model().config, int(ids.size()));
                            forward(tiny_model().config, tiny_model().weights, ids, cache, cpu,
                                    LogitRows::All);
                            return cpu.logits;
                        });
}

TEST_CASE("GPU logits at every position equal the CPU path's on the same F16 weights") {
    if (!gpu_or_skip()) return;
    RunState cpu;
    check_all_positions(WeightPrecision::Half, kHalfOperandsAgainstCpu,
                        [&](const ForwardFixture&, const std::vector<int32_t>& ids) {
                            KVCache cache = make_kv_cache(tiny_model().config, int(ids.size()));
                            forward(tiny_model().config, rounded_tiny_model().weights, ids, cache,
                                    cpu, LogitRows::All);
                            return cpu.logits;
                        });
}

// ---- Step 11: the F16 cache against the CPU's F32 one ----

// Each key and value in an F16 cache is rounded to the nearest half: 11 significant bits, at
// most 2^-11 = 4.9e-4 of itself off. A value's rounding moves an attention output, a weighted
// mean of values, by at most 2^-11 of the largest value; a key's moves a score q.k/sqrt(d) by
// at most 2^-11 of |q||k|/sqrt(d) (a few units here), and so each softmax weight by a few
// 2^-11, relative. Each attention sublayer's output thus moves by some 4 x 2^-11 of its size;
// through the tiny model's 3 layers into logits of up to ~15, if every rounding pushed the same
// way, 3 x 4 x 2^-11 x 15 = 0.09. They are independent roundings, which mostly cancel: 0.05.
// Reading halves as floats, a wrong row or a lost position moves logits by their own size.
static const Tolerance kF16CacheAgainstCpu = {0.05, 0.0};

TEST_CASE("GPU logits at every position with an F16 cache stay within its rounding of the CPU's") {
    if (!gpu_or_skip()) return;
    RunState cpu;  // F32 weights on both: only the cache's rounding and the sums' order differ
    check_all_positions(
        WeightPrecision::F32, kF16CacheAgainstCpu,
        [&](const ForwardFixture&, const std::vector<int32_t>& ids) {
            KVCache cache = make_kv_cache(tiny_model().config, int(ids.size()));
            forward(tiny_model().config, tiny_model().weights, ids, cache, cpu, LogitRows::All);
            return cpu.logits;
        },
        CacheType::F16);
}

TEST_CASE("the Decoder with an F16 cache: every step's logits near the CPU's, 24 greedy tokens") {
    if (!gpu_or_skip()) return;
    const LoadedModel& model = tiny_model();
    const std::vector<int32_t> prompt = tiny_tokenizer().encode("Once upon a time,");
    // F32 weights: the decode steps' products in floats, as the CPU's (kF16CacheAgainstCpu).
    DeviceWeights exact = upload_weights(model.weights, WeightPrecision::F32);
    DeviceKVCache cache = make_device_kv_cache(model.config, 64, CacheType::F16);
    gpu::Decoder decoder(model.config, exact, cache, true);
    KVCache cpu_cache = make_kv_cache(model.config, 64);
    RunState cpu;
    std::vector<int32_t> ids = prompt;
    for (int step = 0; step < 24; step++) {
        CAPTURE(step);
        std::vector<float> gpu_logits, cpu_logits;
        const int32_t token = decoder.next_token(ids, &gpu_logits);
        next_token(model.config, model.weights, ids, cpu_cache, cpu, &cpu_logits);
        check_close(gpu_logits, cpu_logits, kF16CacheAgainstCpu);
        ids = {token};  // the GPU's choice, on both
    }

    // The weights the program runs (F16 and blocks, 8-bit activations in the decode steps): the
    // F16 cache chooses the F32 cache's 24 greedy tokens. (The 8-bit rounding of the attention's
    // output can amplify the cache's rounding; this holds while no step's two best logits of
    // the tiny model lie closer than that.)
    DeviceWeights weights = upload_weights(model.weights);
    std::vector<int32_t> tokens[2];
    for (CacheType cache_type : {CacheType::F32, CacheType::F16}) {
        DeviceKVCache typed = make_device_kv_cache(model.config, 64, cache_type);
        gpu::Decoder typed_decoder(model.config, weights, typed, true);
        generate_greedy(
            [&](const std::vector<int32_t>& new_ids, std::vector<float>* logits) {
                return typed_decoder.next_token(new_ids, logits);
            },
            prompt, 24, typed.capacity,
            [&](int32_t id) {
                tokens[int(cache_type)].push_back(id);
                return true;
            });
    }
    CHECK(tokens[0].size() == 24);
    CHECK(tokens[1] == tokens[0]);
}

TEST_CASE("greedy continuations on the GPU (F16 weights) equal transformers' 16 tokens") {
    if (!gpu_or_skip()) return;
    const LoadedModel& model = tiny_model();
    DeviceWeights weights = upload_weights(model.weights);
    DeviceRunState state;
    DeviceKVCache cache = make_device_kv_cache(model.config, int(model.config.context_length));
    NextTokenFn on_gpu = [&](const std::vector<int32_t>& new_ids, std::vector<float>* logits) {
        return gpu::next_token(model.config, weights, new_ids, cache, state, logits);
    };
    for (const ForwardFixture& c : forward_fixtures()) {
        CAPTURE(c.name);
        cache.clear();
        std::vector<int32_t> prompt = read_fixture_ids(kForwardFixtures + c.name + ".ids.txt");
        std::vector<int32_t> expected = read_fixture_ids(kForwardFixtures + c.name + ".greedy.txt");
        std::vector<int32_t> generated;
        std::vector<float> prompt_logits;
        GenerationStats stats = generate_greedy(
            on_gpu, prompt, 16, int(model.config.context_length),
            [&](int32_t id) {
                generated.push_back(id);
                return true;
            },
            &prompt_logits);
        CHECK(generated == expected);
        CHECK(stats.n_passes == 15);
        CHECK(cache.n_filled == c.n_tokens + 15);
        CHECK(prompt_logits.size() == size_t(c.n_vocab));
    }
}

// ---- Step 10: the Decoder, graph and no graph ----

// One run of the model through a NextTokenFn: each step's new ids, its token and its logits.
struct StepLog {
    std::vector<std::vector<int32_t>> inputs;
    std::vector<int32_t> tokens;
    std::vector<std::vector<float>> logits;  // (steps, n_vocab)
};

TEST_CASE("the Decoder's greedy continuations equal transformers', with and without the graph") {
    if (!gpu_or_skip()) return;
    const LoadedModel& model = tiny_model();
    // F32 weights, so every decode product is in floats, as transformers' are. With the file's
    // blocks the Decoder's products take 8-bit activations (step 11), which move the tiny
    // model's logits by up to ~0.2 and its greedy choice where two logits are that close: those
    // kernels are held to the CPU's 8-bit path in test_ops_cuda.cpp, and the whole 8-bit path
    // to transformers' perplexity and greedy tokens on the real model (test_real_model.cpp).
    DeviceWeights weights = upload_weights(model.weights, WeightPrecision::F32);
    for (bool use_graph : {true, false}) {
        CAPTURE(use_graph);
        DeviceKVCache cache = make_device_kv_cache(model.config, int(model.config.context_length));
        gpu::Decoder decoder(model.config, weights, cache, use_graph);
        NextTokenFn step = [&](const std::vector<int32_t>& ids, std::vector<float>* logits) {
            return decoder.next_token(ids, logits);
        };
        for (const ForwardFixture& c : forward_fixtures()) {
            CAPTURE(c.name);
            cache.clear();
            std::vector<int32_t> prompt = read_fixture_ids(kForwardFixtures + c.name + ".ids.txt");
            std::vector<int32_t> expected =
                read_fixture_ids(kForwardFixtures + c.name + ".greedy.txt");
            std::vector<int32_t> generated;
            generate_greedy(step, prompt, 16, int(model.config.context_length), [&](int32_t id) {
                generated.push_back(id);
                return true;
            });
            CHECK(generated == expected);
            CHECK(cache.n_filled == c.n_tokens + 15);
        }
        // The tiny model on the device mixes types in Q, K and V (the next check counts them).
        if (use_graph)
            CHECK(decoder.n_graph_kernels() == gpu::kernels_per_decode_step(model.config, weights));
        // F32 on the device: one type for Q, K and V, no block matrix, 6 kernels a layer.
        CHECK(gpu::kernels_per_decode_step(model.config, weights) == 3 + 6 * 3);
    }
}

TEST_CASE("a decode step's kernels: QKV launches by type, a quantize_q8 per normalized 8-bit input") {
    if (!gpu_or_skip()) return;
    const LoadedModel& model = tiny_model();
    DeviceWeights weights = upload_weights(model.weights);
    DeviceKVCache cache = make_device_kv_cache(model.config, 64);
    gpu::Decoder decoder(model.config, weights, cache, true);
    decoder.next_token({785, 3001}, nullptr);
    decoder.next_token({12}, nullptr);  // the first one-token step captures the graph
    // The tiny model on the device: layer 0's Q and K are F16, V BF16, a pair no published file
    // has (3 QKV launches); layer 1's Q, K, V F16 (1); layer 2's Q BF16, K Q5_0, V Q6_K (3).
    // Their block-type Wo and down read inputs that the attention's merge and gate/up round;
    // a quantize_q8 rounds the normalized input of layer 2's QKV (after layer 1's down) and of
    // the Q6_K LM head (after layer 2's down): every gate/up is F16 on the device, and layer 0's
    // Q, K and V are no block type. Besides those, the embedding, the LM head's 2 and 5 a layer.
    CHECK(gpu::kernels_per_decode_step(model.config, weights) == 3 + (3 + 1 + 3) + 5 * 3 + 2);
}

// Logs every step of a generation on `step` with a sampler (temperature 0.7, seed 7: the
// logits are asked for and copied back) from `prompt` until the context of `capacity` is full.
static StepLog sampled_until_full(const NextTokenFn& step, const std::vector<int32_t>& prompt,
                                  int capacity, GenerationStats& stats) {
    StepLog log;
    NextTokenFn logged = [&](const std::vector<int32_t>& ids, std::vector<float>* logits) {
        REQUIRE(logits);  // the sampler needs them
        const int32_t token = step(ids, logits);
        log.inputs.push_back(ids);
        log.tokens.push_back(token);
        log.logits.push_back(*logits);
        return token;
    };
    SamplerSettings settings;
    settings.seed = 7;
    Sampler sampler = make_sampler(settings);
    stats = generate(logged, prompt, 1 << 20, capacity, sampler, [](int32_t) { return true; });
    return log;
}

TEST_CASE("graph replay equals --no-graph bit for bit, and step 9's kernels, to a full context") {
    if (!gpu_or_skip()) return;
    const LoadedModel& model = tiny_model();
    // F32 weights: every product in floats on both paths (block matrices' decode products use
    // 8-bit activations, step 9's kernels do not; test_ops_cuda.cpp checks those against the
    // CPU's 8-bit path).
    DeviceWeights weights = upload_weights(model.weights, WeightPrecision::F32);
    const int capacity = 300;  // 295 positions of decoding, up to 10 attention passes
    const std::vector<int32_t> prompt = {785, 3001, 12, 2999, 0};
    DeviceKVCache graph_cache = make_device_kv_cache(model.config, capacity);
    DeviceKVCache plain_cache = make_device_kv_cache(model.config, capacity);
    gpu::Decoder graph(model.config, weights, graph_cache, true);
    gpu::Decoder plain(model.config, weights, plain_cache, false);
    GenerationStats graph_stats, plain_stats;
    const StepLog with_graph = sampled_until_full(
        [&](const std::vector<int32_t>& ids, std::vector<float>* logits) {
            return graph.next_token(ids, logits);
        },
        prompt, capacity, graph_stats);
    const StepLog without = sampled_until_full(
        [&](const std::vector<int32_t>& ids, std::vector<float>* logits) {
            return plain.next_token(ids, logits);
        },
        prompt, capacity, plain_stats);
    // The context-full stop: every position but the last chosen token's is run.
    CHECK(graph_stats.context_full);
    CHECK(graph_stats.n_generated == capacity - int(prompt.size()));
    CHECK(graph_cache.n_filled == capacity - 1);
    // The same kernels on the same inputs: the same bits, step for step.
    CHECK(with_graph.inputs == without.inputs);
    CHECK(with_graph.tokens == without.tokens);
    CHECK(with_graph.logits == without.logits);

    // Step 9's kernels on the same inputs, step for step. The fused kernels add the same
    // products in other orders and apply 1/rms after the sums (test_ops_cuda.cpp): the
    // logits stay within the tolerance against the CPU path, and each argmax agrees where
    // the two best logits are further apart than that.
    DeviceKVCache eager_cache = make_device_kv_cache(model.config, capacity);
    DeviceRunState eager_state;
    int n_compared = 0;
    for (size_t i = 0; i < with_graph.inputs.size(); i++) {
        CAPTURE(i);
        std::vector<float> logits;
        const int32_t token = gpu::next_token(model.config, weights, with_graph.inputs[i],
                                              eager_cache, eager_state, &logits);
        check_close(with_graph.logits[i], logits, kAgainstCpu, model.weights.n_vocab);
        std::vector<float> sorted = logits;
        std::nth_element(sorted.begin(), sorted.begin() + 1, sorted.end(), std::greater<float>());
        if (sorted[0] - sorted[1] > 1e-3f) {
            CHECK(token == with_graph.tokens[i]);
            n_compared++;
        }
    }
    CHECK(n_compared > 250);  // nearly every step has a clear winner
}

// The setting is process-wide: a check that changes it puts the default back, even when it
// fails half-way.
struct RestoreDependentLaunch {
    ~RestoreDependentLaunch() { set_dependent_launch(true); }
};

TEST_CASE("programmatic dependent launch changes no bit, in the graph and without it") {
    if (!gpu_or_skip()) return;
    const RestoreDependentLaunch restore;
    const LoadedModel& model = tiny_model();
    DeviceWeights weights = upload_weights(model.weights);
    const int capacity = 300;  // as above: 295 positions of decoding
    const std::vector<int32_t> prompt = {785, 3001, 12, 2999, 0};
    // A Decoder launches as the setting says when it runs (a graph: when it is captured).
    auto run = [&](bool use_pdl, bool use_graph) {
        set_dependent_launch(use_pdl);
        DeviceKVCache cache = make_device_kv_cache(model.config, capacity);
        gpu::Decoder decoder(model.config, weights, cache, use_graph);
        GenerationStats stats;
        const StepLog log = sampled_until_full(
            [&](const std::vector<int32_t>& ids, std::vector<float>* logits) {
                return decoder.next_token(ids, logits);
            },
            prompt, capacity, stats);
        CHECK(stats.context_full);
        if (use_graph)
            CHECK(decoder.n_graph_kernels() == gpu::kernels_per_decode_step(model.config, weights));
        return log;
    };
    set_dependent_launch(false);
    CHECK_FALSE(dependent_launch_enabled());
    const StepLog plain = run(false, false);  // one launch at a time, each after the last
    for (bool use_graph : {true, false})
        for (bool use_pdl : {true, false}) {
            if (!use_graph && !use_pdl) continue;  // that is `plain`
            CAPTURE(use_graph);
            CAPTURE(use_pdl);
            const StepLog log = run(use_pdl, use_graph);
            CHECK(log.inputs == plain.inputs);
            CHECK(log.tokens == plain.tokens);
            CHECK(log.logits == plain.logits);
        }
    set_dependent_launch(true);
    const bool was_on = dependent_launch_enabled();
    MESSAGE((was_on ? "programmatic dependent launch was on"
                    : "this GPU is older than compute capability 9.0: every run was launched "
                      "plainly"));
}

TEST_CASE("the Decoder follows a chat: new turns, a /reset, the sampler's tokens") {
    if (!gpu_or_skip()) return;
    const LoadedModel& model = tiny_model();
    DeviceWeights weights = upload_weights(model.weights);
    const std::string input = "Hello there\nAnd again\n/reset\nA new start\nOne more\n";
    // The reply texts of one chat on each path; -n 12 cuts every reply.
    auto transcript = [&](bool use_graph, float temperature) {
        DeviceKVCache cache = make_device_kv_cache(model.config, 512);
        gpu::Decoder decoder(model.config, weights, cache, use_graph);
        ChatModel chat_model{[&](const std::vector<int32_t>& ids, std::vector<float>* logits) {
                                 return decoder.next_token(ids, logits);
                             },
                             512, [&](int n) { cache.n_filled = std::min(cache.n_filled, n); }};
        SamplerSettings sampling;
        sampling.temperature = temperature;
        sampling.seed = 11;
        Sampler sampler = make_sampler(sampling);
        ChatSettings settings;
        settings.max_new_tokens = 12;
        std::istringstream in(input);
        std::ostringstream out, log;
        run_chat(chat_model, tiny_tokenizer(), sampler, settings, in, out, log);
        return out.str();
    };
    for (float temperature : {0.0f, 0.7f}) {
        CAPTURE(temperature);
        const std::string with_graph = transcript(true, temperature);
        CHECK(with_graph == transcript(false, temperature));
        CHECK(with_graph.find("> ") != std::string::npos);
    }
}

TEST_CASE("the GPU's last-position logits do not depend on asking for all of them") {
    if (!gpu_or_skip()) return;
    const LoadedModel& model = tiny_model();
    // F32 weights (step 12): with F16 ones five rows of the LM head take the tensor cores and
    // one row the float matvec, which test_tensor_cores.cpp compares within F16's rounding.
    DeviceWeights weights = upload_weights(model.weights, WeightPrecision::F32);
    std::vector<int32_t> ids = {785, 3001, 12, 2999, 0};
    DeviceRunState all, last;
    DeviceKVCache cache = make_device_kv_cache(model.config, 8);
    gpu::forward(model.config, weights, ids, cache, all, LogitRows::All);
    cache.clear();
    gpu::forward(model.config, weights, ids, cache, last, LogitRows::LastOnly);
    const int n_vocab = model.weights.n_vocab;
    std::vector<float> all_logits = all.logits.download();
    REQUIRE(last.logits.size() == size_t(n_vocab));
    // Every layer runs the same kernels either way; only the LM head differs: one row takes
    // matvec_kernel, five the tiled GEMM, which add the same products in other orders. Logits
    // of order 1 over d_model 256 terms: about sqrt(256) * 6e-8 = 1e-6 apart, so 1e-5 + 1e-5
    // relative, while a wrong row would be off by the logits' own size.
    check_close(last.logits.download(),
                std::vector<float>(all_logits.end() - n_vocab, all_logits.end()), {1e-5, 1e-5});
}

TEST_CASE("upload keeps blocks the GPU reads and BF16, makes the others F16, counts the bytes") {
    if (!gpu_or_skip()) return;
    const LoadedModel& model = tiny_model();
    const ModelConfig& config = model.config;
    std::vector<uint32_t> converted;  // the notice's file types
    DeviceWeights weights = upload_weights(model.weights, WeightPrecision::Half,
                                           [&](uint32_t type) { converted.push_back(type); });
    CHECK(weights.token_embd.type == uint32_t(GgmlType::Q6_K));       // as in the file
    CHECK(weights.layers[0].attn_q.type == uint32_t(GgmlType::F16));  // F32 in the file
    CHECK(weights.layers[0].attn_k.type == uint32_t(GgmlType::F16));  // F16 in the file
    CHECK(weights.layers[0].attn_v.type == uint32_t(GgmlType::BF16));
    CHECK(weights.layers[2].attn_q.type == uint32_t(GgmlType::BF16));
    CHECK(weights.layers[1].ffn_down.type == uint32_t(GgmlType::Q8_0));  // as in the file
    CHECK(weights.layers[1].attn_q.type == uint32_t(GgmlType::F16));     // Q5_1: no kernel
    // Gate Q4_K and up Q3_K: one type for the fused kernel, F16.
    CHECK(weights.layers[2].ffn_gate.type == uint32_t(GgmlType::F16));
    CHECK(weights.layers[2].ffn_up.type == uint32_t(GgmlType::F16));
    // Q4_0, Q4_1 (layer 0's gate, up); Q5_1, Q2_K, Q3_K, Q5_K, Q6_K (layer 1's Q, K, V, gate,
    // up: the Q6_K up joins its Q5_K gate); Q4_K, Q3_K, Q2_K (layer 2's gate, up, down).
    CHECK(converted.size() == 10);
    CHECK(weights.tied_output);
    CHECK(&lm_head(weights) == &weights.token_embd);

    // Every matrix takes its rows of its device type, every vector 4 bytes a value.
    const uint64_t d = config.d_model, q_dim = config.n_heads * config.head_dim;
    const uint64_t kv_dim = config.n_kv_heads * config.head_dim;
    auto bytes_of = [](const DeviceMatrix& m) {
        return uint64_t(m.rows) * ggml_row_bytes(m.type, uint64_t(m.cols));
    };
    uint64_t expected = bytes_of(weights.token_embd) + 4 * d;
    for (const DeviceLayerWeights& layer : weights.layers) {
        for (const DeviceMatrix* m :
             {&layer.attn_q, &layer.attn_k, &layer.attn_v, &layer.attn_output, &layer.ffn_gate,
              &layer.ffn_up, &layer.ffn_down}) {
            CHECK(m->data.size() == bytes_of(*m));
            expected += bytes_of(*m);
        }
        expected += 4 * (2 * d + q_dim + 2 * kv_dim);
    }
    CHECK(bytes_of(weights.token_embd) == uint64_t(weights.n_vocab) * d / 256 * 210);  // Q6_K
    CHECK(device_bytes(weights) == expected);
    CHECK(bytes_read_per_pass(weights) == expected);  // tied: the whole table is the LM head

    DeviceWeights exact = upload_weights(model.weights, WeightPrecision::F32);
    CHECK(exact.layers[0].attn_v.type == uint32_t(GgmlType::F32));
    CHECK(exact.layers[0].attn_v.data.size() == kv_dim * d * 4);
}

// The checks come before any CUDA call, so these run without a GPU too.
TEST_CASE("a bad sequence fails on the GPU path with the CPU path's messages") {
    const LoadedModel& model = tiny_model();
    DeviceWeights weights;  // empty: never read, the checks fail first
    weights.n_vocab = model.weights.n_vocab;
    DeviceRunState state;
    DeviceKVCache cache;  // empty too: its capacity of 0 positions is checked first
    CHECK_THROWS_WITH_AS(gpu::forward(model.config, weights, {}, cache, state, LogitRows::LastOnly),
                         "cannot run the model on an empty sequence", Error);
    cache.capacity = 4;
    CHECK_THROWS_WITH_AS(
        gpu::forward(model.config, weights, {1, 3005}, cache, state, LogitRows::All),
        "token id 3005 is outside the vocabulary (0..3004)", Error);
    cache.n_filled = 3;
    CHECK_THROWS_WITH_AS(gpu::forward(model.config, weights, {1, 2}, cache, state, LogitRows::All),
                         "the context is full: 3 positions used, 2 more do not fit in 4", Error);
    CHECK(cache.n_filled == 3);
    CHECK_THROWS_WITH_AS(make_device_kv_cache(model.config, 0),
                         "a KV cache of 0 positions does not fit the model's context length 1024",
                         Error);
}
