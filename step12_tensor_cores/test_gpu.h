// test_gpu.h - what every GPU check needs: skipping where there is no GPU, random inputs, and
// the validator that compares a GPU result with its reference (after llm.c's dev/cuda).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuda_device.h"
#include "error.h"
#include "test_skip.h"

// True when a GPU is present; otherwise marks the running check as skipped, with the reason.
inline bool gpu_or_skip() {
    std::string why_not;
    if (cuda_device_available(why_not)) return true;
    skip_test("no CUDA device: " + why_not);
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

// A value passes when |gpu - reference| <= abs + rel * |reference|.
struct Tolerance {
    double abs;
    double rel;
};

// Counts the values outside the tolerance (NaN counts) and describes the first five and the
// worst one in `report`. With row_length > 0, indices are printed as (row, column).
inline int count_mismatches(const std::vector<float>& gpu, const std::vector<float>& reference,
                            Tolerance tolerance, std::string& report, int row_length = 0) {
    auto where = [&](size_t i) {
        return row_length > 0 ? strprintf("(%zu, %zu)", i / row_length, i % row_length)
                              : strprintf("[%zu]", i);
    };
    int mismatches = 0;
    double worst_excess = 0.0;
    size_t worst = 0;
    for (size_t i = 0; i < reference.size(); i++) {
        double allowed = tolerance.abs + tolerance.rel * std::fabs(reference[i]);
        double excess = std::fabs(double(gpu[i]) - reference[i]) - allowed;
        if (excess <= 0.0) continue;
        if (mismatches < 5)
            report += strprintf("  %s gpu %.9g, reference %.9g\n", where(i).c_str(), gpu[i],
                                reference[i]);
        if (mismatches == 0 || !(excess <= worst_excess)) {
            worst_excess = excess;
            worst = i;
        }
        mismatches++;
    }
    if (mismatches > 0)
        report += strprintf("  worst: %s gpu %.9g, reference %.9g\n", where(worst).c_str(),
                            gpu[worst], reference[worst]);
    return mismatches;
}

// CHECKs that gpu matches reference within the tolerance, reporting the mismatches if not.
inline void check_close(const std::vector<float>& gpu, const std::vector<float>& reference,
                        Tolerance tolerance, int row_length = 0) {
    REQUIRE(gpu.size() == reference.size());
    std::string report;
    int mismatches = count_mismatches(gpu, reference, tolerance, report, row_length);
    INFO(mismatches << " of " << reference.size() << " values differ by more than " << tolerance.abs
                    << " + " << tolerance.rel << " * |reference|:\n"
                    << report);
    CHECK(mismatches == 0);
}
