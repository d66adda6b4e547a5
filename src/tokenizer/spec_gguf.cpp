// Spec <-> GGUF keys, read and written as llama.cpp does, so a file's
// tokenizer means the same thing to both programs.
#include <set>

#include "tern/error.h"
#include "tern/tokenizer_spec.h"

namespace tern::tok {

namespace {

using gguf::Value;

constexpr const char* kModel = "tokenizer.ggml.model";
constexpr const char* kPre = "tokenizer.ggml.pre";
constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kScores = "tokenizer.ggml.scores";
constexpr const char* kTypes = "tokenizer.ggml.token_type";
constexpr const char* kMerges = "tokenizer.ggml.merges";
constexpr const char* kAddBos = "tokenizer.ggml.add_bos_token";
constexpr const char* kAddEos = "tokenizer.ggml.add_eos_token";
constexpr const char* kAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
constexpr const char* kChatTemplate = "tokenizer.chat_template";
constexpr const char* kPipeline = "tern.tokenizer.hf_pipeline";
constexpr const char* kSpmModel = "tern.tokenizer.spm_model";
constexpr const char* kEog = "tern.tokenizer.eog_ids";

struct IdKey {
  const char* key;
  int32_t Spec::*field;
};
constexpr IdKey kIdKeys[] = {
    {"tokenizer.ggml.bos_token_id", &Spec::bos},     {"tokenizer.ggml.eos_token_id", &Spec::eos},
    {"tokenizer.ggml.eot_token_id", &Spec::eot},     {"tokenizer.ggml.eom_token_id", &Spec::eom},
    {"tokenizer.ggml.unknown_token_id", &Spec::unk}, {"tokenizer.ggml.padding_token_id", &Spec::pad},
};

// The pre-tokenizers llama.cpp adds BOS for by default (it then reads
// add_bos_token if the file has it).
bool llama3_like(const std::string& pre) {
  static const std::set<std::string> names = {"llama3", "llama-v3", "llama-bpe", "falcon3",
                                              "falcon-h1", "pixtral"};
  return names.count(pre) > 0;
}

}  // namespace

void Spec::pad_to(size_t n) {
  std::set<std::string> taken(tokens.begin(), tokens.end());
  if (types.empty()) types.assign(tokens.size(), kNormal);
  if (scores.empty() && model == "llama") scores.assign(tokens.size(), 0.0f);
  for (size_t i = 0; tokens.size() < n; ++i) {
    std::string t = "<unused_" + std::to_string(i) + ">";
    if (taken.count(t)) continue;  // never shadow a real token
    tokens.push_back(t);
    if (!scores.empty()) scores.push_back(0.0f);
    types.push_back(kUnused);
  }
}

Spec read_spec(const gguf::File& f) {
  auto fail = [&](const std::string& what) { return file_error(f.path(), what); };
  Spec s;
  const Value* model = f.find(kModel);
  if (!model) throw fail(std::string("no tokenizer (") + kModel + " is missing)");
  s.model = model->as_string(kModel);
  if (s.model != "llama" && s.model != "gpt2")
    throw fail(std::string(kModel) + " is '" + s.model +
               "'; tern reads 'llama' (SentencePiece) and 'gpt2' (byte-level BPE) tokenizers");
  if (const Value* v = f.find(kPre)) s.pre = v->as_string(kPre);
  const Value* tokens = f.find(kTokens);
  if (!tokens) throw fail(std::string(kTokens) + " is missing");
  s.tokens = tokens->as_string_array(kTokens);
  const size_t n = s.tokens.size();
  if (n == 0) throw fail(std::string(kTokens) + " is empty");
  if (n > (size_t(1) << 31)) throw fail(std::string(kTokens) + " has too many tokens");
  if (const Value* v = f.find(kScores)) s.scores = v->as_f32_array(kScores);
  if (const Value* v = f.find(kTypes)) s.types = v->as_i32_array(kTypes);
  if (const Value* v = f.find(kMerges)) s.merges = v->as_string_array(kMerges);
  if (!s.scores.empty() && s.scores.size() != n)
    throw fail(std::string(kScores) + " has " + std::to_string(s.scores.size()) + " entries, " +
               kTokens + " has " + std::to_string(n));
  if (!s.types.empty() && s.types.size() != n)
    throw fail(std::string(kTypes) + " has " + std::to_string(s.types.size()) + " entries, " +
               kTokens + " has " + std::to_string(n));
  if (s.model == "gpt2" && s.merges.empty()) throw fail(std::string(kMerges) + " is missing");
  // llama.cpp's defaults when the keys are absent.
  if (s.model == "llama") s.bos = 1, s.eos = 2, s.unk = 0;
  for (const IdKey& k : kIdKeys) {
    const Value* v = f.find(k.key);
    if (!v) continue;
    const uint64_t id = v->as_uint(k.key);
    if (id >= n)
      throw fail(std::string(k.key) + " = " + std::to_string(id) + " is out of range (" +
                 std::to_string(n) + " tokens)");
    s.*k.field = int32_t(id);
  }
  for (int32_t* id : {&s.bos, &s.eos, &s.unk})
    if (*id >= int32_t(n)) *id = -1;  // a default that this vocabulary lacks
  s.add_bos = s.model == "llama" || llama3_like(s.pre);
  if (const Value* v = f.find(kAddBos)) s.add_bos = v->as_bool(kAddBos);
  if (const Value* v = f.find(kAddEos)) s.add_eos = v->as_bool(kAddEos);
  if (const Value* v = f.find(kAddSpacePrefix)) s.add_space_prefix = v->as_bool(kAddSpacePrefix);
  if (s.add_bos && s.bos < 0) throw fail("the tokenizer adds BOS but has no BOS token");
  if (s.add_eos && s.eos < 0) throw fail("the tokenizer adds EOS but has no EOS token");
  if (const Value* v = f.find(kChatTemplate)) s.chat_template = v->as_string(kChatTemplate);
  if (const Value* v = f.find(kPipeline)) s.hf_pipeline = v->as_string(kPipeline);
  if (const Value* v = f.find(kSpmModel)) {
    auto b = v->as_u8_array(kSpmModel);
    s.spm_model.assign(b.begin(), b.end());
  }
  if (const Value* v = f.find(kEog)) {
    for (int32_t id : v->as_i32_array(kEog)) {
      if (id < 0 || size_t(id) >= n)
        throw fail(std::string(kEog) + " holds id " + std::to_string(id) + ", out of range (" +
                   std::to_string(n) + " tokens)");
      s.eog.push_back(id);
    }
  }
  // The vocabulary must cover the embedding rows exactly, as llama.cpp
  // requires; a mismatch means ids that index nothing (or rows no id reaches).
  for (const char* t : {"token_embd.weight", "output.weight"}) {
    const gguf::TensorInfo* ti = f.find_tensor(t);
    if (ti && ti->dims.size() == 2 && ti->dims[1] != n)
      throw fail(std::string(kTokens) + " has " + std::to_string(n) + " tokens but " + t + " has " +
                 std::to_string(ti->dims[1]) + " rows");
  }
  return s;
}

void write_spec(gguf::Writer& w, const Spec& s, KeyGroup group) {
  if (group == KeyGroup::Tern) {
    if (!s.spm_model.empty()) w.set(kSpmModel, Value::u8_array(s.spm_model));
    if (!s.hf_pipeline.empty()) w.set(kPipeline, Value::string(s.hf_pipeline));
    if (!s.eog.empty()) w.set(kEog, Value::i32_array(s.eog));
    return;
  }
  w.set(kModel, Value::string(s.model));
  if (!s.pre.empty()) w.set(kPre, Value::string(s.pre));
  w.set(kTokens, Value::string_array(s.tokens));
  if (!s.scores.empty()) w.set(kScores, Value::f32_array(s.scores));
  if (!s.types.empty()) w.set(kTypes, Value::i32_array(s.types));
  if (!s.merges.empty()) w.set(kMerges, Value::string_array(s.merges));
  for (const IdKey& k : kIdKeys)
    if (s.*k.field >= 0) w.set(k.key, Value::u32(uint32_t(s.*k.field)));
  w.set(kAddBos, Value::boolean(s.add_bos));
  w.set(kAddEos, Value::boolean(s.add_eos));
  // llama.cpp's default for "llama" is true; written only when it differs.
  if (s.model == "llama" && !s.add_space_prefix) w.set(kAddSpacePrefix, Value::boolean(false));
  if (!s.chat_template.empty()) w.set(kChatTemplate, Value::string(s.chat_template));
}

}  // namespace tern::tok
