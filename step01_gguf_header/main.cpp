// step01: read the 24-byte GGUF header and print what it says.
//
//   make step01 && ./step01 models/tiny-qwen2.gguf
#include <cstdio>
#include <cstring>
#include <string>

#include "error.h"
#include "gguf_header.h"
#include "gguf_reader.h"

static void print_usage(std::FILE* out) {
    std::fprintf(
        out,
        "usage: step01 MODEL.gguf\n"
        "\n"
        "Reads the GGUF header (magic, version, tensor and metadata counts) and prints it.\n"
        "\n"
        "  -h, --help   show this help\n");
}

int main(int argc, char** argv) {
    std::string model_path;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
            print_usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-' || !model_path.empty()) {
            std::fprintf(stderr, "error: unexpected argument '%s'\n", argv[i]);
            print_usage(stderr);
            return 2;
        }
        model_path = argv[i];
    }
    if (model_path.empty()) {
        print_usage(stderr);
        return 2;
    }

    try {
        InputFile file(model_path);
        GgufReader reader(file);
        GgufHeader header = read_gguf_header(reader);

        std::printf("file:            %s\n", model_path.c_str());
        std::printf("file size:       %llu bytes (%.2f MiB)\n", (unsigned long long)file.size(),
                    double(file.size()) / (1024.0 * 1024.0));
        std::printf("magic:           GGUF (47 47 55 46)\n");
        std::printf("version:         %u\n", header.version);
        std::printf("tensor count:    %llu\n", (unsigned long long)header.tensor_count);
        std::printf("metadata count:  %llu\n", (unsigned long long)header.metadata_kv_count);
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
    return 0;
}
