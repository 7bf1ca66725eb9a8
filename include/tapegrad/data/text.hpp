// include/tapegrad/data/text.hpp: a corpus of text files, read in one of two forms and split into
// training and validation text.
//
//   files     Debian's fortunes (fortune_files(): every regular file of /usr/share/games/fortunes
//             but the .dat indexes and the .u8 links, sorted by name), or any UTF-8 text files
//
// The fortunes form (read_entries, split_entries, join_entries):
//   entries   the text between lines holding only "%" (the fortune format); a file without such
//             lines is cut at blank lines (paragraphs). A line may end with "\r\n" as well as
//             "\n"; inside an entry "\r\n" becomes "\n". Blank entries are dropped, and so is an
//             entry whose text already appeared (the fortunes repeat some quotations across
//             files), so that no text can be on both sides of the split
//   split     a seeded shuffle of the entries picks the validation entries; each side keeps the
//             entries' original order
//   join      each entry followed by "%\n", so both streams read like fortune files (a model
//             trained on them learns to write the "%" line too)
//
// The text form (read_text, split_text), nanoGPT's: the files one after the other as `cat` would
// give them, every character kept; the first (1 - val_fraction) of the characters train and the
// rest validate. Nothing is cut, shuffled or added.
//
// is_fortune_file() tells the two kinds of file apart. Text is held as Unicode code points
// (std::u32string); files are read as UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tapegrad::data {

/// Where Debian's fortunes package puts its files.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

/// The fortune files of `dir`, sorted by name: regular files, not the .dat indexes, the .u8 links
/// or hidden files. Empty when `dir` is not a directory.
std::vector<std::string> fortune_files(const std::string& dir = kFortunesDir);

/// UTF-8 bytes -> code points. Invalid UTF-8 (a stray byte, an overlong form, a surrogate) is a
/// DataError naming `source` and the byte offset.
std::u32string decode_utf8(const std::string& bytes, const std::string& source);
/// Code points -> UTF-8 bytes.
std::string encode_utf8(const std::u32string& text);
void append_utf8(std::string& out, char32_t c);

/// Whether `text` is in the fortune format: it holds at least one line that is exactly "%" (the
/// separator of strfile's fortune files), ended by "\n", "\r\n" or the end of the text.
bool is_fortune_text(const std::u32string& text);
/// is_fortune_text() of a file's text. DataError naming the file when it is not a regular file or
/// cannot be read, or is not UTF-8.
bool is_fortune_file(const std::string& path);

/// The entries of one file's text: between "%" lines, or, without any, between blank lines.
/// Each entry keeps its lines, each ending with "\n" (a line's "\r\n" becomes "\n").
std::vector<std::u32string> split_entries_of(const std::u32string& text);

/// Every entry of every file, in order, each text once (the first occurrence is kept). A file that
/// cannot be read or is not UTF-8 is a DataError naming it.
std::vector<std::u32string> read_entries(const std::vector<std::string>& files);

struct Split {
  std::vector<std::u32string> train, val;  ///< whole entries, each in its original order
};

/// A seeded split by whole entries: a Fisher-Yates shuffle of the indices (for i = n-1 .. 1: swap
/// i with randint(0, i + 1)) whose first floor(n * val_fraction + 0.5) (at least 1, at most n - 1)
/// go to validation. ValueError for fewer than 2 entries or a fraction outside (0, 1).
Split split_entries(const std::vector<std::u32string>& entries, double val_fraction,
                    std::uint64_t seed);

/// The entries one after the other, each followed by "%\n".
std::u32string join_entries(const std::vector<std::u32string>& entries);

/// The files' text one after the other, as `cat` gives it: nothing added, nothing changed (line
/// ends included). A file that cannot be read or is not UTF-8 is a DataError naming it.
std::u32string read_text(const std::vector<std::string>& files);

struct TextSplit {
  std::u32string train, val;
};

/// nanoGPT's split of one stream: the first floor(n * (1 - val_fraction)) of the n characters
/// train, the rest validate (its prepare scripts' data[:int(n * 0.9)] and data[int(n * 0.9):]).
/// ValueError for a fraction outside (0, 1).
TextSplit split_text(const std::u32string& text, double val_fraction);

}  // namespace tapegrad::data
