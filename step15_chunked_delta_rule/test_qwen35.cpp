// Checks for step 14's hybrid, Qwen3.5 (arch qwen35), on the CPU.
//
// The Gated DeltaNet's and the gated attention's ops, each against values worked out by hand.
// Then the whole model against the Qwen3.5 oracle (tools/fixtures/make_qwen35_oracle.py): random
// Qwen3_5ForCausalLM text models of transformers (fp32), converted by llama.cpp's converter into
// models/tiny-qwen35.gguf (Gated DeltaNet key heads == value heads, 2 and 2),
// models/tiny-qwen35-wide.gguf (2 key heads, 4 value heads: the converter reorders the value
// heads) and models/tiny-qwen35-wide-q8_0.gguf, and what transformers computes with each
// (tests/fixtures/qwen35/): the last position's logits, 16 greedy ids, the last position's
// residual stream after every layer, layer 0's conv window and state after the "short" prompt.
// 8 layers, attention at layers 3 and 7, heads of 64 with RoPE on 16, every weight random.
//   CPU, exact path (F32 files, float activations): logits within kExact of transformers', the
//     greedy ids equal, each layer's output within kExact (the first wrong layer named).
//   CPU, 8-bit path (Q8_0 file): against transformers on the file's own Q8_0 weights, kEightBit.
//   One token at a time gives the logits of the whole prompt at once; a long generation stays
//   finite with its states bounded; the hybrid cache; a chat's second turn equals one prompt.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "chat.h"
#include "chat_template.h"
#include "error.h"
#include "forward_cpu.h"
#include "generate.h"
#include "gguf_tensors.h"
#include "kv_cache.h"
#include "model_config.h"
#include "ops_cpu.h"
#include "test_forward_fixtures.h"
#include "test_tiny_model.h"
#include "test_tolerance.h"
#include "tokenizer.h"
#include "weights.h"

namespace {

const char* kQwen35Fixtures = "tests/fixtures/qwen35/";

// The exact path against transformers, both in fp32 on the same weights: only the order of the
// float sums differs (and our norms' sums of squares are in double). Those differences add up
// over the 8 layers to 4.6e-4 in a residual stream of values up to ~40 (measured: 1e-5 of its
// scale), and reach the logits (up to ~18) at that size. So 5e-4 + 1e-4 relative, for the logits
// and each layer's output alike: a wrong convention (a norm, a head order, an angle, a gate)
// misses it by orders of magnitude.
const Tolerance kExact = {5e-4, 1e-4};
// The 8-bit path against transformers on the Q8_0 file's own weights: every block matrix's
// input rounded to 8 bits (a step of max|x| / 127 per block of 32). After one token the logits
// move by 0.85 (measured), as Qwen3's tiny model's do (test_qwen3.cpp: 0.61), so they are held to
// 1.0, and so is layer 0's output (0.29 after 7 tokens, 0.62 after 40). Beyond that these random
// weights amplify any such noise: the logits move by 3.3 after 7 tokens and 12 after 40, and the
// exact path with uniform noise of the rounding's size added to each matrix's input (instead of
// rounding it) moves them as far (2.6 to 7.4 after 7 tokens, 1.6 to 9.4 after 40, three seeds).
// So the later positions' logits are not compared: what they would check is the model's
// sensitivity, not the arithmetic.
const Tolerance kEightBit = {1.0, 0.0};

struct Qwen35Case {
    std::string model;   // models/MODEL.gguf
    std::string prompt;  // one_token, short, long
    std::string name;    // MODEL.PROMPT, the fixtures' prefix
    int n_tokens = 0;
};

std::vector<Qwen35Case> qwen35_cases() {
    std::istringstream in(read_fixture_text(std::string(kQwen35Fixtures) + "cases.txt"));
    std::vector<Qwen35Case> cases;
    std::string name;
    int n_tokens = 0, n_vocab = 0;
    while (in >> name >> n_tokens >> n_vocab) {
        const size_t dot = name.rfind('.');
        cases.push_back({name.substr(0, dot), name.substr(dot + 1), name, n_tokens});
    }
    return cases;
}

bool is_q8_0(const Qwen35Case& c) { return c.model.find("q8_0") != std::string::npos; }

std::vector<int32_t> fixture_ids(const std::string& name, const std::string& suffix) {
    return read_fixture_ids(kQwen35Fixtures + name + suffix);
}

// A file opened once for all the checks of this file.
const LoadedModel& qwen35_model(const std::string& name) {
    static std::map<std::string, LoadedModel> models;
    auto found = models.find(name);
    if (found != models.end()) return found->second;
    LoadedModel& m = models[name];
    m.file = open_gguf("models/" + name + ".gguf");
    m.config = read_model_config(m.file.metadata);
    m.weights = load_weights(m.file, m.config);
    return m;
}

NextTokenFn cpu_step(const LoadedModel& model, KVCache& cache, RunState& state) {
    return [&](const std::vector<int32_t>& ids, std::vector<float>* logits) {
        return next_token(model.config, model.weights, ids, cache, state, logits);
    };
}

std::vector<int32_t> greedy_ids(const NextTokenFn& step, const std::vector<int32_t>& prompt,
                                int capacity, int n) {
    std::vector<int32_t> ids;
    generate_greedy(step, prompt, n, capacity, [&](int32_t id) {
        ids.push_back(id);
        return true;
    });
    return ids;
}

// The last position's residual stream after the first n_layers layers: the model cut there,
// whose state.x the final norm leaves as it is.
std::vector<float> stream_after(const LoadedModel& model, const std::vector<int32_t>& prompt,
                                int n_layers, bool int8_activations = false) {
    ModelConfig config = model.config;
    config.n_layers = uint32_t(n_layers);
    config.layer_kinds.resize(n_layers);
    Weights weights = model.weights;
    weights.layers.resize(n_layers);
    KVCache cache = make_kv_cache(config, int(prompt.size()));
    RunState state;
    state.int8_activations = int8_activations;
    forward(config, weights, prompt, cache, state, LogitRows::LastOnly);
    const int d = int(config.d_model);
    return std::vector<float>(state.x.end() - d, state.x.end());
}

// Transformers' output of layer l at the last position: row l + 1 of NAME.layers.f32 (row 0 is
// the embedding).
std::vector<float> layer_output(const LoadedModel& model, const Qwen35Case& c, int l) {
    const std::vector<float> rows = read_fixture_f32(kQwen35Fixtures + c.name + ".layers.f32");
    const size_t d = model.config.d_model;
    REQUIRE(rows.size() == (model.config.n_layers + 1) * d);
    return std::vector<float>(rows.begin() + (l + 1) * d, rows.begin() + (l + 2) * d);
}

// The first layer whose output is not within kExact of transformers' (-1: none, else `report`
// says how), so a wrong logit is traced to where it starts.
int first_wrong_layer(const LoadedModel& model, const Qwen35Case& c,
                      const std::vector<int32_t>& prompt, std::string& report) {
    for (int l = 0; l < int(model.config.n_layers); l++)
        if (count_mismatches(stream_after(model, prompt, l + 1), layer_output(model, c, l), kExact,
                             report) > 0)
            return l;
    return -1;
}

float largest_abs(const std::vector<float>& values) {
    float largest = 0.0f;
    for (float v : values) largest = std::max(largest, std::fabs(v));
    return largest;
}

bool all_finite(const std::vector<float>& values) {
    return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
}

}  // namespace

// ---- The ops, against values worked out by hand ----

TEST_CASE("partial_rope turns the first rope_dims of each head and leaves the rest") {
    // head_dim 6, rope_dims 4, base 100, position 1: pair (0, 2) turns by 1 rad, pair (1, 3) by
    // 100^(-2/4) = 0.1 rad; elements 4 and 5 stay.
    std::vector<float> x = {1, 2, 3, 4, 5, 6};  // (1 token, 1 head, 6)
    partial_rope(x.data(), 1, 1, 6, 4, 1, 100.0f);
    const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.1), s2 = std::sin(0.1);
    const std::vector<float> expected = {float(1 * c1 - 3 * s1), float(2 * c2 - 4 * s2),
                                         float(3 * c1 + 1 * s1), float(4 * c2 + 2 * s2), 5, 6};
    check_close(x, expected, {1e-6, 1e-6});
    // All of the head: rope() itself, bit for bit (Qwen2 and Qwen3 go through partial_rope).
    std::vector<float> a(2 * 3 * 8), b;  // (2 tokens, 3 heads, 8)
    for (size_t i = 0; i < a.size(); i++) a[i] = std::sin(float(i));
    b = a;
    partial_rope(a.data(), 2, 3, 8, 8, 5, 1e6f);
    rope(b.data(), 2, 3, 8, 5, 1e6f);
    CHECK(a == b);
}

TEST_CASE("split_query_gate parts each head's query from its gate; sigmoid_gate scales") {
    // 1 token, 2 heads of 2: per head the query, then its gate.
    const std::vector<float> query_gate = {1, 2, 10, 20, 3, 4, 30, 40};
    std::vector<float> query(4), gate(4);
    split_query_gate(query.data(), gate.data(), query_gate.data(), 1, 2, 2);
    CHECK(query == std::vector<float>{1, 2, 3, 4});
    CHECK(gate == std::vector<float>{10, 20, 30, 40});
    std::vector<float> x = {2, 2, 2};
    const std::vector<float> g = {0, 100, -100};  // sigmoid: 1/2, ~1, ~0
    sigmoid_gate(x.data(), g.data(), 3);
    check_close(x, {1, 2, 0}, {1e-6, 0});
}

TEST_CASE("causal_conv1d_silu: each channel's taps over its last inputs, then SiLU") {
    // 2 channels, kernel 3 (taps oldest first), 3 tokens, an empty (zero) window.
    const std::vector<float> weight = {1, 2, 3,     // channel 0
                                       0, 0, -1};   // channel 1: minus the current input
    const std::vector<float> x = {1, 1, 2, 2, 3, 3};  // (3, 2)
    std::vector<float> window(2 * 2, 0.0f), out(6);
    causal_conv1d_silu(out.data(), x.data(), window.data(), weight.data(), 3, 2, 3);
    auto silu = [](double v) { return float(v / (1 + std::exp(-v))); };
    // Channel 0: t0 = 3*1, t1 = 2*1 + 3*2, t2 = 1*1 + 2*2 + 3*3. Channel 1: -x.
    check_close(out, {silu(3), silu(-1), silu(8), silu(-2), silu(14), silu(-3)}, {1e-6, 1e-6});
    CHECK(window == std::vector<float>{2, 2, 3, 3});  // the last 2 inputs, oldest first

    // In pieces (2 tokens, then 1) as at once: the window carries the inputs across.
    std::vector<float> piece_window(4, 0.0f), pieces(6);
    causal_conv1d_silu(pieces.data(), x.data(), piece_window.data(), weight.data(), 2, 2, 3);
    causal_conv1d_silu(pieces.data() + 4, x.data() + 4, piece_window.data(), weight.data(), 1, 2,
                       3);
    CHECK(pieces == out);
    CHECK(piece_window == window);
    // One token after a full window: the window shifts by one.
    std::vector<float> one(2);
    const std::vector<float> next = {4, 4};
    causal_conv1d_silu(one.data(), next.data(), window.data(), weight.data(), 1, 2, 3);
    check_close(one, {silu(1 * 2 + 2 * 3 + 3 * 4), silu(-4)}, {1e-6, 1e-6});
    CHECK(window == std::vector<float>{3, 3, 4, 4});
}

TEST_CASE("l2_normalize_rows divides each row by its length, then scales") {
    std::vector<float> x = {3, 4, 0, 2};  // 2 rows of 2
    l2_normalize_rows(x.data(), 2, 2, 1e-6f, 0.5f);
    // 3 / sqrt(25 + 1e-6) * 0.5, ...; eps moves them by ~1e-8.
    check_close(x, {0.3f, 0.4f, 0.0f, 0.5f}, {1e-6, 0});
}

TEST_CASE("delta_net_gates: beta = sigmoid(b), g = A softplus(a + dt_bias)") {
    // Head 0: b = 0, a + dt = 0, A = -2: beta 1/2, g = -2 ln 2 (a decay of 1/4).
    // Head 1: b = ln 3 (beta 3/4), a + dt = 30 (softplus is x itself), A = -0.5: g = -15.
    const std::vector<float> b = {0.0f, std::log(3.0f)}, a = {1.0f, 29.0f};
    const std::vector<float> A = {-2.0f, -0.5f}, dt_bias = {-1.0f, 1.0f};
    std::vector<float> beta(2), g(2);
    delta_net_gates(beta.data(), g.data(), b.data(), a.data(), A.data(), dt_bias.data(), 1, 2);
    check_close(beta, {0.5f, 0.75f}, {1e-6, 0});
    check_close(g, {float(-2 * std::log(2.0)), -15.0f}, {1e-6, 0});
}

TEST_CASE("gated_delta_rule: decay, correct the recall under k, read with q") {
    // 1 head, dk = dv = 2. Token 0: k = q = (1, 0), v = (2, 3), beta 1, no decay: S = k v^T,
    // o = v. Token 1: decay 1/2 (S = [[1, 1.5], [0, 0]]), k = (0, 1) recalls 0, beta 1/2:
    // delta = (0.5, 0.5), S = [[1, 1.5], [0.5, 0.5]], q = (1, 1): o = (1.5, 2).
    const std::vector<float> q = {1, 0, 1, 1}, k = {1, 0, 0, 1}, v = {2, 3, 1, 1};
    const std::vector<float> g = {0.0f, std::log(0.5f)}, beta = {1.0f, 0.5f};
    std::vector<float> state(4, 0.0f), out(4);
    gated_delta_rule(out.data(), state.data(), q.data(), k.data(), v.data(), g.data(), beta.data(),
                     2, 1, 1, 2, 2);
    check_close(out, {2, 3, 1.5f, 2}, {1e-6, 1e-6});
    check_close(state, {1, 1.5f, 0.5f, 0.5f}, {1e-6, 1e-6});
    // The same key again: the recall is corrected towards the new value, not added to it.
    // Token 2: k = (1, 0), v = (4, 4), beta 1, no decay: S^T k = (1, 1.5), delta = (3, 2.5),
    // row 0 becomes v: S = [[4, 4], [0.5, 0.5]]; q = (1, 0): o = (4, 4).
    std::vector<float> o2(2);
    const std::vector<float> k2 = {1, 0}, v2 = {4, 4}, g2 = {0}, beta2 = {1};
    gated_delta_rule(o2.data(), state.data(), k2.data(), k2.data(), v2.data(), g2.data(),
                     beta2.data(), 1, 1, 1, 2, 2);
    check_close(o2, {4, 4}, {1e-6, 1e-6});
    check_close(state, {4, 4, 0.5f, 0.5f}, {1e-6, 1e-6});
}

TEST_CASE("gated_delta_rule: value head h reads key head h % n_key_heads (the file's order)") {
    // 2 key heads, 4 value heads of dk = dv = 2, one token, beta 1, no decay: o = v (k . q).
    // Key head 0: k = q = (1, 0), so k . q = 1; key head 1: k = (0, 1), q = (1, 0): 0. Value
    // heads 0 and 2 read key head 0, 1 and 3 key head 1 (grouped, h / 2, would be 0, 0, 1, 1).
    const std::vector<float> q = {1, 0, 1, 0}, k = {1, 0, 0, 1};  // (1, 2 heads, 2)
    const std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8};         // (1, 4 heads, 2)
    const std::vector<float> g(4, 0.0f), beta(4, 1.0f);
    std::vector<float> state(4 * 4, 0.0f), out(8);
    gated_delta_rule(out.data(), state.data(), q.data(), k.data(), v.data(), g.data(), beta.data(),
                     1, 2, 4, 2, 2);
    check_close(out, {1, 2, 0, 0, 5, 6, 0, 0}, {1e-6, 0});
}

TEST_CASE("gated_rmsnorm: weight * rmsnorm(x) * silu(z), per row") {
    // Row (1, -1) has rms 1; z = (0, 2): silu 0 and 2 / (1 + e^-2); weight (5, 3).
    const std::vector<float> x = {1, -1}, z = {0, 2}, weight = {5, 3};
    std::vector<float> out(2);
    gated_rmsnorm(out.data(), x.data(), z.data(), weight.data(), 1, 2, 1e-6f);
    const double silu2 = 2.0 / (1.0 + std::exp(-2.0));
    check_close(out, {0.0f, float(-3.0 * silu2)}, {1e-5, 1e-6});
}

// ---- The file: config, tensors, cache ----

TEST_CASE("a qwen35 file: layer kinds, the DeltaNet's sizes, partial RoPE, A = -exp(A_log)") {
    const LoadedModel& model = qwen35_model("tiny-qwen35");
    const ModelConfig& config = model.config;
    CHECK(config.architecture == "qwen35");
    CHECK(config.n_layers == 8);
    CHECK(config.n_nextn_layers == 0);
    for (uint32_t l = 0; l < config.n_layers; l++) {
        CAPTURE(l);
        CHECK((config.layer_kinds[l] == LayerKind::Attention) == ((l + 1) % 4 == 0));
    }
    CHECK(config.head_dim == 64);  // key_length; 96 / 4 heads would be 24
    CHECK(config.rope_dims == 16);
    CHECK(config.attention_output_gate);
    CHECK(config.delta_net.n_key_heads == 2);
    CHECK(config.delta_net.n_value_heads == 2);
    CHECK(config.delta_net.key_dim == 32);
    CHECK(config.delta_net.value_dim == 32);
    CHECK(config.delta_net.conv_kernel == 4);
    CHECK(qwen35_model("tiny-qwen35-wide").config.delta_net.n_value_heads == 4);
    const LayerWeights& attention = model.weights.layers[3];
    CHECK(attention.attn_q.rows == 2 * 4 * 64);  // query and gate of 4 heads
    CHECK(attention.attn_output.cols == 4 * 64);
    CHECK(model.weights.attention.qk_norm);
    const LayerWeights& delta_net = model.weights.layers[0];
    CHECK(delta_net.attn_qkv.rows == 2 * 2 * 32 + 2 * 32);
    CHECK(delta_net.ssm_conv1d.size() == size_t(192 * 4));
    CHECK(delta_net.attn_q.data == nullptr);
    // The converter stores A as -exp(A_log): negative, so e^g < 1 and every state decays.
    for (const LayerWeights& layer : model.weights.layers)
        for (float a : layer.ssm_a) CHECK(a < 0.0f);
    size_t total = 0;
    load_weights(model.file, config, [&](size_t, size_t all) { total = all; });
    CHECK(total == 2 + 6 * 14 + 2 * 11);  // embedding, output_norm; tied head
}

TEST_CASE("another architecture is refused in one line naming the supported ones") {
    GgufMetadata metadata;
    for (const auto& [key, value] : qwen35_model("tiny-qwen35").file.metadata.entries()) {
        GgufValue copy = value;
        if (key == "general.architecture") copy.string_value = "qwen35moe";
        metadata.add(key, copy);
    }
    CHECK_THROWS_WITH_AS(read_model_config(metadata),
                         "architecture 'qwen35moe' is not supported (this engine reads qwen2, "
                         "qwen3, qwen35)",
                         Error);
}

TEST_CASE("the hybrid cache: K/V for the attention layers, a fixed state per DeltaNet layer") {
    const LoadedModel& model = qwen35_model("tiny-qwen35-wide");
    const ModelConfig& config = model.config;
    KVCache cache = make_kv_cache(config, 100);
    // 2 attention layers of 2 KV heads of 64; 6 DeltaNet layers of a window of 3 x 256
    // channels (q, k: 2 x 32 each; v: 4 x 32) and 4 states of 32 x 32.
    CHECK(kv_cache_bytes(config, 100) == size_t(2) * 2 * 100 * 128 * 4);
    CHECK(cache.k.size() == size_t(2) * 100 * 128);
    CHECK(recurrent_state_bytes(config) == size_t(6) * (3 * 256 + 4 * 32 * 32) * 4);
    CHECK(recurrent_state_bytes(config) == (cache.conv.size() + cache.ssm.size()) * 4);
    CHECK(cache.keys(7) == cache.k.data() + 100 * 128);  // layer 7 is the second attention layer
    CHECK(cache.delta_state(4) == cache.ssm.data() + 3 * 4 * 32 * 32);  // the 4th DeltaNet layer
    CHECK_FALSE(cache.can_rewind());
    CHECK(make_kv_cache(tiny_model().config, 8).can_rewind());

    RunState state;
    forward(config, model.weights, {1, 2, 3}, cache, state, LogitRows::LastOnly);
    CHECK(largest_abs(cache.ssm) > 0.0f);
    // A state cannot forget its last positions: only all of them.
    CHECK_THROWS_WITH_AS(keep_positions(cache, 2),
                         "a recurrent state cannot go back from 3 to 2 positions: only to 0",
                         Error);
    keep_positions(cache, 3);  // nothing to forget
    CHECK(cache.n_filled == 3);
    keep_positions(cache, 0);
    CHECK(cache.n_filled == 0);
    CHECK(largest_abs(cache.ssm) == 0.0f);
    CHECK(largest_abs(cache.conv) == 0.0f);
}

// ---- The whole model against transformers ----

TEST_CASE("qwen35 on the CPU's exact path: transformers' logits, layers and greedy ids") {
    for (const Qwen35Case& c : qwen35_cases()) {
        if (is_q8_0(c)) continue;
        CAPTURE(c.name);
        const LoadedModel& model = qwen35_model(c.model);
        RunState state;  // float activations: the default
        const std::vector<int32_t> prompt = fixture_ids(c.name, ".ids.txt");
        REQUIRE(int(prompt.size()) == c.n_tokens);
        KVCache cache = make_kv_cache(model.config, int(model.config.context_length));
        forward(model.config, model.weights, prompt, cache, state, LogitRows::LastOnly);
        check_close(state.logits, read_fixture_f32(kQwen35Fixtures + c.name + ".logits.f32"),
                    kExact);
        std::string report;
        const int wrong_layer = first_wrong_layer(model, c, prompt, report);
        INFO("the first layer whose output differs: " << wrong_layer << "\n" << report);
        CHECK(wrong_layer == -1);
        cache.clear();
        CHECK(greedy_ids(cpu_step(model, cache, state), prompt, cache.capacity, 16) ==
              fixture_ids(c.name, ".greedy.txt"));
    }
}

TEST_CASE("qwen35's layer 0 after a prompt: transformers' conv window and recurrent state") {
    for (const char* name : {"tiny-qwen35", "tiny-qwen35-wide"}) {
        CAPTURE(name);
        const LoadedModel& model = qwen35_model(name);
        const DeltaNetConfig& dn = model.config.delta_net;
        const std::string prefix = kQwen35Fixtures + std::string(name) + ".short";
        const std::vector<int32_t> prompt = read_fixture_ids(prefix + ".ids.txt");
        KVCache cache = make_kv_cache(model.config, 16);
        RunState state;
        forward(model.config, model.weights, prompt, cache, state, LogitRows::LastOnly);
        // transformers' order of the value heads: the file's head j is its
        // (j % Hk) * (Hv / Hk) + j / Hk (weights.h).
        const int hk = int(dn.n_key_heads), per_key = int(dn.n_value_heads / dn.n_key_heads);
        auto hf_head = [&](int j) { return (j % hk) * per_key + j / hk; };
        const std::vector<float> hf_state = read_fixture_f32(prefix + ".gdn0_state.f32");
        const size_t head = size_t(dn.key_dim) * dn.value_dim;
        std::vector<float> expected_state;  // (Hv, dk, dv) in the file's order
        for (int j = 0; j < int(dn.n_value_heads); j++)
            expected_state.insert(expected_state.end(), hf_state.begin() + hf_head(j) * head,
                                  hf_state.begin() + (hf_head(j) + 1) * head);
        std::vector<float> ours(cache.delta_state(0), cache.delta_state(0) + cache.ssm_size);
        check_close(ours, expected_state, kExact);
        // The window: transformers keeps the last 4 inputs (channels, 4), we the last 3
        // (3, channels); its v channels in its head order.
        const std::vector<float> hf_conv = read_fixture_f32(prefix + ".gdn0_conv.f32");
        const int channels = int(dn.channels()), qk = 2 * int(dn.qk_width());
        std::vector<float> expected_window;  // (3, channels)
        for (int i = 1; i < 4; i++)
            for (int c = 0; c < channels; c++) {
                const int v_head = (c - qk) / int(dn.value_dim);
                const int hf_c = c < qk ? c
                                        : qk + hf_head(v_head) * int(dn.value_dim) +
                                              (c - qk) % int(dn.value_dim);
                expected_window.push_back(hf_conv[size_t(hf_c) * 4 + i]);
            }
        std::vector<float> window(cache.conv_window(0), cache.conv_window(0) + cache.conv_size);
        check_close(window, expected_window, kExact);
    }
}

TEST_CASE("qwen35 on the CPU's 8-bit path: near transformers on the Q8_0 file's weights") {
    for (const Qwen35Case& c : qwen35_cases()) {
        if (!is_q8_0(c)) continue;
        CAPTURE(c.name);
        const LoadedModel& model = qwen35_model(c.model);
        const std::vector<int32_t> prompt = fixture_ids(c.name, ".ids.txt");
        const std::vector<float> reference =
            read_fixture_f32(kQwen35Fixtures + c.name + ".logits.f32");
        KVCache cache = make_kv_cache(model.config, int(model.config.context_length));
        // Float activations on the Q8_0 file are transformers' arithmetic on the same weights.
        RunState exact;
        forward(model.config, model.weights, prompt, cache, exact, LogitRows::LastOnly);
        check_close(exact.logits, reference, kExact);
        // The 8-bit path: layer 0 (a Gated DeltaNet layer) over every prompt, the logits after
        // one token (kEightBit). Its best two logits are 0.8 apart there, too close for the
        // greedy id to be compared.
        check_close(stream_after(model, prompt, 1, true), layer_output(model, c, 0), kEightBit);
        if (c.n_tokens > 1) continue;
        RunState state;
        state.int8_activations = true;
        cache.clear();
        forward(model.config, model.weights, prompt, cache, state, LogitRows::LastOnly);
        check_close(state.logits, reference, kEightBit);
    }
}

// ---- The recurrence over time ----

TEST_CASE("qwen35: one token at a time gives the logits of the whole prompt at once") {
    const std::vector<int32_t> prompt = fixture_ids("tiny-qwen35-wide.long", ".ids.txt");
    for (bool int8 : {false, true}) {
        CAPTURE(int8);
        const LoadedModel& model = qwen35_model(int8 ? "tiny-qwen35-wide-q8_0" : "tiny-qwen35-wide");
        RunState whole, single;
        whole.int8_activations = single.int8_activations = int8;
        KVCache at_once = make_kv_cache(model.config, 64), one_by_one = at_once;
        forward(model.config, model.weights, prompt, at_once, whole, LogitRows::LastOnly);
        for (int32_t id : prompt)
            forward(model.config, model.weights, {id}, one_by_one, single, LogitRows::LastOnly);
        // Step 15: the whole prompt's DeltaNet layers run the chunked rule, one token the
        // recurrence: the same numbers in exact arithmetic, summed in another order, as
        // transformers' are, so the exact path is held to kExact (measured: 3.5e-5 on the logits).
        // The 8-bit path rounds every block matrix's input to 8 bits, and a difference of 1e-6
        // moves a value across a rounding step now and then; these random weights amplify that
        // as they amplify the rounding itself (kEightBit's comment): measured 0.30 on the logits
        // and 0.010 on the states, held to kEightBit.
        check_close(single.logits, whole.logits, int8 ? kEightBit : kExact);
        check_close(one_by_one.ssm, at_once.ssm, int8 ? kEightBit : kExact);
    }
}

TEST_CASE("qwen35: 4096 generated tokens keep the logits finite and the states bounded") {
    const LoadedModel& model = qwen35_model("tiny-qwen35-wide");
    // The file says 1024 positions; RoPE and the cache take any number, and the state does not
    // know how many there were: the model is run here as if its context were 4100.
    ModelConfig config = model.config;
    config.context_length = 4100;
    KVCache cache = make_kv_cache(config, 4100);
    RunState state;
    std::vector<float> logits;
    int32_t next = next_token(config, model.weights, {1, 2, 3, 4}, cache, state, &logits);
    float largest_first_eighth = 0.0f, largest = 0.0f;
    bool finite = true;
    for (int i = 0; i < 4096; i++) {
        next = next_token(config, model.weights, {next}, cache, state, &logits);
        finite = finite && all_finite(logits);
        largest = std::max(largest, largest_abs(cache.ssm));
        if (i < 512) largest_first_eighth = largest;
    }
    CHECK(finite);
    CHECK(all_finite(cache.ssm));
    // Each step maps S to (I - beta k k^T) e^g S + beta k v^T with |k| = 1 and beta, e^g in
    // (0, 1): the old state shrinks, along k the most, before the new value comes in, so S
    // settles instead of growing with the positions. Here its largest entry is 4.4 over the first
    // 512 tokens and 4.7 over all 4096 (measured; the MESSAGE prints both); with e^-g for e^g, a
    // decay above 1, it overflows to inf within 512 steps (tried).
    MESSAGE("largest |S| over 4096 tokens: " << largest << ", over the first 512: "
                                             << largest_first_eighth);
    CHECK(largest < 20.0f);
}

// ---- The chat on a state that cannot go back ----

TEST_CASE("a qwen35 chat's second turn gives the ids of one prompt of the whole history") {
    const LoadedModel& model = qwen35_model("tiny-qwen35");
    // The tiny Qwen3 file has the same 3009-token vocabulary and Qwen3's template.
    const GgufFile qwen3 = open_gguf("models/tiny-qwen3.gguf");
    const Tokenizer tokenizer(read_vocabulary(qwen3.metadata));
    ChatTemplate chat_template = read_chat_template(qwen3.metadata);
    REQUIRE(chat_template.kind == TemplateKind::Qwen3Thinking);
    // --no-think: the generation prompt's empty <think></think> block leaves the next
    // rendering, which so parts from the cache's text inside the first reply's turn.
    chat_template.enable_thinking = false;

    KVCache cache = make_kv_cache(model.config, 512);
    RunState state;
    ChatModel chat = cpu_chat_model(model.config, model.weights, cache, state);
    CHECK_FALSE(chat.can_rewind);
    std::vector<std::vector<int32_t>> prefills, chosen;  // per turn: its prefill, its ids
    const NextTokenFn step = chat.step;
    chat.step = [&](const std::vector<int32_t>& ids, std::vector<float>* logits) {
        if (ids.size() > 1) {
            prefills.push_back(ids);
            chosen.emplace_back();
        }
        const int32_t id = step(ids, logits);
        chosen.back().push_back(id);
        return id;
    };
    SamplerSettings greedy;
    greedy.temperature = 0.0f;
    Sampler sampler = make_sampler(greedy);
    ChatSettings settings;
    settings.chat_template = chat_template;
    settings.max_new_tokens = 12;
    std::istringstream in("Hello there\nAnd then?\n");
    std::ostringstream out, log;
    run_chat(chat, tokenizer, sampler, settings, in, out, log);
    REQUIRE(prefills.size() == 2);

    // The reply as the chat keeps it: the chosen ids but a stop token.
    std::vector<int32_t> reply;
    for (int32_t id : chosen[0])
        if (!tokenizer.is_end_of_generation(id)) reply.push_back(id);
    const std::vector<ChatMessage> history = {
        {"user", "Hello there"}, {"assistant", tokenizer.decode(reply)}, {"user", "And then?"}};
    const std::vector<int32_t> whole = tokenizer.encode(render_chat(chat_template, history, true));
    // The second turn ran the whole kept history again, then its new text: one prompt.
    CHECK(prefills[1] == whole);
    KVCache fresh = make_kv_cache(model.config, 512);
    const std::vector<int32_t> expected =
        greedy_ids(cpu_step(model, fresh, state), whole, fresh.capacity, 12);
    const size_t n = std::min(expected.size(), chosen[1].size());
    CHECK(std::vector<int32_t>(chosen[1].begin(), chosen[1].begin() + n) ==
          std::vector<int32_t>(expected.begin(), expected.begin() + n));
}
