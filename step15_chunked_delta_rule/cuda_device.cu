// cuda_device.cu - device discovery for main() and the checks.
#include "cuda_device.h"

#include "cuda_check.h"

bool built_with_gpu_code() { return true; }

bool cuda_device_available(std::string& why_not) {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        why_not = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status);
        cudaGetLastError();  // clear the error so that it does not surface in a later call
        return false;
    }
    if (count == 0) {
        why_not = "cudaGetDeviceCount found 0 devices";
        return false;
    }
    return true;
}

DeviceInfo device_info() {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp properties;
    CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
    // CUDA 13 dropped cudaDeviceProp::memoryClockRate; the attribute still reports it (kHz).
    int memory_clock_khz = 0, bus_width_bits = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, device));
    DeviceInfo info;
    info.name = properties.name;
    info.total_memory = properties.totalGlobalMem;
    info.peak_gb_per_s = 2.0 * memory_clock_khz * 1e3 * (bus_width_bits / 8) / 1e9;
    return info;
}

int multiprocessor_count() {
    static const int count = [] {
        int device = 0, n = 0;
        CUDA_CHECK(cudaGetDevice(&device));
        CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
        return n;
    }();
    return count;
}
