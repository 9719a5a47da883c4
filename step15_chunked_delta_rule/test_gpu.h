// test_gpu.h - what every GPU check needs: skipping where there is no GPU, random inputs, and
// the validator that compares a GPU result with its reference (common/test_tolerance.h, which
// the CPU checks share).
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuda_device.h"
#include "test_skip.h"
#include "test_tolerance.h"

// True when a GPU is present; otherwise marks the running check as skipped, with the reason.
// A build with GPU code on a machine without a GPU hears from the CUDA runtime about its
// driver ("CUDA driver version is insufficient..." where there is none at all): that text goes
// last, in parentheses, after what it means.
inline bool gpu_or_skip() {
    std::string why_not;
    if (cuda_device_available(why_not)) return true;
    if (built_with_gpu_code())
        skip_test("no usable NVIDIA GPU or driver was found (" + why_not + ")");
    else
        skip_test(why_not);
    return false;
}

// True in a build with GPU code; otherwise marks the running check as skipped: a check of what
// the .cu files do before they touch a device cannot run against no_cuda.cpp's stand-ins.
inline bool gpu_code_or_skip() {
    if (built_with_gpu_code()) return true;
    std::string why_not;
    cuda_device_available(why_not);
    skip_test(why_not);
    return false;
}

// n values drawn uniformly from [low, high), the same ones on every run for a given seed.
inline std::vector<float> random_values(size_t n, uint32_t seed, float low = -1.0f,
                                        float high = 1.0f) {
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> distribution(low, high);
    std::vector<float> values(n);
    for (float& value : values) value = distribution(generator);
    return values;
}
