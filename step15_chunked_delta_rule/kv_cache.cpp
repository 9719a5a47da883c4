// kv_cache.cpp - sizing the cache; step 14: the recurrent states beside it.
#include "kv_cache.h"

#include <algorithm>

#include "error.h"

void KVCache::clear() {
    n_filled = 0;
    std::fill(conv.begin(), conv.end(), 0.0f);
    std::fill(ssm.begin(), ssm.end(), 0.0f);
}

void keep_positions(KVCache& cache, int n) {
    if (n >= cache.n_filled) return;
    if (n == 0) return cache.clear();
    if (!cache.can_rewind())
        fail("a recurrent state cannot go back from %d to %d positions: only to 0", cache.n_filled,
             n);
    cache.n_filled = n;
}

// A Gated DeltaNet layer's floats: the convolution's window and S of every value head.
static size_t conv_floats(const DeltaNetConfig& d) {
    return size_t(d.conv_kernel - 1) * d.channels();
}
static size_t ssm_floats(const DeltaNetConfig& d) {
    return size_t(d.n_value_heads) * d.key_dim * d.value_dim;
}

size_t kv_cache_bytes(const ModelConfig& config, int capacity) {
    return 2 * size_t(config.count_layers(LayerKind::Attention)) * size_t(capacity) *
           config.n_kv_heads * config.head_dim * sizeof(float);
}

size_t recurrent_state_bytes(const ModelConfig& config) {
    return size_t(config.count_layers(LayerKind::DeltaNet)) *
           (conv_floats(config.delta_net) + ssm_floats(config.delta_net)) * sizeof(float);
}

void check_kv_cache_capacity(const ModelConfig& config, int capacity) {
    if (capacity < 1 || unsigned(capacity) > config.context_length)
        fail("a KV cache of %d positions does not fit the model's context length %u", capacity,
             config.context_length);
}

KVCache make_kv_cache(const ModelConfig& config, int capacity) {
    check_kv_cache_capacity(config, capacity);
    KVCache cache;
    cache.n_layers = int(config.n_layers);
    cache.capacity = capacity;
    cache.kv_dim = int(config.n_kv_heads * config.head_dim);
    int n_kv_blocks = 0, n_state_blocks = 0;
    for (LayerKind kind : config.layer_kinds) {
        const bool attention = kind == LayerKind::Attention;
        cache.kv_block.push_back(attention ? n_kv_blocks++ : -1);
        cache.state_block.push_back(attention ? -1 : n_state_blocks++);
    }
    const size_t n = size_t(n_kv_blocks) * capacity * cache.kv_dim;
    cache.k.assign(n, 0.0f);
    cache.v.assign(n, 0.0f);
    cache.conv_size = n_state_blocks > 0 ? conv_floats(config.delta_net) : 0;
    cache.ssm_size = n_state_blocks > 0 ? ssm_floats(config.delta_net) : 0;
    cache.conv.assign(n_state_blocks * cache.conv_size, 0.0f);
    cache.ssm.assign(n_state_blocks * cache.ssm_size, 0.0f);
    return cache;
}
