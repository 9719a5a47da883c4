// median_time.cuh - the timer of the benchmarks that time one kernel call at a time
// (bench_tensor_cores.cu, bench_chunked_delta_rule.cu): milliseconds a call of `launch`, the
// median of 7 runs of `calls_per_run` back-to-back calls between two CUDA events, after 3
// warm-up calls. Include it after cuda_check.h's folder is on the include path.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "cuda_check.h"

inline double median_ms(const std::function<void()>& launch, int calls_per_run) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < 3; i++) launch();
    std::vector<double> runs;
    for (int r = 0; r < 7; r++) {
        CUDA_CHECK(cudaEventRecord(start));
        for (int i = 0; i < calls_per_run; i++) launch();
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        runs.push_back(double(ms) / calls_per_run);
    }
    std::sort(runs.begin(), runs.end());
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return runs[runs.size() / 2];
}
