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

#include "../test_files.hpp"

using namespace tapegrad;
using data::BytePairEncoding;
using Ids = std::vector<std::uint32_t>;
using Merges = std::vector<BytePairEncoding::Merge>;

namespace {

namespace fs = std::filesystem;

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
      "a tie goes to the pair seen first in the text, overlapping pairs count, merge left to "
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
    const fs::path dir = testing::fresh_folder("data.bpe", "round_trip");
    const auto bpe = BytePairEncoding::train("aaabdaaabac", 259);
    bpe.save((dir / "bpe.txt").string());
    CHECK(testing::bytes_of(dir / "bpe.txt") ==
          "tapegrad-bpe 1\nvocab_size 259\npretokenizer none\n97 97\n256 97\n257 98\n");
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
    testing::write_file(dir / "no_final_newline",
                        "tapegrad-bpe 1\nvocab_size 257\npretokenizer none\n97 97");
    CHECK(BytePairEncoding::load((dir / "no_final_newline").string()).vocab_size() == 257);
  }

  TEST_CASE("a model file with Windows line ends (CRLF) loads as the same BPE") {
    const fs::path dir = testing::fresh_folder("data.bpe", "crlf");
    auto bpe = BytePairEncoding::train(kUtf8 + kUtf8, 300, data::Pretokenizer::gpt2);
    bpe.add_special_tokens({"<|endoftext|>", "<|pad|>"});
    std::string crlf;
    for (const char c : bpe.to_text()) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    testing::write_file(dir / "crlf.bpe", crlf);
    const auto loaded = BytePairEncoding::load((dir / "crlf.bpe").string());
    CHECK(loaded.merges() == bpe.merges());
    CHECK(loaded.pretokenizer() == data::Pretokenizer::gpt2);
    CHECK(loaded.special_tokens() == bpe.special_tokens());  // no "\r" kept at their end
    CHECK(loaded.to_text() == bpe.to_text());
    // A save through a link to it replaces it: it is a BPE model, whatever its line ends.
    fs::create_symlink("crlf.bpe", dir / "link.bpe");
    bpe.save((dir / "link.bpe").string());
    CHECK(testing::bytes_of(dir / "crlf.bpe") == bpe.to_text());
    // A "\r" inside a special token cannot be written: it would end the line when read.
    testing::write_file(dir / "cr.bpe",
                        "tapegrad-bpe 1\nvocab_size 257\npretokenizer none\n"
                        "special a\rb\n");
    CHECK_THROWS_WITH_AS(BytePairEncoding::load((dir / "cr.bpe").string()),
                         doctest::Contains("line 4: expected a special token of 1 to 256 bytes of "
                                           "UTF-8 without a line end"),
                         DataError);
    CHECK_THROWS_WITH_AS(bpe.add_special_tokens({"a\rb"}), doctest::Contains("holds a line end"),
                         ValueError);
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
    const fs::path dir = testing::fresh_folder("data.bpe", "damaged");
    const auto refused = [&](const std::string& content, const std::string& message) {
      const fs::path path = dir / "bpe.txt";
      testing::write_file(path, content);
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
    const std::string head = "tapegrad-bpe 1\nvocab_size 258\npretokenizer none\n";
    refused("tapegrad-bpe 1\nvocab_size 258\nsplit none\n",
            "line 3: expected \"pretokenizer none\" or \"pretokenizer gpt2\", got \"split none\"");
    refused(head + "97 97\n97 x\n", "line 5: expected a merge \"left right\"");
    refused(head + "97 97\n\n", "line 5: expected a merge");
    refused(head + "97 97\n97 -1\n", "line 5: expected a merge");
    refused(head + "97 97\n257 97\n",
            "line 5: expected ids below 257 (the merge defines id 257), got 257");
    refused(head + "97 97\n97 97\n", "line 5: the merge 97 97 is already on line 4");
    refused(head + "97 97\n98 98\n99 99\n",
            "line 6: expected 2 merges and special tokens (vocab_size 258 on line 2), got more");
    refused(head + "97 97\n",
            "line 5: expected 2 merges and special tokens (vocab_size 258 on line 2), got 1 before "
            "the end");
    refused(
        head + "special <|end|>\n97 97\n",
        "line 5: expected \"special TEXT\" (merges come before the special tokens), got \"97 97\"");
    refused(head + "special <|end|>\nspecial <|end|>\n",
            "line 5: the special token \"<|end|>\" is already on line 4");
    refused(head + "97 97\nspecial \n",
            "line 5: expected a special token of 1 to 256 bytes of UTF-8");
    refused(head + "97 97\nspecial \xff\n", "line 5: expected a special token of 1 to 256 bytes");
    {  // each merge doubles a token: 2 MiB by line 24, refused before it is built
      std::string doubling = "tapegrad-bpe 1\nvocab_size 300\npretokenizer none\n97 97\n";
      for (int id = 256; id < 299; ++id)
        doubling += std::to_string(id) + " " + std::to_string(id) + "\n";
      refused(doubling, "line 24: the merge makes a token of 2097152 bytes");
    }
    {
      std::string many = "tapegrad-bpe 1\nvocab_size 2000\npretokenizer none\n";
      for (int k = 0; k < 1025; ++k) many += "special <|" + std::to_string(k) + "|>\n";
      refused(many, "line 1028: expected at most 1024 special tokens, got more");
    }
    refused(head + "97 " + std::string((1 << 20) + 10, '7') + "\n",
            "line 4: expected a line of at most 1 MiB");
    CHECK_THROWS_WITH_AS(BytePairEncoding::load((dir / "missing").string()),
                         doctest::Contains("cannot open"), DataError);
    CHECK_THROWS_WITH_AS(BytePairEncoding().save((dir / "no_such_folder" / "bpe.txt").string()),
                         doctest::Contains(("BytePairEncoding::save: '" +
                                            (dir / "no_such_folder" / "bpe.txt").string() +
                                            "': cannot create a temporary file in its folder")
                                               .c_str()),
                         DataError);
  }

  TEST_CASE("gpt2_pieces cuts text as GPT-2's pattern does") {
    using Pieces = std::vector<std::string_view>;
    CHECK(data::gpt2_pieces("Hello world!!") == Pieces{"Hello", " world", "!!"});
    // A run of spaces leaves its last one to the word after it; at the end it stays whole.
    CHECK(data::gpt2_pieces("a  b   ") == Pieces{"a", " ", " b", "   "});
    CHECK(data::gpt2_pieces("I'm here, it's 2024.") ==
          Pieces{"I", "'m", " here", ",", " it", "'s", " 2024", "."});
    CHECK(data::gpt2_pieces("I'M") == Pieces{"I", "'", "M"});  // the contractions are lower case
    CHECK(data::gpt2_pieces("abc123def") == Pieces{"abc", "123", "def"});
    // Only " " joins the word after it; a newline before a word is a piece of its own.
    CHECK(data::gpt2_pieces("line\n\nnext") == Pieces{"line", "\n", "\n", "next"});
    CHECK(data::gpt2_pieces("Größe café") == Pieces{"Größe", " café"});
    CHECK(data::gpt2_pieces("日本語のテキスト🙂🙂") ==
          Pieces{"日本語のテキスト", "🙂🙂"});
    CHECK(data::gpt2_pieces("").empty());
    // The fast path (ASCII cut by hand) gives PCRE2's pieces: random mixes of ASCII's classes
    // and characters beyond it that are letters, digits, spaces, marks and symbols.
    const std::vector<std::string> alphabet = {
        "a",      "Z",      "7",      " ",      "  ",     "\n",   "\t", "\r\n", "'", "'s", "'ll",
        "'re",    "!",      "-",      ".",      "\x01",   "é",    "ß",  "日",   "²", "Ⅻ",  "\u00A0",
        "\u3000", "\u2028", "\uFEFF", "\u0085", "\u0301", "🙂", "𝐀",  "𝟙",    "—"};
    std::mt19937 gen(5);
    for (int round = 0; round < 3000; ++round) {
      std::string text;
      for (std::size_t k = gen() % 24; k > 0; --k) text += alphabet[gen() % alphabet.size()];
      CAPTURE(text);
      CHECK(data::gpt2_pieces(text) == data::gpt2_pieces_reference(text));
    }
    CHECK_THROWS_WITH_AS(data::gpt2_pieces("ok \xC3("),
                         doctest::Contains("not valid UTF-8 at byte 3"), ValueError);
  }

  TEST_CASE("with GPT-2's pretokenizer, merges stay within a piece, and fast equals reference") {
    std::string text;
    for (int i = 0; i < 30; ++i) text += "the cat sat on the mat, and the dog's 42 bones. ";
    text += kUtf8 + kUtf8;
    const auto fast = BytePairEncoding::train(text, 256 + 200, data::Pretokenizer::gpt2);
    const auto reference =
        BytePairEncoding::train_reference(text, 256 + 200, data::Pretokenizer::gpt2);
    CHECK(fast.merges() == reference.merges());
    CHECK(fast.pretokenizer() == data::Pretokenizer::gpt2);
    // No token holds two pieces (a token may end inside a character: those are not checked).
    for (std::uint32_t id = 256; id < fast.vocab_size(); ++id) {
      const std::string& bytes = fast.bytes_of(id);
      CAPTURE(bytes);
      if (fast.decode({id}) == bytes) CHECK(data::gpt2_pieces(bytes).size() == 1);
    }
    // So a text encodes as its pieces one by one.
    Ids by_piece;
    for (const std::string_view piece : data::gpt2_pieces(text)) {
      const Ids ids = fast.encode(piece);
      by_piece.insert(by_piece.end(), ids.begin(), ids.end());
    }
    CHECK(fast.encode(text) == by_piece);
    const std::string other = "the dog's mat sat on 42 cats. Größe 🙂";
    for (const std::string& t : {text, other}) {
      CHECK(fast.encode(t) == fast.encode_reference(t));
      CHECK(fast.decode(fast.encode(t)) == t);
    }
    // Without it, "the" and " " merge ("the cat" has "e " and " c" pairs).
    const auto plain = BytePairEncoding::train(text, 256 + 200);
    bool crosses = false;
    for (std::uint32_t id = 256; id < plain.vocab_size(); ++id)
      if (plain.decode({id}) == plain.bytes_of(id))
        crosses = crosses || data::gpt2_pieces(plain.bytes_of(id)).size() > 1;
    CHECK(crosses);
  }

  TEST_CASE(
      "a BPE reads any bytes, but GPT-2's pretokenizer reads characters and refuses invalid "
      "UTF-8") {
    const std::string bytes = "\xFF\xFE\x00\x01\xFF\xFE\x00\x01";
    const auto plain = BytePairEncoding::train(bytes, 258);
    CHECK(plain.decode(plain.encode(bytes)).size() > 0);
    CHECK(plain.encode(bytes).size() < bytes.size());
    CHECK_THROWS_WITH_AS(BytePairEncoding::train("fine \xFF", 300, data::Pretokenizer::gpt2),
                         doctest::Contains("not valid UTF-8 at byte 5"), ValueError);
    const auto split = BytePairEncoding::train("fine text", 260, data::Pretokenizer::gpt2);
    CHECK_THROWS_WITH_AS(split.encode("text \xE2\x82"),
                         doctest::Contains("BytePairEncoding::encode: the text is not valid UTF-8 "
                                           "at byte 5"),
                         ValueError);
  }

  TEST_CASE("special tokens: refused, allowed or ordinary text, as tiktoken's encode") {
    auto bpe = BytePairEncoding::train("aaabdaaabac", 259);
    bpe.add_special_tokens({"<|end|>", "<|endoftext|>"});
    CHECK(bpe.vocab_size() == 261);
    CHECK(bpe.special_tokens() == std::vector<std::string>{"<|end|>", "<|endoftext|>"});
    CHECK(bpe.special_id("<|endoftext|>") == 260);
    CHECK(bpe.special_id("<|nope|>") == -1);
    CHECK(bpe.bytes_of(259) == "<|end|>");
    const std::string text = "aaab<|endoftext|>aaab<|end|>";
    CHECK_THROWS_WITH_AS(bpe.encode(text),
                         doctest::Contains("holds the special token \"<|endoftext|>\" at byte 4"),
                         ValueError);
    CHECK_THROWS_WITH_AS(bpe.encode_reference(text), doctest::Contains("at byte 4"), ValueError);
    // Where two start at one byte, the longer wins: "<|endoftext|>" is not "<|end|>" + "oftext|>".
    const Ids allowed = bpe.encode(text, data::SpecialTokens::allow);
    CHECK(allowed == Ids{258, 260, 258, 259});
    CHECK(bpe.encode_reference(text, data::SpecialTokens::allow) == allowed);
    CHECK(bpe.decode(allowed) == text);
    const Ids ordinary = bpe.encode(text, data::SpecialTokens::ordinary);
    CHECK(ordinary == BytePairEncoding::train("aaabdaaabac", 259).encode(text));
    CHECK(bpe.decode(ordinary) == text);
    CHECK(bpe.encode("<|end|><|end|>", data::SpecialTokens::allow) == Ids{259, 259});
    // The text without special tokens is not affected by the choice.
    CHECK(bpe.encode("aaab") == Ids{258});

    CHECK_THROWS_WITH_AS(
        bpe.add_special_tokens({"<|end|>"}),
        doctest::Contains("special token 0 \"<|end|>\" is already a special token"), ValueError);
    CHECK_THROWS_WITH_AS(bpe.add_special_tokens({"ok", ""}),
                         doctest::Contains("special token 1 \"\" is empty"), ValueError);
    CHECK_THROWS_WITH_AS(bpe.add_special_tokens({"a\nb"}), doctest::Contains("holds a line end"),
                         ValueError);
    CHECK_THROWS_WITH_AS(bpe.add_special_tokens({"\xFF"}), doctest::Contains("is not valid UTF-8"),
                         ValueError);
    CHECK_THROWS_WITH_AS(bpe.add_special_tokens({std::string(257, 'x')}),
                         doctest::Contains("is longer than 256 bytes"), ValueError);
    CHECK(bpe.vocab_size() == 261);  // a refused list adds nothing, not even its good tokens
  }

  TEST_CASE("merges learned elsewhere are checked") {
    CHECK(BytePairEncoding(Merges{{'a', 'b'}, {256, 'c'}}).encode("abc") == Ids{257});
    CHECK_THROWS_WITH_AS(BytePairEncoding(Merges{{'a', 'b'}, {257, 'c'}}),
                         doctest::Contains("merge 1 (257, 99) joins an id that no earlier merge "
                                           "defines (it defines id 257)"),
                         ValueError);
    CHECK_THROWS_WITH_AS(BytePairEncoding(Merges{{'a', 'b'}, {'a', 'b'}}),
                         doctest::Contains("merge 1 (97, 98) repeats merge 0"), ValueError);
  }

  TEST_CASE("save and load keep the pretokenizer and the special tokens") {
    const fs::path dir = testing::fresh_folder("data.bpe", "special");
    auto bpe = BytePairEncoding::train("the cat sat on the mat", 262, data::Pretokenizer::gpt2);
    bpe.add_special_tokens({"<|endoftext|>"});
    bpe.save((dir / "bpe.txt").string());
    const std::string saved = testing::bytes_of(dir / "bpe.txt");
    CHECK(saved.rfind("tapegrad-bpe 1\nvocab_size 263\npretokenizer gpt2\n", 0) == 0);
    CHECK(saved.substr(saved.size() - 23) == "\nspecial <|endoftext|>\n");
    const auto loaded = BytePairEncoding::load((dir / "bpe.txt").string());
    CHECK(loaded.merges() == bpe.merges());
    CHECK(loaded.pretokenizer() == data::Pretokenizer::gpt2);
    CHECK(loaded.special_tokens() == bpe.special_tokens());
    const std::string text = "the mat<|endoftext|>the cat";
    CHECK(loaded.encode(text, data::SpecialTokens::allow) ==
          bpe.encode(text, data::SpecialTokens::allow));
  }
}
