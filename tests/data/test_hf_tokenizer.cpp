// tests/data/test_hf_tokenizer.cpp: tapegrad::data::HFTokenizer, a byte-level BPE read from a
// tokenizer.json: its ids equal the goldens of scripts/golden/hf_tokenizer_json.py (which
// restates the format's encoding) on a Llama-3-like file, a SmolLM2-like file and GPT-2's own files
// converted to the format; GPT-2's converted file gives GPT2Tokenizer's ids on the fortunes; decode
// gives the text back; each refusal names the model type or the field; and the text a checkpoint
// stores reads back to the same tokenizer.
//
// The GPT-2 cases need .cache/gpt2 (scripts/setup.sh fetches it); without it they print
// "[skipped: ...]".
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <tapegrad/core/errors.hpp>
#include <tapegrad/core/random.hpp>
#include <tapegrad/data.hpp>

#include "golden_hf_tokenizer.hpp"

#include "../gpt2_files.hpp"
#include "../test_files.hpp"

using namespace tapegrad;
using data::HFTokenizer;
using data::SpecialTokens;
using Ids = std::vector<std::uint32_t>;
using json = nlohmann::json;

namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(TAPEGRAD_SOURCE_DIR) / "tests/data/fixtures/hf_tokenizer";

json fixture_json(const std::string& name) {
  return json::parse(testing::bytes_of(kFixtures / (name + ".json")));
}

/// GPT-2's encoder.json and vocab.bpe in the layout of Hugging Face's GPT-2 tokenizer.json (as
/// the golden script converts them), or null without the files.
json gpt2_json() {
  const std::string folder = testing::gpt2_folder();
  if (folder.empty()) return nullptr;
  json merges = json::array();
  const std::string bpe = testing::bytes_of(fs::path(folder) / "vocab.bpe");
  for (std::size_t at = bpe.find('\n') + 1; at < bpe.size();) {  // after "#version: 0.2"
    const std::size_t end = bpe.find('\n', at);
    if (end > at) merges.push_back(bpe.substr(at, end - at));
    at = end == std::string::npos ? bpe.size() : end + 1;
  }
  const json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", true},
                           {"use_regex", true}};
  return {{"version", "1.0"},
          {"added_tokens",
           {{{"id", 50256},
             {"content", "<|endoftext|>"},
             {"single_word", false},
             {"lstrip", false},
             {"rstrip", false},
             {"normalized", true},
             {"special", true}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"post_processor", byte_level},
          {"decoder", byte_level},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", ""},
            {"end_of_word_suffix", ""},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"vocab", json::parse(testing::bytes_of(fs::path(folder) / "encoder.json"))},
            {"merges", merges}}}};
}

/// `spec` with every ByteLevel pre-tokenizer's add_prefix_space set.
json with_prefix_space(json spec) {
  json& pre = spec["pre_tokenizer"];
  if (pre["type"] == "ByteLevel") pre["add_prefix_space"] = true;
  if (pre["type"] == "Sequence")
    for (json& step : pre["pretokenizers"])
      if (step["type"] == "ByteLevel") step["add_prefix_space"] = true;
  return spec;
}

HFTokenizer tokenizer_of(const json& spec, const std::string& source = "test.json") {
  return HFTokenizer::from_json(spec.dump(), source);
}

/// Loaded once: GPT-2's converted file is 2 MB.
const HFTokenizer* gpt2_hf() {
  static const std::unique_ptr<HFTokenizer> t = [] {
    const json spec = gpt2_json();
    return spec.is_null() ? nullptr : std::make_unique<HFTokenizer>(tokenizer_of(spec));
  }();
  return t.get();
}

/// A tokenizer.json whose loading must fail with a DataError naming the file and holding `phrase`.
void check_refused(const json& spec, const std::string& phrase) {
  CAPTURE(phrase);
  std::string message;
  try {
    tokenizer_of(spec, "the/tokenizer.json");
  } catch (const DataError& e) {
    message = e.what();
  }
  CAPTURE(message);
  CHECK(message.rfind("HFTokenizer::load: the/tokenizer.json: ", 0) == 0);
  CHECK(message.find(phrase) != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);  // one line
}

/// A random text of ASCII words, spaces, line ends, digits, Unicode and added tokens' texts.
std::string random_text(Generator& g, std::size_t parts) {
  static const char* pieces[] = {"the",
                                 " cat",
                                 "  ",
                                 "\n",
                                 "\r\n",
                                 "\t",
                                 "123",
                                 "4567",
                                 "'s",
                                 "'LL",
                                 "!?",
                                 "é",
                                 "ß",
                                 "日本",
                                 "🙂",
                                 "\u00a0",
                                 "\u3000",
                                 "x",
                                 "<|eot_id|>",
                                 "<|im_start|>",
                                 "<|endoftext|>",
                                 "tapegrad",
                                 " ",
                                 "<|",
                                 "|>",
                                 "Größe",
                                 "\u0085",
                                 "½"};
  std::string text;
  for (std::size_t k = 0; k < parts; ++k) text += pieces[g.randint(0, std::size(pieces))];
  return text;
}

}  // namespace

TEST_SUITE("data.hf_tokenizer") {
  TEST_CASE("the ids of every golden text equal the format's, special tokens allowed or as text") {
    const HFTokenizer llama3 = tokenizer_of(fixture_json("llama3_like"));
    const HFTokenizer smollm2 = tokenizer_of(fixture_json("smollm2_like"));
    const HFTokenizer smollm2_prefix =
        tokenizer_of(with_prefix_space(fixture_json("smollm2_like")));
    std::unique_ptr<HFTokenizer> gpt2_prefix;
    std::size_t checked = 0;
    for (const golden::hf_tokenizer::Case& c : golden::hf_tokenizer::kCases) {
      CAPTURE(c.fixture);
      CAPTURE(c.name);
      const HFTokenizer* t = nullptr;
      if (c.fixture == "llama3_like") t = &llama3;
      if (c.fixture == "smollm2_like") t = &smollm2;
      if (c.fixture == "smollm2_like+prefix") t = &smollm2_prefix;
      if (c.fixture == "gpt2") t = gpt2_hf();
      if (c.fixture == "gpt2+prefix" && gpt2_hf() != nullptr) {
        if (!gpt2_prefix)
          gpt2_prefix = std::make_unique<HFTokenizer>(tokenizer_of(with_prefix_space(gpt2_json())));
        t = gpt2_prefix.get();
      }
      if (t == nullptr) continue;  // GPT-2's files are absent: skipped above
      ++checked;
      CHECK(t->encode(c.text, SpecialTokens::allow) == c.allowed);
      CHECK(t->encode(c.text, SpecialTokens::ordinary) == c.ordinary);
      if (c.fixture.find("+prefix") == std::string_view::npos) {
        CHECK(t->decode(c.allowed) == c.text);
        CHECK(t->decode(c.ordinary) == c.text);
      }
    }
    CHECK(checked >= 50);
  }

  TEST_CASE("GPT-2's files as a tokenizer.json give GPT2Tokenizer's ids on the fortunes") {
    const HFTokenizer* hf = gpt2_hf();
    if (hf == nullptr) return;
    const data::GPT2Tokenizer gpt2 = data::GPT2Tokenizer::load(testing::gpt2_folder());
    CHECK(hf->vocab_size() == gpt2.vocab_size());
    const std::vector<std::string> files = data::fortune_files();
    if (files.empty()) {
      std::printf("[skipped: the fortunes are not installed; scripts/setup.sh installs them]\n");
      return;
    }
    std::string corpus;
    for (const std::string& file : files) corpus += testing::bytes_of(file);
    // U+0085 and U+FEFF are spaces to one and not to the other (JavaScript's \s against
    // Oniguruma's); the fortunes hold neither.
    REQUIRE(corpus.find("\xC2\x85") == std::string::npos);
    REQUIRE(corpus.find("\xEF\xBB\xBF") == std::string::npos);
    const Ids ids = hf->encode(corpus, SpecialTokens::ordinary);
    CHECK(ids.size() > corpus.size() / 5);
    CHECK(ids == gpt2.encode(corpus, SpecialTokens::ordinary));
    CHECK(hf->decode(ids) == corpus);
    for (std::uint32_t id = 0; id < gpt2.vocab_size(); ++id)
      if (hf->bytes_of(id) != gpt2.bytes_of(id)) FAIL_CHECK("bytes of id ", id, " differ");
  }

  TEST_CASE("special tokens: refused by default naming the token and byte, allowed, or text") {
    const HFTokenizer t = tokenizer_of(fixture_json("llama3_like"));
    const std::int64_t eot = t.token_to_id("<|eot_id|>");
    REQUIRE(eot >= 0);
    CHECK_THROWS_WITH_AS(t.encode("hi <|eot_id|>"),
                         doctest::Contains("holds the special token \"<|eot_id|>\" at byte 3"),
                         ValueError);
    CHECK(t.encode("hi <|eot_id|>", SpecialTokens::allow).back() == std::uint32_t(eot));
    const Ids text = t.encode("hi <|eot_id|>", SpecialTokens::ordinary);
    CHECK(std::find(text.begin(), text.end(), std::uint32_t(eot)) == text.end());
    // "tapegrad" is an added token that is not special: found whatever `special` says.
    const std::int64_t tapegrad = t.token_to_id("tapegrad");
    CHECK(t.encode("tapegrad") == Ids{std::uint32_t(tapegrad)});
    CHECK(t.encode("tapegrad", SpecialTokens::ordinary) == Ids{std::uint32_t(tapegrad)});
    CHECK(t.bytes_of(std::uint32_t(eot)) == "<|eot_id|>");
    CHECK(t.token_to_id("\xC4\xA0") == t.encode(" ").at(0));  // "Ġ", the space's token
    CHECK(t.token_to_id("no such token") == -1);
    CHECK_THROWS_WITH_AS(t.encode("ok \xC3("), doctest::Contains("not valid UTF-8 at byte 3"),
                         ValueError);
    CHECK_THROWS_WITH_AS(t.decode({0, std::uint32_t(t.vocab_size())}),
                         doctest::Contains("got 564 at position 1"), ValueError);
  }

  TEST_CASE(
      "ignore_merges: a piece the vocabulary holds is one token, and without it merges split it") {
    json spec = fixture_json("llama3_like");
    const HFTokenizer with = tokenizer_of(spec);
    spec["model"]["ignore_merges"] = false;
    const HFTokenizer without = tokenizer_of(spec);
    const std::int64_t subword = with.token_to_id("\xC4\xA0subword");  // "Ġsubword"
    REQUIRE(subword >= 0);
    CHECK(with.encode("a subword") == Ids{with.encode("a")[0], std::uint32_t(subword)});
    CHECK(without.encode("a subword").size() > 2);
    CHECK(without.decode(without.encode("a subword")) == "a subword");
  }

  TEST_CASE("decode(encode(x)) is x on random text, and the tokens' bytes add up") {
    Generator g(44);
    for (const std::string name : {"llama3_like", "smollm2_like"}) {
      const HFTokenizer t = tokenizer_of(fixture_json(name));
      const data::Tokenizer wrapped(t);
      for (int k = 0; k < 200; ++k) {
        const std::string text = random_text(g, std::size_t(g.randint(0, 40)));
        CAPTURE(text);
        const Ids ids = t.encode(text, SpecialTokens::allow);
        CHECK(t.decode(ids) == text);
        CHECK(t.decode(t.encode(text, SpecialTokens::ordinary)) == text);
        const std::vector<std::int64_t> wide = wrapped.encode(text, "text");
        std::size_t bytes = 0;
        for (const std::int64_t id : wide) bytes += wrapped.bytes_of(id);
        CHECK(bytes == text.size());
      }
    }
  }

  TEST_CASE(
      "a checkpoint's text reads back to the same tokenizer, and fingerprints tell them apart") {
    const json llama3_spec = fixture_json("llama3_like");
    const data::Tokenizer t(tokenizer_of(llama3_spec));
    CHECK(t.name() == "hf");
    REQUIRE(t.hf() != nullptr);
    CHECK(t.vocab_size() == std::int64_t(t.hf()->vocab_size()));
    CHECK(t.ignore_index() == -100);
    const data::Tokenizer back = data::Tokenizer::from_text(t.name(), t.to_text(), "the note");
    CHECK(back.to_text() == t.to_text());
    CHECK(back.fingerprint() == t.fingerprint());
    CHECK(data::tokenizer_fingerprint(*t.hf()) == t.fingerprint());
    const std::string text = "<|begin_of_text|>It's 2024: Größe 🙂 tapegrad\n\n";
    CHECK(back.encode(text, "text") == t.encode(text, "text"));
    // What the checkpoint stores is a tokenizer.json itself, the post-processor kept.
    const json stored = json::parse(t.to_text());
    CHECK(stored["model"]["vocab"].size() == llama3_spec["model"]["vocab"].size());
    CHECK(stored["post_processor"] == llama3_spec["post_processor"]);
    CHECK(tokenizer_of(stored).to_json() == t.to_text());

    json no_ignore = llama3_spec;
    no_ignore["model"]["ignore_merges"] = false;
    const data::Tokenizer smollm2(tokenizer_of(fixture_json("smollm2_like")));
    CHECK(data::Tokenizer(tokenizer_of(no_ignore)).fingerprint() != t.fingerprint());
    CHECK(smollm2.fingerprint() != t.fingerprint());
    CHECK(data::Tokenizer(data::BytePairEncoding()).fingerprint() != t.fingerprint());
    CHECK_THROWS_WITH_AS(data::Tokenizer::from_text("hf", "{\"model\": 1}", "the note"),
                         doctest::Contains("the note: model: expected an object, got 1"),
                         ValueError);
  }

  TEST_CASE("other models are refused in one line naming the type and what is supported") {
    const std::string supported =
        "supported: byte-level BPE (GPT-2, Llama 3, SmolLM2, Qwen2 style)";
    for (const char* type : {"Unigram", "WordPiece", "WordLevel"}) {
      json spec = fixture_json("llama3_like");
      spec["model"] = {{"type", type}, {"vocab", json::array()}};
      check_refused(spec,
                    std::string("model.type \"") + type + "\" is not supported; " + supported);
    }
    // Llama 2's layout: a sentencepiece BPE with byte fallback ("▁" for the space, <0x0A> tokens).
    json llama2 = fixture_json("llama3_like");
    llama2["model"]["byte_fallback"] = true;
    llama2["model"]["unk_token"] = "<unk>";
    llama2["normalizer"] = {
        {"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}};
    llama2["pre_tokenizer"] = nullptr;
    check_refused(llama2,
                  "model.byte_fallback is true: sentencepiece BPE with byte fallback is "
                  "not supported; " +
                      supported);
    llama2["model"]["byte_fallback"] = false;
    check_refused(llama2, "the normalizer writes spaces as \"\xE2\x96\x81\": sentencepiece BPE");
    json metaspace = fixture_json("llama3_like");
    metaspace["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}};
    check_refused(metaspace,
                  "the pre_tokenizer is Metaspace: sentencepiece BPE with byte fallback"
                  " is not supported; " +
                      supported);
    json byte_fallback = fixture_json("llama3_like");
    byte_fallback["decoder"] = {{"type", "Sequence"},
                                {"decoders", {{{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}};
    check_refused(byte_fallback, "the decoder has ByteFallback: sentencepiece BPE");
  }

  TEST_CASE("every malformed or unsupported field is refused, naming the file and the field") {
    using Edit = std::function<void(json&)>;
    const std::vector<std::pair<Edit, std::string>> cases = {
        {[](json& s) {
           s["normalizer"] = {{"type", "NFC"}};
         },
         "normalizer: \"NFC\" is not supported; supported: null"},
        {[](json& s) { s.erase("model"); }, "model: expected an object, got null"},
        {[](json& s) { s["model"].erase("type"); }, "model.type: expected a string, got nothing"},
        {[](json& s) { s["model"]["dropout"] = 0.1; }, "model.dropout: expected null"},
        {[](json& s) { s["model"]["continuing_subword_prefix"] = "##"; },
         "model.continuing_subword_prefix: expected null or \"\""},
        {[](json& s) { s["model"]["ignore_merges"] = "yes"; },
         "model.ignore_merges: expected true or false, got \"yes\""},
        {[](json& s) { s["model"]["vocab"] = json::array(); },
         "model.vocab: expected an object of token -> id, got array"},
        {[](json& s) { s["model"]["vocab"]["zz"] = -1; },
         "model.vocab: the token \"zz\": expected an id in [0, 1048576), got -1"},
        {[](json& s) { s["model"]["vocab"]["zz"] = 1.5; }, "the token \"zz\": expected an id"},
        {[](json& s) { s["model"]["vocab"]["zz"] = 3; }, "both have id 3"},
        {[](json& s) { s["model"]["vocab"]["zz"] = 9000; },
         "model.vocab: no token has id 564, but the largest id is 9000"},
        {[](json& s) { s["model"]["vocab"].erase("\xC4\x8A"); },  // "Ċ", the byte \n
         "model.vocab: no token for byte 10 (\"\xC4\x8A\")"},
        {[](json& s) { s["model"]["merges"] = "a b"; },
         "model.merges: expected an array of merges, got \"a b\""},
        {[](json& s) { s["model"]["merges"][0] = "ab"; },
         "model.merges[0]: expected a merge \"a b\" of two tokens, got \"ab\""},
        {[](json& s) {
           s["model"]["merges"][1] = json::array({"e", 7});
         },
         "model.merges[1]: expected a merge \"a b\" or [\"a\", \"b\"], got array"},
        {[](json& s) {
           s["model"]["merges"][2] = json::array({"e", "\xE2\x98\x83"});
         },
         "model.merges[2]: the merge \"e \xE2\x98\x83\" joins \"\xE2\x98\x83\", which model.vocab "
         "does not hold"},
        {[](json& s) {
           s["model"]["merges"][2] = json::array({"%", "%"});
         },
         "model.merges[2]: the merge \"% %\" makes \"%%\", which model.vocab does not hold"},
        {[](json& s) { s["model"]["merges"].push_back(s["model"]["merges"][5]); },
         "model.merges[300]: the merge"},
        {[](json& s) { s["model"]["merges"].push_back(s["model"]["merges"][5]); },
         "is already model.merges[5]"},
        {[](json& s) { s["added_tokens"] = 1; }, "added_tokens: expected an array, got 1"},
        {[](json& s) { s["added_tokens"][0]["content"] = ""; },
         "added_tokens[0].content: expected a token, got \"\""},
        {[](json& s) { s["added_tokens"][1]["content"] = "<|begin_of_text|>"; },
         "added_tokens[1]: the added token \"<|begin_of_text|>\" is given twice"},
        {[](json& s) { s["added_tokens"][1]["id"] = 558; }, "both have id 558"},
        {[](json& s) { s["added_tokens"][0]["id"] = 20; }, "which is model.vocab's"},
        {[](json& s) { s["added_tokens"][0]["id"] = "558"; },
         "added_tokens[0].id: expected an id in [0, 1048576), got \"558\""},
        {[](json& s) { s["added_tokens"][2]["lstrip"] = true; },
         "added_tokens[2].lstrip: true is not supported"},
        {[](json& s) { s["added_tokens"][2]["single_word"] = true; },
         "added_tokens[2].single_word: true is not supported"},
        {[](json& s) { s["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(\\p{L}"; },
         "pre_tokenizer.pretokenizers[0].pattern.Regex: PCRE2 rejects the pattern at offset 6"},
        {[](json& s) { s["pre_tokenizer"]["pretokenizers"][0]["pattern"] = "\\s+"; },
         "pre_tokenizer.pretokenizers[0].pattern: expected {\"Regex\": ...} or {\"String\": ...}"},
        {[](json& s) { s["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; },
         "pre_tokenizer.pretokenizers[0].behavior: \"Removed\" is not supported; supported: "
         "\"Isolated\""},
        {[](json& s) { s["pre_tokenizer"]["pretokenizers"][0]["invert"] = true; },
         "pre_tokenizer.pretokenizers[0].invert: true is not supported"},
        {[](json& s) {
           s["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Whitespace"}};
         },
         "pre_tokenizer.pretokenizers[0].type: \"Whitespace\" is not supported; supported: "
         "ByteLevel, or a Sequence of Split, Digits and ByteLevel"},
        {[](json& s) { s["pre_tokenizer"]["pretokenizers"].erase(1); },
         "pre_tokenizer: expected ByteLevel last"},
        {[](json& s) {
           s["pre_tokenizer"]["pretokenizers"].push_back({{"type", "Digits"}});
         },
         "pre_tokenizer.pretokenizers[2]: expected nothing after the ByteLevel pre-tokenizer"},
        {[](json& s) { s["pre_tokenizer"] = nullptr; }, "pre_tokenizer: expected ByteLevel"},
        {[](json& s) {
           s["decoder"] = {{"type", "WordPiece"}};
         },
         "decoder.type: \"WordPiece\" is not supported; supported: ByteLevel"},
        {[](json& s) { s["decoder"] = nullptr; }, "decoder: expected ByteLevel, got null"},
    };
    for (const auto& [edit, phrase] : cases) {
      json spec = fixture_json("llama3_like");
      edit(spec);
      check_refused(spec, phrase);
    }
    CHECK_THROWS_WITH_AS(HFTokenizer::from_json("{\"model\": ", "the/tokenizer.json"),
                         doctest::Contains("the/tokenizer.json: not valid JSON"), DataError);
    // Nested a hundred thousand deep (written as text: the JSON library's own dump would recurse).
    std::string deep_text = fixture_json("llama3_like").dump();
    deep_text.insert(1, "\"x\": " + std::string(100000, '[') + std::string(100000, ']') + ",");
    CHECK_THROWS_WITH_AS(HFTokenizer::from_json(deep_text, "the/tokenizer.json"),
                         doctest::Contains("the/tokenizer.json: expected JSON nested at most 64 "
                                           "deep (a tokenizer.json nests about 6), got deeper"),
                         DataError);
    json deep = fixture_json("llama3_like");
    deep["post_processor"] = {{"type",
                               "[[[[{{{{\\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                               "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}};
    CHECK(tokenizer_of(deep).vocab_size() == 564);  // brackets in a string do not count
    CHECK_THROWS_WITH_AS(HFTokenizer::from_json("[1, 2]", "the/tokenizer.json"),
                         doctest::Contains("expected a JSON object (a tokenizer.json), got array"),
                         DataError);
    const fs::path dir = testing::fresh_folder("data.hf_tokenizer", "files");
    CHECK_THROWS_WITH_AS(HFTokenizer::load((dir / "absent.json").string()),
                         doctest::Contains("absent.json: no such file"), DataError);
    CHECK_THROWS_WITH_AS(HFTokenizer::load(dir.string()),
                         doctest::Contains("is not a regular file"), DataError);
    testing::write_file(dir / "tokenizer.json", fixture_json("smollm2_like").dump());
    CHECK(HFTokenizer::load((dir / "tokenizer.json").string()).vocab_size() ==
          tokenizer_of(fixture_json("smollm2_like")).vocab_size());
  }

  TEST_CASE("Split with a String pattern cuts at its text, and Digits at each number") {
    json spec = fixture_json("smollm2_like");
    spec["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"String", "."}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
    const HFTokenizer split = tokenizer_of(spec);
    // The ids of each part, one after the other.
    const auto concat = [](const HFTokenizer& t, const std::vector<std::string>& parts) {
      Ids ids;
      for (const std::string& p : parts) {
        const Ids more = t.encode(p);
        ids.insert(ids.end(), more.begin(), more.end());
      }
      return ids;
    };
    // "." is a literal (not any character): the text is cut at each dot and nowhere else (cut at
    // every character, "the end" would be 7 byte tokens, not merged ones).
    CHECK(split.encode("the end. The tokens.") ==
          concat(split, {"the end", ".", " The tokens", "."}));
    CHECK(split.encode("the end").size() < 7);
    CHECK(split.to_json().find("\"String\":\".\"") != std::string::npos);
    const HFTokenizer smollm2 = tokenizer_of(fixture_json("smollm2_like"));
    CHECK(smollm2.encode("a 2024") == concat(smollm2, {"a ", "2", "0", "2", "4"}));
  }
}
