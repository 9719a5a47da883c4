// device_kv_cache.cpp - sizing the device cache. Plain C++: DeviceBuffer does the CUDA calls.
#include "device_kv_cache.h"

#include "kv_cache.h"

DeviceKVCache make_device_kv_cache(const ModelConfig& config, int capacity) {
    check_kv_cache_capacity(config, capacity);
    DeviceKVCache cache;
    cache.n_layers = int(config.n_layers);
    cache.capacity = capacity;
    cache.kv_dim = int(config.n_kv_heads * config.head_dim);
    const size_t n = size_t(cache.n_layers) * capacity * cache.kv_dim;
    cache.k.resize(n);
    cache.v.resize(n);
    return cache;
}
