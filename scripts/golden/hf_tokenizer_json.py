#!/usr/bin/python3
"""scripts/golden/hf_tokenizer_json.py: small tokenizer.json files (Hugging Face's tokenizers
format) for byte-level BPE models, and the ids each must give, for tests/data/test_hf_tokenizer.cpp.

Run by hand with Debian's Python 3 and its `regex` module (the tests never need Python; the
outputs are committed):

    /usr/bin/python3 scripts/golden/hf_tokenizer_json.py [GPT2_DIR]

GPT2_DIR (default .cache/gpt2, which scripts/setup.sh fills) holds OpenAI's encoder.json and
vocab.bpe; the script converts them to tokenizer.json's layout in memory, as Hugging Face's own
GPT-2 file lays them out, and writes only the ids of the texts below (the 2 MB file is rebuilt by
the test from the same two files).

Provenance. The huggingface/tokenizers library is not packaged in Debian and there is no network
here, so nothing below runs it. The encoder restates what its documentation and source define for
the parts a byte-level BPE uses, written from reading them, not copied:
  - added tokens are found first, in the raw text: every added token that is not `normalized`,
    then (in what is left) the `normalized` ones; at each place the leftmost match wins, and of
    two starting at one byte the longest (Aho-Corasick, LeftmostLongest). A special token's match
    is skipped when special tokens are encoded as text.
  - the pre-tokenizers cut each remaining stretch into pieces, one after the other: Split (its
    regex, every match and every stretch between matches a piece: "Isolated"), Digits (each
    Unicode number character a piece, or each run of them), ByteLevel (a space before a piece
    that does not start with one when add_prefix_space; GPT-2's pattern when use_regex; then each
    byte as its printable character, bytes_to_unicode). Empty pieces are dropped.
  - the BPE model, per piece: the whole piece when `ignore_merges` and the vocabulary has it;
    else its characters as ids, then, while some adjacent pair has a merge, the pair of lowest
    rank (the merge's index in `merges`) is joined, the leftmost of equal ranks first, one join
    at a time.
  - decoding maps each character of a token back to its byte (a token with a character outside
    the table stays as its UTF-8), and reads the bytes as UTF-8 with U+FFFD for what is not.
The regular expressions are Oniguruma's in the library; `regex` runs them here with `\\s` spelled
out as Oniguruma's Unicode \\s (U+0009..U+000D, U+0085 and the separators, Z), which is also
Unicode's White_Space.

It writes:
  tests/data/fixtures/hf_tokenizer/llama3_like.json   Llama 3's layout: a Sequence of Split (Llama
      3's pattern, Isolated) and ByteLevel (use_regex false), ignore_merges true, merges as
      [a, b] pairs, ids of the byte tokens shuffled, two vocabulary tokens that no merge makes,
      and added tokens (Llama 3's <|begin_of_text|>, <|end_of_text|>, <|eot_id|>; a pair where one
      is a prefix of the other; a non-special "tapegrad" matched after normalisation);
  tests/data/fixtures/hf_tokenizer/smollm2_like.json  SmolLM2's layout: a Sequence of Digits
      (individual_digits) and ByteLevel (use_regex true), merges as "a b" strings, the special
      tokens at ids 0..2 both in the vocabulary and in added_tokens;
  tests/data/golden_hf_tokenizer.hpp                   for every fixture (and GPT-2's converted
      file, and variants with add_prefix_space true), each text's ids with special tokens
      allowed and with them as ordinary text.
"""

import json
import os
import random
import sys
import unicodedata

import regex

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "data", "fixtures", "hf_tokenizer")
HEADER = os.path.join(ROOT, "tests", "data", "golden_hf_tokenizer.hpp")

# ---- the byte-level alphabet ----------------------------------------------------------------------


def bytes_to_unicode():
    """OpenAI's table: printable Latin-1 bytes stand for themselves, the other 68 take U+0100..."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_CHAR = bytes_to_unicode()
CHAR_BYTE = {c: b for b, c in BYTE_CHAR.items()}


def spell(data: bytes) -> str:
    return "".join(BYTE_CHAR[b] for b in data)


# ---- Oniguruma's patterns, run by `regex` --------------------------------------------------------

ONIG_SPACE = r"\t-\r\x85\p{Z}"  # Oniguruma's Unicode \s: U+0009..U+000D, U+0085, Zs, Zl, Zp


def onig_to_regex(pattern: str) -> str:
    """The pattern with \\s and \\S written as Oniguruma reads them (outside a class; \\s inside)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            e = pattern[i + 1]
            if e == "s":
                out.append(ONIG_SPACE if in_class else "[" + ONIG_SPACE + "]")
            elif e == "S":
                assert not in_class, "\\S inside a class is not translated"
                out.append("[^" + ONIG_SPACE + "]")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


def check_space_translation():
    """Oniguruma's \\s is exactly Unicode's White_Space; check the translation on every character."""
    white_space = set(range(0x09, 0x0E)) | {0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F,
                                            0x205F, 0x3000} | set(range(0x2000, 0x200B))
    space = regex.compile("[" + ONIG_SPACE + "]")
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        assert bool(space.fullmatch(chr(cp))) == (cp in white_space), hex(cp)


GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# ---- the encoder ---------------------------------------------------------------------------------


def regex_pieces(compiled, text):
    """Isolated: every match and every stretch between matches, in order, empty ones dropped."""
    out, prev = [], 0
    for m in compiled.finditer(text):
        if m.start() > prev:
            out.append(text[prev : m.start()])
        if m.end() > m.start():
            out.append(m.group())
        prev = m.end()
    if prev < len(text):
        out.append(text[prev:])
    return out


class Tokenizer:
    def __init__(self, spec: dict):
        model = spec["model"]
        assert model["type"] == "BPE" and not model.get("byte_fallback")
        self.vocab = model["vocab"]
        self.ignore_merges = bool(model.get("ignore_merges", False))
        self.ranks = {}
        for rank, m in enumerate(model["merges"]):
            a, b = m.split(" ") if isinstance(m, str) else m
            assert a in self.vocab and b in self.vocab and a + b in self.vocab, m
            assert (a, b) not in self.ranks
            self.ranks[(a, b)] = rank
        self.added = spec["added_tokens"]
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        for t in self.added:
            self.id_to_token[t["id"]] = t["content"]
        self.added_ids = {t["id"] for t in self.added}
        self.steps = []
        pre = spec["pre_tokenizer"]
        for step in pre["pretokenizers"] if pre["type"] == "Sequence" else [pre]:
            if step["type"] == "Split":
                assert step["behavior"] == "Isolated" and not step["invert"]
                p = step["pattern"]
                source = onig_to_regex(p["Regex"]) if "Regex" in p else regex.escape(p["String"])
                self.steps.append(("split", regex.compile(source)))
            elif step["type"] == "Digits":
                self.steps.append(("split", regex.compile(r"\p{N}" if step["individual_digits"]
                                                          else r"\p{N}+")))
            elif step["type"] == "ByteLevel":
                self.steps.append(("byte_level", step["add_prefix_space"],
                                   step.get("use_regex", True)))
            else:
                raise ValueError(step["type"])

    # added tokens: two passes of leftmost-longest matching
    def split_added(self, segments, tokens, special_as_text):
        out = []
        for seg, token_id in segments:
            if token_id is not None or not tokens:
                out.append((seg, token_id))
                continue
            at, start = 0, 0
            while at < len(seg):
                best = None
                for t in tokens:
                    if seg.startswith(t["content"], at):
                        if best is None or len(t["content"]) > len(best["content"]):
                            best = t
                if best is None:
                    at += 1
                    continue
                if best["special"] and special_as_text:  # consumed, left as text
                    at += len(best["content"])
                    continue
                if at > start:
                    out.append((seg[start:at], None))
                out.append((best["content"], best["id"]))
                at += len(best["content"])
                start = at
            if start < len(seg):
                out.append((seg[start:], None))
        return out

    def pieces(self, text):
        pieces = [text]
        for step in self.steps:
            nxt = []
            for p in pieces:
                if step[0] == "split":
                    nxt += regex_pieces(step[1], p)
                else:
                    _, add_prefix_space, use_regex = step
                    if add_prefix_space and not p.startswith(" "):
                        p = " " + p
                    nxt += regex_pieces(regex.compile(onig_to_regex(GPT2_PATTERN)), p) \
                        if use_regex else [p]
            pieces = [p for p in nxt if p]
        return pieces

    def bpe(self, piece: str):
        word = spell(piece.encode("utf-8"))
        if self.ignore_merges and word in self.vocab:
            return [self.vocab[word]]
        symbols = list(word)
        while len(symbols) > 1:
            best = None
            for i in range(len(symbols) - 1):
                r = self.ranks.get((symbols[i], symbols[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                break
            i = best[1]
            symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
        return [self.vocab[s] for s in symbols]

    def encode(self, text, special_as_text=False):
        segments = [(text, None)]
        plain = [t for t in self.added if not t["normalized"]]
        normalized = [t for t in self.added if t["normalized"]]
        segments = self.split_added(segments, plain, special_as_text)
        segments = self.split_added(segments, normalized, special_as_text)
        ids = []
        for seg, token_id in segments:
            if token_id is not None:
                ids.append(token_id)
                continue
            for p in self.pieces(seg):
                ids += self.bpe(p)
        return ids

    def decode(self, ids):
        data = b""
        for i in ids:
            token = self.id_to_token[i]
            if i in self.added_ids:
                data += token.encode("utf-8")
            elif all(c in CHAR_BYTE for c in token):
                data += bytes(CHAR_BYTE[c] for c in token)
            else:
                data += token.encode("utf-8")
        return data.decode("utf-8", errors="replace")


# ---- a small vocabulary, trained -----------------------------------------------------------------

TRAINING_TEXT = """\
The tokenizer reads text as bytes. It's the first thing a language model sees, and they'll see it
again: we're sure you've noticed that I'd rather count tokens than words. Numbers like 2024, 3.14159
and 1,000,000 are cut into groups of three digits; 12345 becomes 123 and 45.
    def encode(self, text):  # indented code, with tabs\tand spaces
        return [self.vocab[t] for t in text.split()]
Unicode: café, naïve, Größe, Ελληνικά, русский текст, 日本語のテキスト, 中文分词, emoji 🙂🙃👍.
Lines end with \\n, sometimes \\r\\n, and paragraphs with blank lines.

The end. THE END. The tokenizer's tokens: the, then, there, these, those, tokens, tokenized.
"""


def train(text, pieces_of, num_merges):
    """Byte-level BPE training: the most frequent adjacent pair within pieces, ties by the pair's
    spelling (smallest first), joined everywhere left to right."""
    words = {}
    for p in pieces_of(text):
        w = tuple(spell(p.encode("utf-8")))
        words[w] = words.get(w, 0) + 1
    merges = []
    for _ in range(num_merges):
        counts = {}
        for w, n in words.items():
            for pair in zip(w, w[1:]):
                counts[pair] = counts.get(pair, 0) + n
        if not counts:
            break
        best = min(counts, key=lambda pair: (-counts[pair], pair))
        merges.append(best)
        joined = {}
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            joined[tuple(out)] = joined.get(tuple(out), 0) + n
        words = joined
    return merges


def added(token_id, content, special=True, normalized=None):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": (not special) if normalized is None else normalized,
            "special": special}


def llama3_like():
    split = regex.compile(onig_to_regex(LLAMA3_PATTERN))
    merges = train(TRAINING_TEXT, lambda t: regex_pieces(split, t), 300)
    byte_tokens = [BYTE_CHAR[b] for b in range(256)]
    random.Random(3).shuffle(byte_tokens)  # the ids of the bytes are not the bytes
    vocab = {t: i for i, t in enumerate(byte_tokens)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    # Two tokens no merge makes: only ignore_merges gives them, and only as a whole piece.
    for extra in [spell(" subword".encode()), spell("Straße".encode())]:
        assert extra not in vocab
        vocab[extra] = len(vocab)
    n = len(vocab)
    added_tokens = [added(n, "<|begin_of_text|>"), added(n + 1, "<|end_of_text|>"),
                    added(n + 2, "<|eot_id|>"), added(n + 3, "<|im_start|>"),
                    added(n + 4, "<|im_start|>user"), added(n + 5, "tapegrad", special=False)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]},
        "post_processor": {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
             "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                      {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
                      {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [n],
                                                      "tokens": ["<|begin_of_text|>"]}}}]},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }


def smollm2_like():
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    gpt2 = regex.compile(onig_to_regex(GPT2_PATTERN))
    digits = regex.compile(r"\p{N}")

    def pieces_of(text):
        return [q for p in regex_pieces(digits, text) for q in regex_pieces(gpt2, p)]

    merges = train(TRAINING_TEXT, pieces_of, 250)
    vocab = {t: i for i, t in enumerate(specials)}
    for b in range(256):
        vocab[BYTE_CHAR[b]] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(i, t, normalized=False) for i, t in enumerate(specials)],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": True}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }


def gpt2_converted(folder):
    """OpenAI's two files in the layout of Hugging Face's GPT-2 tokenizer.json."""
    with open(os.path.join(folder, "encoder.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(folder, "vocab.bpe"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    merges = [line for line in lines[1:] if line]
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(50256, "<|endoftext|>", normalized=True)],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "vocab": vocab, "merges": merges},
    }


def with_prefix_space(spec):
    spec = json.loads(json.dumps(spec))
    pre = spec["pre_tokenizer"]
    for step in pre["pretokenizers"] if pre["type"] == "Sequence" else [pre]:
        if step["type"] == "ByteLevel":
            step["add_prefix_space"] = True
    return spec


# ---- the texts -----------------------------------------------------------------------------------

TEXTS = [
    ("empty", ""),
    ("hello world", "Hello world"),
    ("spaces around", "  two leading spaces, three trailing   "),
    ("runs of spaces", "a  b   c    d\t\te"),
    ("contractions", "I'm sure they'll've said \"it's done\"; THEY'RE HERE! We'D go, you'VE won."),
    ("long s contraction", "it'\u017f odd"),
    ("numbers", "1 12 123 1234 12345 3.14159 -42 1,000,000 0x1F"),
    ("unicode numbers", "\u00bd \u00b2 \u0663\u0664\u0665 \u2167 \u4e09"),
    ("newlines", "line one\nline two\r\n\n\n  indented\ttab\n"),
    ("newline runs", "a\n\n\nb \n \n c\r\r\nd   \n"),
    ("unicode words", "caf\u00e9 na\u00efve Gr\u00f6\u00dfe \u65e5\u672c\u8a9e\u306e\u30c6\u30ad"
                      "\u30b9\u30c8 \u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440"),
    ("emoji", "\U0001f642\U0001f643 \U0001f469\u200d\U0001f4bb ok\U0001f44d!"),
    ("unicode spaces", "nbsp\u00a0here, ideographic\u3000space, nel\u0085mark, ls\u2028end"),
    ("combining marks", "e\u0301 a\u0308bc \u0915\u094d\u0937"),
    ("code", "for (int i = 0; i < n; ++i) { x[i] += 2; }  // done"),
    ("punctuation runs", "Wait... what?!? (yes) -- no; \"quoted\" 'single'\n\n"),
    ("the training text", TRAINING_TEXT),
    ("ignore_merges words", "Stra\u00dfe: a subword, and subwords; Stra\u00dfen"),
    ("added tokens", "<|begin_of_text|>Hello<|eot_id|> world <|end_of_text|>"),
    ("added token after spaces", "end   <|eot_id|>  next"),
    ("longest added token", "x<|im_start|>user hi<|im_start|>assistant"),
    ("non-special added token", "tapegrad tokenizes; tapegrad<|eot_id|>tapegrad"),
    ("smollm2 specials", "<|im_start|>user\n2 + 2 = 4<|im_end|>\n<|endoftext|>"),
    ("gpt2 special", "one<|endoftext|>two <|endoftext|>"),
    ("half a special", "<|begin_of_text <|eot_id|"),
]

PREFIX_TEXTS = ["Hello world", " already spaced", "<|eot_id|>after<|endoftext|>x y",
                "12 apples", "\nnewline first"]


def c_string(s: str) -> str:
    """A C++ string literal of s's UTF-8: printable ASCII as itself, the rest as octal escapes."""
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c in "\\\"":
            out.append("\\" + c)
        elif 0x20 <= b < 0x7F and c != "?":  # no trigraphs
            out.append(c)
        else:
            out.append("\\%03o" % b)
    return '"' + "".join(out) + '"sv'


def main():
    gpt2_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".cache", "gpt2")
    check_space_translation()
    specs = {"llama3_like": llama3_like(), "smollm2_like": smollm2_like()}
    os.makedirs(FIXTURES, exist_ok=True)
    for name, spec in specs.items():
        with open(os.path.join(FIXTURES, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(spec, f, ensure_ascii=False, indent=1)
            f.write("\n")
    tokenizers = {name: Tokenizer(spec) for name, spec in specs.items()}
    tokenizers["gpt2"] = Tokenizer(gpt2_converted(gpt2_dir))
    prefixed = {name + "+prefix": Tokenizer(with_prefix_space(t_spec)) for name, t_spec in
                [("smollm2_like", specs["smollm2_like"]), ("gpt2", gpt2_converted(gpt2_dir))]}

    cases = []
    for name, t in tokenizers.items():
        for label, text in TEXTS:
            allowed, ordinary = t.encode(text), t.encode(text, special_as_text=True)
            assert t.decode(allowed) == text and t.decode(ordinary) == text, (name, label)
            cases.append((name, label, text, allowed, ordinary))
    for name, t in prefixed.items():
        for text in PREFIX_TEXTS:
            cases.append((name, "prefix space: " + text, text, t.encode(text),
                          t.encode(text, special_as_text=True)))

    lines = [
        "// tests/data/golden_hf_tokenizer.hpp: golden ids of tokenizer.json files (Hugging Face's",
        "// tokenizers format) for byte-level BPE models.",
        "//",
        "// Generated by scripts/golden/hf_tokenizer_json.py (Python %s, regex %s), which restates"
        % (sys.version.split()[0], regex.__version__),
        "// the format's encoding from its documentation (see the script), with the fixtures of",
        "// tests/data/fixtures/hf_tokenizer/ and GPT-2's encoder.json and vocab.bpe converted:",
        "//",
        "//   /usr/bin/python3 scripts/golden/hf_tokenizer_json.py",
        "//",
        "// Do not edit: change the script and run it again.",
        "//",
        "// kCases: each fixture (\"gpt2\" is GPT-2's files in tokenizer.json's layout; \"+prefix\"",
        "// sets ByteLevel's add_prefix_space) with each text, its ids with the special tokens found",
        "// in the text (`allowed`) and with their text as ordinary text (`ordinary`; non-special",
        "// added tokens are still found).",
        "#pragma once",
        "",
        "#include <cstdint>",
        "#include <string_view>",
        "#include <vector>",
        "",
        "namespace golden::hf_tokenizer {",
        "",
        "using namespace std::string_view_literals;",
        "",
        "struct Case {",
        "  std::string_view fixture;",
        "  std::string_view name;",
        "  std::string_view text;  // UTF-8",
        "  std::vector<std::uint32_t> allowed, ordinary;",
        "};",
        "",
        "inline const std::vector<Case> kCases = {",
    ]
    for fixture, label, text, allowed, ordinary in cases:
        lines.append("    {%s, %s," % (c_string(fixture), c_string(label)))
        lines.append("     %s," % c_string(text))
        lines.append("     {%s}," % ", ".join(map(str, allowed)))
        lines.append("     {%s}}," % ", ".join(map(str, ordinary)))
    lines += ["};", "", "}  // namespace golden::hf_tokenizer", ""]
    with open(HEADER, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print("wrote", len(cases), "cases to", HEADER)


if __name__ == "__main__":
    main()
