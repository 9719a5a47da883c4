// perplexity.h - how well the model predicts a text: `--perplexity FILE`.
//
// The text's tokens are one sequence, and every token after the first is predicted from all
// of those before it:
//   perplexity = exp(mean over p = 0 .. n-2 of -log softmax(logits[p])[ids[p + 1]])
// where logits[p] is the model's output at position p. A model that spread its probability
// evenly over k tokens at every step would score k; lower is better. Unlike greedy tokens,
// which change only when two logits swap places, it moves with every logit, so it measures
// what an approximation (step 11's 8-bit activations) costs; llama.cpp judges its
// quantizations by it too.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "forward_cpu.h"
#include "kv_cache.h"
#include "model_config.h"
#include "weights.h"

// Runs new_ids after the tokens it has already run (none at the first call) and returns their
// logits, (new_ids.size(), n_vocab) row-major, valid until the next call. The seam between the
// sum below and the device that computes the logits.
using ChunkLogitsFn = std::function<const float*(const std::vector<int32_t>& new_ids)>;

// Called after each chunk: the tokens run so far, of `n_total` (a long file takes a while).
using PerplexityProgressFn = std::function<void(int n_run, int n_total)>;

struct Perplexity {
    double value = 0.0;     // exp(mean_nll)
    double mean_nll = 0.0;  // mean negative log-likelihood per predicted token, in nats
    int n_predicted = 0;    // ids.size() - 1: the first token has nothing before it
};

// The perplexity of `ids` (see the top of this file), running them through `run` in chunks of
// up to chunk_tokens, so that only one chunk's logits exist at a time: 512 positions of a
// 151,936-token vocabulary are 300 MB. The last token is predicted but never run. Each
// log-softmax is computed in double, its largest logit subtracted first, and the terms are
// added in position order, so given the same logits the result does not depend on the chunk
// size or the thread count. Fails with one line on fewer than 2 ids, an id outside
// 0..n_vocab-1, chunk_tokens < 1, or logits that are not finite.
Perplexity perplexity(const ChunkLogitsFn& run, const std::vector<int32_t>& ids, int n_vocab,
                      int chunk_tokens, const PerplexityProgressFn& progress = nullptr);

// "perplexity: 8.4321 over 511 predicted tokens"
std::string format_perplexity(const Perplexity& result);

// The CPU's ChunkLogitsFn: forward() with LogitRows::All on `cache`, which must start empty and
// have room for every token run (the caller truncates the text to its context). Keeps
// references to all four arguments.
ChunkLogitsFn cpu_chunk_logits(const ModelConfig& config, const Weights& weights, KVCache& cache,
                               RunState& state);
