// tests/data/test_bpe.cpp: tapegrad::data::BytePairEncoding: the merges minbpe learns on a text
// small enough to follow by hand, ties and overlapping pairs as documented, the fast train and
// encode equal to the references, decode repairing invalid UTF-8 as Python does, and the text file
// saved, loaded and refused, when damaged, with the file and line named.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <tapegrad/data.hpp>
#include <tapegrad/core/errors.hpp>

using namespace tapegrad;
using data::BytePairEncoding;
using Ids = std::vector<std::uint32_t>;
using Merges = std::vector<BytePairEncoding::Merge>;

namespace {

namespace fs = std::filesystem;

fs::path folder(const std::string& name) {
  const fs::path dir = fs::path(TAPEGRAD_BINARY_DIR) / "test_output" / "data.bpe" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string random_bytes(std::size_t n, unsigned alphabet, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = char(gen() % alphabet);
  return s;
}

Ids byte_ids(const std::string& text) {
  Ids ids;
  for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

const std::string kUtf8 =
    "Größe, naïve café — 日本語のテキスト, emoji 🙂🙃 and ascii. "
    "Größe again: 日本語 🙂!\n";

}  // namespace

TEST_SUITE("data.bpe") {
  TEST_CASE("aaabdaaabac: the merges minbpe learns, and the ids they give") {
    const std::string text = "aaabdaaabac";
    const auto bpe = BytePairEncoding::train(text, 259);
    // (a, a) occurs 4 times; then (aa, a) and (a, b) twice each, (aa, a) first; then (aaa, b).
    CHECK(bpe.merges() == Merges{{'a', 'a'}, {256, 'a'}, {257, 'b'}});
    CHECK(bpe.vocab_size() == 259);
    CHECK(bpe.bytes_of(258) == "aaab");
    CHECK(bpe.encode(text) == Ids{258, 'd', 258, 'a', 'c'});
    CHECK(bpe.encode("aab") == Ids{256, 'b'});
    CHECK(bpe.decode(bpe.encode(text)) == text);
    // Pairs seen once are merged too, until the text is one token: 7 merges, not 744.
    const auto all = BytePairEncoding::train(text, 1000);
    CHECK(all.vocab_size() == 263);
    CHECK(all.merges()[3] == BytePairEncoding::Merge{258, 'd'});
    CHECK(all.encode(text) == Ids{262});
  }

  TEST_CASE(
      "a tie goes to the pair seen first in the text; overlapping pairs count, merge left to "
      "right") {
    // (c, d) and (a, b) both occur twice; (c, d) comes first in the text, though (a, b) is smaller.
    CHECK(BytePairEncoding::train("cdabcdab", 257).merges() == Merges{{'c', 'd'}});
    const auto bpe = BytePairEncoding::train("xaaax", 257);  // (a, a) twice, in "aaa"
    CHECK(bpe.merges() == Merges{{'a', 'a'}});
    CHECK(bpe.encode("aaa") == Ids{256, 'a'});
    CHECK(bpe.encode("aaaa") == Ids{256, 256});
    // An empty text or one byte has no pair: no merges. So does vocab_size 256.
    CHECK(BytePairEncoding::train("", 300).vocab_size() == 256);
    CHECK(BytePairEncoding::train("z", 300).vocab_size() == 256);
    CHECK(BytePairEncoding::train("abab", 256).vocab_size() == 256);
    CHECK(BytePairEncoding().encode("hi") == Ids{'h', 'i'});
    CHECK(BytePairEncoding().encode("").empty());
  }

  TEST_CASE("UTF-8 text round-trips through encode and decode, in fewer tokens") {
    std::string text;
    for (int i = 0; i < 20; ++i) text += kUtf8;
    const auto bpe = BytePairEncoding::train(text, 400);
    const Ids ids = bpe.encode(text);
    CHECK(ids.size() < text.size() / 10);
    CHECK(bpe.decode(ids) == text);
    const std::string unseen =
        "Größer 日本 🙂 zebra\n";  // pieces the training text never held
    CHECK(bpe.decode(bpe.encode(unseen)) == unseen);
  }

  TEST_CASE("the fast train and encode give the references' merges and ids") {
    std::string repeated;
    for (int i = 0; i < 50; ++i) repeated += "the cat sat on the mat. ";
    const std::vector<std::string> texts = {random_bytes(3000, 256, 1),
                                            random_bytes(3000, 3, 2),  // every byte; many ties
                                            random_bytes(500, 2, 3),
                                            repeated,
                                            kUtf8 + kUtf8 + kUtf8,
                                            std::string(300, 'a'),
                                            "",
                                            "q"};
    for (const std::string& text : texts) {
      CAPTURE(text.size());
      const auto fast = BytePairEncoding::train(text, 256 + 300);
      const auto reference = BytePairEncoding::train_reference(text, 256 + 300);
      CHECK(fast.merges() == reference.merges());
      for (const std::string& other : {text, random_bytes(1000, 3, 4), kUtf8, std::string("a")}) {
        CHECK(fast.encode(other) == fast.encode_reference(other));
        CHECK(fast.decode(fast.encode(other)) == fast.decode(byte_ids(other)));
      }
    }
  }

  TEST_CASE("decode replaces invalid UTF-8 as Python's errors=replace does") {
    const BytePairEncoding bytes;  // ids 0 .. 255 are the bytes
    const std::string r = "\xEF\xBF\xBD";
    CHECK(bytes.decode({0xFF, 0xFE}) == r + r);                      // not lead bytes: one each
    CHECK(bytes.decode({0xE2, 0x82}) == r);                          // a cut-off sequence: one
    CHECK(bytes.decode({0xE2, '('}) == r + "(");                     // the next byte is kept
    CHECK(bytes.decode({0xED, 0xA0, 0x80}) == r + r + r);            // a surrogate
    CHECK(bytes.decode({0xC0, 0xAF}) == r + r);                      // an overlong form
    CHECK(bytes.decode({0xE0, 0x80, 0xAF}) == r + r + r);            // an overlong form
    CHECK(bytes.decode({0xF4, 0x90, 0x80, 0x80}) == r + r + r + r);  // above U+10FFFF
    CHECK(bytes.decode({'a', 0xF0, 0x9F, 0x99, 0x82, 0x80, 'z'}) == "a🙂" + r + "z");
    CHECK(bytes.decode({0xF0, 0x9F, 0x99}) == r);
    CHECK(bytes.decode({0xC3, 0xA9}) == "é");
    // A token may end inside a character: the bytes are joined before they are checked.
    const auto bpe = BytePairEncoding::train("x\xC3\xA9x\xC3\xA9", 257);  // "xéxé"
    REQUIRE(bpe.merges() == Merges{{'x', 0xC3}});  // (x, 0xC3) ties with (0xC3, 0xA9), first
    CHECK(bpe.encode("xé") == Ids{256, 0xA9});
    CHECK(bpe.decode({256, 0xA9}) == "xé");
    CHECK(bpe.decode({256}) == "x" + r);
  }

  TEST_CASE("save and load round-trip through a diffable text file") {
    const fs::path dir = folder("round_trip");
    const auto bpe = BytePairEncoding::train("aaabdaaabac", 259);
    bpe.save((dir / "bpe.txt").string());
    CHECK(read(dir / "bpe.txt") == "tapegrad-bpe 1\nvocab_size 259\n97 97\n256 97\n257 98\n");
    CHECK(fs::directory_iterator(dir)->path().filename() == "bpe.txt");  // no temporary left
    CHECK(BytePairEncoding::load((dir / "bpe.txt").string()).merges() == bpe.merges());

    std::string text;
    for (int i = 0; i < 10; ++i) text += kUtf8;
    const auto big = BytePairEncoding::train(text, 500);
    big.save((dir / "bpe.txt").string());  // replaces the file
    const auto loaded = BytePairEncoding::load((dir / "bpe.txt").string());
    CHECK(loaded.merges() == big.merges());
    CHECK(loaded.encode(text) == big.encode(text));
    CHECK(BytePairEncoding::load((dir / "bpe.txt").string()).vocab_size() == big.vocab_size());
    write(dir / "no_final_newline", "tapegrad-bpe 1\nvocab_size 257\n97 97");
    CHECK(BytePairEncoding::load((dir / "no_final_newline").string()).vocab_size() == 257);
  }

  TEST_CASE("bad arguments are refused with the value named") {
    CHECK_THROWS_WITH_AS(BytePairEncoding::train("abc", 255),
                         doctest::Contains("expected vocab_size in [256, 1048576], got 255"),
                         ValueError);
    CHECK_THROWS_WITH_AS(BytePairEncoding::train_reference("abc", 1048577),
                         doctest::Contains("got 1048577"), ValueError);
    const auto bpe = BytePairEncoding::train("aaabdaaabac", 259);
    CHECK_THROWS_WITH_AS(bpe.decode({97, 258, 259}),
                         doctest::Contains("expected ids in [0, 259), got 259 at position 2"),
                         ValueError);
    CHECK_THROWS_WITH_AS(bpe.bytes_of(300), doctest::Contains("got 300"), ValueError);
  }

  TEST_CASE("a damaged file is refused with the file and the line named") {
    const fs::path dir = folder("damaged");
    const auto refused = [&](const std::string& content, const std::string& message) {
      const fs::path path = dir / "bpe.txt";
      write(path, content);
      const std::string expected = path.string() + " " + message;
      CAPTURE(content);
      CHECK_THROWS_WITH_AS(BytePairEncoding::load(path.string()),
                           doctest::Contains(expected.c_str()), DataError);
    };
    refused("", "line 0: expected the header \"tapegrad-bpe 1\", got \"\"");
    refused("tapegrad-bpe 2\nvocab_size 256\n", "line 1: expected the header");
    refused("tapegrad-bpe 1\nvocab 256\n", "line 2: expected \"vocab_size N\", got \"vocab 256\"");
    refused("tapegrad-bpe 1\nvocab_size 2x\n", "line 2: expected \"vocab_size N\"");
    refused("tapegrad-bpe 1\nvocab_size 100\n",
            "line 2: expected vocab_size in [256, 1048576], got 100");
    refused("tapegrad-bpe 1\nvocab_size 258\n97 97\n97 x\n",
            "line 4: expected a merge \"left right\"");
    refused("tapegrad-bpe 1\nvocab_size 258\n97 97\n\n", "line 4: expected a merge");
    refused("tapegrad-bpe 1\nvocab_size 258\n97 97\n97 -1\n", "line 4: expected a merge");
    refused("tapegrad-bpe 1\nvocab_size 258\n97 97\n257 97\n",
            "line 4: expected ids below 257 (the merge defines id 257), got 257");
    refused("tapegrad-bpe 1\nvocab_size 258\n97 97\n97 97\n",
            "line 4: the merge 97 97 is already on line 3");
    refused("tapegrad-bpe 1\nvocab_size 257\n97 97\n98 98\n",
            "line 4: expected 1 merges (vocab_size 257 on line 2), got more");
    refused("tapegrad-bpe 1\nvocab_size 259\n97 97\n",
            "line 4: expected 3 merges (vocab_size 259 on line 2), got 1 before the end");
    refused("tapegrad-bpe 1\nvocab_size 257\n97 " + std::string((1 << 20) + 10, '7') + "\n",
            "line 3: expected a line of at most 1 MiB");
    CHECK_THROWS_WITH_AS(BytePairEncoding::load((dir / "missing").string()),
                         doctest::Contains("cannot open"), DataError);
    CHECK_THROWS_WITH_AS(BytePairEncoding().save((dir / "no_such_folder" / "bpe.txt").string()),
                         doctest::Contains("cannot write"), DataError);
  }
}
