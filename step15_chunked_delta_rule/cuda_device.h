// cuda_device.h - is there a GPU, which one, and how fast can its memory go.
#pragma once

#include <cstddef>
#include <string>

// False in a build without nvcc, where no_cuda.cpp stands in for the .cu files: then no GPU can
// ever be used, and the checks that need the GPU code itself skip.
bool built_with_gpu_code();

// True when the CUDA runtime finds at least one device; otherwise false with the reason in
// `why_not` ("cudaGetDeviceCount: no CUDA-capable device is detected", "0 devices").
bool cuda_device_available(std::string& why_not);

struct DeviceInfo {
    std::string name;          // "NVIDIA H200"
    size_t total_memory = 0;   // bytes
    double peak_gb_per_s = 0;  // memory clock x bus width x 2 (double data rate), in 1e9 B/s
};

// The current device (cudaSetDevice's, device 0 unless the program chose), where every kernel
// runs.
DeviceInfo device_info();

// The streaming multiprocessors of the current device (132 on an H200), asked once: kernels
// size their grids by it.
int multiprocessor_count();
