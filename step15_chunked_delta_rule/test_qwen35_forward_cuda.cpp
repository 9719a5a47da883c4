// Checks for step 14's hybrid, Qwen3.5 (arch qwen35), on the GPU: the kernels its prompt path
// adds (split_query_gate, split_qkv, qk_norm_partial_rope) against their CPU twins, then the whole
// model (forward_cuda.cpp) on the oracle's files (test_qwen35.cpp says what they are):
//   F32 on the device (WeightPrecision::F32, every product and the attention in float, as the
//     CPU's exact path): transformers' logits and greedy ids; the CPU's exact path on the same
//     file at every position of every prompt; one token at a time equals the whole prompt, and
//     a cleared cache runs as a new one.
//   The Q8_0 file, its blocks on the device: one token at a time (matvec, float activations
//     times the blocks dequantized in registers, the CPU's exact arithmetic) against the CPU's
//     exact path; a whole prompt (tensor cores: activations rounded to F16) against it too,
//     within the bound kHalfActivations derives.
// Each tolerance is |gpu - reference| <= abs + rel * |reference|, stated next to its check.
// Without a GPU these checks skip, except the cache's byte count.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "device_kv_cache.h"
#include "device_weights.h"
#include "forward_cpu.h"
#include "forward_cuda.h"
#include "generate.h"
#include "kv_cache.h"
#include "ops_cpu.h"
#include "ops_cuda.h"
#include "test_forward_fixtures.h"
#include "test_gpu.h"
#include "test_tiny_model.h"
#include "weights.h"

namespace {

const char* kFixtures = "tests/fixtures/qwen35/";

// The CPU's exact path meets transformers within 5e-4 + 1e-4 relative (test_qwen35.cpp's kExact:
// only the order of the float sums differs, 8 layers of random weights amplifying it). The GPU's
// F32 path is the same arithmetic with its sums in other orders again (tiled products, warp
// reductions, its norms' sums of squares in float where the CPU's are in double), so it is held
// to that bound against the CPU, and to twice it against transformers (the two differences add).
const Tolerance kAgainstCpu = {5e-4, 1e-4};
const Tolerance kAgainstTransformers = {1e-3, 2e-4};
// Step 15: a prompt's DeltaNet layers run the chunked rule, one token the recurrence: the same
// numbers in exact arithmetic, rounded otherwise. At position 38 of tiny-qwen35's long prompt one
// head's output is 2.3e-4 in size, and these random layers turn a change of 1e-5 of it into
// 7e-4 on the logits: the CPU's own two forms, both fp32, differ there by 6.6e-4 (measured), past
// kAgainstCpu. The GPU's chunk products take operands split into two F16 values, known to 2^-22
// of themselves where fp32 keeps 2^-24 (chunked_delta_rule.cu's header): four times the CPU's
// rounding, so 4 x 6.6e-4, rounded up to 3e-3, for every position's logits after a chunked
// prompt. The other two files' logits stay within kAgainstCpu (1.5e-4 at most, measured with
// the kernels run lane by lane on the CPU: tools/emulate/run.sh model).
const Tolerance kChunkedPrompt = {3e-3, 1e-4};
// On the Q8_0 file a prompt's products of more than one token run on the tensor cores with their
// activations rounded to F16 (11 significant bits; step 12), and so does its attention. The CPU's
// exact path with those roundings simulated (each such product's input, and the attention's q, k
// and v, rounded to F16) moves the last position's logits by 0.14 after 7 tokens and 0.21 after
// 40 (measured on the Q8_0 file). 1.0 leaves room for what that leaves out (the tensor cores'
// order of sums, the attention's probabilities in F16) and still catches a wrong head, row or
// gate, which moves logits by their own size (up to ~18).
const Tolerance kHalfActivations = {1.0, 0.0};

struct Case {
    std::string model;  // models/MODEL.gguf
    std::string name;   // MODEL.PROMPT, the fixtures' prefix
    int n_tokens = 0;
};

std::vector<Case> cases() {
    std::istringstream in(read_fixture_text(std::string(kFixtures) + "cases.txt"));
    std::vector<Case> result;
    std::string name;
    int n_tokens = 0, n_vocab = 0;
    while (in >> name >> n_tokens >> n_vocab)
        result.push_back({name.substr(0, name.rfind('.')), name, n_tokens});
    return result;
}

bool is_q8_0(const std::string& model) { return model.find("q8_0") != std::string::npos; }

std::vector<int32_t> ids_of(const std::string& name, const std::string& suffix) {
    return read_fixture_ids(kFixtures + name + suffix);
}

// A file opened once for all the checks of this file.
const LoadedModel& host_model(const std::string& name) {
    static std::map<std::string, LoadedModel> models;
    auto found = models.find(name);
    if (found != models.end()) return found->second;
    LoadedModel& m = models[name];
    m.file = open_gguf("models/" + name + ".gguf");
    m.config = read_model_config(m.file.metadata);
    m.weights = load_weights(m.file, m.config);
    return m;
}

// The file and its weights on the device, uploaded once: F32 for the F32 files (the exact
// path), the file's own types (Q8_0 blocks) for the Q8_0 one.
struct GpuModel {
    const LoadedModel& host;
    DeviceWeights device;
};

const GpuModel& gpu_model(const std::string& name) {
    static std::map<std::string, GpuModel> models;
    auto found = models.find(name);
    if (found != models.end()) return found->second;
    const LoadedModel& host = host_model(name);
    const WeightPrecision precision = is_q8_0(name) ? WeightPrecision::Half : WeightPrecision::F32;
    return models.emplace(name, GpuModel{host, upload_weights(host.weights, precision)})
        .first->second;
}

// The CPU's exact path (float activations) over the prompt: every position's logits.
std::vector<float> cpu_logits(const LoadedModel& model, const std::vector<int32_t>& prompt) {
    KVCache cache = make_kv_cache(model.config, int(prompt.size()));
    RunState state;
    forward(model.config, model.weights, prompt, cache, state, LogitRows::All);
    return state.logits;
}

// The GPU's prompt path over the prompt at once: every position's logits.
std::vector<float> gpu_logits(const GpuModel& model, const std::vector<int32_t>& prompt) {
    DeviceKVCache cache = make_device_kv_cache(model.host.config, int(prompt.size()));
    DeviceRunState state;
    gpu::forward(model.host.config, model.device, prompt, cache, state, LogitRows::All);
    return state.logits.download();
}

// The GPU's, one token a pass: each position's logits, in order.
std::vector<float> gpu_logits_one_by_one(const GpuModel& model, DeviceKVCache& cache,
                                         const std::vector<int32_t>& prompt) {
    DeviceRunState state;
    std::vector<float> logits;
    for (int32_t id : prompt) {
        gpu::forward(model.host.config, model.device, {id}, cache, state, LogitRows::LastOnly);
        const std::vector<float> row = state.logits.download();
        logits.insert(logits.end(), row.begin(), row.end());
    }
    return logits;
}

}  // namespace

// ---- the prompt path's new kernels ----

TEST_CASE("gpu::split_query_gate equals split_query_gate") {
    if (!gpu_or_skip()) return;
    const int shapes[][3] = {{1, 1, 6}, {7, 3, 64}, {33, 8, 256}, {5, 2, 100}};
    for (const auto& shape : shapes) {
        const int n_tokens = shape[0], n_heads = shape[1], head_dim = shape[2];
        CAPTURE(n_tokens);
        CAPTURE(n_heads);
        CAPTURE(head_dim);
        const size_t n = size_t(n_tokens) * n_heads * head_dim;
        const std::vector<float> query_gate = random_values(2 * n, 60);
        std::vector<float> query(n), gate(n);
        split_query_gate(query.data(), gate.data(), query_gate.data(), n_tokens, n_heads,
                         head_dim);
        DeviceBuffer<float> device_qg(query_gate);
        DeviceBuffer<float> device_query(std::vector<float>(n, NAN));
        DeviceBuffer<float> device_gate(std::vector<float>(n, NAN));
        gpu::split_query_gate(device_query.data(), device_gate.data(), device_qg.data(), n_tokens,
                              n_heads, head_dim);
        // Copies: bit for bit.
        CHECK(device_query.download() == query);
        CHECK(device_gate.download() == gate);
    }
}

TEST_CASE("gpu::split_qkv parts each convolved row into q, k and v") {
    if (!gpu_or_skip()) return;
    const int shapes[][3] = {{1, 64, 64}, {7, 128, 256}, {300, 96, 200}};  // n, qk_width, v width
    for (const auto& shape : shapes) {
        const int n_tokens = shape[0], qk = shape[1], vw = shape[2];
        const int c = 2 * qk + vw;
        CAPTURE(n_tokens);
        const std::vector<float> qkv = random_values(size_t(n_tokens) * c, 61);
        std::vector<float> q, k, v;  // forward_cpu.cpp's split_qkv
        for (int t = 0; t < n_tokens; t++) {
            const float* row = qkv.data() + size_t(t) * c;
            q.insert(q.end(), row, row + qk);
            k.insert(k.end(), row + qk, row + 2 * qk);
            v.insert(v.end(), row + 2 * qk, row + c);
        }
        DeviceBuffer<float> device_qkv(qkv);
        DeviceBuffer<float> device_q(std::vector<float>(q.size(), NAN));
        DeviceBuffer<float> device_k(std::vector<float>(k.size(), NAN));
        DeviceBuffer<float> device_v(std::vector<float>(v.size(), NAN));
        gpu::split_qkv(device_q.data(), device_k.data(), device_v.data(), device_qkv.data(),
                       n_tokens, qk, vw);
        CHECK(device_q.download() == q);
        CHECK(device_k.download() == k);
        CHECK(device_v.download() == v);
    }
}

TEST_CASE("gpu::qk_norm_partial_rope equals qk_norm then partial_rope; all of head_dim is "
          "qk_norm_rope bit for bit") {
    if (!gpu_or_skip()) return;
    // (n_tokens, n_heads, head_dim, rope_dims): Qwen3.5's heads of 256 turning 64, the tiny
    // models' 64 turning 16, one pair of a head of 6, the whole head.
    const int shapes[][4] = {{7, 3, 256, 64}, {33, 4, 64, 16}, {5, 2, 6, 2}, {3, 2, 128, 128}};
    for (const auto& shape : shapes) {
        const int n_tokens = shape[0], n_heads = shape[1], head_dim = shape[2];
        const int rope_dims = shape[3];
        for (int first_position : {0, 1000}) {
            CAPTURE(head_dim);
            CAPTURE(rope_dims);
            CAPTURE(first_position);
            const std::vector<float> x = random_values(size_t(n_tokens) * n_heads * head_dim, 62,
                                                       -3.0f, 3.0f);
            const std::vector<float> weight = random_values(head_dim, 63, 0.5f, 1.5f);
            std::vector<float> expected = x;
            qk_norm(expected.data(), weight.data(), n_tokens, n_heads, head_dim, 1e-6f);
            partial_rope(expected.data(), n_tokens, n_heads, head_dim, rope_dims, first_position,
                         1e7f);

            DeviceBuffer<float> device_x(x), device_weight(weight);
            gpu::qk_norm_partial_rope(device_x.data(), device_weight.data(), n_tokens, n_heads,
                                      head_dim, rope_dims, first_position, 1e7f, 1e-6f);
            const std::vector<float> got = device_x.download();
            // test_ops_cuda.cpp's bound for qk_norm_rope: the sum of squares in float (the
            // CPU's in double), then rope's arithmetic on values of up to ~4.
            check_close(got, expected, {1e-5, 1e-5}, head_dim);
            if (rope_dims != head_dim) continue;
            DeviceBuffer<float> whole(x);
            gpu::qk_norm_rope(whole.data(), device_weight.data(), n_tokens, n_heads, head_dim,
                              first_position, 1e7f, 1e-6f);
            CHECK(whole.download() == got);
        }
    }
}

// ---- the hybrid cache on the device ----

TEST_CASE("the device's hybrid cache counts K/V for the attention layers and the states") {
    const ModelConfig& config = host_model("tiny-qwen35-wide").config;
    REQUIRE(config.count_layers(LayerKind::Attention) == 2);
    for (int capacity : {1, 64}) {
        // F32: what the CPU's hybrid cache takes; F16: its keys and values halved.
        const size_t kv = kv_cache_bytes(config, capacity), states = recurrent_state_bytes(config);
        CHECK(device_kv_cache_bytes(config, capacity, CacheType::F32) == kv + states);
        CHECK(device_kv_cache_bytes(config, capacity, CacheType::F16) == kv / 2 + states);
    }
    if (!gpu_or_skip()) return;
    DeviceKVCache cache = make_device_kv_cache(config, 64, CacheType::F16);
    CHECK(cache.k.allocated_bytes() + cache.v.allocated_bytes() + cache.conv.allocated_bytes() +
              cache.ssm.allocated_bytes() ==
          device_kv_cache_bytes(config, 64, CacheType::F16));
    const KVCache cpu = make_kv_cache(config, 64);
    CHECK(cache.kv_block == cpu.kv_block);
    CHECK(cache.state_block == cpu.state_block);
    CHECK(!cache.can_rewind());
    for (float value : cache.ssm.download()) REQUIRE(value == 0.0f);
    for (float value : cache.conv.download()) REQUIRE(value == 0.0f);
}

// ---- the whole model ----

TEST_CASE("qwen35 on the GPU in F32: transformers' logits and greedy ids, the CPU's exact path") {
    if (!gpu_or_skip()) return;
    for (const Case& c : cases()) {
        if (is_q8_0(c.model)) continue;
        CAPTURE(c.name);
        const GpuModel& model = gpu_model(c.model);
        const ModelConfig& config = model.host.config;
        const std::vector<int32_t> prompt = ids_of(c.name, ".ids.txt");
        REQUIRE(int(prompt.size()) == c.n_tokens);
        const int n_vocab = model.host.weights.n_vocab;
        const std::vector<float> all = gpu_logits(model, prompt);  // (n_tokens, n_vocab)
        const std::vector<float> last(all.end() - n_vocab, all.end());
        check_close(last, read_fixture_f32(kFixtures + c.name + ".logits.f32"),
                    kAgainstTransformers);
        check_close(all, cpu_logits(model.host, prompt), kChunkedPrompt, n_vocab);
        // Greedy ids through the Decoder, as the program runs them: the prompt, then one token a
        // step, replayed from the decode graph.
        DeviceKVCache cache = make_device_kv_cache(config, int(config.context_length));
        gpu::Decoder decoder(config, model.device, cache, true);
        std::vector<int32_t> ids;
        generate_greedy(
            [&](const std::vector<int32_t>& new_ids, std::vector<float>* logits) {
                return decoder.next_token(new_ids, logits);
            },
            prompt, 16, cache.capacity, [&](int32_t id) {
                ids.push_back(id);
                return true;
            });
        CHECK(ids == ids_of(c.name, ".greedy.txt"));
        CHECK(decoder.n_graph_kernels() == gpu::kernels_per_decode_step(config, model.device));
    }
}

TEST_CASE("qwen35 on the GPU: one token at a time gives the whole prompt's logits and state") {
    if (!gpu_or_skip()) return;
    for (const char* name : {"tiny-qwen35", "tiny-qwen35-wide"}) {
        CAPTURE(name);
        const GpuModel& model = gpu_model(name);
        const ModelConfig& config = model.host.config;
        const std::vector<int32_t> prompt = ids_of(std::string(name) + ".long", ".ids.txt");
        DeviceKVCache at_once = make_device_kv_cache(config, 64);
        DeviceRunState state;
        gpu::forward(config, model.device, prompt, at_once, state, LogitRows::All);
        const std::vector<float> whole = state.logits.download();
        DeviceKVCache one_by_one = make_device_kv_cache(config, 64);
        const std::vector<float> single = gpu_logits_one_by_one(model, one_by_one, prompt);
        // One token runs matvec (a warp a row) and the recurrence, a prompt the tiled product
        // and the chunked rule (kChunkedPrompt); the states they leave are within kAgainstCpu.
        check_close(single, whole, kChunkedPrompt, model.host.weights.n_vocab);
        check_close(one_by_one.ssm.download(), at_once.ssm.download(), kAgainstCpu);
        check_close(one_by_one.conv.download(), at_once.conv.download(), kAgainstCpu);
        // A cleared cache is a new one: its states are zeros again, so the prompt gives what it
        // gave, bit for bit (the same kernels on the same numbers).
        at_once.clear();
        CHECK(at_once.n_filled == 0);
        gpu::forward(config, model.device, prompt, at_once, state, LogitRows::All);
        CHECK(state.logits.download() == whole);
    }
}

TEST_CASE("qwen35 on the GPU, Q8_0 blocks: near the CPU's exact path on the same file") {
    if (!gpu_or_skip()) return;
    const GpuModel& model = gpu_model("tiny-qwen35-wide-q8_0");
    const int n_vocab = model.host.weights.n_vocab;
    for (const char* prompt_name : {"one_token", "short", "long"}) {
        CAPTURE(prompt_name);
        const std::string name = std::string("tiny-qwen35-wide-q8_0.") + prompt_name;
        const std::vector<int32_t> prompt = ids_of(name, ".ids.txt");
        const std::vector<float> cpu = cpu_logits(model.host, prompt);
        // One token a pass: matvec multiplies float activations with the blocks dequantized in
        // registers, the CPU's exact arithmetic in other sum orders.
        DeviceKVCache cache = make_device_kv_cache(model.host.config, 64);
        check_close(gpu_logits_one_by_one(model, cache, prompt), cpu, kAgainstCpu, n_vocab);
        // The whole prompt at once: its products on the tensor cores (kHalfActivations).
        check_close(gpu_logits(model, prompt), cpu, kHalfActivations, n_vocab);
    }
}
