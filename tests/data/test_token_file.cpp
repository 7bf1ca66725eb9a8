// tests/data/test_token_file.cpp: tapegrad::data::TokenFileWriter and TokenFile: the exact bytes of
// small files (a 64-byte header, then the ids as numpy's tofile writes them), ids read back one at
// a time and in windows, the temporary that a writer without close() leaves nowhere, and every
// damaged or unreadable file refused with the file and the fault named.
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tapegrad/data.hpp>
#include <tapegrad/core/errors.hpp>

#include "../test_files.hpp"

using namespace tapegrad;
using data::TokenFile;
using data::TokenFileWriter;
using Ids = std::vector<std::uint32_t>;

namespace {

namespace fs = std::filesystem;

/// Bytes written as numbers, so a file's expected contents read like a hex dump.
std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (const int v : values) s.push_back(char(v));
  return s;
}

std::string zeros(std::size_t n) { return std::string(n, '\0'); }

// The fingerprint the files written here carry: any number will do (a tokenizer's is a hash).
constexpr std::uint64_t kFingerprint = 0x0123456789abcdefULL;
const std::string kFingerprintBytes = "\xef\xcd\xab\x89\x67\x45\x23\x01";

void write_tokens(const fs::path& path, std::uint64_t vocab_size, const std::string& name,
                  const Ids& ids) {
  TokenFileWriter writer(path.string(), vocab_size, name, kFingerprint);
  writer.append(ids);
  writer.close();
}

/// `original` with the bytes at `offset` replaced by `patch`.
std::string patched(std::string original, std::size_t offset, const std::string& patch) {
  original.replace(offset, patch.size(), patch);
  return original;
}

std::vector<std::int64_t> window(const TokenFile& f, std::size_t start, std::size_t length) {
  std::vector<std::int64_t> out(length, -1);
  f.window(start, length, out.data());
  return out;
}

// The file test 1 writes: vocab 50257 ("gpt2"), ids 0, 1, 258, 50256.
const std::string kGpt2Header = "tapegrad-tokens\n" + bytes({2, 0, 0, 0}) + bytes({2, 0, 0, 0}) +
                                bytes({0x51, 0xC4, 0, 0, 0, 0, 0, 0}) +
                                bytes({4, 0, 0, 0, 0, 0, 0, 0}) + "gpt2" + zeros(12) +
                                kFingerprintBytes;
// The same in version 1, as earlier builds wrote it: a 24-byte name and no fingerprint.
const std::string kGpt2HeaderV1 = "tapegrad-tokens\n" + bytes({1, 0, 0, 0}) + bytes({2, 0, 0, 0}) +
                                  bytes({0x51, 0xC4, 0, 0, 0, 0, 0, 0}) +
                                  bytes({4, 0, 0, 0, 0, 0, 0, 0}) + "gpt2" + zeros(20);
const std::string kGpt2Body = bytes({0, 0, 1, 0, 2, 1, 0x50, 0xC4});

}  // namespace

TEST_SUITE("data.token_file") {
  TEST_CASE("uint16 ids: the exact bytes of a small file, read back") {
    const fs::path dir = testing::fresh_folder("data.token_file", "uint16");
    const fs::path path = dir / "train.bin";
    write_tokens(path, 50257, "gpt2", {0, 1, 258, 50256});
    REQUIRE(kGpt2Header.size() == 64);
    CHECK(testing::bytes_of(path) == kGpt2Header + kGpt2Body);

    const TokenFile f = TokenFile::open(path.string());
    CHECK(f.size() == 4);
    CHECK(f.vocab_size() == 50257);
    CHECK(f.bytes_per_id() == 2);
    CHECK(f.tokenizer() == "gpt2");
    CHECK(f.version() == 2);
    CHECK(f.fingerprint() == kFingerprint);
    CHECK(f[0] == 0);
    CHECK(f[2] == 258);
    CHECK(f[3] == 50256);
    CHECK(window(f, 0, 4) == std::vector<std::int64_t>{0, 1, 258, 50256});
    CHECK(window(f, 1, 2) == std::vector<std::int64_t>{1, 258});
    CHECK(window(f, 4, 0).empty());
    f.check_ids();

    // The same bytes made by hand (numpy's tofile after a header) read the same.
    testing::write_file(dir / "by_hand.bin", kGpt2Header + kGpt2Body);
    CHECK(TokenFile::open((dir / "by_hand.bin").string())[3] == 50256);
    // Only the file is left: no temporary.
    CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 2);
  }

  TEST_CASE("uint32 ids: the exact bytes of a small file, read back") {
    const fs::path path = testing::fresh_folder("data.token_file", "uint32") / "train.bin";
    write_tokens(path, 100000, "bpe", {99999, 65536, 7});
    const std::string header = "tapegrad-tokens\n" + bytes({2, 0, 0, 0}) + bytes({4, 0, 0, 0}) +
                               bytes({0xA0, 0x86, 0x01, 0, 0, 0, 0, 0}) +
                               bytes({3, 0, 0, 0, 0, 0, 0, 0}) + "bpe" + zeros(13) +
                               kFingerprintBytes;
    const std::string body = bytes({0x9F, 0x86, 0x01, 0, 0, 0, 1, 0, 7, 0, 0, 0});
    CHECK(testing::bytes_of(path) == header + body);

    const TokenFile f = TokenFile::open(path.string());
    CHECK(f.size() == 3);
    CHECK(f.vocab_size() == 100000);
    CHECK(f.bytes_per_id() == 4);
    CHECK(f.tokenizer() == "bpe");
    CHECK(f[0] == 99999);
    CHECK(f[1] == 65536);
    CHECK(window(f, 0, 3) == std::vector<std::int64_t>{99999, 65536, 7});
    f.check_ids();
  }

  TEST_CASE("ids are uint16 up to a vocabulary of 65536, uint32 above it") {
    const fs::path dir = testing::fresh_folder("data.token_file", "width");
    CHECK(TokenFileWriter((dir / "a").string(), 1, "char", 0).bytes_per_id() == 2);
    CHECK(TokenFileWriter((dir / "b").string(), 65536, "char", 0).bytes_per_id() == 2);
    CHECK(TokenFileWriter((dir / "c").string(), 65537, "char", 0).bytes_per_id() == 4);
    CHECK(TokenFileWriter((dir / "d").string(), std::uint64_t(1) << 32, "char", 0).bytes_per_id() ==
          4);
    write_tokens(dir / "max.bin", 65536, "char", {65535, 0});
    const TokenFile f = TokenFile::open((dir / "max.bin").string());
    CHECK(fs::file_size(dir / "max.bin") == 64 + 2 * 2);
    CHECK(f[0] == 65535);
    f.check_ids();
  }

  TEST_CASE("many ids over several appends and writer buffers come back by index and window") {
    const fs::path path = testing::fresh_folder("data.token_file", "many") / "train.bin";
    std::mt19937 gen(7);
    Ids ids(700000);  // 1.4 MB of uint16: more than the writer's 1 MiB buffer
    for (std::uint32_t& id : ids) id = gen() % 50257;
    {
      TokenFileWriter writer(path.string(), 50257, "gpt2", kFingerprint);
      std::size_t done = 0;
      for (const std::size_t n :
           {std::size_t(1), std::size_t(0), std::size_t(524287), std::size_t(100000)}) {
        writer.append(ids.data() + done, n);
        done += n;
      }
      writer.append(Ids(ids.begin() + std::ptrdiff_t(done), ids.end()));
      CHECK(writer.count() == ids.size());
      writer.close();
    }
    const TokenFile f = TokenFile::open(path.string());
    REQUIRE(f.size() == ids.size());
    f.check_ids();
    const std::vector<std::int64_t> all = window(f, 0, ids.size());
    CHECK(std::equal(all.begin(), all.end(), ids.begin()));
    CHECK(f[524287] == ids[524287]);
    CHECK(f[ids.size() - 1] == ids.back());
    const std::vector<std::int64_t> some = window(f, 524280, 16);
    CHECK(std::equal(some.begin(), some.end(), ids.begin() + 524280));
    // After the header, the body is the raw uint16 array, as numpy's ids.astype(np.uint16).tofile
    // writes it on this (little-endian) machine.
    if constexpr (std::endian::native == std::endian::little) {
      const std::vector<std::uint16_t> u16(ids.begin(), ids.end());
      const std::string file = testing::bytes_of(path);
      CHECK(file.size() == 64 + 2 * ids.size());
      CHECK(std::memcmp(file.data() + 64, u16.data(), 2 * u16.size()) == 0);
    }
  }

  TEST_CASE("a TokenFile moves, and the moved-to one reads the file") {
    const fs::path path = testing::fresh_folder("data.token_file", "move") / "train.bin";
    write_tokens(path, 10, "char", {3, 1, 4});
    TokenFile a = TokenFile::open(path.string());
    TokenFile b = std::move(a);
    CHECK(b[2] == 4);
    TokenFile c = TokenFile::open(path.string());
    c = std::move(b);
    CHECK(c.size() == 3);
    CHECK(c.tokenizer() == "char");
  }

  TEST_CASE("indexing and window() refuse ids past the end") {
    const fs::path path = testing::fresh_folder("data.token_file", "bounds") / "train.bin";
    write_tokens(path, 50257, "gpt2", {0, 1, 258, 50256});
    const TokenFile f = TokenFile::open(path.string());
    CHECK_THROWS_WITH_AS(f[4], doctest::Contains("expected an index in [0, 4), got 4"), IndexError);
    std::vector<std::int64_t> out(8);
    CHECK_THROWS_WITH_AS(f.window(2, 3, out.data()),
                         doctest::Contains("expected a window inside the 4 ids, got 3 ids from "
                                           "index 2"),
                         IndexError);
    CHECK_THROWS_WITH_AS(f.window(5, 0, out.data()), doctest::Contains("from index 5"), IndexError);
  }

  TEST_CASE("a writer destroyed without close leaves no file and no temporary") {
    const fs::path dir = testing::fresh_folder("data.token_file", "abandoned");
    {
      TokenFileWriter writer((dir / "train.bin").string(), 50257, "gpt2", kFingerprint);
      writer.append({1, 2, 3});
      // Until close(), only the temporary exists, and it is not a token file yet.
      CHECK_FALSE(fs::exists(dir / "train.bin"));
      CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
    }
    CHECK(fs::is_empty(dir));

    // Over an existing file: the old one stays, whole, until the new one is renamed onto it.
    write_tokens(dir / "train.bin", 50257, "gpt2", {0, 1, 258, 50256});
    {
      TokenFileWriter writer((dir / "train.bin").string(), 100, "char", kFingerprint);
      writer.append({5, 6});
    }
    CHECK(testing::bytes_of(dir / "train.bin") == kGpt2Header + kGpt2Body);
    {
      TokenFileWriter writer((dir / "train.bin").string(), 100, "char", kFingerprint);
      writer.append({5, 6});
      CHECK(testing::bytes_of(dir / "train.bin") == kGpt2Header + kGpt2Body);
      writer.close();
    }
    const TokenFile f = TokenFile::open((dir / "train.bin").string());
    CHECK(f.tokenizer() == "char");
    CHECK(window(f, 0, 2) == std::vector<std::int64_t>{5, 6});
    CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
  }

  TEST_CASE("append refuses an id outside the vocabulary, naming it and its position") {
    const fs::path path = testing::fresh_folder("data.token_file", "append") / "train.bin";
    TokenFileWriter writer(path.string(), 50257, "gpt2", kFingerprint);
    writer.append({1, 2});
    const std::string expected =
        path.string() + ": expected ids in [0, 50257), got 50257 at " + "position 3 of the file";
    CHECK_THROWS_WITH_AS(writer.append({3, 50257, 4}), doctest::Contains(expected.c_str()),
                         ValueError);
    // A refused call writes none of its ids.
    CHECK(writer.count() == 2);
    writer.close();
    const TokenFile f = TokenFile::open(path.string());
    CHECK(window(f, 0, 2) == std::vector<std::int64_t>{1, 2});

    CHECK_THROWS_WITH_AS(writer.append({1}), doctest::Contains("is closed"), ValueError);
    CHECK_THROWS_WITH_AS(writer.close(), doctest::Contains("is already closed"), ValueError);
  }

  TEST_CASE("the writer refuses a vocab_size of 0 or above 2^32 and a bad tokenizer name") {
    const fs::path dir = testing::fresh_folder("data.token_file", "writer_arguments");
    const std::string path = (dir / "train.bin").string();
    CHECK_THROWS_WITH_AS(TokenFileWriter(path, 0, "gpt2", 0),
                         doctest::Contains("expected vocab_size in [1, 4294967296], got 0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(TokenFileWriter(path, (std::uint64_t(1) << 32) + 1, "gpt2", 0),
                         doctest::Contains("got 4294967297"), ValueError);
    CHECK_THROWS_WITH_AS(TokenFileWriter(path, 10, "", 0), doctest::Contains("\"\" is empty"),
                         ValueError);
    CHECK_THROWS_WITH_AS(TokenFileWriter(path, 10, std::string(16, 'a'), 0),
                         doctest::Contains("is longer than the 15 bytes the header holds"),
                         ValueError);
    CHECK_THROWS_WITH_AS(TokenFileWriter(path, 10, "gp\nt2", 0),
                         doctest::Contains("holds a byte that is not printable ASCII"), ValueError);
    CHECK_NOTHROW(TokenFileWriter(path, 10, std::string(15, 'a'), 0));
    CHECK(fs::is_empty(dir));
    const std::string missing = (dir / "no_such_folder" / "x.bin").string();
    CHECK_THROWS_WITH_AS(TokenFileWriter(missing, 10, "char", 0),
                         doctest::Contains(("TokenFileWriter: '" + missing +
                                            "': cannot create a temporary file in its folder")
                                               .c_str()),
                         DataError);
  }

  TEST_CASE("open refuses a missing file, a folder and a FIFO, without blocking") {
    const fs::path dir = testing::fresh_folder("data.token_file", "not_files");
    const std::string missing = (dir / "missing.bin").string();
    CHECK_THROWS_WITH_AS(TokenFile::open(missing),
                         doctest::Contains(("cannot read " + missing).c_str()), DataError);
    const std::string not_regular = " is not a regular file (a folder, a FIFO or a device)";
    CHECK_THROWS_WITH_AS(TokenFile::open(dir.string()),
                         doctest::Contains((dir.string() + not_regular).c_str()), DataError);
    const fs::path fifo = dir / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(TokenFile::open(fifo.string()),
                         doctest::Contains((fifo.string() + not_regular).c_str()), DataError);
    CHECK_THROWS_WITH_AS(TokenFile::open("/dev/null"),
                         doctest::Contains(("/dev/null" + not_regular).c_str()), DataError);
  }

  TEST_CASE("open refuses a damaged header, naming the file and the field") {
    const fs::path dir = testing::fresh_folder("data.token_file", "header");
    const std::string good = kGpt2Header + kGpt2Body;
    const auto refused = [&](const std::string& name, const std::string& file,
                             const std::string& message) {
      CAPTURE(name);
      const fs::path path = dir / name;
      testing::write_file(path, file);
      const std::string expected = path.string() + ": " + message;
      CHECK_THROWS_WITH_AS(TokenFile::open(path.string()), doctest::Contains(expected.c_str()),
                           DataError);
    };
    refused("magic", patched(good, 0, "T"), "expected the magic \"tapegrad-tokens\\n\"");
    refused("version", patched(good, 16, bytes({3})), "expected version 1 or 2, got 3");
    refused("width", patched(good, 20, bytes({3})), "expected bytes_per_id 2 or 4, got 3");
    refused("vocab", patched(good, 24, bytes({0, 0})),
            "expected vocab_size in [1, 4294967296], got 0");
    refused("name_empty", patched(good, 40, zeros(4)), "the tokenizer name in the header is empty");
    refused("name_control", patched(good, 41, "\x01"),
            "the tokenizer name in the header holds a byte that is not printable ASCII");
    refused("name_unterminated", patched(good, 40, std::string(16, 'a')),
            "the tokenizer name in the header is longer than the 15 bytes");
    refused("name_unterminated_v1", patched(kGpt2HeaderV1 + kGpt2Body, 40, std::string(24, 'a')),
            "the tokenizer name in the header is longer than the 23 bytes");
    refused("name_padding_v1", patched(kGpt2HeaderV1 + kGpt2Body, 60, "x"),
            "the tokenizer name field is not padded with NUL bytes");
    refused("name_padding", patched(good, 50, "x"),
            "the tokenizer name field is not padded with NUL bytes");
    refused("short_header", good.substr(0, 10),
            "expected at least the 64 bytes of the header, got 10 bytes");
    refused("empty", "", "expected at least the 64 bytes of the header, got 0 bytes");
  }

  TEST_CASE("open refuses a size other than 64 + count * bytes_per_id, naming both sizes") {
    const fs::path dir = testing::fresh_folder("data.token_file", "size");
    const std::string good = kGpt2Header + kGpt2Body;  // 4 ids: 72 bytes
    const auto refused = [&](const std::string& name, const std::string& file,
                             const std::string& message) {
      CAPTURE(name);
      const fs::path path = dir / name;
      testing::write_file(path, file);
      const std::string expected = path.string() + ": " + message;
      CHECK_THROWS_WITH_AS(TokenFile::open(path.string()), doctest::Contains(expected.c_str()),
                           DataError);
    };
    refused("one_byte_short", good.substr(0, 71),
            "expected 72 bytes (64 + count 4 * 2 bytes per id), got 71 bytes, not a whole number "
            "of ids: the file is truncated or damaged");
    refused("one_byte_long", good + "x",
            "expected 72 bytes (64 + count 4 * 2 bytes per id), got 73 bytes, not a whole number "
            "of ids");
    refused("one_id_short", good.substr(0, 70),
            "expected 72 bytes (64 + count 4 * 2 bytes per id), got 70 bytes; the header's count "
            "disagrees with the size");
    refused("count", patched(good, 32, bytes({5})),
            "expected 74 bytes (64 + count 5 * 2 bytes per id), got 72 bytes; the header's count "
            "disagrees with the size");
    refused("count_zero", patched(good, 32, bytes({0})), "expected 64 bytes");
    refused("count_huge",
            patched(good, 32, bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})),
            "the header's count 18446744073709551615 is larger than any file");
    // uint32 ids: 4 ids of 4 bytes, so 72 bytes hold 2.
    refused("count_uint32", patched(good, 20, bytes({4})),
            "expected 80 bytes (64 + count 4 * 4 bytes per id), got 72 bytes; the header's count");
    // A header that is all there is, with count 0, is a file of no ids.
    testing::write_file(dir / "no_ids.bin", patched(kGpt2Header, 32, bytes({0})));
    CHECK(TokenFile::open((dir / "no_ids.bin").string()).size() == 0);
  }

  TEST_CASE("check_ids refuses an id outside the vocabulary written by patching the file") {
    const fs::path dir = testing::fresh_folder("data.token_file", "check_ids");
    write_tokens(dir / "u16.bin", 1000, "bpe", {1, 2, 3, 4});
    TokenFile::open((dir / "u16.bin").string()).check_ids();
    // Id 2 becomes 1000 (0x03E8): open() does not read the ids, check_ids() reads them all, and
    // window() refuses one it reads.
    const fs::path u16 = dir / "u16_patched.bin";
    testing::write_file(
        u16, patched(testing::bytes_of(dir / "u16.bin"), 64 + 2 * 2, bytes({0xE8, 0x03})));
    const TokenFile f = TokenFile::open(u16.string());
    CHECK(window(f, 0, 2) == std::vector<std::int64_t>{1, 2});
    CHECK_THROWS_WITH_AS(window(f, 1, 3),
                         doctest::Contains(("'" + u16.string() +
                                            "': expected ids in [0, 1000) (the header's "
                                            "vocab_size), got 1000 at index 2")
                                               .c_str()),
                         DataError);
    const std::string expected = "TokenFile::check_ids: " + u16.string() +
                                 ": expected ids in [0, 1000) (the header's vocab_size), got 1000 "
                                 "at index 2; ids out of the vocabulary: refused before training";
    CHECK_THROWS_WITH_AS(f.check_ids(), doctest::Contains(expected.c_str()), DataError);

    write_tokens(dir / "u32.bin", 100000, "bpe", {1, 2, 3, 99999});
    const fs::path u32 = dir / "u32_patched.bin";
    testing::write_file(u32, patched(testing::bytes_of(dir / "u32.bin"), 64 + 4 * 3,
                                     bytes({0xFF, 0xFF, 0xFF, 0xFF})));
    CHECK_THROWS_WITH_AS(TokenFile::open(u32.string()).check_ids(),
                         doctest::Contains("got 4294967295 at index 3"), DataError);
  }

  TEST_CASE("windows of a token file are the windows of its ids") {
    const fs::path dir = testing::fresh_folder("data.token_file", "windows");
    std::vector<std::uint32_t> ids(500);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::uint32_t(i * 7 % 300);
    {
      data::TokenFileWriter writer((dir / "ids.tokens").string(), 300, "bpe", kFingerprint);
      writer.append(ids);
      writer.close();
    }
    const data::TokenFile file = data::TokenFile::open((dir / "ids.tokens").string());
    const std::vector<std::int64_t> wide(ids.begin() + 100, ids.begin() + 400);
    const std::vector<std::size_t> starts = {0, 17, 283};
    const data::Batch a = data::windows(file, 100, 300, starts, 16);
    const data::Batch b = data::windows(wide, starts, 16);
    CHECK(a.x == b.x);
    CHECK(a.y == b.y);
    CHECK_THROWS_WITH_AS(data::windows(file, 100, 300, {284}, 16),
                         doctest::Contains("expected starts in [0, 284)"), IndexError);
    CHECK_THROWS_WITH_AS(data::windows(file, 400, 101, {0}, 16),
                         doctest::Contains("are not all in"), IndexError);
  }
  TEST_CASE("a version 1 file, written before fingerprints, still reads: its fingerprint unknown") {
    const fs::path path = testing::fresh_folder("data.token_file", "v1") / "train.bin";
    testing::write_file(path, kGpt2HeaderV1 + kGpt2Body);
    const TokenFile f = TokenFile::open(path.string());
    CHECK(f.version() == 1);
    CHECK(f.fingerprint() == std::nullopt);
    CHECK(f.tokenizer() == "gpt2");
    CHECK(window(f, 0, 4) == std::vector<std::int64_t>{0, 1, 258, 50256});
    f.check_ids();
  }

  TEST_CASE("a file truncated while it is open is a DataError naming it, never a crash") {
    const fs::path dir = testing::fresh_folder("data.token_file", "truncated");
    const fs::path path = dir / "train.tokens";
    Ids ids(100000);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::uint32_t(i % 50000);
    write_tokens(path, 50257, "gpt2", ids);
    const TokenFile f = TokenFile::open(path.string());
    f.check_ids();
    REQUIRE(::truncate(path.c_str(), 64 + 2 * 1000) == 0);  // as `truncate -s` does
    const std::string shrank =
        "'" + path.string() + "' shrank from 200064 to 2064 bytes while " + "training read it";
    // Past the new end (where a memory map would fault with SIGBUS), and within it.
    CHECK_THROWS_WITH_AS(window(f, 90000, 65), doctest::Contains(shrank.c_str()), DataError);
    CHECK_THROWS_WITH_AS(window(f, 10, 65), doctest::Contains(shrank.c_str()), DataError);
    CHECK_THROWS_WITH_AS(f[99999], doctest::Contains(shrank.c_str()), DataError);
    CHECK_THROWS_WITH_AS(data::windows(f, 0, f.size(), {500, 95000}, 16),
                         doctest::Contains(shrank.c_str()), DataError);
    CHECK_THROWS_WITH_AS(f.check_ids(), doctest::Contains(shrank.c_str()), DataError);
    REQUIRE(::truncate(path.c_str(), 0) == 0);
    CHECK_THROWS_WITH_AS(window(f, 0, 1), doctest::Contains("shrank from 200064 to 0 bytes"),
                         DataError);
  }

  TEST_CASE("a file rewritten in place while it is open is a DataError naming it") {
    const fs::path dir = testing::fresh_folder("data.token_file", "rewritten");
    const fs::path path = dir / "train.tokens";
    write_tokens(path, 1000, "bpe", {1, 2, 3, 4, 5, 6});
    // Written long ago, so that the rewrite's modification time differs from open()'s whatever
    // the clock's resolution.
    const timespec long_ago[2] = {{1000000000, 0}, {1000000000, 0}};
    REQUIRE(::utimensat(AT_FDCWD, path.c_str(), long_ago, 0) == 0);
    const TokenFile f = TokenFile::open(path.string());
    CHECK(window(f, 0, 6) == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6});
    const auto rewrite = [&](const std::string& body) {  // the same size, other ids, in place
      std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
      out.seekp(64);
      out.write(body.data(), std::streamsize(body.size()));
    };
    rewrite(bytes({9, 0, 8, 0, 7, 0, 6, 0, 5, 0, 4, 0}));
    const std::string changed =
        "'" + path.string() + "' was changed while training read it (written to in place";
    CHECK_THROWS_WITH_AS(window(f, 0, 6), doctest::Contains(changed.c_str()), DataError);
    CHECK_THROWS_WITH_AS(data::windows(f, 0, 6, {0}, 4), doctest::Contains(changed.c_str()),
                         DataError);
    // An id outside the vocabulary, written within the clock's resolution of open() (the same
    // modification time): blamed on the file, never left to the model's embedding to refuse.
    rewrite(bytes({9, 0, 0xE8, 0x03, 7, 0, 6, 0, 5, 0, 4, 0}));
    REQUIRE(::utimensat(AT_FDCWD, path.c_str(), long_ago, 0) == 0);
    const std::string outside = "'" + path.string() +
                                "': expected ids in [0, 1000) (the header's vocab_size), got "
                                "1000 at index 1; the file was changed while training read it";
    CHECK_THROWS_WITH_AS(window(f, 0, 6), doctest::Contains(outside.c_str()), DataError);
    // Grown in place: changed too.
    { std::ofstream(path, std::ios::binary | std::ios::app) << bytes({1, 0}); }
    CHECK_THROWS_WITH_AS(window(f, 0, 2), doctest::Contains("it grew from 76 to 78 bytes"),
                         DataError);
  }

  TEST_CASE("a file replaced by rename while it is open reads on as it was") {
    const fs::path dir = testing::fresh_folder("data.token_file", "replaced");
    const fs::path path = dir / "train.tokens";
    write_tokens(path, 1000, "bpe", {1, 2, 3, 4});
    const TokenFile f = TokenFile::open(path.string());
    write_tokens(path, 1000, "bpe", {9, 9});  // what tokenize --out --force does
    CHECK(window(f, 0, 4) == std::vector<std::int64_t>{1, 2, 3, 4});
    CHECK(TokenFile::open(path.string()).size() == 2);
  }

  TEST_CASE("a Tokenizer's name, size and fingerprint go into the header, version 2") {
    const fs::path dir = testing::fresh_folder("data.token_file", "from_tokenizer");
    const data::Tokenizer bpe(data::BytePairEncoding::train("aaabdaaabac", 259));
    {
      TokenFileWriter writer((dir / "a.tokens").string(), bpe);
      writer.append({97, 258, 257});
      writer.close();
    }
    const TokenFile f = TokenFile::open((dir / "a.tokens").string());
    CHECK(f.version() == 2);
    CHECK(f.tokenizer() == "bpe");
    CHECK(f.vocab_size() == 259);
    CHECK(f.fingerprint() == bpe.fingerprint());
    CHECK(window(f, 0, 3) == std::vector<std::int64_t>{97, 258, 257});
    const std::string file = testing::bytes_of(dir / "a.tokens");
    std::uint64_t stored = 0;
    for (int k = 7; k >= 0; --k) stored = stored << 8 | static_cast<unsigned char>(file[56 + k]);
    CHECK(stored == bpe.fingerprint());  // at offset 56, little-endian
  }

  TEST_CASE(
      "check_token_file_tokenizer refuses another tokenizer, naming both, and warns of a "
      "version 1 file") {
    const fs::path dir = testing::fresh_folder("data.token_file", "which_tokenizer");
    const data::Tokenizer mine(data::BytePairEncoding::train("aaabdaaabac", 259)),
        other(data::BytePairEncoding::train("xyxyxzxyz", 259));  // the same size, other merges
    REQUIRE(mine.fingerprint() != other.fingerprint());
    const auto hex = [](std::uint64_t v) {
      char s[17];
      std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
      return std::string(s);
    };
    const std::string path = (dir / "a.tokens").string();
    {
      TokenFileWriter writer(path, mine);
      writer.append({1, 2});
      writer.close();
    }
    const TokenFile f = TokenFile::open(path);
    CHECK(data::check_token_file_tokenizer(f, mine, "--tokenizer bpe-model:mine.bpe").empty());
    const std::string refused = "'" + path + "' holds ids of the tokenizer bpe (259 tokens, " +
                                "fingerprint " + hex(mine.fingerprint()) +
                                "), not of --tokenizer bpe-model:other.bpe, bpe (259 tokens, " +
                                "fingerprint " + hex(other.fingerprint()) +
                                ") (the same kind and size: other characters, merges";
    CHECK_THROWS_WITH_AS(
        data::check_token_file_tokenizer(f, other, "--tokenizer bpe-model:other.bpe"),
        doctest::Contains(refused.c_str()), DataError);
    const data::Tokenizer chars(data::Vocabulary(U"ab"));
    CHECK_THROWS_WITH_AS(data::check_token_file_tokenizer(f, chars, "--tokenizer char"),
                         doctest::Contains("not of --tokenizer char, char (3 tokens"), DataError);

    // Version 1: kind and size only, and a warning that says so.
    const fs::path v1 = dir / "v1.tokens";
    testing::write_file(v1, "tapegrad-tokens\n" + bytes({1, 0, 0, 0}) + bytes({2, 0, 0, 0}) +
                                bytes({3, 1, 0, 0, 0, 0, 0, 0}) + bytes({0, 0, 0, 0, 0, 0, 0, 0}) +
                                "bpe" + zeros(21));
    const TokenFile old = TokenFile::open(v1.string());
    const std::string warning = data::check_token_file_tokenizer(old, other, "--tokenizer x");
    CHECK(warning.find("'" + v1.string() + "' is a version 1 token file") != std::string::npos);
    CHECK(warning.find("only its kind (bpe) and size (259 tokens) could be checked") !=
          std::string::npos);
    CHECK(warning.find('\n') == std::string::npos);
    CHECK_THROWS_WITH_AS(data::check_token_file_tokenizer(old, chars, "--tokenizer char"),
                         doctest::Contains("fingerprint unknown: a version 1 file"), DataError);
  }
}
