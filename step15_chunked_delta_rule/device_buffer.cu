// device_buffer.cu - the CUDA calls behind DeviceBuffer.
#include "device_buffer.h"

#include "cuda_check.h"

void* device_malloc(size_t bytes) {
    void* pointer = nullptr;
    if (bytes > 0) CUDA_CHECK(cudaMalloc(&pointer, bytes));
    return pointer;
}

void device_free(void* pointer) {
    if (pointer) cudaFree(pointer);
}

void copy_to_device(void* device_dst, const void* host_src, size_t bytes) {
    if (bytes > 0) CUDA_CHECK(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice));
}

void copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
    if (bytes > 0) CUDA_CHECK(cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost));
}
