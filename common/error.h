// error.h - how every step reports bad input: throw an Error carrying one line of text.
//
// Parsers throw instead of calling exit() so that tests can assert the exact message
// (doctest's CHECK_THROWS_WITH) and main() can print it once and return non-zero.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <string>

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

inline std::string vstrprintf(const char* fmt, va_list args) {
    va_list copy;
    va_copy(copy, args);
    int length = std::vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    if (length <= 0) return std::string();
    std::string text(size_t(length), '\0');
    std::vsnprintf(text.data(), text.size() + 1, fmt, args);
    return text;
}

// printf-style formatting into a std::string.
__attribute__((format(printf, 1, 2))) inline std::string strprintf(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    std::string text = vstrprintf(fmt, args);
    va_end(args);
    return text;
}

// Throws an Error whose message is the formatted text.
[[noreturn]] __attribute__((format(printf, 1, 2))) inline void fail(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    std::string text = vstrprintf(fmt, args);
    va_end(args);
    throw Error(text);
}
