// device_kv_cache.cpp - sizing the device cache. Plain C++: DeviceBuffer does the CUDA calls.
#include "device_kv_cache.h"

#include "kv_cache.h"

size_t device_kv_cache_bytes(const ModelConfig& config, int capacity, CacheType type) {
    return 2 * size_t(config.n_layers) * capacity * config.n_kv_heads * config.head_dim *
           cache_value_bytes(type);
}

DeviceKVCache make_device_kv_cache(const ModelConfig& config, int capacity, CacheType type) {
    check_kv_cache_capacity(config, capacity);
    DeviceKVCache cache;
    cache.n_layers = int(config.n_layers);
    cache.capacity = capacity;
    cache.kv_dim = int(config.n_kv_heads * config.head_dim);
    cache.type = type;
    const size_t bytes = size_t(cache.n_layers) * cache.layer_bytes();
    cache.k.resize(bytes);
    cache.v.resize(bytes);
    return cache;
}
