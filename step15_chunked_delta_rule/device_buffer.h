// device_buffer.h - GPU memory that frees itself, usable from plain C++ files.
//
// Only the four functions below touch the CUDA runtime (device_buffer.cu), so main.cpp and the
// checks compile with the host compiler alone and never include a CUDA header.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

// cudaMalloc / cudaFree / cudaMemcpy, each checked (a failure throws Error). device_free
// ignores errors: it runs in destructors, which must not throw.
void* device_malloc(size_t bytes);
void device_free(void* pointer);
void copy_to_device(void* device_dst, const void* host_src, size_t bytes);
void copy_to_host(void* host_dst, const void* device_src, size_t bytes);

// `size()` elements of T in device memory. resize() keeps the allocation when it is big
// enough, so a buffer that follows a growing sequence is reallocated only when it must grow;
// its contents are not kept.
template <typename T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t count) { resize(count); }
    explicit DeviceBuffer(const std::vector<T>& values) { upload(values); }
    ~DeviceBuffer() { device_free(data_); }

    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
        swap(other);
        return *this;
    }

    void resize(size_t count) {
        if (count > capacity_) {
            device_free(data_);
            data_ = nullptr;  // empty, not dangling, if the allocation below throws
            capacity_ = 0;
            data_ = static_cast<T*>(device_malloc(count * sizeof(T)));
            capacity_ = count;
        }
        size_ = count;
    }

    void upload(const std::vector<T>& values) {
        resize(values.size());
        copy_to_device(data_, values.data(), values.size() * sizeof(T));
    }

    std::vector<T> download() const {
        std::vector<T> values(size_);
        copy_to_host(values.data(), data_, size_ * sizeof(T));
        return values;
    }

    T* data() { return data_; }
    const T* data() const { return data_; }
    size_t size() const { return size_; }
    size_t allocated_bytes() const { return capacity_ * sizeof(T); }

private:
    void swap(DeviceBuffer& other) noexcept {
        std::swap(data_, other.data_);
        std::swap(size_, other.size_);
        std::swap(capacity_, other.capacity_);
    }

    T* data_ = nullptr;
    size_t size_ = 0;
    size_t capacity_ = 0;
};
