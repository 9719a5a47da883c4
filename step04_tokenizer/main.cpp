// step04: turn text into Qwen token ids and back, exactly as HF tokenizers does.
//
//   make step04 && ./step04 models/tiny-qwen2.gguf "Hello, world!"
//   ./step04 ../shared/qwen-tokenizer/qwen-bpe-vocab.gguf --ids --file README.md
//   ./step04 models/tiny-qwen2.gguf --decode "9707 11 1879 0"
//   ./step04 models/tiny-qwen2.gguf --chat "What is 2+2?"
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "chat_template.h"
#include "error.h"
#include "gguf_tensors.h"
#include "timer.h"
#include "tokenizer.h"
#include "unicode_ranges.h"
#include "utf8.h"

static void print_usage(std::FILE* out) {
    std::fprintf(
        out,
        "usage: step04 MODEL.gguf [TEXT | --file PATH | --decode IDS | --chat MESSAGE] [--ids]\n"
        "\n"
        "Loads the tokenizer from the file's tokenizer.ggml.* keys (a vocab-only GGUF with no\n"
        "tensors is fine). With no text, prints a summary of the vocabulary.\n"
        "\n"
        "  TEXT             encode TEXT and print a table: position, id, the token's bytes\n"
        "  --file PATH      encode the bytes of PATH, exactly as stored (nothing stripped)\n"
        "  --ids            print only the ids, space-separated, on one line\n"
        "  --decode IDS     print the text of token ids (\"9707 11 1879\" or \"9707,11,1879\")\n"
        "  --chat MESSAGE   render MESSAGE as a ChatML prompt (Qwen2.5's default system turn,\n"
        "                   then the generation prompt) and encode it; prints the file's\n"
        "                   tokenizer.chat_template first when it has one\n"
        "  -h, --help       show this help\n");
}

// A token's bytes for the table: printable UTF-8 as is, the rest escaped, so that a token
// holding half a character or a control byte stays visible and on one line.
static std::string escape_bytes(const std::string& bytes) {
    std::string text;
    for (size_t pos = 0; pos < bytes.size();) {
        const Utf8Char c = decode_utf8(bytes, pos);
        const uint32_t cp = c.code_point;
        if (c.status != Utf8Status::Valid) {
            for (size_t i = 0; i < c.length; i++)
                text += strprintf("\\x%02x", uint8_t(bytes[pos + i]));
        } else if (cp == '\n') {
            text += "\\n";
        } else if (cp == '\r') {
            text += "\\r";
        } else if (cp == '\t') {
            text += "\\t";
        } else if (cp == '\\' || cp == '"') {
            text += '\\';
            text += char(cp);
        } else if (cp < 0x20 || cp == 0x7F) {
            text += strprintf("\\x%02x", cp);
        } else if ((cp >= 0x80 && cp < 0xA0) || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF ||
                   cp == 0x200B || cp == 0x00A0 || cp == 0x3000) {
            text += strprintf("\\u%04x", cp);  // invisible or line-breaking: show the code point
        } else {
            text.append(bytes, pos, c.length);
        }
        pos += c.length;
    }
    return text;
}

static const char* token_type_name(int32_t type) {
    switch (type) {
        case kTokenControl: return "control";
        case kTokenUserDefined: return "user-defined";
        case kTokenUnused: return "unused";
        case kTokenByte: return "byte";
        default: return "";
    }
}

static void print_ids(const std::vector<int32_t>& ids) {
    for (size_t i = 0; i < ids.size(); i++) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
}

static void print_token_table(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
    std::printf("%6s  %7s  %s\n", "#", "id", "bytes");
    for (size_t i = 0; i < ids.size(); i++) {
        const char* type = token_type_name(tokenizer.vocabulary().token_types[size_t(ids[i])]);
        std::printf("%6zu  %7d  \"%s\"%s%s\n", i, ids[i],
                    escape_bytes(tokenizer.token_bytes(ids[i])).c_str(), *type ? "  " : "", type);
    }
}

static void print_vocabulary_summary(const Tokenizer& tokenizer) {
    const Vocabulary& vocabulary = tokenizer.vocabulary();
    std::printf("tokens:          %d\n", tokenizer.n_vocab());
    std::printf("merges:          %zu\n", vocabulary.merges.size());
    std::printf("bos / eos / pad: %d / %d / %d (-1: not set)\n", vocabulary.bos_id,
                vocabulary.eos_id, vocabulary.pad_id);
    std::printf("unicode tables:  %s\n", unicode_ranges_version());
    std::printf("added tokens (matched in text before anything else):\n");
    for (int32_t id = 0; id < tokenizer.n_vocab(); id++) {
        const int32_t type = vocabulary.token_types[size_t(id)];
        if (type == kTokenControl || type == kTokenUserDefined)
            std::printf("  %7d  %-24s %s%s\n", id, vocabulary.tokens[size_t(id)].c_str(),
                        token_type_name(type),
                        tokenizer.is_end_of_generation(id) ? ", ends generation" : "");
    }
}

// Token ids separated by spaces and/or commas.
static std::vector<int32_t> parse_id_list(const std::string& text) {
    std::vector<int32_t> ids;
    size_t pos = 0;
    while (pos < text.size()) {
        if (text[pos] == ' ' || text[pos] == ',') {
            pos++;
            continue;
        }
        size_t end = text.find_first_of(" ,", pos);
        if (end == std::string::npos) end = text.size();
        const std::string word = text.substr(pos, end - pos);
        char* stop = nullptr;
        const long long id = std::strtoll(word.c_str(), &stop, 10);
        if (*stop != '\0' || id < INT32_MIN || id > INT32_MAX)
            fail("--decode expects token ids separated by spaces or commas, got '%s'",
                 word.c_str());
        ids.push_back(int32_t(id));
        pos = end;
    }
    return ids;
}

static std::string read_file_bytes(const std::string& path) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) fail("cannot open '%s': %s", path.c_str(), std::strerror(errno));
    std::string bytes;
    char buffer[1 << 16];
    size_t count;
    while ((count = std::fread(buffer, 1, sizeof buffer, file)) > 0) bytes.append(buffer, count);
    const bool failed = std::ferror(file);
    std::fclose(file);
    if (failed) fail("cannot read '%s'", path.c_str());
    return bytes;
}

// What the command line asks to tokenize; at most one per run.
enum class Input { None, Text, File, Decode, Chat };

int main(int argc, char** argv) {
    std::string model_path;
    std::string argument;  // TEXT, the --file path, the --decode ids or the --chat message
    Input input = Input::None;
    bool ids_only = false;
    for (int i = 1; i < argc; i++) {
        Input flag_input = Input::None;
        if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
            print_usage(stdout);
            return 0;
        } else if (!std::strcmp(argv[i], "--ids")) {
            ids_only = true;
            continue;
        } else if (!std::strcmp(argv[i], "--file")) {
            flag_input = Input::File;
        } else if (!std::strcmp(argv[i], "--decode")) {
            flag_input = Input::Decode;
        } else if (!std::strcmp(argv[i], "--chat")) {
            flag_input = Input::Chat;
        } else if (!std::strncmp(argv[i], "--", 2) || (model_path.empty() && argv[i][0] == '-')) {
            std::fprintf(stderr, "error: unexpected argument '%s'\n", argv[i]);
            print_usage(stderr);
            return 2;
        } else if (model_path.empty()) {
            model_path = argv[i];
            continue;
        } else {
            flag_input = Input::Text;  // TEXT may start with one '-': it comes after the model
        }
        if (input != Input::None) {
            std::fprintf(stderr, "error: give only one of TEXT, --file, --decode and --chat\n");
            return 2;
        }
        if (flag_input != Input::Text && i + 1 >= argc) {
            std::fprintf(stderr, "error: flag %s needs a value\n", argv[i]);
            return 2;
        }
        input = flag_input;
        argument = flag_input == Input::Text ? argv[i] : argv[++i];
    }
    if (model_path.empty()) {
        print_usage(stderr);
        return 2;
    }

    try {
        Timer load_timer;
        GgufFile file = open_gguf(model_path);
        Tokenizer tokenizer(read_vocabulary(file.metadata));
        const double load_ms = load_timer.elapsed_ms();

        std::string text = argument;
        if (input == Input::Decode) {
            const std::string bytes = tokenizer.decode(parse_id_list(argument));
            std::fwrite(bytes.data(), 1, bytes.size(), stdout);
            if (isatty(fileno(stdout))) std::printf("\n");  // exact bytes when piped
            return 0;
        }
        if (input == Input::Chat) {
            text = render_chatml({{"user", argument}}, true);
            if (!ids_only) {
                if (file.metadata.has("tokenizer.chat_template"))
                    std::printf("chat template (tokenizer.chat_template):\n%s\n\n",
                                file.metadata.get_string("tokenizer.chat_template").c_str());
                else std::printf("chat template: none in the file; rendering Qwen2.5's ChatML\n\n");
                std::printf("rendered prompt:\n%s\n", text.c_str());
            }
        }
        if (input == Input::File) text = read_file_bytes(argument);
        if (input == Input::None) {
            std::printf("file:            %s\n", model_path.c_str());
            std::printf("loaded in:       %.1f ms\n", load_ms);
            print_vocabulary_summary(tokenizer);
            return 0;
        }

        Timer encode_timer;
        const std::vector<int32_t> ids = tokenizer.encode(text);
        const double encode_ms = encode_timer.elapsed_ms();
        if (ids_only) {
            print_ids(ids);
            return 0;
        }
        print_token_table(tokenizer, ids);
        std::printf("\nids: ");
        print_ids(ids);
        std::printf(
            "%zu bytes -> %zu tokens (%.2f bytes per token); encoded in %.3f ms, tokenizer loaded "
            "in %.1f ms\n",
            text.size(), ids.size(), ids.empty() ? 0.0 : double(text.size()) / double(ids.size()),
            encode_ms, load_ms);
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
    return 0;
}
