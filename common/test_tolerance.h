// test_tolerance.h - how a numeric check compares its result with a reference, on the CPU and
// the GPU alike: a value passes when |ours - reference| <= abs + rel * |reference| (NaN fails),
// and a failure reports the first five mismatches and the worst one (after llm.c's dev/cuda).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "error.h"

struct Tolerance {
    double abs;
    double rel;
};

// Counts the values outside the tolerance (NaN counts) and describes the first five and the
// worst one in `report`. With row_length > 0, indices are printed as (row, column).
inline int count_mismatches(const std::vector<float>& ours, const std::vector<float>& reference,
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
        double excess = std::fabs(double(ours[i]) - reference[i]) - allowed;
        if (excess <= 0.0) continue;
        if (mismatches < 5)
            report += strprintf("  %s ours %.9g, reference %.9g\n", where(i).c_str(), ours[i],
                                reference[i]);
        if (mismatches == 0 || !(excess <= worst_excess)) {
            worst_excess = excess;
            worst = i;
        }
        mismatches++;
    }
    if (mismatches > 0)
        report += strprintf("  worst: %s ours %.9g, reference %.9g\n", where(worst).c_str(),
                            ours[worst], reference[worst]);
    return mismatches;
}

// CHECKs that ours matches reference within the tolerance, reporting the mismatches if not.
inline void check_close(const std::vector<float>& ours, const std::vector<float>& reference,
                        Tolerance tolerance, int row_length = 0) {
    REQUIRE(ours.size() == reference.size());
    std::string report;
    int mismatches = count_mismatches(ours, reference, tolerance, report, row_length);
    INFO(mismatches << " of " << reference.size() << " values differ by more than " << tolerance.abs
                    << " + " << tolerance.rel << " * |reference|:\n"
                    << report);
    CHECK(mismatches == 0);
}
