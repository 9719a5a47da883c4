// generate.h - decoding: run the model, let a Sampler choose the next token, repeat.
//
// With the KV cache, the prompt runs once (prefill) and every new token then costs one
// position's pass (decode), whose only growing part is attention over the cached positions.
// Greedy decoding is the sampler at temperature 0.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "forward_cpu.h"
#include "kv_cache.h"
#include "sampler.h"

// Receives each generated id as soon as it is chosen; returning false stops generation there
// (e.g. at <|im_end|>), and that id is neither counted nor added to the sequence.
using TokenCallback = std::function<bool(int32_t id)>;

// One model step: a forward pass over `new_ids`, the tokens that follow the positions already
// in the step's KV cache (which they join), returning the most likely next token and, when
// `logits` is not null, storing the last position's n_vocab logits there. This is the seam
// between the greedy loop and the hardware: next_token() below runs it on the CPU,
// gpu::next_token() (forward_cuda.h) on the GPU, each with its own cache.
using NextTokenFn =
    std::function<int32_t(const std::vector<int32_t>& new_ids, std::vector<float>* logits)>;

// The CPU's model step: forward() over new_ids on the cache, then argmax() of the last position.
int32_t next_token(const ModelConfig& config, const Weights& weights,
                   const std::vector<int32_t>& new_ids, KVCache& cache, RunState& state,
                   std::vector<float>* logits);

struct GenerationStats {
    int n_prompt = 0;           // tokens in the prompt
    int n_generated = 0;        // tokens chosen after it and accepted (a stop token is not)
    int n_passes = 0;           // one-token passes after the prompt's (the first token needs
                                // none), also the one that chose a stop token
    double prompt_ms = 0.0;     // the prefill: one pass over the prompt
    double generate_ms = 0.0;   // the n_passes decode passes after it
    bool context_full = false;  // stopped because no position was left for another token
    bool reached_max_new_tokens = false;  // stopped after max_new_tokens, maybe mid-sentence
};

// The timing line every generation prints, -p and -i alike:
//   "prompt: 29 tokens in 933.6 ms (31.1 tokens/s) | generated: 4 tokens, 290.9 ms/token
//   (3.44 tokens/s)"
// The generated part is left out when no decode pass ran (a single token needs none).
std::string format_stats(const GenerationStats& stats);

// The line that says a generation was cut short by -n, for the log, or "" when it was not:
//   "[stopped at -n 128 tokens; raise -n for more]"
std::string stopped_by_limit_notice(const GenerationStats& stats);

// Generates up to `max_new_tokens` tokens after `prompt`, which goes into the cache after the
// positions it already holds (none for a fresh cache); `sampler` chooses each one from the last
// position's logits and is told every prompt token and accepted token, for its repetition
// penalty. Stops early when the cache is full or on_token refuses a token. If `prompt_logits`
// is given it receives the n_vocab logits of the last prompt position. Fails on an empty
// prompt or one that does not fit in the cache. At temperature 0 the model steps are not asked
// for their logits (only for the prompt's, when prompt_logits wants them): the token is their
// argmax, which every model step returns.
GenerationStats generate(const ModelConfig& config, const Weights& weights,
                         const std::vector<int32_t>& prompt, int max_new_tokens, KVCache& cache,
                         RunState& state, Sampler& sampler, const TokenCallback& on_token,
                         std::vector<float>* prompt_logits = nullptr);

// The same loop over any model step, e.g. the GPU's, whose cache has `free_positions` left.
GenerationStats generate(const NextTokenFn& model_step, const std::vector<int32_t>& prompt,
                         int max_new_tokens, int free_positions, Sampler& sampler,
                         const TokenCallback& on_token,
                         std::vector<float>* prompt_logits = nullptr);

// generate() at temperature 0: step07's greedy decoding.
GenerationStats generate_greedy(const ModelConfig& config, const Weights& weights,
                                const std::vector<int32_t>& prompt, int max_new_tokens,
                                KVCache& cache, RunState& state, const TokenCallback& on_token,
                                std::vector<float>* prompt_logits = nullptr);
GenerationStats generate_greedy(const NextTokenFn& model_step, const std::vector<int32_t>& prompt,
                                int max_new_tokens, int free_positions,
                                const TokenCallback& on_token,
                                std::vector<float>* prompt_logits = nullptr);
