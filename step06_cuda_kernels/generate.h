// generate.h - greedy decoding: run the model, take the most likely next token, repeat.
//
// Without a KV cache every new token re-runs the whole sequence, so the cost of token n grows
// with n. That is the price of the simplest possible reference; step07 removes it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "forward_cpu.h"

// Receives each generated id as soon as it is chosen; returning false stops generation there
// (e.g. at <|im_end|>), and that id is neither counted nor added to the sequence.
using TokenCallback = std::function<bool(int32_t id)>;

// One model step: a forward pass over the whole sequence `ids` that returns the most likely
// next token and, when `logits` is not null, stores the last position's n_vocab logits there.
// This is the seam between the greedy loop and the hardware: next_token() below runs it on
// the CPU, gpu::next_token() (forward_cuda.h) on the GPU.
using NextTokenFn =
    std::function<int32_t(const std::vector<int32_t>& ids, std::vector<float>* logits)>;

// The CPU's model step: forward() over ids, then argmax() of the last position.
int32_t next_token(const ModelConfig& config, const Weights& weights,
                   const std::vector<int32_t>& ids, RunState& state, std::vector<float>* logits);

struct GenerationStats {
    int n_prompt = 0;          // tokens in the prompt
    int n_generated = 0;       // tokens chosen after it and accepted (a stop token is not)
    int n_passes = 0;          // forward passes after the prompt's (the first token needs none),
                               // also the one that chose a stop token
    double prompt_ms = 0.0;    // the forward pass over the prompt
    double generate_ms = 0.0;  // the n_passes forward passes after it
};

// Generates up to `max_new_tokens` tokens after `prompt`, never letting the sequence grow
// past `context_limit` tokens. If `prompt_logits` is given it receives the n_vocab logits of
// the last prompt position. Fails on an empty prompt or one longer than the context limit.
GenerationStats generate_greedy(const ModelConfig& config, const Weights& weights,
                                const std::vector<int32_t>& prompt, int max_new_tokens,
                                int context_limit, RunState& state, const TokenCallback& on_token,
                                std::vector<float>* prompt_logits = nullptr);

// The same loop over any model step, e.g. the GPU's.
GenerationStats generate_greedy(const NextTokenFn& model_step, const std::vector<int32_t>& prompt,
                                int max_new_tokens, int context_limit,
                                const TokenCallback& on_token,
                                std::vector<float>* prompt_logits = nullptr);
