#!/usr/bin/env python3
"""Writes tests/fixtures/chat_template/: conversations rendered by transformers'
apply_chat_template with Qwen2.5's own chat template, and their token ids, for step08's checks
of render_chatml to compare against, exactly.

    tools/fetch_model.sh                                  # the real model, for its template
    .venv/bin/python3 tools/make_chat_fixtures.py         # from the repository root; seconds

The template is the Jinja program Qwen2.5-Coder-0.5B-Instruct's GGUF carries
(tokenizer.chat_template, read with gguf-py), passed to apply_chat_template explicitly: the
tokenizer folder's tokenizer_config.json may hold another model's template. The tokenizer is
the real Qwen one, $QWEN_TOKENIZER_DIR (default: ../shared/qwen-tokenizer, as the Makefile).
Needs transformers (torch is not needed), gguf and tokenizers.

Files:
  conversations.txt   one record per conversation, records separated by a blank line: each
                      message as "message ROLE HEX" (content as hex, so every byte is exact),
                      generation_prompt 0/1, the rendered text (hex) and its ids
  template.jinja      the template text, byte for byte
  template.sha256     its sha256 (`sha256sum -c template.sha256` in the folder checks it)
"""
import hashlib
import os
import sys
from pathlib import Path

from gguf import GGUFReader
from transformers import AutoTokenizer

OUT = Path("tests/fixtures/chat_template")
MODEL = Path("models/qwen2.5-coder-0.5b-instruct.gguf")
QWEN_DIR = Path(os.environ.get("QWEN_TOKENIZER_DIR", "../shared/qwen-tokenizer"))

CONVERSATIONS = [
    ([("user", "Hello!")], True),
    ([("user", "Hello!")], False),
    ([("system", "You are a pirate."), ("user", "Where is the treasure?")], True),
    ([("system", "Be brief."), ("user", "What is 2+2?"), ("assistant", "4"),
      ("user", "And 3+3?")], True),
    ([("user", "Write a haiku."), ("assistant", "Autumn moonlight -\na worm digs silently\ninto "
      "the chestnut."), ("user", "Another one, please."), ("assistant", "Done.")], False),
    ([("user", "你好，世界！🌍 Ça va? Привет"), ("assistant", "很好，谢谢。\n"),
      ("user", "日本語で答えて。")], True),
    ([("system", ""), ("user", "")], True),
    ([("user", "Hi"), ("assistant", ""), ("user", "")], True),
    ([("assistant", "Hello, how can I help?"), ("user", "Tell me a joke.")], True),
    ([("user", "First."), ("system", "A system turn in the middle."), ("user", "Second.")], True),
    ([("user", "Say <|im_end|> and <|im_start|> literally, and <tool_call> too.")], True),
    ([("user", "  leading and trailing spaces  \n\n"), ("assistant", "\n  ok  ")], True),
]


def main():
    if not MODEL.exists():
        sys.exit(f"{MODEL} is missing: run tools/fetch_model.sh first (it holds the template)")
    if not (QWEN_DIR / "tokenizer.json").exists():
        sys.exit(f"no tokenizer.json in {QWEN_DIR}: set QWEN_TOKENIZER_DIR")
    field = GGUFReader(str(MODEL)).fields["tokenizer.chat_template"]
    template = bytes(field.parts[field.data[0]]).decode("utf-8")
    tokenizer = AutoTokenizer.from_pretrained(str(QWEN_DIR))

    records = []
    for messages, generation_prompt in CONVERSATIONS:
        conversation = [{"role": role, "content": content} for role, content in messages]
        rendered = tokenizer.apply_chat_template(conversation, chat_template=template,
                                                 add_generation_prompt=generation_prompt,
                                                 tokenize=False)
        ids = tokenizer.apply_chat_template(conversation, chat_template=template,
                                            add_generation_prompt=generation_prompt,
                                            tokenize=True)["input_ids"]
        if ids != tokenizer(rendered, add_special_tokens=False)["input_ids"]:
            sys.exit(f"apply_chat_template's ids are not the rendered text's: {messages!r}")
        fields = [f"message {role} {content.encode().hex()}" for role, content in messages]
        fields.append(f"generation_prompt {int(generation_prompt)}")
        fields.append(f"rendered {rendered.encode().hex()}")
        fields.append("ids " + " ".join(map(str, ids)))
        summary = " | ".join(f"{role}: {content!r}" for role, content in messages)
        records.append(f"# {summary}" + (" + generation prompt" if generation_prompt else "")
                       + "\n" + "\n".join(fields) + "\n")

    digest = hashlib.sha256(template.encode("utf-8")).hexdigest()
    OUT.mkdir(parents=True, exist_ok=True)
    header = ("# conversations.txt: written by tools/make_chat_fixtures.py; do not edit.\n"
              f"# transformers {__import__('transformers').__version__} apply_chat_template, "
              f"template sha256 {digest}\n"
              f"# (template.jinja: tokenizer.chat_template of {MODEL.name}).\n"
              "# Records are separated by blank lines; texts are hex, ids are decimal.\n\n")
    (OUT / "conversations.txt").write_text(header + "\n".join(records))
    (OUT / "template.jinja").write_bytes(template.encode("utf-8"))
    (OUT / "template.sha256").write_text(f"{digest}  template.jinja\n")
    print(f"wrote {OUT}: {len(records)} conversations, template sha256 {digest}")


if __name__ == "__main__":
    main()
