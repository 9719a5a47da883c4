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
//
// Step 14, the hybrid cache: only the attention layers keep keys and values. A Gated DeltaNet
// layer keeps a state of fixed size instead, whatever the number of positions: its convolution's
// window (the last conv_kernel - 1 inputs) and, per value head, the matrix S (dk, dv) that the
// delta rule updates, in fp32 (transformers and llama.cpp keep it in fp32 too: rounding it each
// token would add up). A state holds every position it has run, mixed together, so it cannot
// forget the last ones: such a cache goes back only to the start (keep_positions).
#pragma once

#include <cstddef>
#include <vector>

#include "model_config.h"

struct KVCache {
    int n_layers = 0;
    int capacity = 0;      // positions it can hold: the context limit
    int kv_dim = 0;        // n_kv_heads * head_dim
    int n_filled = 0;      // positions 0..n_filled-1 hold their keys and values
    std::vector<float> k;  // (n_attention_layers, capacity, kv_dim)
    std::vector<float> v;  // (n_attention_layers, capacity, kv_dim)
    // Step 14: layer l's block of k and v, or of the recurrent state, by its kind (-1: none).
    std::vector<int> kv_block;     // (n_layers)
    std::vector<int> state_block;  // (n_layers)
    size_t conv_size = 0;          // (conv_kernel - 1) * channels floats a DeltaNet layer
    size_t ssm_size = 0;           // n_value_heads * dk * dv floats a DeltaNet layer
    std::vector<float> conv;       // (n_delta_net_layers, conv_kernel - 1, channels)
    std::vector<float> ssm;        // (n_delta_net_layers, n_value_heads, dk, dv)

    float* keys(int layer) { return k.data() + size_t(kv_block[layer]) * capacity * kv_dim; }
    float* values(int layer) { return v.data() + size_t(kv_block[layer]) * capacity * kv_dim; }
    float* conv_window(int layer) { return conv.data() + size_t(state_block[layer]) * conv_size; }
    float* delta_state(int layer) { return ssm.data() + size_t(state_block[layer]) * ssm_size; }
    // Forgets every position (a new conversation); the memory is kept. Step 14: the recurrent
    // states go back to zeros, the state before any token.
    void clear();
    // Step 14: whether positions can be forgotten from the end (no recurrent state).
    bool can_rewind() const { return ssm.empty(); }
};

// Forgets every position from n on (nothing when n_filled <= n). Step 14: a cache with recurrent
// states goes back only to 0; any other n is refused with one line.
void keep_positions(KVCache& cache, int n);

// Bytes a cache of `capacity` positions takes for keys and values: 2 (K and V) x the attention
// layers x capacity x kv_dim x 4.
size_t kv_cache_bytes(const ModelConfig& config, int capacity);

// Step 14: bytes of the recurrent states, the same for every context length (0 without
// DeltaNet layers).
size_t recurrent_state_bytes(const ModelConfig& config);

// Fails with one line unless capacity is between 1 and the model's context length.
void check_kv_cache_capacity(const ModelConfig& config, int capacity);

// An empty cache for up to `capacity` positions. Fails with one line if capacity is not
// between 1 and the model's context length.
KVCache make_kv_cache(const ModelConfig& config, int capacity);
