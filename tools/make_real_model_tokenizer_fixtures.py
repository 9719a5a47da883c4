#!/usr/bin/env python3
"""Writes tests/fixtures/real_model/tokenizer.txt: texts and the token ids that transformers
gives them with the tokenizer it builds from the real model's GGUF, for step04's checks on the
real model (step04_tokenizer/test_real_tokenizer.cpp, doctest suite "real_model").

    make model                                                        # fetches the GGUF
    .venv/bin/python3 tools/make_real_model_tokenizer_fixtures.py     # about a minute
    .venv/bin/python3 tools/make_real_model_tokenizer_fixtures.py PATH/TO/MODEL.gguf

Run from the repository root. The GGUF defaults to models/qwen2.5-coder-0.5b-instruct.gguf; its
sha256 goes in the fixture's header, with the versions of transformers and tokenizers. The texts
are fixed lists below and nothing is random, so the same model and versions give the same file.
Needs transformers, tokenizers and gguf (tools/requirements-torch.txt; torch is not used).

The oracle is AutoTokenizer.from_pretrained(folder, gguf_file=name): transformers reads the
vocabulary and merges out of the GGUF and builds a HF `tokenizers` tokenizer (NFC normalizer,
Qwen's split regex, byte-level BPE). It is independent of step04: another reader of the file,
another BPE. Two things it does differently from Qwen's own tokenizer and from the GGUF's
metadata, found while writing this script, and what is done about them:

  - Its Qwen2 converter registers only <|endoftext|>, <|im_start|> and <|im_end|> as added
    tokens. The GGUF marks 22 tokens CONTROL or USER_DEFINED (<|fim_prefix|>, <tool_call>, ...),
    and Qwen's tokenizer.json has all 22 as added tokens, so "<|fim_prefix|>" is one id there
    (151659) but seven byte-level pieces here. The script registers the missing ones from the
    GGUF's token types (normalized=False, as Qwen has them) before it computes `ids`; where that
    changed a text's ids, the converter's own ids are kept in the record as `converter_ids`.
  - It reports <|endoftext|> (151643) as the eos token; the GGUF's
    tokenizer.ggml.eos_token_id is <|im_end|> (151645), the token that ends an instruct turn.
    No id in the fixture depends on this; the header records both.

Encoding is tokenizer(text, add_special_tokens=False): Qwen adds no BOS or EOS (the GGUF has
add_bos_token false), and the script checks that add_special_tokens=True gives the same ids.

Cross-checks, all reported rather than hidden:
  - decode(ids) against the text. Text that is not NFC comes back as its NFC (HF normalizes
    before BPE, see step04's tokenizer.h); such a record has a `decoded` line with what decode
    gives, and the script lists every text that does not come back as it was.
  - if $QWEN_TOKENIZER_DIR (default ../shared/qwen-tokenizer) has Qwen's tokenizer.json, every
    text's ids against it too (printed only, so the fixture does not depend on that folder).
    The one in ../shared/qwen-tokenizer has 4 added tokens more than this GGUF (<tool_response>,
    </tool_response>, <think>, </think> as 151665-151668, unused [PAD] rows here), so the
    conversation with a tool result gets other ids from it; every other text gets the same.

File format: the one of tests/fixtures/tokenizer/ (step04_tokenizer/test_tokenizer_fixtures.h
reads it). Records are separated by blank lines and start with a readable "# ..." comment;
`text` and `decoded` are hex so that every byte is exact, ids are decimal. Every record has
`category`, `text` and `ids`; conversations rendered by apply_chat_template also have their
messages ("message ROLE HEX") and `generation_prompt 0/1`, except the one with tool calls,
which step04's render_chatml does not cover.
"""
import argparse
import hashlib
import os
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import tokenizers
import transformers
from gguf import GGUFReader
from tokenizers import AddedToken
from transformers import AutoTokenizer

DEFAULT_MODEL = Path("models/qwen2.5-coder-0.5b-instruct.gguf")
KNOWN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
OUT = Path("tests/fixtures/real_model/tokenizer.txt")
CONTROL, USER_DEFINED = 3, 4  # tokenizer.ggml.token_type values

# (category, text). Every text here is NFC except those under "non_nfc".
TEXTS = [
    ("english", "The tokenizer turns text into integers, and the model never sees anything "
                "else."),
    ("english", "Once upon a time, in a land far, far away, there lived a small dragon who "
                "hated fire."),
    ("english", "Mr. O'Neill paid $1,299.99 for 3 items on 2024-03-15 at 9:45 a.m. (tax "
                "included)."),
    ("english", "ALL CAPS SHOUTING, lowercase whispering, and MiXeD cAsE in between."),
    ("english", "Hyphen-ated, under_scored, dot.separated and slash/separated words."),
    ("english", "Write to first.last+tag@example.co.uk or open "
                "https://example.org/a/b?q=1&r=two#frag today."),
    ("english", "\u201cSmart quotes\u201d, \u2018single ones\u2019, an em\u2014dash and an "
                "ellipsis\u2026"),
    ("english", "Question? Exclamation! Interrobang\u203d Semicolon; colon: done."),
    ("english", " ".join(["A language model reads numbers, not letters: every prompt is cut "
                          "into pieces that the vocabulary knows, and each piece becomes an id."]
                         * 12)),
    ("english", "Tokenization\nis\ndone\nline\nby\nline."),

    ("chinese_simplified", "大语言模型通过分词器把文本切分成词元。"),
    ("chinese_simplified", "今天是2024年10月1日，国庆节快乐！"),
    ("chinese_simplified", "他说：“我们明天在北京见面吧。”"),
    ("chinese_simplified", "机器学习（Machine Learning）是人工智能的一个分支。"),
    ("chinese_traditional", "臺灣的夜市有很多好吃的小吃。"),
    ("chinese_traditional", "這個程式碼需要重新編譯才能執行。"),
    ("chinese_traditional", "香港維多利亞港的夜景非常漂亮。"),
    ("chinese_traditional", "學而時習之，不亦說乎？有朋自遠方來，不亦樂乎？"),

    ("japanese", "私はラーメンが大好きです。"),
    ("japanese", "東京タワーは1958年に完成しました。"),
    ("japanese", "ひらがな、カタカナ、そして漢字を混ぜて書きます。"),
    ("japanese", "ﾊﾝｶｸｶﾀｶﾅもあります（半角）"),
    ("korean", "안녕하세요! 만나서 반갑습니다."),
    ("korean", "서울은 대한민국의 수도입니다."),
    ("korean", "한국어와 English를 섞어 씁니다: 123개."),

    ("code_python", 'def greet(name: str) -> str:\n    """Say hello."""\n    return f"Hello, '
                    '{name}!"\n\n\nif __name__ == "__main__":\n    print(greet("world"))\n'),
    ("code_python", "class Stack:\n\tdef __init__(self):\n\t\tself.items = []\n\n\tdef push(self, "
                    "x):\n\t\tself.items.append(x)\n"),
    ("code_python", "x      = 1      # aligned\nlonger = 22     # comments\n\n\n\nz = [i ** 2 "
                    "for i in range(10) if i % 2]   \n"),
    ("code_cpp", "#include <iostream>\n#include <vector>\n\nint main() {\n    std::vector<int> "
                 "v{1, 2, 3};\n    for (auto& x : v) x *= 2;  // double\n    std::cout << "
                 "v.size() << '\\n';\n    return 0;\n}\n"),
    ("code_cpp", "template <typename T>\nT max_of(const T* p, size_t n) {\n\tT best = p[0];\n\t"
                 "for (size_t i = 1; i < n; ++i)\n\t\tif (p[i] > best) best = p[i];\n\treturn "
                 "best;\n}\n"),
    ("code_cpp", "int main() {\r\n    return 0;\r\n}\r\n"),
    ("code_json", '{\n  "name": "qwen",\n  "layers": 24,\n  "rope_theta": 1000000.0,\n  '
                  '"tied": true,\n  "tags": ["a", "b"],\n  "nested": {"k": null}\n}\n'),
    ("code_json", '{"id":42,"text":"caf\\u00e9 \\"quoted\\"","list":[1,2.5,-3e-7],"ok":false}'),
    ("code_shell", '#!/usr/bin/env bash\nset -euo pipefail\nfor f in *.txt; do\n\tgrep -n '
                   '"TODO" "$f" | wc -l\ndone\n'),
    ("code_shell", 'make -j2 build/release/test_step04 2>&1 | tee log.txt && echo "ok: '
                   '$(wc -l < log.txt) lines"   # build\n'),
    ("code_shell", "export PATH=\"$HOME/.local/bin:$PATH\"\ncd /tmp    &&    ls -la\t| "
                   "sort -k5 -n\n"),

    ("numbers", "3.14159265358979323846264338327950288419716939937510"),
    ("numbers", "1234567890" * 10),
    ("numbers", "Phone: +1 (555) 012-3456, ZIP 90210, PIN 0000"),
    ("numbers", "1e-9 2.5E+10 0x1F 0b1010 1_000_000 -42 +7"),
    ("numbers", "Versions 1.2.3, v10.0.1-rc.2 and 2025.01"),
    ("numbers", "１２３４５ ٠١٢٣٤٥٦٧٨٩ ०१२३ Ⅻ ½"),

    ("emoji", "😀😃😄😁"),
    ("emoji", "👨\u200d👩\u200d👧\u200d👦 family"),
    ("emoji", "👩🏽\u200d💻 and 🧑🏿\u200d🚀"),
    ("emoji", "🏳\ufe0f\u200d🌈 🏳\ufe0f\u200d⚧\ufe0f 🏴\u200d☠\ufe0f"),
    ("emoji", "🇨🇳🇯🇵🇰🇷🇺🇸🇩🇪🇧🇷"),
    ("emoji", "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f Scotland"),
    ("emoji", "1\ufe0f\u20e3 2\ufe0f\u20e3 #\ufe0f\u20e3 keycaps"),
    ("emoji", "Great job! 👍🏻👍🏼👍🏽👍🏾👍🏿 ❤\ufe0f\u200d🔥"),

    ("accented", "Crème brûlée, piñata, naïveté, Ångström"),
    ("accented", "Tiếng Việt: Hà Nội, Đà Nẵng, Huế"),
    ("accented", "Zürich, São Paulo, Kraków, Reykjavík, İstanbul"),
    ("accented", "Ελληνικά: \u1f00\u03c1\u03c7\u03ae, \u1f60\u03b9\u03b4\u03ae"),
    # Not NFC (each is written with escapes, so no editor can compose them): HF normalizes each
    # to NFC before BPE, so the ids are those of the composed text and decode gives the NFC.
    ("non_nfc", "Cafe\u0301 cre\u0300me bru\u0302le\u0301e"),
    ("non_nfc", "n\u0303 a\u0308 o\u0302 u\u0308\u0301"),
    ("non_nfc", "A\u030a, \u212b and \u00c5"),
    ("non_nfc", "\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af"),
    ("non_nfc", "a\u0302\u0323 and a\u0323\u0302"),
    ("non_nfc", "x>\u0338 becomes x\u226f"),

    ("contractions", "It's what they're saying: we'll see, I'd go, you've been, I'm sure, "
                     "don't."),
    ("contractions", "IT'S WHAT THEY'RE SAYING: WE'LL SEE, I'D GO, YOU'VE BEEN, I'M SURE, "
                     "DON'T."),
    ("contractions", "She'LL do it; They'Re here; He'S fine; We'vE won"),
    ("contractions", "rock 'n' roll, 'quoted', ''twice'', o'clock, it\u2019s curly"),
    ("contractions", "'s 're 've 'm 'll 'd 't"),

    ("whitespace", ""),
    ("whitespace", " leading space"),
    ("whitespace", "   three leading spaces"),
    ("whitespace", "trailing space "),
    ("whitespace", "trailing spaces   "),
    ("whitespace", "line one\r\nline two\r\n"),
    ("whitespace", "\n\n\n"),
    ("whitespace", "\n"),
    ("whitespace", " "),
    ("whitespace", "\t\tTabs\tinside\t"),
    ("whitespace", "a\n \n  \nb"),
    ("whitespace", "word  \n  word"),
    ("whitespace", "x" + " " * 17 + "y" + " " * 40),
    ("whitespace", "\u00a0non-breaking\u3000ideographic\u2003em\u2028line separator"),
    ("whitespace", "\r"),
    ("whitespace", "\r\r\n\n \r\n"),
    ("whitespace", "form\x0cfeed\x0bvertical tab"),

    ("special_tokens", "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4"
                       "<|im_end|>\n"),
    ("special_tokens", "Text before<|endoftext|>Text after"),
    ("special_tokens", "<|endoftext|><|endoftext|>"),
    ("special_tokens", " <|im_end|> spaces around <|im_start|> "),
    ("special_tokens", "<|im_start|><|im_start|><|im_end|>"),
    ("special_tokens", "<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n    return c"
                       "<|fim_middle|>"),
    ("special_tokens", "<|fim_pad|><|fim_pad|>tail"),
    ("special_tokens", "<|repo_name|>qwen-from-scratch\n<|file_sep|>step04_tokenizer/bpe.h\n"
                       "#pragma once\n<|file_sep|>README.md\n# Title\n"),
    ("special_tokens", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
                       "</tool_call>"),
    ("special_tokens", "<|vision_start|><|image_pad|><|vision_pad|><|vision_end|>Describe it. "
                       "<|video_pad|><|object_ref_start|>the cat<|object_ref_end|><|box_start|>"
                       "(10,20),(30,40)<|box_end|><|quad_start|>q<|quad_end|>"),
    # Look like added tokens but are not: spelled out by BPE.
    ("special_tokens", "<|im_start <|im_end| <|endoftext|x |im_start|> <im_end>"),
    # [PAD151665] is a row of the vocabulary (type UNUSED), not an added token.
    ("special_tokens", "[PAD151665] is an unused row"),
    # NFC would compose ">" and U+0338 into U+226F, but the token is cut out first.
    ("special_tokens", "<|im_end|>\u0338 stays as it is"),
]

SYSTEM_CODER = "You are a careful coding assistant. Answer with code only."
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]},
    },
}

# (messages as (role, content), add_generation_prompt), rendered by apply_chat_template.
CONVERSATIONS = [
    ([("user", "Hello!")], True),
    ([("system", SYSTEM_CODER), ("user", "Reverse a string in Python.")], True),
    ([("system", "Be brief."), ("user", "What is the capital of France?"),
      ("assistant", "Paris."), ("user", "And of Japan?")], True),
    ([("user", "Write hello world in C."),
      ("assistant", '```c\n#include <stdio.h>\n\nint main(void) {\n    puts("hello, world");\n'
                    "    return 0;\n}\n```"),
      ("user", "Now\tin  Python,\nplease.")], True),
    ([("user", "你好！请用中文回答。"), ("assistant", "好的，没问题。"),
      ("user", "日本語でも答えられますか？")], True),
    ([("system", "You translate English to French."), ("user", "Good morning"),
      ("assistant", "Bonjour")], False),
    ([("user", "Say <|im_end|> and <|endoftext|> literally, please.")], True),
]

# A conversation with a tool: the template writes the signatures into the system turn and the
# call as <tool_call>...</tool_call>; render_chatml does not do tools, so it has no messages.
TOOL_CONVERSATION = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": "",
     "tool_calls": [{"type": "function",
                     "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": '{"temperature_c": 18, "sky": "cloudy"}'},
]


def readable(text, limit=90):
    """One line for a comment: line breaks, controls, marks, format characters and unusual
    spaces as escapes (they are invisible or break the line), everything else as is; all of
    text that is not NFC (what NFC changes is invisible when printed)."""
    out = []
    all_escaped = not unicodedata.is_normalized("NFC", text)
    for c in text:
        category = unicodedata.category(c)
        if c in "\n\r\t\\":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}[c])
        elif (category[0] in "CZM" and c != " ") or (all_escaped and not " " <= c <= "~"):
            out.append(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
        else:
            out.append(c)
    line = "".join(out)
    return line if len(line) <= limit else line[:limit] + "..."


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def gguf_added_tokens(path):
    """[(id, text, type)] of the GGUF's CONTROL and USER_DEFINED tokens, and its eos id."""
    fields = GGUFReader(str(path)).fields
    tokens, types = fields["tokenizer.ggml.tokens"], fields["tokenizer.ggml.token_type"]
    added = []
    for i in range(len(tokens.data)):
        kind = int(types.parts[types.data[i]][0])
        if kind in (CONTROL, USER_DEFINED):
            added.append((i, bytes(tokens.parts[tokens.data[i]]).decode("utf-8"), kind))
    eos = fields["tokenizer.ggml.eos_token_id"]
    return added, int(eos.parts[eos.data[0]][0])


def stretches_are_nfc(text, added_tokens):
    """Whether NFC leaves the text alone as HF applies it: to each stretch between added tokens
    on its own (a mark right after "<|im_end|>" composes with nothing)."""
    pattern = "|".join(map(re.escape, sorted(added_tokens, key=len, reverse=True)))
    return all(unicodedata.is_normalized("NFC", part) for part in re.split(pattern, text))


def encode(tokenizer, text):
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if tokenizer(text)["input_ids"] != ids:
        sys.exit(f"add_special_tokens=True adds ids to {text!r}: Qwen should add none")
    return ids


def decode(tokenizer, ids):
    return tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def ids_line(ids):
    return " ".join(map(str, ids))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=str(DEFAULT_MODEL),
                        help=f"the GGUF file (default {DEFAULT_MODEL})")
    parser.add_argument("--out", default=str(OUT), help=f"where to write (default {OUT})")
    args = parser.parse_args()
    model = Path(args.model)
    if not model.is_file():
        sys.exit(f"no model at {model} (make model fetches it)")
    sha256 = sha256_of(model)
    if sha256 != KNOWN_SHA256:
        print(f"warning: {model} has sha256 {sha256}, not the {KNOWN_SHA256} of the model the "
              "committed fixture was computed from", file=sys.stderr)

    tokenizer = AutoTokenizer.from_pretrained(str(model.parent), gguf_file=model.name)
    n_vocab = len(tokenizer)

    # Every text: the hand-written ones, then the rendered conversations.
    records = [{"category": c, "text": t, "messages": None, "generation_prompt": None}
               for c, t in TEXTS]
    for messages, generation_prompt in CONVERSATIONS:
        rendered = tokenizer.apply_chat_template([{"role": r, "content": c} for r, c in messages],
                                                 tokenize=False,
                                                 add_generation_prompt=generation_prompt)
        records.append({"category": "chat_template", "text": rendered, "messages": messages,
                        "generation_prompt": generation_prompt})
    records.append({"category": "chat_template", "messages": None, "generation_prompt": None,
                    "text": tokenizer.apply_chat_template(TOOL_CONVERSATION, tools=[WEATHER_TOOL],
                                                          tokenize=False,
                                                          add_generation_prompt=True)})
    texts = [r["text"] for r in records]
    if len(set(texts)) != len(texts):
        sys.exit("two records have the same text")
    added, eos_id = gguf_added_tokens(model)
    for r in records:
        is_nfc = stretches_are_nfc(r["text"], [text for _, text, _ in added])
        if is_nfc == (r["category"] == "non_nfc"):
            sys.exit(f"{r['text']!r} is {'' if is_nfc else 'not '}NFC: fix its category")

    # The converter's ids first, then with the added tokens it left out (see the docstring).
    for r in records:
        r["converter_ids"] = encode(tokenizer, r["text"])
    registered = {t.content for t in tokenizer.added_tokens_decoder.values()}
    missing = [(i, text, kind) for i, text, kind in added if text not in registered]
    tokenizer.add_tokens([AddedToken(text, normalized=False, special=kind == CONTROL)
                          for _, text, kind in missing])
    for i, text, _ in added:
        if tokenizer.convert_tokens_to_ids(text) != i:
            sys.exit(f"{text} has id {tokenizer.convert_tokens_to_ids(text)}, the GGUF says {i}")
    if len(tokenizer) != n_vocab:
        sys.exit(f"registering the added tokens changed the vocabulary size to {len(tokenizer)}")
    for r in records:
        r["ids"] = encode(tokenizer, r["text"])
        r["decoded"] = decode(tokenizer, r["ids"])

    facts = {name: tokenizer.convert_tokens_to_ids(name)
             for name in ("<|endoftext|>", "<|im_start|>", "<|im_end|>")}
    lines = [
        f"# {Path(args.out).name}: written by tools/make_real_model_tokenizer_fixtures.py; "
        "do not edit.",
        f"# model: {model.name}, sha256 {sha256}",
        f"# oracle: transformers {transformers.__version__} (tokenizers {tokenizers.__version__})"
        ", AutoTokenizer.from_pretrained(folder, gguf_file=name), encoded with "
        "add_special_tokens=False",
        f"# added tokens the converter left out, registered from the GGUF's token types: "
        f"{len(missing)} of {len(added)} ({missing[0][1]} ... {missing[-1][1]})" if missing else
        f"# added tokens: the converter registered all {len(added)}",
        f"# vocabulary: {n_vocab} tokens; <|endoftext|> {facts['<|endoftext|>']}, <|im_start|> "
        f"{facts['<|im_start|>']}, <|im_end|> {facts['<|im_end|>']}; eos in the GGUF metadata "
        f"{eos_id} ({tokenizer.convert_ids_to_tokens(eos_id)}), eos by the converter "
        f"{tokenizer.eos_token_id} ({tokenizer.eos_token})",
        f"# {len(records)} texts: " + ", ".join(f"{c} {n}" for c, n in
                                                Counter(r["category"] for r in records).items()),
        "# Records are separated by blank lines; `text` and `decoded` are hex, ids are decimal.",
        "# `decoded`: what decode(ids) gives when it is not the text (its NFC); `converter_ids`:",
        "# the ids before the left-out added tokens were registered, when they differ.",
        "",
    ]
    for r in records:
        lines.append(f"# {r['category']}: {readable(r['text'])}")
        lines.append(f"category {r['category']}")
        for role, content in r["messages"] or []:
            lines.append(f"message {role} {content.encode().hex()}".rstrip())
        if r["generation_prompt"] is not None:
            lines.append(f"generation_prompt {int(r['generation_prompt'])}")
        lines.append(f"text {r['text'].encode().hex()}".rstrip())
        lines.append(f"ids {ids_line(r['ids'])}".rstrip())
        if r["decoded"] != r["text"]:
            lines.append(f"decoded {r['decoded'].encode().hex()}")
        if r["converter_ids"] != r["ids"]:
            lines.append(f"converter_ids {ids_line(r['converter_ids'])}")
        lines.append("")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines), encoding="utf-8", newline="\n")

    print(f"wrote {out}: {len(records)} texts, "
          + ", ".join(f"{c} {n}" for c, n in Counter(r["category"] for r in records).items()))
    print(f"registered {len(missing)} added tokens the converter left out: "
          + " ".join(text for _, text, _ in missing))
    changed = [r for r in records if r["converter_ids"] != r["ids"]]
    print(f"{len(changed)} texts whose ids the registered tokens changed (converter_ids kept):")
    for r in changed:
        print(f"  {readable(r['text'], 70)}")
    not_back = [r for r in records if r["decoded"] != r["text"]]
    print(f"{len(not_back)} texts that decode(ids) does not give back:")
    for r in not_back:
        nfc_back = r["decoded"] == unicodedata.normalize("NFC", r["text"])
        print(f"  {readable(r['text'], 60)}  ->  {readable(r['decoded'], 60)}"
              f"{'  (its NFC)' if nfc_back else '  (NOT its NFC)'}")
    cross_check_with_tokenizer_json(records)


def cross_check_with_tokenizer_json(records):
    """The same ids from Qwen's own tokenizer.json, when it is here (printed only)."""
    folder = os.environ.get("QWEN_TOKENIZER_DIR", "../shared/qwen-tokenizer")
    path = Path(folder) / "tokenizer.json"
    if not path.is_file():
        print(f"no {path}: ids not compared with Qwen's own tokenizer.json")
        return
    qwen = tokenizers.Tokenizer.from_file(str(path))
    theirs = [qwen.encode(r["text"], add_special_tokens=False).ids for r in records]
    differ = [(r, ids) for r, ids in zip(records, theirs) if ids != r["ids"]]
    print(f"Qwen's {path}: {len(records) - len(differ)} of {len(records)} texts get the same ids")
    for r, ids in differ:
        start = next(i for i, (a, b) in enumerate(zip(r["ids"] + [-1], ids + [-1])) if a != b)
        mine, other = r["ids"][start:start + 6], ids[start:start + 6]
        print(f"  differs: {readable(r['text'], 70)}\n    from id {start}: fixture {mine} "
              f"{pieces(qwen, mine)}, tokenizer.json {other} {pieces(qwen, other)}")


def pieces(tokenizer, ids):
    return [tokenizer.id_to_token(i) for i in ids]


if __name__ == "__main__":
    main()
