// cuda_check.h - every CUDA runtime call and every kernel launch is checked, in .cu files only.
//
// A failure becomes the project's Error (common/error.h), like any other bad input: main()
// prints its one line and the checks can assert it. Exiting on the spot would be shorter, but
// then a test could not tell a failing CUDA call from a crash. The macro exists only to
// capture the call's text, file and line; the work is done by a plain function.
#pragma once

#include <cuda_runtime.h>

#include "error.h"

inline void cuda_check(cudaError_t status, const char* call, const char* file, int line) {
    if (status == cudaSuccess) return;
    cudaGetLastError();  // reported here: the next check_launch() must not report it again
    fail("CUDA error: %s failed at %s:%d: %s", call, file, line, cudaGetErrorString(status));
}

#define CUDA_CHECK(call) cuda_check((call), #call, __FILE__, __LINE__)

// A launch returns nothing: a bad grid or an unbuilt architecture shows up in the next
// cudaGetLastError(). Errors inside a running kernel surface later, at the next call that
// waits for the device (e.g. the copy of the logits back to the host).
inline void check_launch(const char* kernel) {
    cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess)
        fail("CUDA error: launching %s failed: %s", kernel, cudaGetErrorString(status));
}
