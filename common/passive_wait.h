// passive_wait.h - make OpenMP's idle threads sleep instead of spinning.
//
// At the end of each parallel loop, libgomp's threads that finish early spin for a while,
// waiting for the others. On a busy machine the thread they wait for may have no core, so
// every operator costs a scheduler time slice: on a loaded 2-core machine the tiny model took
// 580 ms/token with 2 threads, 48 ms with 1, and 24 ms with 2 threads and
// OMP_WAIT_POLICY=passive. libgomp reads that variable once, before main() starts, so the
// program sets it and starts itself again. A policy the user chose is kept.
#pragma once

#include <cstdlib>

#include <unistd.h>

inline void restart_with_passive_openmp_wait(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY")) return;
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);
    // execv returns only when it failed: carry on with OpenMP's default policy.
}
