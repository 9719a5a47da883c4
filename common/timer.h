// timer.h - wall-clock stopwatch for the timing lines every program prints.
#pragma once

#include <chrono>

class Timer {
public:
    Timer() : start_(std::chrono::steady_clock::now()) {}
    void reset() { start_ = std::chrono::steady_clock::now(); }
    double elapsed_ms() const {
        auto now = std::chrono::steady_clock::now();
        return std::chrono::duration<double, std::milli>(now - start_).count();
    }
    double elapsed_s() const { return elapsed_ms() / 1000.0; }

private:
    std::chrono::steady_clock::time_point start_;
};
