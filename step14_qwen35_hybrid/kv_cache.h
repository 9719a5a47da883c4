// kv_cache.h - the keys and values of every position seen so far, kept between forward passes.
//
// Attention at position p needs the keys and values of positions 0..p. They depend only on the
// tokens up to there, never on what comes later, so once computed they can be kept: the prompt
// is run once (prefill) and each new token then costs one position's worth of work (decode)
// instead of a pass over the whole sequence. Queries are not kept: only the newest position
// asks a question.
//
// Layout: for each layer, one (capacity, n_kv_heads * head_dim) block of keys and one of
// values, position-major, so that the rows attention reads for one layer are contiguous and a
// new position is one row appended to each. Stored in F32, the type the forward pass computes
// them in, so a cached pass gives the same numbers as recomputing.
#pragma once

#include <cstddef>
#include <vector>

#include "model_config.h"

struct KVCache {
    int n_layers = 0;
    int capacity = 0;      // positions it can hold: the context limit
    int kv_dim = 0;        // n_kv_heads * head_dim
    int n_filled = 0;      // positions 0..n_filled-1 hold their keys and values
    std::vector<float> k;  // (n_layers, capacity, kv_dim)
    std::vector<float> v;  // (n_layers, capacity, kv_dim)

    float* keys(int layer) { return k.data() + size_t(layer) * capacity * kv_dim; }
    float* values(int layer) { return v.data() + size_t(layer) * capacity * kv_dim; }
    // Forgets every position (a new conversation); the memory is kept.
    void clear() { n_filled = 0; }
};

// Bytes a cache of `capacity` positions takes: 2 (K and V) x n_layers x capacity x kv_dim x 4.
size_t kv_cache_bytes(const ModelConfig& config, int capacity);

// Fails with one line unless capacity is between 1 and the model's context length.
void check_kv_cache_capacity(const ModelConfig& config, int capacity);

// An empty cache for up to `capacity` positions. Fails with one line if capacity is not
// between 1 and the model's context length.
KVCache make_kv_cache(const ModelConfig& config, int capacity);
