// sampler.h - choosing the next token from the logits: penalties, filters, then a seeded draw.
//
// Greedy decoding always takes the most likely token, so it repeats itself and gives one answer
// per prompt. Sampling draws the token at random from the model's distribution instead, after
// reshaping it. The stages run in this order (HF transformers' order, the one Qwen2.5's
// generation_config.json was tuned with):
//
//   1. repetition penalty  each distinct token among the last repeat_last_n of the sequence:
//                          a positive logit is divided by the penalty, a negative one multiplied
//   2. temperature         logits / T: T < 1 sharpens the distribution, T > 1 flattens it
//   3. top-k               keep the k most likely tokens
//   4. top-p               keep the smallest most-likely-first set whose probability is >= p
//   5. min-p               keep the tokens whose probability is >= min_p x the best one's
//   6. draw                one uniform number picks a token in proportion to what is left
//
// The order matters where a stage looks at probabilities: top-p and min-p see the distribution
// after temperature, and top-p sees it renormalized over the top k. llama.cpp's default chain
// applies temperature after the filters instead (its --samplers flag reorders them).
//
// Temperature 0 means greedy: the argmax of the model's own logits, with no penalty and no
// draw, so `--temp 0` is step07's choice token for token.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

// Defaults are Qwen2.5-Instruct's generation_config.json; the names are llama.cpp's flags.
struct SamplerSettings {
    float temperature = 0.7f;      // --temp; 0 is greedy
    int top_k = 20;                // --top-k; 0 keeps every token
    float top_p = 0.8f;            // --top-p; 1 keeps every token
    float min_p = 0.0f;            // --min-p; 0 keeps every token
    float repeat_penalty = 1.05f;  // --repeat-penalty; 1 changes nothing
    int repeat_last_n = 64;        // --repeat-last-n: how far back the penalty looks
    uint64_t seed = 0;             // --seed
};

// A token still in the running after the filters.
struct Candidate {
    int32_t id;
    float logit;         // after the penalty and the temperature
    double probability;  // softmax over the candidates kept so far
};

struct Sampler {
    SamplerSettings settings;
    std::mt19937_64 generator;   // its output sequence for a seed is fixed by the C++ standard
    std::deque<int32_t> recent;  // the last repeat_last_n tokens of the sequence, oldest first
    std::vector<float> logits;   // (n_vocab) the penalized copy of the model's logits
    std::vector<Candidate> candidates;  // most likely first
};

Sampler make_sampler(const SamplerSettings& settings);

// Tells the sampler that `id` is now part of the sequence (prompt and chosen tokens alike), for
// the repetition penalty.
void remember_token(Sampler& sampler, int32_t id);

// Picks the next token from the n_vocab logits of the last position.
int32_t sample_token(Sampler& sampler, const float* logits, int n_vocab);

// The stages, in the order sample_token runs them. Candidates must be sorted most likely first,
// as sorted_candidates leaves them; each filter keeps at least the first one.
void apply_repetition_penalty(std::vector<float>& logits, const std::deque<int32_t>& recent,
                              float penalty);
std::vector<Candidate> sorted_candidates(const std::vector<float>& logits, float temperature,
                                         int top_k);             // applies temperature and top-k
void compute_probabilities(std::vector<Candidate>& candidates);  // softmax over the candidates
void keep_top_p(std::vector<Candidate>& candidates, float top_p);
void keep_min_p(std::vector<Candidate>& candidates, float min_p);
int32_t draw(const std::vector<Candidate>& candidates, double uniform);  // uniform in [0, 1)

// A uniform double in [0, 1) from the top 53 bits of one 64-bit output: the same number on
// every platform, which std::uniform_real_distribution does not promise.
double uniform_unit(std::mt19937_64& generator);
