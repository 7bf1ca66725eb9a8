// tests/data/test_text.cpp: tapegrad::data, the text a language model trains on: entries are cut
// as documented, the split never puts an entry on both sides, the vocabulary and the batches of
// windows are as documented, and bad input is refused with the file or value named.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <tapegrad/data.hpp>
#include <tapegrad/core/errors.hpp>

#include "../fortune_corpus.hpp"

#include "../test_files.hpp"

using namespace tapegrad;

namespace {

namespace fs = std::filesystem;

}  // namespace

TEST_SUITE("data") {
  TEST_CASE(
      "entries are cut at % lines (or paragraphs), blank ones dropped, repeated texts kept once") {
    const fs::path dir = testing::fresh_folder("data", "entries");
    testing::write_file(dir / "a", "one\ntwo lines\n%\n\n%\nthree\n%\n");
    testing::write_file(dir / "b", "three\n%\nfour\n");  // "three" again: dropped
    testing::write_file(dir / "c",
                        "para one\nstill one\n\npara two\n\n\n");  // no % lines: paragraphs
    const auto entries =
        data::read_entries({(dir / "a").string(), (dir / "b").string(), (dir / "c").string()});
    REQUIRE(entries.size() == 5);
    CHECK(entries[0] == U"one\ntwo lines\n");
    CHECK(entries[1] == U"three\n");
    CHECK(entries[2] == U"four\n");
    CHECK(entries[3] == U"para one\nstill one\n");
    CHECK(entries[4] == U"para two\n");
    CHECK(data::join_entries({U"a\n", U"b\n"}) == U"a\n%\nb\n%\n");
    testing::write_file(dir / "bad", std::string("ok\n\xff\xfe\n"));
    CHECK_THROWS_WITH_AS(data::read_entries({(dir / "bad").string()}),
                         doctest::Contains("is not UTF-8 text"), DataError);
  }

  TEST_CASE("the split is by whole entries, seeded, 10 percent, and no entry is on both sides") {
    std::vector<std::string> files = data::fortune_files();
    if (files.empty()) {  // without Debian's fortunes: a corpus of our own
      const fs::path dir = testing::fresh_folder("data", "split");
      testing::write_file(dir / "corpus", testing::fortune_corpus(3000, 1));
      files = {(dir / "corpus").string()};
    }
    const auto entries = data::read_entries(files);
    const data::Split s = data::split_entries(entries, 0.1, 0);
    CHECK(s.train.size() + s.val.size() == entries.size());
    CHECK(s.val.size() == std::size_t(std::floor(double(entries.size()) * 0.1 + 0.5)));
    const std::set<std::u32string> train(s.train.begin(), s.train.end());
    CHECK(train.size() == s.train.size());  // each text once
    for (const std::u32string& e : s.val) CHECK(train.count(e) == 0);
    const data::Split again = data::split_entries(entries, 0.1, 0),
                      other = data::split_entries(entries, 0.1, 1);
    CHECK(again.val == s.val);
    CHECK(other.val != s.val);
    CHECK_THROWS_WITH_AS(data::split_entries({U"only\n"}, 0.1, 0),
                         doctest::Contains("expected at least 2 entries"), ValueError);
  }

  TEST_CASE(
      "the vocabulary: the training text's characters sorted from id 1, <unk> at 0, stored as "
      "text") {
    const data::Vocabulary v(U"b\u00e9a b\n");
    CHECK(v.size() == 6);  // <unk>, "\n", " ", "a", "b", "é"
    CHECK(v.id(U'\n') == 1);
    CHECK(v.id(U' ') == 2);
    CHECK(v.id(U'a') == 3);
    CHECK(v.id(U'b') == 4);
    CHECK(v.id(U'\u00e9') == 5);
    CHECK(v.id(U'z') == data::Vocabulary::kUnk);
    const std::vector<std::int64_t> ids = v.encode(U"abz");
    CHECK(v.decode(ids.data(), ids.size()) == "ab\xEF\xBF\xBD");  // <unk> prints as U+FFFD
    const data::Vocabulary back = data::Vocabulary::from_text(v.to_text());
    CHECK(back.to_text() == v.to_text());
    CHECK(back.id(U'b') == 4);
  }

  TEST_CASE("batches are windows of consecutive ids, the targets shifted by one") {
    std::vector<std::int64_t> ids(100);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int64_t(i);
    Generator g(0);
    const auto starts = data::random_starts(ids.size(), 8, 5, g);
    const data::Batch b = data::windows(ids, starts, 8);
    CHECK(b.x.shape() == Shape{5, 8});
    for (std::size_t r = 0; r < 5; ++r) {
      CHECK(starts[r] + 8 < ids.size());
      for (std::size_t t = 0; t < 8; ++t) {
        CHECK(b.x(r, t) == std::int64_t(starts[r] + t));
        CHECK(b.y(r, t) == b.x(r, t) + 1);
      }
    }
    CHECK_THROWS_WITH_AS(data::random_starts(8, 8, 1, g), doctest::Contains("has no window of 9"),
                         ValueError);
  }

}  // TEST_SUITE
