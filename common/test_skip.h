// test_skip.h - a check that cannot run here (no GPU, no real vocabulary, no real model) says so
// and is counted as skipped, never as passed. Call skip_test() at the top of the TEST_CASE and
// return.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>

// Records the running test case as skipped and prints the reason.
void skip_test(const std::string& reason);

// The real Qwen vocabulary, $QWEN_TOKENIZER_DIR/qwen-bpe-vocab.gguf, for the checks that need
// it; "" with the reason in `why_not` when it is not there (the caller then skips).
inline std::string real_vocab_path(std::string& why_not) {
    const char* directory = std::getenv("QWEN_TOKENIZER_DIR");
    if (!directory || !*directory) {
        why_not =
            "QWEN_TOKENIZER_DIR is not set (the Makefile sets it to ../shared/qwen-tokenizer)";
        return "";
    }
    std::string path = std::string(directory) + "/qwen-bpe-vocab.gguf";
    if (!std::ifstream(path)) {
        why_not = "no real vocabulary at " + path;
        return "";
    }
    return path;
}

// The checks on a real downloaded model live in the doctest suite "real_model": `make test`
// leaves that suite out, `make test-real` runs only it, with QWEN_REAL_MODEL set to the model
// that `make model` fetches. Returns that path, or "" with the reason in `why_not`.
inline std::string real_model_path(std::string& why_not) {
    const char* path = std::getenv("QWEN_REAL_MODEL");
    if (!path || !*path) {
        why_not = "QWEN_REAL_MODEL is not set (make test-real sets it)";
        return "";
    }
    if (!std::ifstream(path)) {
        why_not = std::string("no model at ") + path + " (make model fetches it)";
        return "";
    }
    return path;
}
