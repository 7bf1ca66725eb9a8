// tests/examples/test_tokenize_blocks.cpp: the pieces examples/tokenize encodes a text with, in a
// few blocks' memory (examples/text_blocks.hpp), and what it counts its memory with
// (examples/tokenize_memory.hpp). Cut where Cuts allows, a text encodes block by block, and piece
// by piece through a PieceCache, to exactly the ids BytePairEncoding::encode gives the whole text:
// checked with blocks of a few bytes, on repeated words, random bytes, UTF-8, line ends and special
// tokens, with and without GPT-2's pretokenizer.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <tapegrad/core/errors.hpp>
#include <tapegrad/core/memory.hpp>
#include <tapegrad/data/bpe.hpp>

#include "../../examples/text_blocks.hpp"
#include "../../examples/tokenize_memory.hpp"
#include "../test_files.hpp"

namespace {

using tapegrad::data::BytePairEncoding;
using tapegrad::data::Pretokenizer;
using tapegrad::data::SpecialTokens;

// Words that repeat, a few bytes that do not (some not UTF-8 for the BPE without pretokenizer),
// spaces and line ends of both kinds, and a special token's text now and then.
std::string mixed_text(bool utf8) {
  const char* words[] = {"the ",       "cat ", "sat ", "on\n",   "mat.\r\n",
                         "Übermäßig ", "  ",   "aaaa", "<|eot|>"};
  std::string text;
  std::uint64_t x = 12345;
  for (int i = 0; i < 3000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint64_t r = x >> 33;
    if (!utf8 && r % 17 == 0)
      text += char(r % 256);  // any byte
    else
      text += words[r % 9];
  }
  return text;
}

// The ids of `text` encoded block by block through tokenize's pieces.
std::vector<std::uint32_t> ids_by_blocks(const std::shared_ptr<const BytePairEncoding>& bpe,
                                         const std::string& text, std::size_t block_bytes,
                                         SpecialTokens special) {
  const tokenize::Cuts cuts = bpe->pretokenizer() == Pretokenizer::gpt2
                                  ? tokenize::Cuts::gpt2_pieces()
                                  : tokenize::Cuts::between_bytes(*bpe);
  const auto encode = tokenize::cached_encode(bpe);
  std::vector<std::uint32_t> ids;
  std::size_t read = 0;
  std::uintmax_t next_offset = 0;
  tokenize::for_each_block(
      [&](std::string& carry, std::size_t n) {
        const std::size_t take = std::min(n, text.size() - read);
        carry.append(text, read, take);
        read += take;
        return take > 0;
      },
      cuts, block_bytes, text.size() + 1, "text",
      [&](std::string_view block, std::uintmax_t offset) {
        CHECK(offset == next_offset);  // the blocks follow each other, none lost
        CHECK(text.compare(offset, block.size(), block) == 0);
        next_offset = offset + block.size();
        const std::vector<std::uint32_t> part = encode(block, special);
        ids.insert(ids.end(), part.begin(), part.end());
      });
  CHECK(next_offset == text.size());
  return ids;
}

}  // namespace

TEST_SUITE("examples.tokenize_blocks") {
  TEST_CASE("a text cut where Cuts allows encodes block by block to the ids of the whole text") {
    for (const Pretokenizer pretokenizer : {Pretokenizer::none, Pretokenizer::gpt2}) {
      const bool utf8 = pretokenizer == Pretokenizer::gpt2;
      const std::string text = mixed_text(utf8);
      for (const std::size_t vocab_size : {260, 300, 600}) {
        auto trained = BytePairEncoding::train(text, vocab_size, pretokenizer);
        trained.add_special_tokens({"<|eot|>", "x"});  // one of a single byte, too
        const auto bpe = std::make_shared<const BytePairEncoding>(std::move(trained));
        for (const SpecialTokens special : {SpecialTokens::ordinary, SpecialTokens::allow}) {
          const std::vector<std::uint32_t> whole = bpe->encode(text, special);
          for (const std::size_t block_bytes : {1, 3, 7, 64, 1000, 100000}) {
            CAPTURE(int(pretokenizer));
            CAPTURE(vocab_size);
            CAPTURE(int(special));
            CAPTURE(block_bytes);
            CHECK(ids_by_blocks(bpe, text, block_bytes, special) == whole);
          }
        }
      }
    }
  }

  TEST_CASE("a BPE without pretokenizer cuts only between bytes that no token holds together") {
    BytePairEncoding bpe = BytePairEncoding::train("abababab cd cd", 257);  // one merge: "ab"
    bpe.add_special_tokens({"<x>"});
    const tokenize::Cuts cuts = tokenize::Cuts::between_bytes(bpe);
    const std::string text = "zab<x>q";
    CHECK(cuts.between_bytes_before(text, 1));        // z|a: no token holds "za"
    CHECK_FALSE(cuts.between_bytes_before(text, 2));  // a|b: the token "ab"
    CHECK(cuts.between_bytes_before(text, 3));        // b|<
    CHECK_FALSE(cuts.between_bytes_before(text, 4));  // <|x: the special token
    CHECK(cuts.last(text, 0) == 6);                   // >|q
    CHECK(cuts.last("abab", 0) == 2);                 // "abab" is two tokens "ab": b|a is free
    CHECK(cuts.last("aaaa", 0) == 3);                 // no token holds "aa"
    // GPT-2's pieces: before a line end after a character other than a space.
    const tokenize::Cuts gpt2 = tokenize::Cuts::gpt2_pieces();
    CHECK(gpt2.last("one\ntwo \nthree", 0) == 3);
    CHECK(gpt2.last("one\r\ntwo", 0) == 3);
    CHECK(gpt2.last("one \n", 0) == 0);
    CHECK(gpt2.last("one\ntwo\n", 4) == 7);
  }

  TEST_CASE("a text with no place to cut is refused past the most a block may hold") {
    const auto bpe = std::make_shared<const BytePairEncoding>(
        BytePairEncoding::train(std::string(64, 'a'), 260));
    const std::string text(5000, 'a');
    std::size_t read = 0;
    const auto more = [&](std::string& carry, std::size_t n) {
      const std::size_t take = std::min(n, text.size() - read);
      carry.append(text, read, take);
      read += take;
      return take > 0;
    };
    CHECK_THROWS_WITH_AS(
        tokenize::for_each_block(more, tokenize::Cuts::between_bytes(*bpe), 100, 1000,
                                 "--text: 'a.txt'", [](std::string_view, std::uintmax_t) {}),
        doctest::Contains("--text: 'a.txt' has no place to cut it into blocks"),
        tapegrad::DataError);
    read = 0;
    std::size_t blocks = 0;  // within the bound, it is one block
    tokenize::for_each_block(more, tokenize::Cuts::between_bytes(*bpe), 100, 5000, "t",
                             [&](std::string_view block, std::uintmax_t) {
                               blocks += !block.empty();
                               CHECK(block.size() == 5000);
                             });
    CHECK(blocks == 1);
    // A piece longer than the cache keeps (no place to cut in 5,000 bytes) is encoded all the same.
    const std::string piece = "b" + text + "b";
    CHECK(tokenize::cached_encode(bpe)(piece, SpecialTokens::ordinary) == bpe->encode(piece));
  }

  TEST_CASE("a text file cut while it is read is refused, one that grows is read to its end") {
    const auto dir = tapegrad::testing::fresh_folder("tokenize", "text_file");
    const std::string path = (dir / "t.txt").string();
    std::ofstream(path, std::ios::binary) << std::string(1000, 'x');
    std::string carry;
    {
      tokenize::TextFile in("--text", path);
      CHECK(in.read_into(carry, 400));
      std::filesystem::resize_file(path, 500);  // cut by someone else meanwhile
      CHECK(in.read_into(carry, 400));          // bytes 400 .. 500
      const std::string message = "--text: '" + path +
                                  "' ended at byte 500 while it was read, though it held 1000 "
                                  "bytes when opened";
      CHECK_THROWS_WITH_AS(in.read_into(carry, 400), doctest::Contains(message.c_str()),
                           tapegrad::DataError);
    }
    carry.clear();
    {
      tokenize::TextFile in("--text", path);
      std::ofstream(path, std::ios::binary | std::ios::app) << "more";
      while (in.read_into(carry, 64)) {
      }
      CHECK(carry == std::string(500, 'x') + "more");
    }
    CHECK_THROWS_WITH_AS(tokenize::TextFile("--text", "/dev/null"),
                         doctest::Contains("--text: '/dev/null' is not a regular file"),
                         tapegrad::DataError);
  }

  TEST_CASE("training's memory is counted from the text's size against the machine's") {
    const double GiB = double(1 << 30);
    CHECK(tokenize::training_bytes(std::uintmax_t(1) << 30) ==
          doctest::Approx(28 * GiB + 64.0 * (1 << 20)));
    for (const std::uintmax_t size :
         {std::uintmax_t(0), std::uintmax_t(1) << 20, std::uintmax_t(700) << 20}) {
      const std::uintmax_t largest =
          tokenize::largest_training_text(tokenize::training_bytes(size));
      CHECK(largest + 1 >= size);
      CHECK(largest <= size + 1);
    }
    CHECK(tokenize::largest_training_text(10.0) == 0);
    // 80 % of what the machine gives, less what this process holds already.
    const double share = 0.8 * double(tapegrad::machine_memory_bytes()),
                 held = double(tapegrad::process_memory_bytes());
    CHECK(held > 0);
    CHECK(tokenize::usable_bytes() < share);
    CHECK(tokenize::usable_bytes() == doctest::Approx(share - held).epsilon(0.01));
  }
}
