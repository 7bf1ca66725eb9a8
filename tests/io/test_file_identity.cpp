// tests/io/test_file_identity.cpp: which paths name one file (io/file_identity.hpp). A file is its
// device and inode: the same path, the path spelled another way ("./m.bpe", through a folder and
// ".."), a symbolic link to it (or a link to that link) and a hard link to it are all the same
// file; a copy, a missing file and a link that leads nowhere are not. check_outputs_spare_inputs
// refuses an output that is an input, naming both flags and both paths, and lets through an
// output that does not exist yet.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include <tapegrad/core/errors.hpp>
#include <tapegrad/io/file_identity.hpp>

#include "../test_files.hpp"
#include "scratch.hpp"

using tapegrad::ValueError;
using tapegrad::io::check_outputs_spare_inputs;
using tapegrad::io::identity_of;
using tapegrad::io::NamedFile;
using tapegrad::io::same_file;
using tapegrad::testing::InFolder;
using tapegrad::testing::scratch_dir;
using tapegrad::testing::write_bytes;
namespace fs = std::filesystem;

TEST_SUITE("io.file_identity") {
  TEST_CASE("one file under many names is one identity, and a copy or a missing file is not") {
    const fs::path dir = scratch_dir("file_identity_names");
    const fs::path model = dir / "m.bpe";
    write_bytes(model, "tapegrad-bpe 1\n");
    write_bytes(dir / "copy.bpe", "tapegrad-bpe 1\n");  // the same bytes, another file
    fs::create_directories(dir / "sub");
    fs::create_symlink(model, dir / "absolute_link");
    fs::create_symlink("m.bpe", dir / "relative_link");
    fs::create_symlink(dir / "relative_link", dir / "link_to_link");
    fs::create_hard_link(model, dir / "hard_link");
    fs::create_symlink(dir / "missing", dir / "dangling");

    REQUIRE(identity_of(model.string()));
    const InFolder here(dir);
    for (const std::string name : {"m.bpe", "./m.bpe", "sub/../m.bpe", "absolute_link",
                                   "relative_link", "link_to_link", "hard_link"}) {
      CAPTURE(name);
      CHECK(identity_of(name) == identity_of(model.string()));
      CHECK(same_file(name, model.string()));
      CHECK(same_file(model.string(), name));
    }
    CHECK_FALSE(same_file("copy.bpe", "m.bpe"));
    CHECK_FALSE(same_file("m.bpe", "missing"));
    CHECK_FALSE(same_file("missing", "missing"));  // nothing there: no identity to share
    CHECK_FALSE(same_file("dangling", "missing"));
    CHECK_FALSE(identity_of("missing"));
    CHECK_FALSE(identity_of("dangling"));
    CHECK_FALSE(identity_of(""));
  }

  TEST_CASE("an output that is an input is refused, naming both flags and both paths") {
    const fs::path dir = scratch_dir("file_identity_check");
    write_bytes(dir / "m.bpe", "model");
    write_bytes(dir / "t.txt", "text");
    write_bytes(dir / "other.tokens", "old tokens");
    fs::create_symlink("m.bpe", dir / "link.bpe");
    fs::create_hard_link(dir / "t.txt", dir / "hard.txt");
    const InFolder here(dir);
    const std::vector<NamedFile> inputs = {{"--bpe", "m.bpe"}, {"--text", "t.txt"}};

    const auto refused = [&](const std::string& out, const std::string& flag,
                             const std::string& path) {
      CAPTURE(out);
      const std::string message =
          "--out: '" + out + "' is the file " + flag + " reads ('" + path + "')";
      CHECK_THROWS_WITH_AS(check_outputs_spare_inputs({{"--out", out}}, inputs),
                           doctest::Contains(message.c_str()), ValueError);
      CHECK_THROWS_WITH_AS(check_outputs_spare_inputs({{"--out", out}}, inputs),
                           doctest::Contains("not even with --force"), ValueError);
    };
    refused("m.bpe", "--bpe", "m.bpe");
    refused("./m.bpe", "--bpe", "m.bpe");
    refused((dir / "m.bpe").string(), "--bpe", "m.bpe");
    refused("link.bpe", "--bpe", "m.bpe");
    refused("t.txt", "--text", "t.txt");
    refused("hard.txt", "--text", "t.txt");

    // Another file, even with the same bytes or name elsewhere, and a file not made yet, pass.
    CHECK_NOTHROW(check_outputs_spare_inputs({{"--out", "other.tokens"}}, inputs));
    CHECK_NOTHROW(check_outputs_spare_inputs({{"--out", "new.tokens"}}, inputs));
    CHECK_NOTHROW(check_outputs_spare_inputs({{"--out", ""}}, inputs));
    // An input that is missing cannot be replaced (its own reader names it).
    CHECK_NOTHROW(check_outputs_spare_inputs({{"--out", "other.tokens"}}, {{"--bpe", "gone"}}));
    // Every output is compared with every input.
    CHECK_THROWS_WITH_AS(
        check_outputs_spare_inputs({{"--out", "other.tokens"}, {"--log", "link.bpe"}}, inputs),
        doctest::Contains("--log: 'link.bpe' is the file --bpe reads ('m.bpe')"), ValueError);
  }
}
