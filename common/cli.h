// cli.h - the few helpers every main() uses to read its command line.
//
// Each program parses argv in one plain loop (see any step's main.cpp); these helpers only
// fetch a flag's value and turn text into numbers, failing with one clear line.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "error.h"

// Returns argv[i + 1] and advances i, or fails if the flag is the last argument.
inline const char* flag_value(int& i, int argc, char** argv) {
    if (i + 1 >= argc) fail("flag %s needs a value", argv[i]);
    return argv[++i];
}

inline long long parse_int(const char* text, const char* flag) {
    errno = 0;
    char* end = nullptr;
    long long value = std::strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0')
        fail("flag %s expects an integer, got '%s'", flag, text);
    return value;
}

// A finite decimal number: "nan" and "inf" are refused, since no flag means them.
inline double parse_float(const char* text, const char* flag) {
    errno = 0;
    char* end = nullptr;
    double value = std::strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !std::isfinite(value))
        fail("flag %s expects a number, got '%s'", flag, text);
    return value;
}
