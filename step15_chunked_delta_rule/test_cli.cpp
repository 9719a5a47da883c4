// test_cli.cpp - the flag table of common/cli.h: one table parses the command line and prints
// --help. The expected texts are written out by hand.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"

namespace {

struct Parsed {
    int n = 0;
    bool chat = false;
    std::string prompt;
    std::vector<std::string> arguments;  // what no row took, in order
};

std::vector<Flag> table(Parsed& parsed) {
    return {
        {"-p", "TEXT", "the prompt", [&parsed](const char* v) { parsed.prompt = v; }},
        {"-n", "N", "tokens to generate\n(default 32)",
         [&parsed](const char* v) { parsed.n = int(parse_int_in(v, "-n", 0, 100, "0 to 100")); }},
        {nullptr, nullptr, "chat:", nullptr},
        {"--chat", nullptr, "wrap the prompt", [&parsed](const char*) { parsed.chat = true; }},
        {"--a-flag-of-twenty-one", nullptr, "a long name", nullptr},
        {"-h, --help", nullptr, "show this help", nullptr},
    };
}

Parsed parse(std::vector<const char*> words) {
    std::vector<char*> argv = {const_cast<char*>("step")};
    for (const char* word : words) argv.push_back(const_cast<char*>(word));
    Parsed parsed;
    parse_flags(int(argv.size()), argv.data(), table(parsed),
                [&parsed](const char* argument) { parsed.arguments.push_back(argument); });
    return parsed;
}

std::string printed(const std::vector<Flag>& flags) {
    std::FILE* file = std::tmpfile();
    REQUIRE(file != nullptr);
    print_flags(file, flags);
    std::rewind(file);
    std::string text;
    for (int c = std::fgetc(file); c != EOF; c = std::fgetc(file)) text += char(c);
    std::fclose(file);
    return text;
}

}  // namespace

TEST_CASE("print_flags lines the help up at column 23, under headings, continued lines indented") {
    Parsed unused;
    CHECK(printed(table(unused)) ==
          "  -p TEXT              the prompt\n"
          "  -n N                 tokens to generate\n"
          "                       (default 32)\n"
          "\n"
          "chat:\n"
          "  --chat               wrap the prompt\n"
          "  --a-flag-of-twenty-one a long name\n"
          "  -h, --help           show this help\n");
}

TEST_CASE("parse_flags applies each row with its value and hands on what no row names") {
    const Parsed parsed = parse({"model.gguf", "-n", "7", "--chat", "-p", "-n", "extra"});
    CHECK(parsed.n == 7);
    CHECK(parsed.chat);
    CHECK(parsed.prompt == "-n");  // a value is taken as it is, even one that looks like a flag
    CHECK(parsed.arguments == std::vector<std::string>{"model.gguf", "extra"});
    CHECK(parse({"--help", "-h"}).arguments.empty());  // both spellings name the row
    CHECK(parse({"-hx", "--he"}).arguments == std::vector<std::string>{"-hx", "--he"});
}

TEST_CASE("a flag's value is checked with one line that names the flag") {
    CHECK_THROWS_WITH_AS(parse({"-p"}), "flag -p needs a value", Error);
    CHECK_THROWS_WITH_AS(parse({"-n", "101"}), "flag -n expects 0 to 100, got 101", Error);
    CHECK_THROWS_WITH_AS(parse({"-n", "7x"}), "flag -n expects an integer, got '7x'", Error);
    CHECK_THROWS_WITH_AS(parse_float("nan", "--temp"), "flag --temp expects a number, got 'nan'",
                         Error);
    CHECK(parse_float("0.25", "--temp") == 0.25);
}

TEST_CASE("wants_help finds -h or --help anywhere") {
    const char* with_help[] = {"step", "--bogus", "--help"};
    const char* without[] = {"step", "-p", "-help"};
    CHECK(wants_help(3, const_cast<char**>(with_help)));
    CHECK_FALSE(wants_help(3, const_cast<char**>(without)));
}
