// generate.cpp - the greedy loop.
#include "generate.h"

#include "error.h"
#include "ops_cpu.h"
#include "timer.h"

GenerationStats generate_greedy(const ModelConfig& config, const Weights& weights,
                                const std::vector<int32_t>& prompt, int max_new_tokens,
                                int context_limit, RunState& state, const TokenCallback& on_token,
                                std::vector<float>* prompt_logits) {
    if (prompt.empty()) fail("the prompt is empty: there is nothing to continue");
    if (prompt.size() > size_t(context_limit))
        fail("the prompt has %zu tokens, more than the context limit of %d", prompt.size(),
             context_limit);

    GenerationStats stats;
    stats.n_prompt = int(prompt.size());
    std::vector<int32_t> tokens = prompt;  // (n_prompt + n_generated) the whole sequence

    Timer timer;
    forward(config, weights, tokens, state, LogitRows::LastOnly);
    stats.prompt_ms = timer.elapsed_ms();
    if (prompt_logits) *prompt_logits = state.logits;

    timer.reset();
    while (stats.n_generated < max_new_tokens && int(tokens.size()) < context_limit) {
        if (stats.n_generated > 0) {
            forward(config, weights, tokens, state, LogitRows::LastOnly);
            stats.n_passes++;
        }
        int32_t next = argmax(state.logits.data(), weights.n_vocab);
        if (!on_token(next)) break;
        tokens.push_back(next);
        stats.n_generated++;
    }
    stats.generate_ms = timer.elapsed_ms();
    return stats;
}
