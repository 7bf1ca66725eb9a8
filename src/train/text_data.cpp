// src/train/text_data.cpp: a language model's text, tokenizer and tokens (train/text_data.hpp).
#include "tapegrad/train/text_data.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "flag_errors.hpp"
#include "tapegrad/core/errors.hpp"
#include "tapegrad/data/token_file.hpp"

namespace tapegrad::train {

namespace fs = std::filesystem;

namespace {

std::string number_text(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

// DataError naming the flag and the file unless every file is a regular file and all of them
// together hold at most kMaxTextBytes.
void check_text_files(const std::vector<std::string>& files) {
  std::uintmax_t total = 0;
  for (const std::string& path : files) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      throw DataError("--data: cannot read '" + path + "': " + std::strerror(errno));
    if (S_ISDIR(st.st_mode))
      throw DataError("--data: '" + path +
                      "' is a folder; --data expects text files (every "
                      "file in it: --data '" +
                      path + "'/*)");
    if (!S_ISREG(st.st_mode))
      throw DataError("--data: '" + path +
                      "' is not a regular file (a FIFO, a device or a "
                      "socket); --data expects text files");
    total += std::uintmax_t(st.st_size);
    if (total > kMaxTextBytes)
      throw DataError("--data: the text files hold " + std::to_string(total >> 20) +
                      " MiB or more (up to '" + path + "'), more than the " +
                      std::to_string(kMaxTextBytes >> 20) +
                      " MiB this program reads; give a part of the text");
  }
}

// --tokens: a token file, checked whole before training (its header, its size, its tokenizer,
// every id), split by position: the last --val-fraction of its ids validate (as nanoGPT's val.bin
// does). A file too short for a window is named with its size, before --block-size is blamed.
TextData load_token_file(const TextOptions& o, std::size_t T) {
  if (!o.data_format.empty())
    throw ValueError("--data-format " + o.data_format +
                     " does not go with --tokens: a token file is one stream of ids already, "
                     "whose last --val-fraction validates");
  TextData d;
  d.files = {o.tokens};
  d.format = "tokens";
  d.tokenizer = make_tokenizer(o.tokenizer, U"");
  std::shared_ptr<const data::TokenFile> file;
  try {  // (the file's own errors name the file, not the flag)
    file = std::make_shared<const data::TokenFile>(data::TokenFile::open(o.tokens));
    const std::string warning =
        data::check_token_file_tokenizer(*file, d.tokenizer, "--tokenizer " + o.tokenizer);
    if (!warning.empty()) d.warnings.push_back("--tokens: " + warning);
    file->check_ids();
  } catch (const DataError& e) {
    throw DataError(std::string("--tokens: ") + e.what());
  }
  const auto val = std::size_t(double(file->size()) * o.val_fraction);
  if (file->size() - val <= T || val <= T)
    throw DataError("--tokens: '" + o.tokens + "' holds " + std::to_string(file->size()) + " ids" +
                    (file->size() == 0 ? " (the file is empty)" : "") + ", " +
                    std::to_string(file->size() - val) + " for training and " +
                    std::to_string(val) + " for validation (--val-fraction " +
                    number_text(o.val_fraction) + "); each needs more than one window of " +
                    "--block-size " + std::to_string(T) + " + 1 ids");
  d.train = {{}, file, 0, file->size() - val};
  d.val = {{}, file, file->size() - val, val};
  return d;
}

// --data-format, or the files' own form when it is not given: fortunes for Debian's fortunes
// (no --data) and for files that are all fortune files (a line that is exactly "%", strfile's
// separator), text for files none of which is. Files of both kinds are refused: the flag decides.
std::string data_format_of(const TextOptions& o, const std::vector<std::string>& files) {
  if (!o.data_format.empty()) return o.data_format;
  if (o.data.empty()) return "fortunes";
  std::string fortune, text;  // the first file of each kind
  for (const std::string& f : files) {
    std::string& kind = data::is_fortune_file(f) ? fortune : text;
    if (kind.empty()) kind = f;
  }
  if (!fortune.empty() && !text.empty())
    throw DataError("--data: '" + fortune + "' is a fortune file (a line holding only %) and '" +
                    text +
                    "' is not; give --data-format fortunes (entries between % lines, or "
                    "paragraphs in a file without them) or --data-format text (the files as one "
                    "stream)");
  return fortune.empty() ? "text" : "fortunes";
}

// The files as --data-format says: fortunes, entries (each followed by a "%" line) split by whole
// entries into training and validation text; or text, one stream whose first 1 - --val-fraction
// of characters train (nanoGPT's split). Then the tokenizer and the tokens.
TextData load_text_files(const TextOptions& o) {
  TextData d;
  d.files = o.data.empty() ? data::fortune_files() : o.data;
  if (d.files.empty())
    throw DataError(std::string("no text: ") + data::kFortunesDir +
                    " has no fortune files; install Debian's fortunes (scripts/setup.sh does) or "
                    "give --data FILE...");
  // The readers name the file; --data comes first. (The tokenizer's errors name --tokenizer.)
  d.format = detail::naming_flag("--data", [&] {
    check_text_files(d.files);  // (regular files, of a bounded size: before any is read)
    return data_format_of(o, d.files);
  });
  std::u32string train_text;
  if (d.format == "text") {
    data::TextSplit split = data::split_text(
        detail::naming_flag("--data", [&] { return data::read_text(d.files); }), o.val_fraction);
    train_text = std::move(split.train);
    d.val_text = std::move(split.val);
  } else {
    const std::vector<std::u32string> entries =
        detail::naming_flag("--data", [&] { return data::read_entries(d.files); });
    if (entries.size() < 2) {
      std::string names;  // (the files, which the fortunes' default folder also gives)
      for (const std::string& f : d.files) names += (names.empty() ? "'" : ", '") + f + "'";
      throw DataError(
          "--data: expected text of at least 2 entries (separated by '%' lines or blank lines), "
          "got " +
          std::to_string(entries.size()) + " in " + names +
          "; --data-format text reads the files as one stream");
    }
    d.split = data::split_entries(entries, o.val_fraction, o.split_seed);
    train_text = data::join_entries(d.split.train);
    d.val_text = data::join_entries(d.split.val);
  }
  const std::string train_utf8 = data::encode_utf8(train_text),
                    val_utf8 = data::encode_utf8(d.val_text);
  d.train_bytes = train_utf8.size();
  d.val_bytes = val_utf8.size();
  d.tokenizer = make_tokenizer(o.tokenizer, train_text);
  d.train.ids = d.tokenizer.encode(train_utf8, "the training text");
  d.val.ids = d.tokenizer.encode(val_utf8, "the validation text");
  return d;
}

}  // namespace

data::Tokenizer make_tokenizer(const std::string& spec, const std::u32string& train_text) {
  if (spec == "char") return data::Tokenizer(data::Vocabulary(train_text));
  try {
    if (spec.rfind("gpt2:", 0) == 0)
      return data::Tokenizer(data::GPT2Tokenizer::load(spec.substr(5)));
    if (spec.rfind("hf:", 0) == 0)  // a pretrained model's tokenizer.json
      return data::Tokenizer(data::HFTokenizer::load(spec.substr(3)));
    if (spec.rfind("bpe-model:", 0) == 0) {
      const std::string path = spec.substr(10);
      std::error_code ec;
      if (!fs::is_regular_file(path, ec))  // (a FIFO would block the read for ever)
        throw DataError("'" + path +
                        "' is not a regular file (a BPE saved by tokenize --train-bpe)");
      return data::Tokenizer(data::BytePairEncoding::load(path));
    }
  } catch (const DataError& e) {
    throw DataError(std::string("--tokenizer: ") + e.what());
  }
  std::size_t n = 0;
  const bool bpe = spec.rfind("bpe:", 0) == 0 && spec.size() > 4 &&
                   spec.find_first_not_of("0123456789", 4) == std::string::npos &&
                   spec.size() <= 10 && (n = std::stoul(spec.substr(4))) >= 257 && n <= 65536;
  check<ValueError>(bpe,
                    "--tokenizer: expected char, bpe:N with N in [257, 65536], "
                    "bpe-model:FILE, gpt2:DIR or hf:tokenizer.json, got '",
                    spec, "'");
  data::BytePairEncoding model =
      data::BytePairEncoding::train(data::encode_utf8(train_text), n, data::Pretokenizer::gpt2);
  if (model.vocab_size() < n)
    std::cout << "note: --tokenizer " << spec << ": the training text has no pair left to merge "
              << "after " << model.merges().size() << " merges (every word is one token): the "
              << "BPE has " << model.vocab_size() << " tokens\n";
  return data::Tokenizer(std::move(model));
}

TextData load_text(const TextOptions& o, std::size_t T) {
  if (!o.tokens.empty() && !o.data.empty())
    throw ValueError("--tokens and --data do not go together: train on one of them");
  TextData d = o.tokens.empty() ? load_text_files(o) : load_token_file(o, T);
  if (d.train.size() <= T || d.val.size() <= T)
    throw DataError("--data: " +
                    (d.files.size() == 1
                         ? "'" + d.files[0] + "'"
                         : std::to_string(d.files.size()) + " files ('" + d.files[0] + "', ...)") +
                    (d.files.size() == 1 ? " gives " : " give ") + std::to_string(d.train.size()) +
                    " training and " + std::to_string(d.val.size()) +
                    " validation tokens (--val-fraction " + number_text(o.val_fraction) +
                    "); each needs more than one window of --block-size " + std::to_string(T) +
                    " + 1 tokens: give more text, or a smaller --block-size");
  return d;
}

Validation validation_windows(const TextData& d, std::size_t T, std::size_t count, std::size_t B,
                              std::uint64_t split_seed) {
  Validation v = fixed_windows(d.val, T, count, B, split_seed + 1);
  v.ignore_index = d.tokenizer.ignore_index();
  std::vector<std::size_t> bytes(std::size_t(d.tokenizer.vocab_size()));
  for (std::size_t id = 0; id < bytes.size(); ++id)
    bytes[id] = d.tokenizer.bytes_of(std::int64_t(id));
  v.bytes_of = [bytes = std::move(bytes)](std::int64_t id) { return bytes[std::size_t(id)]; };
  return v;
}

std::u32string attention_line(const TextData& d, std::size_t T) {
  const std::vector<std::u32string> text_form = {d.val_text};
  const std::vector<std::u32string>& entries = d.split.val.empty() ? text_form : d.split.val;
  std::u32string cut_line;  // the text form's first line, which the split may have cut
  for (const std::u32string& e : entries)
    for (std::size_t begin = 0; begin < e.size();) {
      std::size_t end = e.find(U'\n', begin);
      if (end == std::u32string::npos) end = e.size();
      const std::u32string line = e.substr(begin, std::min(end - begin, T));
      if (begin == 0 && d.split.val.empty()) {
        cut_line = line;
      } else if (end - begin >= 24) {
        return line;
      }
      begin = end + 1;
    }
  if (cut_line.size() >= 24) return cut_line;
  return entries.empty() ? U"" : entries.front().substr(0, std::min(entries.front().size(), T));
}

}  // namespace tapegrad::train
