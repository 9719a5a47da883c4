// cli.h - reading a program's command line from one table of its flags.
//
// Each program lists its flags in one table (see any step's main.cpp from step05 on): a row
// gives the flag's spellings, the name of its value, its help text and what it sets. The
// same table parses argv (parse_flags) and prints --help (print_flags), so the two cannot
// drift apart. The helpers below fetch a flag's value and turn text into numbers, failing
// with one clear line.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "error.h"

// One row of a program's flag table.
struct Flag {
    const char* names;  // "-n", or "-h, --help" for two spellings; nullptr: a heading row
    const char* value;  // the value's name in --help ("N", "FILE"), nullptr if it takes none
    const char* help;   // the help text; each '\n' starts a line under the first (a heading's
                        // text, after an empty line, for a heading row)
    std::function<void(const char* value)> set;  // value is nullptr when the flag takes none
};

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

// An integer from low to high; otherwise fails with "flag F expects EXPECTED, got N".
inline long long parse_int_in(const char* text, const char* flag, long long low, long long high,
                              const char* expected) {
    const long long value = parse_int(text, flag);
    if (value < low || value > high) fail("flag %s expects %s, got %lld", flag, expected, value);
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

// Whether `arg` is one of the row's spellings (names separated by ", ").
inline bool flag_is_named(const Flag& flag, const char* arg) {
    if (!flag.names) return false;
    const std::string names = std::string(flag.names) + ", ";
    return names.find(std::string(arg) + ", ") == 0 ||
           names.find(", " + std::string(arg) + ", ") != std::string::npos;
}

// -h or --help anywhere on the command line: help is shown whatever else is there.
inline bool wants_help(int argc, char** argv) {
    for (int i = 1; i < argc; i++)
        if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) return true;
    return false;
}

// Applies each flag of argv[1..] through its row, in order; an argument that names no row goes
// to on_argument (which fails on what the program does not take).
inline void parse_flags(int argc, char** argv, const std::vector<Flag>& flags,
                        const std::function<void(const char* argument)>& on_argument) {
    for (int i = 1; i < argc; i++) {
        const Flag* row = nullptr;
        for (const Flag& flag : flags)
            if (flag_is_named(flag, argv[i])) row = &flag;
        if (!row) on_argument(argv[i]);
        else if (row->set) row->set(row->value ? flag_value(i, argc, argv) : nullptr);
    }
}

// The flags as --help lists them: "  -n N" in a column of 21, then the help text.
inline void print_flags(std::FILE* out, const std::vector<Flag>& flags) {
    for (const Flag& flag : flags) {
        if (!flag.names) {
            std::fprintf(out, "\n%s\n", flag.help);
            continue;
        }
        std::string left = flag.names;
        if (flag.value) left += std::string(" ") + flag.value;
        const char* line = flag.help;
        const char* end = std::strchr(line, '\n');
        std::fprintf(out, "  %-20s %.*s\n", left.c_str(), int(end ? end - line : std::strlen(line)),
                     line);
        while (end) {
            line = end + 1;
            end = std::strchr(line, '\n');
            std::fprintf(out, "%23s%.*s\n", "", int(end ? end - line : std::strlen(line)), line);
        }
    }
}
