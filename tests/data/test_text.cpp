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

  TEST_CASE("a fortune file with Windows line ends (CRLF): its % lines separate the entries") {
    const fs::path dir = testing::fresh_folder("data", "crlf");
    const std::string lf = "one\ntwo lines\n%\nthree\n\nafter a blank line\n%\nfour\n%\n";
    std::string crlf;
    for (const char c : lf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    testing::write_file(dir / "lf", lf);
    testing::write_file(dir / "crlf", crlf);
    const auto entries = data::read_entries({(dir / "crlf").string()});
    REQUIRE(entries.size() == 3);
    CHECK(entries[0] == U"one\ntwo lines\n");  // CRLF becomes LF inside an entry
    CHECK(entries[1] == U"three\n\nafter a blank line\n");
    CHECK(entries[2] == U"four\n");
    CHECK(data::read_entries({(dir / "lf").string()}) == entries);
    CHECK(data::is_fortune_file((dir / "crlf").string()));
    // A "\r" that does not end a line stays, as does one at the very end.
    CHECK(data::split_entries_of(U"a\rb\r\n%\r\nc\r") ==
          std::vector<std::u32string>{U"a\rb\n", U"c\r\n"});
  }

  TEST_CASE("a fortune file holds a line that is exactly %, and any other text file is not one") {
    CHECK(data::is_fortune_text(U"a\n%\nb\n"));
    CHECK(data::is_fortune_text(U"%\n"));
    CHECK(data::is_fortune_text(U"a\n%"));  // the last line, without a line end
    CHECK(data::is_fortune_text(U"a\r\n%\r\n"));
    CHECK_FALSE(data::is_fortune_text(U""));
    CHECK_FALSE(data::is_fortune_text(U"100%\n% of it\n %\n%%\n"));
    CHECK_FALSE(data::is_fortune_text(U"para one\n\npara two\n"));
    const fs::path dir = testing::fresh_folder("data", "is_fortune");
    testing::write_file(dir / "f", "a\n%\nb\n");
    testing::write_file(dir / "t", "a\nb\n");
    CHECK(data::is_fortune_file((dir / "f").string()));
    CHECK_FALSE(data::is_fortune_file((dir / "t").string()));
    CHECK_THROWS_WITH_AS(
        data::is_fortune_file((dir / "missing").string()),
        doctest::Contains(("cannot read '" + (dir / "missing").string() + "'").c_str()), DataError);
    CHECK_THROWS_WITH_AS(data::is_fortune_file(dir.string()),
                         doctest::Contains("not a regular file"), DataError);
  }

  TEST_CASE("the text form: the files as cat gives them, split by characters as nanoGPT does") {
    const fs::path dir = testing::fresh_folder("data", "text_form");
    testing::write_file(dir / "a", "First line\r\n\nwith a blank line");  // no final newline
    testing::write_file(dir / "b", "\u00e9t\u00e9\n%\nend\n");
    const std::u32string text = data::read_text({(dir / "a").string(), (dir / "b").string()});
    CHECK(text == U"First line\r\n\nwith a blank line\u00e9t\u00e9\n%\nend\n");  // nothing changed
    // 40 characters: the first int(40 * 0.9) = 36 train, the last 4 validate.
    REQUIRE(text.size() == 40);
    const data::TextSplit s = data::split_text(text, 0.1);
    CHECK(s.train == text.substr(0, 36));
    CHECK(s.val == U"end\n");
    CHECK(data::split_text(U"0123456789", 0.1).val == U"9");
    CHECK(data::split_text(U"0123456789", 0.25).train == U"0123456");  // int(10 * 0.75) = 7
    CHECK_THROWS_WITH_AS(data::split_text(text, 1.0),
                         doctest::Contains("expected a validation fraction in (0, 1), got 1"),
                         ValueError);
    testing::write_file(dir / "bad", std::string("ok\xff"));
    CHECK_THROWS_WITH_AS(
        data::read_text({(dir / "a").string(), (dir / "bad").string()}),
        doctest::Contains(("'" + (dir / "bad").string() + "' is not UTF-8").c_str()), DataError);
  }
}  // TEST_SUITE
