// chunk_rule_in_model.cpp - a Qwen3.5 file's prompt through step 15's CPU forward pass three
// times: its DeltaNet layers with the CPU's chunked rule, with the recurrence, and with the GPU's
// chunk kernels run lane by lane (lanes.h); then every position's logits compared, as
// test_qwen35_forward_cuda.cpp compares them (kAgainstCpu, kChunkedPrompt).
// run.sh builds forward_cpu.cpp with its call of chunked_gated_delta_rule renamed to
// chunked_rule_under_test, defined here.
// Usage: chunk_rule_in_model MODEL.gguf IDS.txt
#include "chunk_launch.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "forward_cpu.h"
#include "gguf_reader.h"
#include "kv_cache.h"
#include "model_config.h"
#include "test_delta_rule_inputs.h"
#include "test_tolerance.h"
#include "weights.h"

enum class Rule { CpuChunked, Recurrent, Emulated };
static Rule g_rule = Rule::CpuChunked;
static int g_layer = 0;

// For each value head of each token: |emulated - recurrent| over the size (rms) of the
// recurrent output, the largest printed per layer: the gated norm after the rule divides by it.
static void report_layer(const std::vector<float>& emulated, const std::vector<float>& recurrent,
                         int n_tokens, int n_value_heads, int dv) {
    double worst = 0, worst_rms = 0;
    int worst_token = 0;
    for (int t = 0; t < n_tokens; t++)
        for (int h = 0; h < n_value_heads; h++) {
            double squares = 0, gap = 0;
            for (int j = 0; j < dv; j++) {
                const size_t at = (size_t(t) * n_value_heads + h) * dv + j;
                squares += double(recurrent[at]) * recurrent[at];
                gap = std::max(gap, std::fabs(double(emulated[at]) - recurrent[at]));
            }
            const double rms = std::sqrt(squares / dv);
            if (rms > 0 && gap / rms > worst) {
                worst = gap / rms;
                worst_rms = rms;
                worst_token = t;
            }
        }
    printf("  DeltaNet layer %d: largest |emulated - recurrent| / rms %.2e (token %d, rms %.2e)\n",
           g_layer, worst, worst_token, worst_rms);
}

void chunked_rule_under_test(float* out, float* state, const float* q, const float* k,
                             const float* v, const float* g, const float* beta, int n_tokens,
                             int n_key_heads, int n_value_heads, int dk, int dv, int chunk_size) {
    if (g_rule == Rule::CpuChunked)
        chunked_gated_delta_rule(out, state, q, k, v, g, beta, n_tokens, n_key_heads,
                                 n_value_heads, dk, dv, chunk_size);
    if (g_rule == Rule::Recurrent)
        gated_delta_rule(out, state, q, k, v, g, beta, n_tokens, n_key_heads, n_value_heads, dk,
                         dv);
    if (g_rule != Rule::Emulated) return;
    const size_t outputs = size_t(n_tokens) * n_value_heads * dv;
    std::vector<float> recurrent(outputs), recurrent_state(state, state + size_t(n_value_heads) * dk * dv);
    gated_delta_rule(recurrent.data(), recurrent_state.data(), q, k, v, g, beta, n_tokens,
                     n_key_heads, n_value_heads, dk, dv);
    std::fill(out, out + outputs, NAN);
    gpu::emulated_chunked_rule(out, state, q, k, v, g, beta, n_tokens, n_key_heads, n_value_heads,
                               dk, dv);
    report_layer(std::vector<float>(out, out + outputs), recurrent, n_tokens, n_value_heads, dv);
    g_layer++;
}

static std::vector<float> prompt_logits(const ModelConfig& config, const Weights& weights,
                                        const std::vector<int32_t>& ids, Rule rule) {
    g_rule = rule;
    KVCache cache = make_kv_cache(config, int(ids.size()));
    RunState state;
    forward(config, weights, ids, cache, state, LogitRows::All);
    return state.logits;
}

// The largest difference, and the values past the tolerance with test_tolerance.h's report:
// (position, token id) of the first five and of the worst.
static void compare(const char* what, const std::vector<float>& got,
                    const std::vector<float>& expected, int n_vocab, Tolerance tolerance) {
    std::string report;
    const int outside = count_mismatches(got, expected, tolerance, report, n_vocab);
    printf("%s largest %.2e; %d past %.0e + %.0e |x|\n%s", what,
           delta_rule_checks::largest_difference(got, expected), outside, tolerance.abs,
           tolerance.rel, report.c_str());
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: chunk_rule_in_model MODEL.gguf IDS.txt\n");
        return 1;
    }
    GgufFile file = open_gguf(argv[1]);
    const ModelConfig config = read_model_config(file.metadata);
    const Weights weights = load_weights(file, config);
    std::vector<int32_t> ids;
    std::ifstream in(argv[2]);
    for (int32_t id; in >> id;) ids.push_back(id);
    const int n_vocab = weights.n_vocab;
    const std::vector<float> cpu = prompt_logits(config, weights, ids, Rule::CpuChunked);
    const std::vector<float> recurrent = prompt_logits(config, weights, ids, Rule::Recurrent);
    printf("%s, %zu tokens; the emulated GPU chunk kernels%s:\n", argv[1], ids.size(),
           emu::g_truncate ? " (sums cut as the tensor cores cut them)" : "");
    const std::vector<float> emulated = prompt_logits(config, weights, ids, Rule::Emulated);
    // test_qwen35_forward_cuda.cpp's kAgainstCpu and kChunkedPrompt.
    for (Tolerance tolerance : {Tolerance{5e-4, 1e-4}, Tolerance{3e-3, 1e-4}}) {
        compare("cpu recurrent vs cpu chunked:", recurrent, cpu, n_vocab, tolerance);
        compare("emulated gpu vs cpu chunked:", emulated, cpu, n_vocab, tolerance);
        compare("emulated gpu vs cpu recurrent:", emulated, recurrent, n_vocab, tolerance);
    }
}
