#!/usr/bin/env python3
"""Writes step04_tokenizer/nfc_tables.inc: the Unicode data that NFC normalization needs, in the
Unicode version of HF tokenizers' NFC normalizer.

    pip install unicodedata2==16.0.0 unicodedataplus==16.0.0.post1
    python3 tools/gen_nfc_tables.py              # run from the repository root
    python3 tools/gen_nfc_tables.py --verify     # also probe HF tokenizers (about two minutes)

Which Unicode version: not 16.0. HF `tokenizers` normalizes with the Rust crate
unicode-normalization-alignments, whose tables are Unicode 9.0.0 (its regex engine, which
unicode_ranges.inc follows, is Unicode 16.0). Probing HF shows it: U+0D3B MALAYALAM SIGN VERTICAL
BAR VIRAMA (Unicode 10.0, combining class 9) is never reordered, and U+105D2 U+0307 (Todhri,
Unicode 16.0) is not composed into U+105C9. To give HF's ids we must normalize as it does.

Where Unicode 9.0's data comes from: Unicode never changes the normalization data of a character
once it is assigned (the Normalization Stability Policy), so Unicode 9.0's tables are Unicode
16.0's (unicodedata2) restricted to the characters that 9.0 already had (their DerivedAge, from
unicodedataplus). A character added later is unassigned to HF's normalizer: combining class 0,
no decomposition, composes with nothing.

The tables (Hangul syllables are left out: they decompose and compose by arithmetic):
  kNormalizationRanges  code points whose canonical combining class is not 0 or whose
                        NFC_Quick_Check is not Yes, as ranges of equal (class, quick check).
                        Quick check No: the character never survives NFC (a singleton, a
                        composition exclusion, a non-starter decomposition). Maybe: it can
                        compose with the character before it (U+0301, Hangul vowels, ...).
  kDecompositions       canonical decomposition mappings, one level: {code point, first,
                        second} (second 0 for a singleton); applied recursively.
  kCompositions         the pairs of canonical composition, {first, second, composite}, sorted:
                        the two-character mappings of the primary composites, i.e. of the
                        characters that NFC leaves as they are.

--verify runs every code point through HF's NFD and NFC normalizers and checks the three tables
against what they do (the oracle is HF itself, not unicodedata2).
"""
import argparse
import sys

try:
    import unicodedata2 as unicodedata
    import unicodedataplus
except ImportError:
    sys.exit("needs unicodedata2 16.0.0 and unicodedataplus 16.0.0.post1 (Unicode 16.0): "
             "pip install unicodedata2==16.0.0 unicodedataplus==16.0.0.post1")

OUTPUT = "step04_tokenizer/nfc_tables.inc"
HF_NORMALIZER_UNICODE = (9, 0)  # the tables of unicode-normalization-alignments 0.1.12
MAX_CODE_POINT = 0x10FFFF
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
HANGUL_VOWELS = range(0x1161, 0x1176)    # V jamo: compose with a leading consonant
HANGUL_TRAILING = range(0x11A8, 0x11C3)  # T jamo: compose with an LV syllable


def known_to_hf(cp):
    """Whether the character was assigned in HF's normalizer's Unicode version."""
    age = unicodedataplus.age(chr(cp))
    if age == "Unassigned":
        return False
    major, minor = age.split(".")
    return (int(major), int(minor)) <= HF_NORMALIZER_UNICODE


def scalar_values():
    return (cp for cp in range(MAX_CODE_POINT + 1) if not 0xD800 <= cp <= 0xDFFF)


def canonical_mapping(cp):
    """The one-level canonical decomposition as a list of code points, [] if none (a
    compatibility mapping, written "<tag> ...", is not canonical)."""
    fields = unicodedata.decomposition(chr(cp)).split()
    if not fields or fields[0].startswith("<"):
        return []
    return [int(field, 16) for field in fields]


def build_tables():
    """(ranges, decompositions, compositions) for the characters known to HF's normalizer."""
    known = [cp for cp in scalar_values() if known_to_hf(cp)]
    decompositions, compositions = [], []
    for cp in known:
        mapping = canonical_mapping(cp)
        if not mapping or HANGUL_FIRST <= cp <= HANGUL_LAST:
            continue
        assert len(mapping) <= 2 and all(known_to_hf(part) for part in mapping), hex(cp)
        decompositions.append((cp, mapping[0], mapping[1] if len(mapping) == 2 else 0))
        if len(mapping) == 2 and unicodedata.normalize("NFC", chr(cp)) == chr(cp):
            assert unicodedata.normalize("NFC", chr(mapping[0]) + chr(mapping[1])) == chr(cp)
            compositions.append((mapping[0], mapping[1], cp))
    compositions.sort()

    composite_of = {cp for cp, _, _ in decompositions}
    primary = {composite for _, _, composite in compositions}
    second_parts = {second for _, second, _ in compositions}
    second_parts.update(HANGUL_VOWELS, HANGUL_TRAILING)
    properties = {}  # cp -> (combining class, quick check) where either is not the default
    for cp in known:
        quick_check = ("kNo" if cp in composite_of and cp not in primary
                       else "kMaybe" if cp in second_parts else "kYes")
        combining_class = unicodedata.combining(chr(cp))
        if combining_class or quick_check != "kYes":
            properties[cp] = (combining_class, quick_check)
    check_boundaries(known, properties, second_parts)

    ranges = []
    for cp in sorted(properties):
        if ranges and ranges[-1][1] == cp - 1 and tuple(ranges[-1][2:]) == properties[cp]:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp, *properties[cp]])
    return ranges, decompositions, compositions


def check_boundaries(known, properties, second_parts):
    """nfc.cpp normalizes text in segments that start before each character of class 0 with quick
    check Yes. That is safe only if such a character's full decomposition starts with a character
    that is of class 0 and composes with nothing before it."""
    for cp in known:
        if cp in properties:
            continue
        first = ord(unicodedata.normalize("NFD", chr(cp))[0])
        assert unicodedata.combining(chr(first)) == 0 and first not in second_parts, hex(cp)


def write_ranges(out, ranges):
    out.write(f"// Combining class != 0 or NFC_Quick_Check != Yes: {len(ranges)} ranges "
              "{first, last, class, quick check}\n")
    out.write("static const NormalizationRange kNormalizationRanges[] = {\n")
    for i in range(0, len(ranges), 2):
        row = ", ".join(f"{{0x{a:05X}, 0x{b:05X}, {c}, {q}}}" for a, b, c, q in ranges[i:i + 2])
        out.write(f"    {row},\n")
    out.write("};\n\n")


def write_triples(out, type_name, name, rows, what):
    out.write(f"// {what}: {len(rows)} entries\n")
    out.write(f"static const {type_name} {name}[] = {{\n")
    for i in range(0, len(rows), 3):
        row = ", ".join(f"{{0x{a:05X}, 0x{b:05X}, 0x{c:05X}}}" for a, b, c in rows[i:i + 3])
        out.write(f"    {row},\n")
    out.write("};\n\n")


def verify_against_hf(ranges, decompositions, compositions):
    """Every code point through HF's normalizers: its NFD must be the tables' full decomposition,
    its combining class the tables' (found by whether it swaps with a neighbouring mark), and
    each primary composite of Unicode 16.0 must be composed by HF exactly when it is a pair of
    kCompositions."""
    from tokenizers import normalizers

    hf_nfd, hf_nfc = normalizers.NFD(), normalizers.NFC()
    mapping = {cp: [a] + ([b] if b else []) for cp, a, b in decompositions}
    classes = {}
    for first, last, combining_class, _ in ranges:
        for cp in range(first, last + 1):
            classes[cp] = combining_class
    pairs = {(a, b) for a, b, _ in compositions}

    def decompose(cp):
        if HANGUL_FIRST <= cp <= HANGUL_LAST:
            return unicodedata.normalize("NFD", chr(cp))
        if cp not in mapping:
            return chr(cp)
        return "".join(decompose(part) for part in mapping[cp])

    mismatches = []
    for cp in scalar_values():
        c = chr(cp)
        if hf_nfd.normalize_str(c) != decompose(cp):
            mismatches.append(f"U+{cp:04X}: HF decomposes it to {hf_nfd.normalize_str(c)!r}")
        # A mark of class k > 1 moves before U+0334 (class 1) only if HF gives it class k too; one
        # of class 1 moves before nothing, so test whether U+05B0 (class 10) moves before it.
        unicode_class = unicodedata.combining(c)
        if unicode_class:
            probe = "a" + c + "\u0334" if unicode_class > 1 else "a\u05b0" + c
            hf_class = unicode_class if hf_nfd.normalize_str(probe) != probe else 0
            if hf_class != classes.get(cp, 0):
                mismatches.append(f"U+{cp:04X}: HF's combining class is {hf_class}")
        mapping16 = canonical_mapping(cp)
        if len(mapping16) == 2 and unicodedata.normalize("NFC", c) == c:
            decomposed = unicodedata.normalize("NFD", c)
            hf_composes = hf_nfc.normalize_str(decomposed) == c
            if hf_composes != (tuple(mapping16) in pairs):
                mismatches.append(f"U+{cp:04X}: HF {'composes' if hf_composes else 'does not'}")
    for line in mismatches[:20]:
        print(line)
    print(f"verify: {len(mismatches)} disagreements with HF tokenizers' normalizers")
    return not mismatches


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verify", action="store_true", help="probe HF tokenizers too")
    args = parser.parse_args()
    if unicodedata.unidata_version != unicodedataplus.unidata_version:
        sys.exit(f"unicodedata2 is Unicode {unicodedata.unidata_version}, unicodedataplus "
                 f"{unicodedataplus.unidata_version}: install the same version of both")

    ranges, decompositions, compositions = build_tables()
    version = ".".join(map(str, HF_NORMALIZER_UNICODE)) + ".0"
    with open(OUTPUT, "w", encoding="ascii", newline="\n") as out:
        out.write(f"// nfc_tables.inc - generated by tools/gen_nfc_tables.py: Unicode {version}, "
                  "the version of HF\n// tokenizers' NFC normalizer, taken from Unicode "
                  f"{unicodedata.unidata_version} (unicodedata2) for the characters that\n"
                  f"// {version} had. Do not edit: re-run the script. Hangul syllables are not "
                  "listed (arithmetic).\n\n")
        write_ranges(out, ranges)
        write_triples(out, "Decomposition", "kDecompositions", decompositions,
                      "Canonical decompositions, one level, by code point {code point, first, "
                      "second or 0}")
        write_triples(out, "Composition", "kCompositions", compositions,
                      "Canonical composition pairs, sorted {first, second, composite}")
    print(f"wrote {OUTPUT}: Unicode {version}, {len(ranges)} ranges, {len(decompositions)} "
          f"decompositions, {len(compositions)} compositions")
    if args.verify and not verify_against_hf(ranges, decompositions, compositions):
        sys.exit(1)


if __name__ == "__main__":
    main()
