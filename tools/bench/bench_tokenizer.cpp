// bench_tokenizer.cpp - how fast step04's tokenizer encodes a file (not a test).
//
//   tools/bench/bench_tokenizer.sh            builds this and runs it next to HF tokenizers
//   build/bench/bench_tokenizer VOCAB.gguf TEXT_FILE IDS_OUT [REPEATS]
//
// Encodes the file's bytes REPEATS times (default 3), prints the best time as MB/s (10^6 bytes
// per second, one thread), and writes the ids to IDS_OUT, space-separated, for comparison.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "error.h"
#include "gguf_tensors.h"
#include "timer.h"
#include "tokenizer.h"

static std::string read_all(const char* path) {
    std::FILE* file = std::fopen(path, "rb");
    if (!file) fail("cannot open '%s'", path);
    std::string bytes;
    char buffer[1 << 16];
    size_t count;
    while ((count = std::fread(buffer, 1, sizeof buffer, file)) > 0) bytes.append(buffer, count);
    std::fclose(file);
    return bytes;
}

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: bench_tokenizer VOCAB.gguf TEXT_FILE IDS_OUT [REPEATS]\n");
        return 2;
    }
    try {
        Timer load_timer;
        GgufFile file = open_gguf(argv[1]);
        Tokenizer tokenizer(read_vocabulary(file.metadata));
        const double load_ms = load_timer.elapsed_ms();
        const std::string text = read_all(argv[2]);
        const int repeats = argc > 4 ? std::atoi(argv[4]) : 3;

        std::vector<int32_t> ids;
        double best_s = 1e30;
        for (int r = 0; r < repeats; r++) {
            Timer timer;
            ids = tokenizer.encode(text);
            best_s = std::min(best_s, timer.elapsed_s());
        }
        std::FILE* out = std::fopen(argv[3], "w");
        if (!out) fail("cannot write '%s'", argv[3]);
        for (size_t i = 0; i < ids.size(); i++) std::fprintf(out, i ? " %d" : "%d", ids[i]);
        std::fprintf(out, "\n");
        std::fclose(out);
        std::printf(
            "step04: %8.2f MB/s  %zu bytes -> %zu tokens in %.3f s (best of %d; vocabulary loaded "
            "in %.0f ms)\n",
            double(text.size()) / 1e6 / best_s, text.size(), ids.size(), best_s, repeats, load_ms);
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
    return 0;
}
