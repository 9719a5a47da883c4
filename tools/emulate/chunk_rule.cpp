// chunk_rule.cpp - step 15's chunk kernels, run lane by lane on the CPU (lanes.h), against step
// 14's recurrence on random inputs made as test_chunked_delta_rule_cuda.cpp makes them: prompts
// of 1 to 200 tokens, in one call and in two, within kGpuChunkBound (test_delta_rule_inputs.h).
// Usage: chunk_rule [MAX_TOKENS [check]]   (1000 takes many minutes)
// `check`, as `make test` runs it (check.sh): mixed decays only, a line for each failed run only,
// and the last line counts the runs as the test binaries count their checks.
#include "chunk_launch.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "test_delta_rule_inputs.h"

using namespace delta_rule_checks;

// How many values of `got` are past kGpuChunkBound, with test_tolerance.h's report (the first
// five and the worst) printed; `largest` keeps the largest difference seen.
static int count_outside(const std::vector<float>& got, const std::vector<float>& expected,
                         const char* what, double& largest) {
    std::string report;
    const int outside = count_mismatches(got, expected, kGpuChunkBound, report);
    if (outside > 0) printf("  %s:\n%s", what, report.c_str());
    largest = std::max(largest, largest_difference(got, expected));
    return outside;
}

int main(int argc, char** argv) {
    const int max_tokens = argc > 1 ? atoi(argv[1]) : 200;
    const bool check = argc > 2 && std::string(argv[2]) == "check";
    const RuleShape shapes[] = {{2, 2, 128, 128}, {2, 4, 128, 128}, {1, 3, 32, 48}};
    int failed = 0, runs = 0;
    double out_gap = 0, state_gap = 0;
    for (int n_tokens : {1, 63, 64, 65, 130, 200, 1000}) {
        if (n_tokens > max_tokens) continue;
        for (const RuleShape& s : shapes)
            for (Decays d : {Decays::NearZero, Decays::NearOne, Decays::Mixed}) {
                if (check && d != Decays::Mixed) continue;
                const RuleInputs in = rule_inputs(s, n_tokens, d, 80);
                const RuleResult expected = recurrent(s, in, n_tokens);
                for (int split : {n_tokens, n_tokens / 3}) {  // one call, or two
                    std::vector<float> out(in.v.size(), NAN), state = in.state;
                    const int64_t key_row = int64_t(s.n_key_heads) * s.dk;
                    const int64_t value_row = int64_t(s.n_value_heads) * s.dv;
                    const int pieces[2][2] = {{0, split}, {split, n_tokens - split}};
                    for (const auto& piece : pieces) {
                        const int first = piece[0], count = piece[1];
                        if (count == 0) continue;
                        gpu::emulated_chunked_rule(
                            out.data() + first * value_row, state.data(),
                            in.q.data() + first * key_row, in.k.data() + first * key_row,
                            in.v.data() + first * value_row, in.g.data() + first * s.n_value_heads,
                            in.beta.data() + first * s.n_value_heads, count, s.n_key_heads,
                            s.n_value_heads, s.dk, s.dv);
                    }
                    const int outside = count_outside(out, expected.out, "out", out_gap) +
                                        count_outside(state, expected.state, "state", state_gap);
                    if (!check || outside)
                        printf("%s %5d tokens (calls of %d and %d), heads %d/%d, dk %d, dv %d, decays %s\n",
                               outside ? "FAIL" : "ok  ", n_tokens, split, n_tokens - split,
                               s.n_key_heads, s.n_value_heads, s.dk, s.dv, decays_name(d).c_str());
                    fflush(stdout);
                    failed += outside != 0;
                    runs++;
                }
            }
    }
    printf("largest |emulated - recurrent|: outputs %.2e, states %.2e\n", out_gap, state_gap);
    printf("emulated_chunk_kernels: %d passed, %d failed, 0 skipped\n", runs - failed, failed);
    return failed != 0;
}
