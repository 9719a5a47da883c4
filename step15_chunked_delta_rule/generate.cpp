// generate.cpp - the decoding loop: one prefill, then one decode pass per token.
#include "generate.h"

#include "error.h"
#include "ops_cpu.h"
#include "timer.h"

int32_t next_token(const ModelConfig& config, const Weights& weights,
                   const std::vector<int32_t>& new_ids, KVCache& cache, RunState& state,
                   std::vector<float>* logits) {
    forward(config, weights, new_ids, cache, state, LogitRows::LastOnly);
    if (logits) *logits = state.logits;
    return argmax(state.logits.data(), weights.n_vocab);
}

GenerationStats generate(const ModelConfig& config, const Weights& weights,
                         const std::vector<int32_t>& prompt, int max_new_tokens, KVCache& cache,
                         RunState& state, Sampler& sampler, const TokenCallback& on_token,
                         std::vector<float>* prompt_logits) {
    NextTokenFn on_cpu = [&](const std::vector<int32_t>& new_ids, std::vector<float>* logits) {
        return next_token(config, weights, new_ids, cache, state, logits);
    };
    return generate(on_cpu, prompt, max_new_tokens, cache.capacity - cache.n_filled, sampler,
                    on_token, prompt_logits);
}

GenerationStats generate(const NextTokenFn& model_step, const std::vector<int32_t>& prompt,
                         int max_new_tokens, int free_positions, Sampler& sampler,
                         const TokenCallback& on_token, std::vector<float>* prompt_logits) {
    if (prompt.empty()) fail("the prompt is empty: there is nothing to continue");
    if (prompt.size() > size_t(free_positions))
        fail("the prompt has %zu tokens, more than the %d positions left in the context",
             prompt.size(), free_positions);

    GenerationStats stats;
    stats.n_prompt = int(prompt.size());
    for (int32_t id : prompt) remember_token(sampler, id);
    std::vector<float> logits;  // (n_vocab) of the last position run
    // At temperature 0 the sampler would take the argmax, which the model step returns anyway:
    // then the logits are not asked for, and the GPU's stay on the device (step 10).
    const bool greedy = sampler.settings.temperature <= 0.0f;

    Timer timer;
    int32_t best = model_step(prompt, greedy && !prompt_logits ? nullptr : &logits);  // argmax
    stats.prompt_ms = timer.elapsed_ms();
    if (prompt_logits) *prompt_logits = logits;

    // Every accepted token takes a position: the newest one enters the cache only when the
    // next pass runs it, so the sequence may fill the cache's last position.
    int positions_left = free_positions - stats.n_prompt;
    int32_t newest = -1;
    timer.reset();
    while (stats.n_generated < max_new_tokens) {
        if (positions_left == 0) {
            stats.context_full = true;
            break;
        }
        if (stats.n_generated > 0) {
            best = model_step({newest}, greedy ? nullptr : &logits);
            stats.n_passes++;
        }
        const int32_t next =
            greedy ? best : sample_token(sampler, logits.data(), int(logits.size()));
        if (!on_token(next)) break;
        remember_token(sampler, next);
        newest = next;
        positions_left--;
        stats.n_generated++;
    }
    stats.generate_ms = timer.elapsed_ms();
    // Every early stop (a stop token, a full cache) leaves the loop below the limit.
    stats.reached_max_new_tokens = max_new_tokens > 0 && stats.n_generated == max_new_tokens;
    return stats;
}

std::string format_stats(const GenerationStats& stats) {
    std::string line = strprintf("prompt: %d tokens in %.1f ms (%.1f tokens/s)", stats.n_prompt,
                                 stats.prompt_ms, 1000.0 * stats.n_prompt / stats.prompt_ms);
    if (stats.n_passes > 0)
        line += strprintf(" | generated: %d tokens, %.1f ms/token (%.2f tokens/s)",
                          stats.n_generated, stats.generate_ms / stats.n_passes,
                          1000.0 * stats.n_passes / stats.generate_ms);
    return line;
}

std::string stopped_by_limit_notice(const GenerationStats& stats) {
    if (!stats.reached_max_new_tokens) return "";
    return strprintf("[stopped at -n %d tokens; raise -n for more]", stats.n_generated);
}

static Sampler greedy_sampler() {
    SamplerSettings settings;
    settings.temperature = 0.0f;
    return make_sampler(settings);
}

GenerationStats generate_greedy(const ModelConfig& config, const Weights& weights,
                                const std::vector<int32_t>& prompt, int max_new_tokens,
                                KVCache& cache, RunState& state, const TokenCallback& on_token,
                                std::vector<float>* prompt_logits) {
    Sampler greedy = greedy_sampler();
    return generate(config, weights, prompt, max_new_tokens, cache, state, greedy, on_token,
                    prompt_logits);
}

GenerationStats generate_greedy(const NextTokenFn& model_step, const std::vector<int32_t>& prompt,
                                int max_new_tokens, int free_positions,
                                const TokenCallback& on_token, std::vector<float>* prompt_logits) {
    Sampler greedy = greedy_sampler();
    return generate(model_step, prompt, max_new_tokens, free_positions, greedy, on_token,
                    prompt_logits);
}
