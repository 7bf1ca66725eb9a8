// examples/tokenize.cpp: tokenizers from the command line: train a byte-level byte pair encoding
// (tapegrad::data::BytePairEncoding) on a text file, or load GPT-2's (tapegrad::data::GPT2Tokenizer);
// turn text into token ids and ids back into text.
//
//     tokenize --train-bpe 512 --text corpus.txt --out corpus.bpe    # learns 256 merges
//     tokenize --bpe corpus.bpe --text letter.txt > letter.ids       # the ids, on one line
//     tokenize --bpe corpus.bpe --decode < letter.ids                # the text again
//     tokenize --gpt2 .cache/gpt2 --text letter.txt                  # GPT-2's ids
//
// --train-bpe takes --pretokenizer gpt2 (merges stay within GPT-2's pieces: words, numbers,
// punctuation) and --special-token TEXT (repeatable). Text that spells a special token is
// refused unless --special allow (it becomes the token) or --special ordinary (it stays text).
//
// Training and encoding also say on standard error how much the tokens compress the text (bytes
// per token). An existing --out is replaced only with --force, and never when it is a folder, a
// device or a FIFO. Files are read only when they are regular files of at most 1 GiB (a --text
// streamed into a token file has no limit): a FIFO with no writer would block the read for ever,
// and /dev/zero never ends.
//
// Exit status: 0, or 2 with one line saying which flag or file is wrong.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>

#include <tapegrad/data/bpe.hpp>
#include <tapegrad/data/gpt2_tokenizer.hpp>
#include <tapegrad/data/token_file.hpp>
#include <tapegrad/core/errors.hpp>
#include <tapegrad/io/safetensors.hpp>

#include "common/checked_main.hpp"
#include "common/flag_checks.hpp"

namespace {

namespace fs = std::filesystem;
using tapegrad::DataError;
using tapegrad::data::BytePairEncoding;
using tapegrad::data::GPT2Tokenizer;
using tapegrad::data::Pretokenizer;
using tapegrad::data::SpecialTokens;

/// The most this program reads from one file, or from standard input.
constexpr std::uintmax_t kMaxInputBytes = std::uintmax_t(1) << 30;

struct Settings {
  std::int64_t vocab_size = 0;  ///< --train-bpe N
  std::string text, out, bpe, gpt2;
  Pretokenizer pretokenizer = Pretokenizer::none;
  std::vector<std::string> special_tokens;  ///< --special-token, for --train-bpe
  SpecialTokens special = SpecialTokens::refuse;
  bool decode = false, force = false;
  bool train = false, has_text = false, has_out = false, has_bpe = false, has_gpt2 = false;
  bool has_pretokenizer = false, has_special = false;
};

[[noreturn]] void refuse(const std::string& what) { throw examples::FlagError(what); }

Settings parse_settings(int argc, char** argv) {
  Settings s;
  CLI::App app(
      "Train a byte-level BPE on a text file, or load GPT-2's; encode text to token ids, decode "
      "ids "
      "to text.\n"
      "  tokenize --train-bpe N --text FILE --out MODEL [--force] [--pretokenizer gpt2]\n"
      "           [--special-token TEXT]...\n"
      "  tokenize --bpe MODEL --text FILE      (the ids on one line, on standard output)\n"
      "  tokenize --bpe MODEL --decode         (ids from standard input, text to standard output)\n"
      "  tokenize --gpt2 DIR --text FILE       (GPT-2's ids; DIR holds encoder.json and "
      "vocab.bpe,\n"
      "                                         or vocab.json and merges.txt)\n"
      "  tokenize --gpt2 DIR --decode\n"
      "  tokenize --gpt2 DIR --text FILE --out FILE.tokens   (a token file, for gpt --tokens)");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last wins
  CLI::Option* train =
      app.add_option("--train-bpe", s.vocab_size,
                     "train a BPE of N tokens (the 256 bytes and N - 256 merges) on --text")
          ->check(flags::integer_in(256, std::int64_t(BytePairEncoding::kMaxVocabSize)));
  CLI::Option* text =
      app.add_option("--text", s.text, "the text file to train on or to encode (at most 1 GiB)");
  CLI::Option* out = app.add_option(
      "--out", s.out,
      "where --train-bpe saves the model; with --bpe or --gpt2 and --text, a token file of the "
      "ids (data/token_file.hpp: nanoGPT's uint16 ids, uint32 above 65,536 tokens, after a "
      "64-byte header), for gpt --tokens");
  app.add_flag("--force", s.force, "let --out replace an existing file");
  CLI::Option* pretokenizer =
      app.add_option("--pretokenizer", s.pretokenizer,
                     "with --train-bpe: none (merges may cross spaces) or gpt2 (merges stay "
                     "within GPT-2's pieces: words, numbers, punctuation); default none")
          ->transform(CLI::CheckedTransformer(std::map<std::string, Pretokenizer>{
              {"none", Pretokenizer::none}, {"gpt2", Pretokenizer::gpt2}}));
  CLI::Option* special_tokens =
      app.add_option("--special-token", s.special_tokens,
                     "with --train-bpe: a special token such as <|endoftext|>, given an id after "
                     "the merges (repeatable)")
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  CLI::Option* bpe = app.add_option("--bpe", s.bpe, "a model saved by --train-bpe, to use");
  CLI::Option* gpt2 = app.add_option(
      "--gpt2", s.gpt2,
      "a folder with GPT-2's tokenizer files, to use (scripts/setup.sh fetches them into "
      ".cache/gpt2)");
  CLI::Option* special =
      app.add_option("--special", s.special,
                     "what --text that spells a special token (GPT-2's <|endoftext|>) becomes: "
                     "refuse (the default: an error), allow (the token) or ordinary (text)")
          ->transform(CLI::CheckedTransformer(
              std::map<std::string, SpecialTokens>{{"refuse", SpecialTokens::refuse},
                                                   {"allow", SpecialTokens::allow},
                                                   {"ordinary", SpecialTokens::ordinary}}));
  app.add_flag("--decode", s.decode,
               "with --bpe or --gpt2: read ids (decimal, whitespace-separated) from standard input "
               "and write their text to standard output");
  examples::parse_flags(app, argc, argv);
  s.train = train->count() > 0;
  s.has_text = text->count() > 0;
  s.has_out = out->count() > 0;
  s.has_bpe = bpe->count() > 0;
  s.has_gpt2 = gpt2->count() > 0;
  s.has_pretokenizer = pretokenizer->count() > 0 || special_tokens->count() > 0;
  s.has_special = special->count() > 0;

  // What to do: exactly one of train, encode, decode, with what it needs and nothing else.
  if (s.has_bpe && s.has_gpt2) refuse("--bpe and --gpt2 do not go together: give one tokenizer");
  const bool use = s.has_bpe || s.has_gpt2;
  const std::string model = s.has_gpt2 ? "--gpt2" : "--bpe";
  if (s.train && use)
    refuse("--train-bpe and " + model + " do not go together: --train-bpe makes a model, " + model +
           " uses one");
  if (s.train && s.decode)
    refuse("--decode does not go with --train-bpe: decoding uses a model (--bpe MODEL --decode)");
  if (s.train && !s.has_text) refuse("--train-bpe needs --text FILE, the text to train on");
  if (s.train && !s.has_out) refuse("--train-bpe needs --out MODEL, where to save the model");
  if (!s.train && s.has_out && (s.decode || !s.has_text))
    refuse("--out goes with --train-bpe (the model) or with --text (the token file of its ids)");
  if (s.force && !s.has_out) refuse("--force goes with --out (the file it may replace)");
  if (!s.train && s.has_pretokenizer)
    refuse(std::string(pretokenizer->count() ? "--pretokenizer" : "--special-token") +
           " goes with --train-bpe (a trained model keeps its own)");
  if (!s.train && !use)
    refuse(s.decode
               ? "--decode needs --bpe MODEL or --gpt2 DIR, the tokenizer whose ids are decoded"
               : "nothing to do: give --train-bpe N --text FILE --out MODEL, "
                 "--bpe MODEL --text FILE, --gpt2 DIR --text FILE, or one of them with "
                 "--decode (--help says more)");
  if (use && s.decode && s.has_text)
    refuse("--decode reads the ids from standard input; it does not take --text");
  if (use && !s.decode && !s.has_text)
    refuse(model + " needs --text FILE (to encode it) or --decode (ids from standard input)");
  if (s.has_special && (s.train || s.decode))
    refuse("--special goes with --text FILE when it is encoded (--bpe or --gpt2)");
  return s;
}

/// DataError naming `flag` and `path` unless `path` is a regular file (a symbolic link to one
/// counts) of at most `max_bytes`.
void check_input_file(const std::string& flag, const std::string& path,
                      std::uintmax_t max_bytes = kMaxInputBytes) {
  if (path.empty()) refuse(flag + ": expected a file name, got ''");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st))
    throw DataError(flag + ": cannot read '" + path +
                    "': " + (ec ? ec.message() : std::string("no such file")));
  if (fs::is_directory(st))
    throw DataError(flag + ": '" + path + "' is a folder; " + flag + " expects a file");
  if (!fs::is_regular_file(st))
    throw DataError(flag + ": '" + path +
                    "' is not a regular file (a FIFO, a device or a socket); " + flag +
                    " expects a file");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw DataError(flag + ": cannot read '" + path + "': " + ec.message());
  if (size > max_bytes)
    throw DataError(flag + ": '" + path + "' holds " + std::to_string(size >> 20) +
                    " MiB, more than the " + std::to_string(kMaxInputBytes >> 20) +
                    " MiB this program reads");
}

/// The bytes of a file checked by check_input_file. tapegrad::io::read_file refuses, once more,
/// anything but a regular file (a FIFO put there since the check), without waiting on it.
std::string read_input_file(const std::string& flag, const std::string& path) {
  check_input_file(flag, path);
  std::string bytes = tapegrad::io::read_file(path, flag);
  if (bytes.size() > kMaxInputBytes)  // it grew while being read
    throw DataError(flag + ": '" + path + "' holds more than the " +
                    std::to_string(kMaxInputBytes >> 20) + " MiB this program reads");
  return bytes;
}

/// The tokenizer of --bpe or --gpt2, as the three things this program needs of it.
struct Tokenizer {
  std::function<std::vector<std::uint32_t>(std::string_view, SpecialTokens)> encode;
  std::function<std::string(const std::vector<std::uint32_t>&)> decode;
  std::size_t vocab_size = 0;
  std::string name;          ///< "gpt2" or "bpe", as a token file names it
  bool gpt2_pieces = false;  ///< it cuts text as GPT-2 does: see encode_to_token_file
  std::vector<std::string> special_tokens;
  std::uint64_t fingerprint = 0;  ///< tokenizer_fingerprint(), for a token file's header
};

/// The tokenizer of --bpe or --gpt2; its errors name the flag, the file and the line.
Tokenizer load_tokenizer(const Settings& s) {
  try {
    if (s.has_gpt2) {
      auto t = std::make_shared<const GPT2Tokenizer>(GPT2Tokenizer::load(s.gpt2));
      return {
          [t](std::string_view text, SpecialTokens special) { return t->encode(text, special); },
          [t](const std::vector<std::uint32_t>& ids) { return t->decode(ids); },
          t->vocab_size(),
          "gpt2",
          true,
          t->bpe().special_tokens(),
          tapegrad::data::tokenizer_fingerprint(*t)};
    }
    check_input_file("--bpe", s.bpe);
    auto t = std::make_shared<const BytePairEncoding>(BytePairEncoding::load(s.bpe));
    return {[t](std::string_view text, SpecialTokens special) { return t->encode(text, special); },
            [t](const std::vector<std::uint32_t>& ids) { return t->decode(ids); },
            t->vocab_size(),
            "bpe",
            t->pretokenizer() == Pretokenizer::gpt2,
            t->special_tokens(),
            tapegrad::data::tokenizer_fingerprint(*t)};
  } catch (const DataError& e) {
    throw DataError((s.has_gpt2 ? "--gpt2: " : "--bpe: ") + std::string(e.what()));
  }
}

/// A text the tokenizer refuses (invalid UTF-8 for GPT-2's pieces, a special token's text without
/// --special) is a DataError naming --text and the file. `text` starts at byte `offset` of it.
std::vector<std::uint32_t> encode_text(const Tokenizer& t, const Settings& s,
                                       const std::string& text, std::uintmax_t offset = 0) {
  if (s.special == SpecialTokens::refuse)
    for (const std::string& token : t.special_tokens)
      if (const std::size_t at = text.find(token); at != std::string::npos)
        throw DataError("--text: '" + s.text + "' holds the special token \"" + token +
                        "\" at byte " + std::to_string(offset + at) +
                        "; give --special allow to encode it as its id, or --special ordinary to "
                        "encode it as text");
  try {
    return t.encode(text, s.special);
  } catch (const tapegrad::ValueError& e) {
    throw DataError(
        "--text: '" + s.text + "': " + e.what() +
        (offset > 0 ? " (a byte of the block from byte " + std::to_string(offset) + ")" : ""));
  }
}

/// Refuses an --out that cannot or may not be replaced, before any training. Returns the file
/// to write: `out` itself, or the regular file a symbolic link `out` names (the link stays).
std::string check_output_file(const Settings& s) {
  if (s.out.empty()) refuse("--out: expected a file name, got ''");
  const fs::path out(s.out);
  std::error_code ec;
  const fs::file_status st = fs::status(out, ec);
  if (!fs::exists(st)) {
    if (fs::is_symlink(fs::symlink_status(out, ec)))
      throw DataError("--out: '" + s.out + "' is a symbolic link to a file that does not exist");
    const fs::path folder = out.parent_path();
    if (!folder.empty() && !fs::is_directory(folder, ec))
      throw DataError("--out: the folder '" + folder.string() + "' does not exist");
    return s.out;
  }
  if (fs::is_directory(st))
    throw DataError("--out: '" + s.out + "' is a folder; --out expects a file name");
  if (!fs::is_regular_file(st))
    throw DataError("--out: '" + s.out +
                    "' exists and is not a regular file (a device, a FIFO or a socket); it is "
                    "never replaced, even with --force");
  if (fs::equivalent(out, fs::path(s.text), ec))
    throw DataError("--out: '" + s.out +
                    "' is the --text file; write the --out file under another name");
  if (!s.force) throw DataError("--out: '" + s.out + "' exists; add --force to replace it");
  std::cerr << "tokenize: replacing '" << s.out << "' (--force)\n";
  return fs::is_symlink(fs::symlink_status(out, ec)) ? fs::canonical(out).string() : s.out;
}

/// "1234 bytes in 500 tokens: 2.47 bytes per token", on standard error.
void print_compression(std::size_t bytes, std::size_t tokens) {
  std::cerr << "compression: " << bytes << " bytes in " << tokens << " tokens";
  if (tokens > 0) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.3f", double(bytes) / double(tokens));
    std::cerr << ": " << ratio << " bytes per token";
  }
  std::cerr << '\n';
}

/// Flushes standard output; a write that failed (a full disk, a closed pipe) is a DataError.
void finish_output() {
  std::cout.flush();
  if (!std::cout) throw DataError("cannot write to standard output");
}

int train(const Settings& s) {
  const std::string text = read_input_file("--text", s.text);
  if (text.empty()) throw DataError("--text: '" + s.text + "' is empty: nothing to train on");
  const std::string target = check_output_file(s);
  BytePairEncoding bpe;
  try {
    bpe = BytePairEncoding::train(text, std::size_t(s.vocab_size), s.pretokenizer);
  } catch (const tapegrad::ValueError& e) {  // not UTF-8, for GPT-2's pretokenizer
    throw DataError("--text: '" + s.text + "': " + e.what());
  }
  try {
    bpe.add_special_tokens(s.special_tokens);
  } catch (const tapegrad::ValueError& e) {
    refuse(std::string("--special-token: ") + e.what());
  }
  if (256 + bpe.merges().size() < std::size_t(s.vocab_size))
    std::cerr << "tokenize: no pair was left to merge after " << bpe.merges().size()
              << " merges (every "
              << (s.pretokenizer == Pretokenizer::gpt2 ? "piece of the text" : "text")
              << " is one token): the model has " << 256 + bpe.merges().size()
              << " tokens before its special ones, not " << s.vocab_size << "\n";
  try {
    bpe.save(target);
  } catch (const DataError& e) {
    throw DataError(std::string("--out: ") + e.what());
  }
  std::cerr << "tokenize: a BPE of " << bpe.vocab_size() << " tokens (" << bpe.merges().size()
            << " merges";
  if (!s.special_tokens.empty()) std::cerr << ", " << s.special_tokens.size() << " special";
  std::cerr << ") trained on '" << s.text << "', saved to '" << s.out << "'\n";
  print_compression(text.size(), bpe.encode(text, SpecialTokens::ordinary).size());
  return 0;
}

// --out FILE.tokens: the ids of --text as a token file. A tokenizer that cuts text as GPT-2 does
// reads the text in blocks of 16 MiB, each cut before a line end that follows a character other
// than a space: GPT-2's pattern always ends a piece there, so the ids are those of the whole text
// at once, and a text of any size costs a few blocks of memory. Another BPE (its merges may
// cross lines) reads the text whole, up to 1 GiB.
int encode_to_token_file(const Settings& s, const Tokenizer& tokenizer) {
  const std::string target = check_output_file(s);
  tapegrad::data::TokenFileWriter writer(target, tokenizer.vocab_size, tokenizer.name,
                                         tokenizer.fingerprint);
  std::uintmax_t bytes = 0;
  const auto encode_block = [&](const std::string& text) {
    writer.append(encode_text(tokenizer, s, text, bytes));
    bytes += text.size();
  };
  if (!tokenizer.gpt2_pieces) {
    encode_block(read_input_file("--text", s.text));
  } else {
    check_input_file("--text", s.text, std::numeric_limits<std::uintmax_t>::max());
    std::ifstream in(s.text, std::ios::binary);
    if (!in) throw DataError("--text: cannot read '" + s.text + "'");
    constexpr std::size_t kBlock = std::size_t(16) << 20;
    std::string carry;
    std::vector<char> block(kBlock);
    while (in.read(block.data(), std::streamsize(kBlock)), in.gcount() > 0) {
      carry.append(block.data(), std::size_t(in.gcount()));
      // The last line end ("\n", or "\r\n") after a character that is not a space.
      std::size_t cut = carry.size();
      for (std::size_t nl = carry.size(); nl > 0;) {
        nl = carry.rfind('\n', nl - 1);
        if (nl == std::string::npos) break;
        cut = nl > 0 && carry[nl - 1] == '\r' ? nl - 1 : nl;
        if (cut > 0 && tapegrad::data::gpt2_piece_ends_before(carry, cut)) break;
        cut = std::string::npos;
      }
      if (cut == carry.size()) cut = std::string::npos;
      if (cut == std::string::npos || cut == 0) {
        if (carry.size() > kMaxInputBytes)
          throw DataError("--text: '" + s.text +
                          "' has no line end after a character other "
                          "than a space in " +
                          std::to_string(kMaxInputBytes >> 20) +
                          " MiB, where the text could be cut into blocks");
        continue;  // read on: the next block may have one
      }
      encode_block(carry.substr(0, cut));
      carry.erase(0, cut);
    }
    if (in.bad()) throw DataError("--text: cannot read '" + s.text + "'");
    encode_block(carry);
  }
  writer.close();
  std::cerr << "tokenize: " << writer.count() << " ids of " << tokenizer.name << " ("
            << tokenizer.vocab_size << " tokens) written to '" << s.out << "', "
            << writer.bytes_per_id() << " bytes each\n";
  print_compression(std::size_t(bytes), std::size_t(writer.count()));
  return 0;
}

int encode(const Settings& s) {
  const Tokenizer tokenizer = load_tokenizer(s);
  if (s.has_out) return encode_to_token_file(s, tokenizer);
  const std::string text = read_input_file("--text", s.text);
  const std::vector<std::uint32_t> ids = encode_text(tokenizer, s, text);
  std::string line;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) line += ' ';
    line += std::to_string(ids[i]);
  }
  line += '\n';
  std::cout.write(line.data(), std::streamsize(line.size()));
  finish_output();
  print_compression(text.size(), ids.size());
  return 0;
}

/// The ids on standard input: decimal numbers below `vocab_size`, separated by whitespace. Any
/// other byte is a DataError naming it and its offset, so /dev/zero is refused at its first byte.
std::vector<std::uint32_t> read_ids(std::size_t vocab_size) {
  const auto is_space = [](int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  };
  std::vector<std::uint32_t> ids;
  std::string digits;  // of the id being read, at most 21 kept: enough to be out of range
  std::uintmax_t offset = 0;
  const auto end_number = [&] {
    if (digits.empty()) return;
    std::uint64_t id = 0;
    if (!flags::parse_integer(digits, id) || id >= vocab_size)
      throw DataError("standard input: id " + digits + (digits.size() > 20 ? "..." : "") +
                      " (number " + std::to_string(ids.size() + 1) +
                      ") is not below the tokenizer's vocab_size " + std::to_string(vocab_size));
    ids.push_back(std::uint32_t(id));
    digits.clear();
  };
  char buffer[1 << 16];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, stdin)) > 0;) {
    for (std::size_t i = 0; i < n; ++i, ++offset) {
      const int c = static_cast<unsigned char>(buffer[i]);
      if (c >= '0' && c <= '9') {
        if (digits == "0") digits.clear();  // leading zeros: 007 is 7
        if (digits.size() <= 20) digits += char(c);
      } else if (is_space(c)) {
        end_number();
      } else {
        char shown[8];
        std::snprintf(shown, sizeof shown, c >= 0x21 && c < 0x7F ? "'%c'" : "0x%02x", c);
        throw DataError("standard input: expected decimal ids separated by whitespace, got " +
                        std::string(shown) + " at byte " + std::to_string(offset));
      }
    }
    if (offset > kMaxInputBytes)
      throw DataError("standard input: more than the " + std::to_string(kMaxInputBytes >> 20) +
                      " MiB of ids this program reads");
  }
  if (std::ferror(stdin)) throw DataError("standard input: cannot read");
  end_number();
  return ids;
}

int decode(const Settings& s) {
  const Tokenizer tokenizer = load_tokenizer(s);
  if (isatty(STDIN_FILENO))
    std::cerr << "tokenize: reading ids from standard input (end with Ctrl-D)\n";
  const std::vector<std::uint32_t> ids = read_ids(tokenizer.vocab_size);
  const std::string text = tokenizer.decode(ids);
  std::cout.write(text.data(), std::streamsize(text.size()));
  finish_output();
  return 0;
}

int run(int argc, char** argv) {
  const Settings s = parse_settings(argc, argv);
  if (s.train) return train(s);
  return s.decode ? decode(s) : encode(s);
}

}  // namespace

int main(int argc, char** argv) {
  return examples::checked_main("tokenize", [&] { return run(argc, argv); });
}
