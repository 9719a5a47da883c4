// perplexity.cpp - the sum of negative log-likelihoods over a text, one chunk at a time.
#include "perplexity.h"

#include <algorithm>
#include <cmath>

#include "error.h"

// -log softmax(logits)[target] = log(sum_j exp(logits[j] - top)) + (top - logits[target]),
// top = max_j logits[j]: every exponent is <= 0, so nothing overflows, and the largest term is
// exactly 1, so the sum never underflows to 0. In double, since a float sum of 151,936 terms
// would lose the digits that a comparison of two paths' perplexities looks at.
static double negative_log_likelihood(const float* logits, int n_vocab, int32_t target) {
    const double top = *std::max_element(logits, logits + n_vocab);
    double sum = 0.0;
    for (int j = 0; j < n_vocab; j++) sum += std::exp(double(logits[j]) - top);
    return std::log(sum) + (top - double(logits[target]));
}

Perplexity perplexity(const ChunkLogitsFn& run, const std::vector<int32_t>& ids, int n_vocab,
                      int chunk_tokens, const PerplexityProgressFn& progress) {
    if (ids.size() < 2)
        fail("perplexity needs at least 2 tokens (the first is only context), the text has %zu",
             ids.size());
    if (chunk_tokens < 1) fail("perplexity: chunk size %d must be at least 1", chunk_tokens);
    for (size_t p = 0; p < ids.size(); p++)
        if (ids[p] < 0 || ids[p] >= n_vocab)
            fail("token id %d at position %zu is outside the vocabulary (0..%d)", ids[p], p,
                 n_vocab - 1);

    const int n_run = int(ids.size()) - 1;  // the positions whose next token is known
    std::vector<double> nll(n_run);         // (n_run) per position, summed in order below
    for (int start = 0; start < n_run; start += chunk_tokens) {
        const int n = std::min(chunk_tokens, n_run - start);
        const std::vector<int32_t> chunk(ids.begin() + start, ids.begin() + start + n);
        const float* logits = run(chunk);  // (n, n_vocab)
        // Positions are independent; each thread writes its own entries of nll, so the total
        // does not depend on how many threads there are.
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++)
            nll[start + i] =
                negative_log_likelihood(logits + size_t(i) * n_vocab, n_vocab, ids[start + i + 1]);
        for (int i = 0; i < n; i++)
            if (!std::isfinite(nll[start + i]))
                fail("perplexity: the logits at position %d are not all finite", start + i);
        if (progress) progress(start + n, n_run);
    }

    double total = 0.0;
    for (double value : nll) total += value;
    Perplexity result;
    result.n_predicted = n_run;
    result.mean_nll = total / n_run;
    result.value = std::exp(result.mean_nll);
    return result;
}

std::string format_perplexity(const Perplexity& result) {
    return strprintf("perplexity: %.4f over %d predicted tokens", result.value, result.n_predicted);
}

ChunkLogitsFn cpu_chunk_logits(const ModelConfig& config, const Weights& weights, KVCache& cache,
                               RunState& state) {
    return [&config, &weights, &cache, &state](const std::vector<int32_t>& new_ids) {
        forward(config, weights, new_ids, cache, state, LogitRows::All);
        return static_cast<const float*>(state.logits.data());
    };
}
