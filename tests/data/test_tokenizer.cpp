// tests/data/test_tokenizer.cpp: tapegrad::data::Tokenizer, the one interface over the character
// vocabulary, a trained BPE and GPT-2's tokenizer: the same text through each, the bytes each
// token stands for (for bits per byte), the index a loss ignores, and the text a checkpoint stores,
// read back to the same tokenizer or refused when damaged.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <tapegrad/core/errors.hpp>
#include <tapegrad/data.hpp>

#include "../gpt2_files.hpp"

using namespace tapegrad;
using data::Tokenizer;
using Ids = std::vector<std::int64_t>;

namespace {

const std::string kText = "the cat sat on the mat. the cat ate. Größe 🙂\n";

/// A round trip through to_text/from_text, checked to encode and decode alike.
void check_round_trip(const Tokenizer& t) {
  const Tokenizer back = Tokenizer::from_text(t.name(), t.to_text(), "test");
  CHECK(back.name() == t.name());
  CHECK(back.vocab_size() == t.vocab_size());
  CHECK(back.to_text() == t.to_text());
  CHECK(back.fingerprint() == t.fingerprint());
  const Ids ids = t.encode(kText, "text");
  CHECK(back.encode(kText, "text") == ids);
  CHECK(back.decode(ids.data(), ids.size()) == t.decode(ids.data(), ids.size()));
}

/// The bytes of a text's tokens add up to the text's bytes.
std::size_t token_bytes(const Tokenizer& t, const Ids& ids) {
  std::size_t n = 0;
  for (const std::int64_t id : ids) n += t.bytes_of(id);
  return n;
}

}  // namespace

TEST_SUITE("data.tokenizer") {
  TEST_CASE("characters: ids of code points, <unk> ignored, each token's bytes") {
    const Tokenizer t(data::Vocabulary(data::decode_utf8(kText, "text")));
    CHECK(t.name() == "char");
    CHECK(t.ignore_index() == data::Vocabulary::kUnk);
    const Ids ids = t.encode(kText, "text");
    CHECK(ids.size() == data::decode_utf8(kText, "text").size());
    CHECK(t.decode(ids.data(), ids.size()) == kText);
    CHECK(token_bytes(t, ids) == kText.size());      // "ö" is 2 bytes, "🙂" 4
    CHECK(t.encode("xyz", "text") == Ids{0, 0, 0});  // unknown: <unk>
    CHECK(t.bytes_of(0) == 3);                       // <unk> shows as U+FFFD
    check_round_trip(t);
  }

  TEST_CASE("a BPE: special tokens' text is ordinary text, and the bytes add up") {
    auto bpe = data::BytePairEncoding::train(kText + kText, 300, data::Pretokenizer::gpt2);
    bpe.add_special_tokens({"<|endoftext|>"});
    const Tokenizer t(bpe);
    CHECK(t.name() == "bpe");
    CHECK(t.vocab_size() == std::int64_t(bpe.vocab_size()));
    CHECK(t.ignore_index() == -100);
    const Ids ids = t.encode(kText, "text");
    CHECK(ids.size() < kText.size() / 2);
    CHECK(token_bytes(t, ids) == kText.size());
    CHECK(t.decode(ids.data(), ids.size()) == kText);
    const Ids quoted = t.encode("a <|endoftext|> b", "text");
    CHECK(std::find(quoted.begin(), quoted.end(), t.vocab_size() - 1) == quoted.end());
    check_round_trip(t);
  }

  TEST_CASE("bad text, bad ids and damaged checkpoint text are refused, naming them") {
    const Tokenizer t(data::BytePairEncoding::train(kText, 270));
    CHECK_THROWS_WITH_AS(t.encode("ok \xC3(", "the prompt"),
                         doctest::Contains("the prompt: not valid UTF-8 at byte 3"), DataError);
    const Ids bad = {1, 270};
    CHECK_THROWS_WITH_AS(t.decode(bad.data(), bad.size()),
                         doctest::Contains("expected ids in [0, 270), got 270 at position 1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        Tokenizer::from_text("words", "", "the note"),
        doctest::Contains("expected the tokenizer char, bpe, gpt2 or hf, got 'words'"), ValueError);
    CHECK_THROWS_WITH_AS(Tokenizer::from_text("bpe", "tapegrad-bpe 1\nvocab_size 9\n", "the note"),
                         doctest::Contains("the note line 2: expected vocab_size in [256"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Tokenizer::from_text("gpt2", "gpt2_ids x\n1\n", "the note"),
                         doctest::Contains("the note: expected \"gpt2_ids N\""), ValueError);
    CHECK_THROWS_WITH_AS(Tokenizer::from_text("gpt2", "gpt2_ids 1\n4294967296\nx\n", "the note"),
                         doctest::Contains("the note: expected 1 GPT-2 ids on line 2"), ValueError);
    CHECK_THROWS_WITH_AS(Tokenizer::from_text("char", "ba", "the note"),
                         doctest::Contains("ascending"), ValueError);
  }

  TEST_CASE("GPT-2's tokenizer round-trips through the text a checkpoint stores") {
    const std::filesystem::path dir = testing::gpt2_folder();
    if (dir.empty()) return;
    const Tokenizer t(data::GPT2Tokenizer::load(dir.string()));
    CHECK(t.name() == "gpt2");
    CHECK(t.vocab_size() == 50257);
    CHECK(t.encode("hello world", "text") == Ids{31373, 995});
    CHECK(t.bytes_of(995) == 6);  // " world"
    check_round_trip(t);
    std::string text = t.to_text();
    text.replace(text.find(' ', 9), 1, " 7 ");  // a 50,258th id
    CHECK_THROWS_WITH_AS(Tokenizer::from_text("gpt2", text, "the note"),
                         doctest::Contains("expected 50257 GPT-2 ids on line 2"), ValueError);
  }
  TEST_CASE(
      "the fingerprint is FNV-1a 64 of the name, a newline and the text, and tells apart "
      "tokenizers of one kind and size") {
    const auto fnv1a = [](const std::string& bytes) {
      std::uint64_t h = 0xcbf29ce484222325ULL;
      for (const unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
      return h;
    };
    const Tokenizer chars(data::Vocabulary(U"ba\n"));
    CHECK(chars.fingerprint() == fnv1a("char\n\nab"));
    const auto bpe = data::BytePairEncoding::train("aaabdaaabac", 259);
    const Tokenizer t(bpe);
    CHECK(t.fingerprint() == fnv1a("bpe\n" + bpe.to_text()));
    CHECK(data::tokenizer_fingerprint(bpe) == t.fingerprint());
    CHECK(Tokenizer(data::BytePairEncoding::train("aaabdaaabac", 259)).fingerprint() ==
          t.fingerprint());
    // The same size, other merges; the same merges, another pretokenizer; a special token more.
    const Tokenizer other(data::BytePairEncoding::train("xyxyxzxyz", 259));
    REQUIRE(other.vocab_size() == t.vocab_size());
    CHECK(other.fingerprint() != t.fingerprint());
    CHECK(Tokenizer(data::BytePairEncoding(bpe.merges(), data::Pretokenizer::gpt2)).fingerprint() !=
          t.fingerprint());
    auto special = bpe;
    special.add_special_tokens({"<|end|>"});
    CHECK(Tokenizer(special).fingerprint() != t.fingerprint());
    const std::filesystem::path dir = testing::gpt2_folder();
    if (dir.empty()) return;
    const auto gpt2 = data::GPT2Tokenizer::load(dir.string());
    CHECK(data::tokenizer_fingerprint(gpt2) == Tokenizer(gpt2).fingerprint());
    CHECK(Tokenizer(gpt2).fingerprint() == fnv1a("gpt2\n" + Tokenizer(gpt2).to_text()));
  }
}
