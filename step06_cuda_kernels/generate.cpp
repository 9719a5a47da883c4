// generate.cpp - the greedy loop.
#include "generate.h"

#include "error.h"
#include "ops_cpu.h"
#include "timer.h"

int32_t next_token(const ModelConfig& config, const Weights& weights,
                   const std::vector<int32_t>& ids, RunState& state, std::vector<float>* logits) {
    forward(config, weights, ids, state, LogitRows::LastOnly);
    if (logits) *logits = state.logits;
    return argmax(state.logits.data(), weights.n_vocab);
}

GenerationStats generate_greedy(const ModelConfig& config, const Weights& weights,
                                const std::vector<int32_t>& prompt, int max_new_tokens,
                                int context_limit, RunState& state, const TokenCallback& on_token,
                                std::vector<float>* prompt_logits) {
    NextTokenFn on_cpu = [&](const std::vector<int32_t>& ids, std::vector<float>* logits) {
        return next_token(config, weights, ids, state, logits);
    };
    return generate_greedy(on_cpu, prompt, max_new_tokens, context_limit, on_token, prompt_logits);
}

GenerationStats generate_greedy(const NextTokenFn& model_step, const std::vector<int32_t>& prompt,
                                int max_new_tokens, int context_limit,
                                const TokenCallback& on_token, std::vector<float>* prompt_logits) {
    if (prompt.empty()) fail("the prompt is empty: there is nothing to continue");
    if (prompt.size() > size_t(context_limit))
        fail("the prompt has %zu tokens, more than the context limit of %d", prompt.size(),
             context_limit);

    GenerationStats stats;
    stats.n_prompt = int(prompt.size());
    std::vector<int32_t> tokens = prompt;  // (n_prompt + n_generated) the whole sequence

    Timer timer;
    int32_t next = model_step(tokens, prompt_logits);
    stats.prompt_ms = timer.elapsed_ms();

    timer.reset();
    while (stats.n_generated < max_new_tokens && int(tokens.size()) < context_limit) {
        if (stats.n_generated > 0) {
            next = model_step(tokens, nullptr);
            stats.n_passes++;
        }
        if (!on_token(next)) break;
        tokens.push_back(next);
        stats.n_generated++;
    }
    stats.generate_ms = timer.elapsed_ms();
    return stats;
}
