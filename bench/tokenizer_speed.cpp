// bench/tokenizer_speed.cpp: tapegrad's tokenizers timed, for bench/tokenizer_compare.
//
//     tokenizer_speed encode GPT2_DIR TEXT [REPEATS]      GPT-2's encode of TEXT, MB/s
//     tokenizer_speed train TEXT VOCAB_SIZE [reference]   BytePairEncoding::train, seconds
//
// encode prints one line in the shape of bench/gpt3_encoder_peer.js's, with the same FNV-1a of
// the ids, so the two sides are seen to do the same work:
//     tokenizer_speed encode: bytes=... tokens=... median_s=... mb_per_s=... fnv1a=0x...
// Each timed call starts from nothing (encode keeps no cache between calls), as the peer's do.
// train prints, for each pretokenizer (none, then gpt2), the seconds of train (or
// train_reference) and the merges learned:
//     tokenizer_speed train: path=fast pretokenizer=none bytes=... merges=... seconds=...
// One thread: tapegrad's tokenizers are single-threaded.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <tapegrad/data.hpp>

#include "bench_common.hpp"

namespace {

using namespace tapegrad::data;

std::string read(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "tokenizer_speed: cannot read %s\n", path);
    std::exit(2);
  }
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::uint64_t fnv1a(const std::vector<std::uint32_t>& ids) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const std::uint32_t id : ids)
    for (int k = 0; k < 4; ++k) h = (h ^ ((id >> (8 * k)) & 0xFF)) * 0x100000001b3ULL;
  return h;
}

int encode(const char* dir, const char* file, int repeats) {
  const GPT2Tokenizer tokenizer = GPT2Tokenizer::load(dir);
  const std::string text = read(file);
  const std::vector<std::uint32_t> reference = tokenizer.encode(text, SpecialTokens::ordinary);
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = bench::now_seconds();
    const std::vector<std::uint32_t> ids = tokenizer.encode(text, SpecialTokens::ordinary);
    seconds.push_back(bench::now_seconds() - t0);
    if (ids != reference) {
      std::fprintf(stderr, "tokenizer_speed: run %d gave other ids\n", r);
      return 1;
    }
  }
  const double median = bench::stats(seconds).median;
  std::printf(
      "tokenizer_speed encode: bytes=%zu tokens=%zu median_s=%.4f mb_per_s=%.3f fnv1a=0x%016llx\n",
      text.size(), reference.size(), median, double(text.size()) / 1e6 / median,
      static_cast<unsigned long long>(fnv1a(reference)));
  return 0;
}

int train(const char* file, std::size_t vocab_size, bool reference) {
  const std::string text = read(file);
  for (const Pretokenizer p : {Pretokenizer::none, Pretokenizer::gpt2}) {
    const double t0 = bench::now_seconds();
    const BytePairEncoding bpe = reference ? BytePairEncoding::train_reference(text, vocab_size, p)
                                           : BytePairEncoding::train(text, vocab_size, p);
    const double seconds = bench::now_seconds() - t0;
    std::printf(
        "tokenizer_speed train: path=%s pretokenizer=%s bytes=%zu merges=%zu seconds=%.3f\n",
        reference ? "reference" : "fast", p == Pretokenizer::gpt2 ? "gpt2" : "none", text.size(),
        bpe.merges().size(), seconds);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "encode" && (argc == 4 || argc == 5))
    return encode(argv[2], argv[3], argc == 5 ? std::atoi(argv[4]) : 3);
  if (mode == "train" && (argc == 4 || argc == 5))
    return train(argv[2], std::size_t(std::atol(argv[3])),
                 argc == 5 && std::string(argv[4]) == "reference");
  std::fprintf(stderr,
               "usage: tokenizer_speed encode GPT2_DIR TEXT [REPEATS]\n"
               "       tokenizer_speed train TEXT VOCAB_SIZE [reference]\n");
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "tokenizer_speed: %s\n", e.what());
  return 2;
}
