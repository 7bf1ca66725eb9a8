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
// per token). Encoding and decoding go block by block, cut where the ids (or the text) stay those
// of the whole, so their memory does not grow with the input; training holds the whole text and
// about 28 bytes per byte of it, and a --text too large for the machine's memory is refused from
// its size, before it is read (tokenize_memory.hpp).
//
// An existing --out is replaced only with --force, and never when it is a folder, a device, a
// FIFO, or one of the files the run reads (--text, --bpe, --gpt2's files: compared by device and
// inode, through any link), even with --force. --out's folder is checked to be writable before
// anything is trained or encoded. Files are read only when they are regular files (a FIFO with no
// writer would block the read for ever, and /dev/zero never ends), of at most 1 GiB to train on.
//
// Exit status: 0, or 2 with one line saying which flag or file is wrong.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>

#include <tapegrad/core/atomic_file.hpp>
#include <tapegrad/core/errors.hpp>
#include <tapegrad/core/memory.hpp>
#include <tapegrad/data/bpe.hpp>
#include <tapegrad/data/gpt2_tokenizer.hpp>
#include <tapegrad/data/token_file.hpp>
#include <tapegrad/io/file_identity.hpp>
#include <tapegrad/io/safetensors.hpp>

#include "common/checked_main.hpp"
#include "common/flag_checks.hpp"
#include "text_blocks.hpp"
#include "tokenize_memory.hpp"

namespace {

namespace fs = std::filesystem;
using tapegrad::DataError;
using tapegrad::data::BytePairEncoding;
using tapegrad::data::GPT2Tokenizer;
using tapegrad::data::Pretokenizer;
using tapegrad::data::SpecialTokens;
using tapegrad::io::NamedFile;
using tokenize::cached_encode;
using tokenize::Cuts;
using tokenize::for_each_block;
using tokenize::TextFile;

/// The most text this program trains on, or encodes at once when it cannot cut it into blocks.
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
      "  tokenize --bpe MODEL --text FILE --out FILE.tokens [--force]   (a token file, for gpt\n"
      "  tokenize --gpt2 DIR --text FILE --out FILE.tokens [--force]     --tokens)");
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

/// The size of `path` in bytes, after a DataError naming `flag` and `path` unless it is a regular
/// file (a symbolic link to one counts) of at most `max_bytes`.
std::uintmax_t check_input_file(const std::string& flag, const std::string& path,
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
                    " MiB, more than the " + std::to_string(max_bytes >> 20) +
                    " MiB this program reads");
  return size;
}

/// The bytes of a file checked by check_input_file. tapegrad::io::read_file refuses, once more,
/// anything but a regular file (a FIFO put there since the check), without waiting on it, and a
/// file that grew past the limit while it was read.
std::string read_input_file(const std::string& flag, const std::string& path) {
  check_input_file(flag, path);
  return tapegrad::io::read_file(path, flag, kMaxInputBytes);
}

/// The tokenizer of --bpe or --gpt2, as the things this program needs of it.
struct Tokenizer {
  std::function<std::vector<std::uint32_t>(std::string_view, SpecialTokens)> encode;
  std::function<std::string(const std::vector<std::uint32_t>&)> decode;
  std::function<const std::string&(std::uint32_t)> bytes_of;  ///< the bytes an id stands for
  std::size_t vocab_size = 0;
  std::string name;  ///< "gpt2" or "bpe", as a token file names it
  Cuts cuts;         ///< where its text may be cut into blocks
  std::vector<std::string> special_tokens;
  std::uint64_t fingerprint = 0;  ///< tokenizer_fingerprint(), for a token file's header
};

/// The tokenizer of --bpe or --gpt2; its errors name the flag, the file and the line.
Tokenizer load_tokenizer(const Settings& s) {
  if (s.has_bpe) check_input_file("--bpe", s.bpe);  // (its messages name the flag already)
  try {
    if (s.has_gpt2) {
      auto t = std::make_shared<const GPT2Tokenizer>(GPT2Tokenizer::load(s.gpt2));
      return {
          [t](std::string_view text, SpecialTokens special) { return t->encode(text, special); },
          [t](const std::vector<std::uint32_t>& ids) { return t->decode(ids); },
          [t](std::uint32_t id) -> const std::string& { return t->bytes_of(id); },
          t->vocab_size(),
          "gpt2",
          Cuts::gpt2_pieces(),
          t->bpe().special_tokens(),
          tapegrad::data::tokenizer_fingerprint(*t)};
    }
    auto t = std::make_shared<const BytePairEncoding>(BytePairEncoding::load(s.bpe));
    return {cached_encode(t),
            [t](const std::vector<std::uint32_t>& ids) { return t->decode(ids); },
            [t](std::uint32_t id) -> const std::string& { return t->bytes_of(id); },
            t->vocab_size(),
            "bpe",
            t->pretokenizer() == Pretokenizer::gpt2 ? Cuts::gpt2_pieces() : Cuts::between_bytes(*t),
            t->special_tokens(),
            tapegrad::data::tokenizer_fingerprint(*t)};
  } catch (const DataError& e) {
    throw DataError((s.has_gpt2 ? "--gpt2: " : "--bpe: ") + std::string(e.what()));
  }
}

/// The files of --bpe, or those of --gpt2's folder that GPT2Tokenizer::load reads: the inputs
/// that --out must not replace.
std::vector<NamedFile> tokenizer_files(const Settings& s) {
  if (s.has_bpe) return {{"--bpe", s.bpe}};
  std::vector<NamedFile> files;
  for (const char* name : {"encoder.json", "vocab.bpe", "vocab.json", "merges.txt"})
    files.push_back({"--gpt2", (fs::path(s.gpt2) / name).string()});
  return files;
}

/// A text the tokenizer refuses (invalid UTF-8 for GPT-2's pieces, a special token's text without
/// --special) is a DataError naming --text and the file. `text` starts at byte `offset` of it.
std::vector<std::uint32_t> encode_text(const Tokenizer& t, const Settings& s, std::string_view text,
                                       std::uintmax_t offset = 0) {
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

/// The most text for_each_block encodes at once, in bytes.
std::uintmax_t max_block_bytes() {
  return std::min(kMaxInputBytes, tokenize::largest_encoding_block(tokenize::usable_bytes()));
}

/// Refuses an --out that cannot or may not be replaced, before any training: one that is one of
/// `inputs` (the same file by device and inode, through any link, with or without --force), or
/// that lies in a folder where it cannot be written (the system's reason is given). Returns the
/// file to write: `out` itself, or the regular file a symbolic link `out` names (the link stays).
std::string check_output_file(const Settings& s, const std::vector<NamedFile>& inputs) {
  if (s.out.empty()) refuse("--out: expected a file name, got ''");
  const fs::path out(s.out);
  std::error_code ec;
  const fs::file_status st = fs::status(out, ec);
  std::string target = s.out;
  if (!fs::exists(st)) {
    if (fs::is_symlink(fs::symlink_status(out, ec)))
      throw DataError("--out: '" + s.out + "' is a symbolic link to a file that does not exist");
    const fs::path folder = out.parent_path();
    if (!folder.empty() && !fs::is_directory(folder, ec))
      throw DataError(fs::exists(folder, ec)
                          ? "--out: '" + folder.string() + "' is not a folder"
                          : "--out: the folder '" + folder.string() + "' does not exist");
  } else {
    if (fs::is_directory(st))
      throw DataError("--out: '" + s.out + "' is a folder; --out expects a file name");
    if (!fs::is_regular_file(st))
      throw DataError("--out: '" + s.out +
                      "' exists and is not a regular file (a device, a FIFO or a socket); it is "
                      "never replaced, even with --force");
    tapegrad::io::check_outputs_spare_inputs({{"--out", s.out}}, inputs);
    if (!s.force) throw DataError("--out: '" + s.out + "' exists; add --force to replace it");
    if (fs::is_symlink(fs::symlink_status(out, ec))) target = fs::canonical(out).string();
  }
  // The writer's temporary, made and removed now: a folder it cannot write in (read-only, full,
  // another user's) is named with the system's reason before minutes of training, not after.
  { const tapegrad::AtomicFile probe(target, "--out"); }
  if (fs::exists(st)) std::cerr << "tokenize: replacing '" << s.out << "' (--force)\n";
  return target;
}

/// "1234 bytes in 500 tokens: 2.47 bytes per token", on standard error.
void print_compression(std::uintmax_t bytes, std::uintmax_t tokens) {
  std::cerr << "compression: " << bytes << " bytes in " << tokens << " tokens";
  if (tokens > 0) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.3f", double(bytes) / double(tokens));
    std::cerr << ": " << ratio << " bytes per token";
  }
  std::cerr << '\n';
}

/// A DataError when standard output is the file `what` is read from (`>> FILE`, a link to it):
/// each block's ids would be appended to the text still being read, read back as text, and the
/// file would grow until the disk is full.
void check_stdout_is_not(const std::string& what, const struct stat& input) {
  struct stat out {};
  if (::fstat(STDOUT_FILENO, &out) != 0 || !S_ISREG(out.st_mode)) return;
  if (out.st_dev == input.st_dev && out.st_ino == input.st_ino)
    throw DataError("standard output is " + what +
                    ", which this run reads: what it writes would be read back; write to "
                    "another file");
}

/// Writes to standard output; a write that failed (a full disk, a closed pipe) is a DataError.
void write_output(std::string_view bytes) {
  std::cout.write(bytes.data(), std::streamsize(bytes.size()));
  if (!std::cout) throw DataError("cannot write to standard output");
}

/// Flushes standard output; a write that failed (a full disk, a closed pipe) is a DataError.
void finish_output() {
  std::cout.flush();
  if (!std::cout) throw DataError("cannot write to standard output");
}

/// DataError naming --text unless training on `text_bytes` of text fits in the memory this
/// machine gives the program: checked from the file's size, before a byte of it is read.
void check_training_memory(const Settings& s, std::uintmax_t text_bytes) {
  const double need = tokenize::training_bytes(text_bytes), usable = tokenize::usable_bytes();
  if (need <= usable) return;
  const std::uintmax_t part = tokenize::largest_training_text(usable);
  throw DataError("--text: training a BPE on the " + std::to_string(text_bytes >> 20) +
                  " MiB of '" + s.text + "' needs about " + tapegrad::memory_text(need) +
                  " of memory (" + std::to_string(int(tokenize::kTrainingBytesPerByte)) +
                  " bytes per byte of text), more than the " +
                  tapegrad::memory_text(std::max(0.0, usable)) + " this machine leaves a run (" +
                  tokenize::usable_text() + "); train on a part of the text, at most " +
                  std::to_string(part >> 20) + " MiB (head -c " + std::to_string(part) + ")");
}

/// A FlagError naming --train-bpe unless BytePairEncoding::load can read `bpe` back: a text can
/// make tokens longer than a BPE file may hold (each merge of "aaaa..." doubles a token; a text
/// holding every pair of bytes once makes each merge one byte longer than the last). The message
/// gives the largest --train-bpe that loads.
void check_loadable(const BytePairEncoding& bpe, const Settings& s) {
  std::uint64_t total = 256;  // the bytes' tokens, as load() counts
  for (std::size_t k = 0; k < bpe.merges().size(); ++k) {
    const std::uint64_t length = bpe.bytes_of(std::uint32_t(256 + k)).size();
    total += length;
    if (length > BytePairEncoding::kMaxTokenBytes || total > BytePairEncoding::kMaxVocabBytes)
      refuse("--train-bpe " + std::to_string(s.vocab_size) + ": merge " + std::to_string(k) +
             " of '" + s.text + "' makes a token of " + std::to_string(length) +
             " bytes (the tokens hold " + std::to_string(total) +
             " bytes so far), more than a BPE file may hold (" +
             std::to_string(BytePairEncoding::kMaxTokenBytes >> 20) + " MiB a token, " +
             std::to_string(BytePairEncoding::kMaxVocabBytes >> 20) +
             " MiB in all), so the model could not be loaded; nothing was saved: give "
             "--train-bpe " +
             std::to_string(256 + k) + " or less");
  }
}

/// A FlagError naming --special-token unless the tokens can be added to the trained model: checked
/// on an untrained one before the training, which may take minutes, rather than after it.
void check_special_tokens(const Settings& s) {
  if (s.special_tokens.empty()) return;
  try {
    BytePairEncoding().add_special_tokens(s.special_tokens);
  } catch (const tapegrad::ValueError& e) {
    // The flag says where; the library's function name would tell a user of tokenize nothing.
    std::string what = e.what();
    const std::string library = "BytePairEncoding::add_special_tokens: ";
    if (what.rfind(library, 0) == 0) what.erase(0, library.size());
    refuse("--special-token: " + what);
  }
  if (std::uint64_t(s.vocab_size) + s.special_tokens.size() > BytePairEncoding::kMaxVocabSize)
    refuse("--special-token: --train-bpe " + std::to_string(s.vocab_size) + " and " +
           std::to_string(s.special_tokens.size()) + " special tokens make more than the " +
           std::to_string(BytePairEncoding::kMaxVocabSize) +
           " tokens a BPE may hold; give a smaller --train-bpe");
}

int train(const Settings& s) {
  check_special_tokens(s);
  const std::uintmax_t size = check_input_file("--text", s.text);
  check_training_memory(s, size);
  const std::string target = check_output_file(s, {{"--text", s.text}});
  const std::string text = read_input_file("--text", s.text);
  if (text.empty()) throw DataError("--text: '" + s.text + "' is empty: nothing to train on");
  if (text.size() < size)
    throw DataError("--text: '" + s.text + "' held " + std::to_string(size) + " bytes, but only " +
                    std::to_string(text.size()) +
                    " could be read: it was cut meanwhile (nothing was trained)");
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
  check_loadable(bpe, s);  // (first: a model refused gets no note about its size)
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
  std::cerr << ") trained on '" << s.text << "', saved to '" << s.out << "'" << std::endl;
  // The compression line counts the text's tokens once more, block by block: the ids of the
  // whole text, in a few blocks' memory rather than the whole text's.
  const auto shared = std::make_shared<const BytePairEncoding>(std::move(bpe));
  const auto encode = cached_encode(shared);
  const Cuts cuts =
      s.pretokenizer == Pretokenizer::gpt2 ? Cuts::gpt2_pieces() : Cuts::between_bytes(*shared);
  std::size_t read = 0;
  std::uintmax_t tokens = 0;
  const auto more = [&](std::string& carry, std::size_t n) {
    const std::size_t take = std::min(n, text.size() - read);
    carry.append(text, read, take);
    read += take;
    return take > 0;
  };
  const auto count_block = [&](std::string_view block, std::uintmax_t) {
    tokens += encode(block, SpecialTokens::ordinary).size();
  };
  for_each_block(more, cuts, tokenize::kBlockBytes, max_block_bytes(), "--text: '" + s.text + "'",
                 count_block);
  print_compression(text.size(), tokens);
  return 0;
}

// --text is encoded block by block (for_each_block): a text of any size costs a few blocks of
// memory, and its ids are those of the whole text at once. They go to --out, a token file, or to
// standard output, on one line.
int encode(const Settings& s) {
  const Tokenizer tokenizer = load_tokenizer(s);
  // Ids on standard output, one line of them, are for a text of a reasonable size; a token file
  // takes a text of any size.
  check_input_file("--text", s.text,
                   s.has_out ? std::numeric_limits<std::uintmax_t>::max() : kMaxInputBytes);
  std::vector<NamedFile> inputs = tokenizer_files(s);
  inputs.push_back({"--text", s.text});
  const std::string target = s.has_out ? check_output_file(s, inputs) : std::string();
  if (struct stat text{}; !s.has_out && ::stat(s.text.c_str(), &text) == 0)
    check_stdout_is_not("the file --text '" + s.text + "'", text);
  // The token file's writer names the file and itself; the flag comes first.
  const auto naming_out = [&](auto&& write) {
    try {
      write();
    } catch (const DataError& e) {
      throw DataError(std::string("--out: ") + e.what());
    }
  };
  std::optional<tapegrad::data::TokenFileWriter> writer;
  if (s.has_out)
    naming_out([&] {
      writer.emplace(target, tokenizer.vocab_size, tokenizer.name, tokenizer.fingerprint);
    });
  TextFile in("--text", s.text);
  std::uintmax_t bytes = 0, count = 0;
  std::string line;
  const auto more = [&](std::string& carry, std::size_t n) { return in.read_into(carry, n); };
  const auto encode_block = [&](std::string_view text, std::uintmax_t offset) {
    const std::vector<std::uint32_t> ids = encode_text(tokenizer, s, text, offset);
    bytes += text.size();
    if (writer) {
      naming_out([&] { writer->append(ids); });
    } else {
      line.clear();
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (count + i > 0) line += ' ';
        line += std::to_string(ids[i]);
      }
      write_output(line);
    }
    count += ids.size();
  };
  for_each_block(more, tokenizer.cuts, tokenize::kBlockBytes, max_block_bytes(),
                 "--text: '" + s.text + "'", encode_block);
  if (writer) {
    naming_out([&] { writer->close(); });
    std::cerr << "tokenize: " << writer->count() << " ids of " << tokenizer.name << " ("
              << tokenizer.vocab_size << " tokens) written to '" << s.out << "', "
              << writer->bytes_per_id() << " bytes each\n";
  } else {
    write_output("\n");
    finish_output();
  }
  print_compression(bytes, count);
  return 0;
}

/// Reads decimal ids below `vocab_size`, separated by whitespace, from standard input, and hands
/// them to `ids` in batches as they come. Any other byte is a DataError naming it and its offset,
/// so /dev/zero is refused at its first byte.
void read_ids(std::size_t vocab_size, const std::function<void(std::uint32_t)>& id_read) {
  const auto is_space = [](int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  };
  std::string digits;  // of the id being read, at most 21 kept: enough to be out of range
  std::uintmax_t offset = 0, number = 0;
  const auto end_number = [&] {
    if (digits.empty()) return;
    std::uint64_t id = 0;
    ++number;
    if (!flags::parse_integer(digits, id) || id >= vocab_size)
      throw DataError("standard input: id " + digits + (digits.size() > 20 ? "..." : "") +
                      " (number " + std::to_string(number) +
                      ") is not below the tokenizer's vocab_size " + std::to_string(vocab_size));
    id_read(std::uint32_t(id));
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
  }
  if (std::ferror(stdin)) throw DataError("standard input: cannot read");
  end_number();
}

// The ids' text is written as they are read, a batch at a time. A batch ends after a token whose
// last byte is ASCII: a character is never cut between two batches there, so the text, invalid
// UTF-8 replaced as decode() does it, is that of all the ids at once.
int decode(const Settings& s) {
  const Tokenizer tokenizer = load_tokenizer(s);
  if (struct stat in{}; ::fstat(STDIN_FILENO, &in) == 0 && S_ISREG(in.st_mode))
    check_stdout_is_not("the file of standard input", in);
  if (isatty(STDIN_FILENO))
    std::cerr << "tokenize: reading ids from standard input (end with Ctrl-D)\n";
  const std::uintmax_t max_batch = max_block_bytes();
  std::vector<std::uint32_t> batch;
  std::uintmax_t batch_bytes = 0, ascii_end = 0, written = 0;  // ascii_end: ids of a batch
  const auto write_batch = [&](std::size_t n) {
    const std::vector<std::uint32_t> ids(batch.begin(), batch.begin() + std::ptrdiff_t(n));
    write_output(tokenizer.decode(ids));
    batch.erase(batch.begin(), batch.begin() + std::ptrdiff_t(n));
    batch_bytes = 0;
    for (const std::uint32_t id : batch) batch_bytes += tokenizer.bytes_of(id).size();
    ascii_end = 0;
    written += n;
  };
  read_ids(tokenizer.vocab_size, [&](std::uint32_t id) {
    const std::string& bytes = tokenizer.bytes_of(id);
    batch.push_back(id);
    batch_bytes += bytes.size();
    if (!bytes.empty() && static_cast<unsigned char>(bytes.back()) < 0x80) ascii_end = batch.size();
    if (batch_bytes < tokenize::kBlockBytes) return;
    if (ascii_end > 0) return write_batch(std::size_t(ascii_end));
    if (batch_bytes > max_batch)
      throw DataError("standard input: ids " + std::to_string(written + 1) + " to " +
                      std::to_string(written + batch.size()) + " stand for " +
                      std::to_string(batch_bytes >> 20) +
                      " MiB with no token ending in an ASCII byte, where the text could be cut, "
                      "more than the " +
                      std::to_string(max_batch >> 20) +
                      " MiB this program decodes at once in the memory this machine gives it");
  });
  write_batch(batch.size());
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
