// kv_cache.cpp - sizing the cache.
#include "kv_cache.h"

#include "error.h"

size_t kv_cache_bytes(const ModelConfig& config, int capacity) {
    return 2 * size_t(config.n_layers) * size_t(capacity) * config.n_kv_heads * config.head_dim *
           sizeof(float);
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
    const size_t n = size_t(cache.n_layers) * capacity * cache.kv_dim;
    cache.k.assign(n, 0.0f);
    cache.v.assign(n, 0.0f);
    return cache;
}
