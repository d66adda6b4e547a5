// tokenizer.json (the Hugging Face `tokenizers` format) -> Spec. The
// vocabulary and merges go to llama.cpp's keys; every rule (normalizer,
// pre-tokenizer, decoder, added tokens, model flags) is kept as JSON in
// tern.tokenizer.hf_pipeline so tern runs the file's own rules, regexes
// included, rather than a guess from a list of known names.
#include <filesystem>
#include <map>
#include <unordered_map>

#include "tern/error.h"
#include "tern/tokenizer_spec.h"
#include "tokenizer/json_util.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/utf8.h"

namespace tern::tok {

namespace {

constexpr size_t kMaxJsonBytes = size_t(512) << 20;

// llama.cpp's pre-tokenizer name for a byte-level pipeline whose regexes it
// knows; "" when it has none (llama.cpp then falls back to 'default').
std::string llamacpp_pre_name(const Json& pipeline) {
  std::vector<std::string> regexes;
  bool byte_level_regex = false;
  auto visit = [&](const Json& p, auto& self) -> void {
    const std::string type = p.value("type", "");
    if (type == "Sequence" && p.contains("pretokenizers") && p["pretokenizers"].is_array()) {
      for (const Json& q : p["pretokenizers"]) self(q, self);
    } else if (type == "Split" && p.contains("pattern") && p["pattern"].is_object()) {
      const Json& pat = p["pattern"];
      if (pat.contains("Regex") && pat["Regex"].is_string()) regexes.push_back(pat["Regex"]);
    } else if (type == "ByteLevel") {
      byte_level_regex = p.value("use_regex", true);
    } else if (type == "Digits" || type == "Punctuation") {
      regexes.push_back(type);  // no llama.cpp name has these with ByteLevel alone
    }
  };
  if (const Json* pre = field(pipeline, "pre_tokenizer")) visit(*pre, visit);
  if (regexes.empty() && byte_level_regex) return "gpt-2";
  if (regexes.size() == 1 && !byte_level_regex && regexes[0] == kLlama3Pattern) return "llama-bpe";
  if (regexes.size() == 1 && !byte_level_regex && regexes[0] == kQwen2Pattern) return "qwen2";
  return "";
}

bool is_byte_level(const Json& pipeline) {
  bool found = false;
  auto visit = [&](const Json& p, auto& self) -> void {
    if (!p.is_object()) return;
    if (p.value("type", "") == "ByteLevel") found = true;
    for (const char* list : {"pretokenizers", "decoders"})
      if (p.contains(list) && p[list].is_array())
        for (const Json& q : p[list]) self(q, self);
  };
  for (const char* k : {"pre_tokenizer", "decoder"})
    if (const Json* v = field(pipeline, k)) visit(*v, visit);
  return found;
}

// The id of a post-processor's special token "name".
int32_t template_special_id(const Json& post, const std::string& name, const std::string& what) {
  // const operator[] on a missing key is undefined in nlohmann::json: every
  // step goes through field().
  const Json* specials = field(post, "special_tokens");
  const Json* token = specials ? field(*specials, name.c_str()) : nullptr;
  const Json* idsp = token ? field(*token, "ids") : nullptr;
  if (!idsp) throw Error(what + ": post_processor names unknown special token '" + name + "'");
  const Json& ids = *idsp;
  if (!ids.is_array() || ids.size() != 1 || !ids[0].is_number_integer())
    throw Error(what + ": post_processor special token '" + name + "' must have one id");
  return ids[0].get<int32_t>();
}

// BOS/EOS the post-processor adds around a single sequence.
void apply_post_processor(Spec& s, const Json& post, const std::string& what) {
  const std::string type = post.value("type", "");
  if (type == "Sequence" && post.contains("processors") && post["processors"].is_array()) {
    for (const Json& p : post["processors"]) apply_post_processor(s, p, what);
  } else if (type == "TemplateProcessing") {
    const Json* single = field(post, "single");
    if (!single || !single->is_array()) throw Error(what + ": TemplateProcessing without 'single'");
    bool seen_sequence = false;
    for (const Json& item : *single) {
      if (item.contains("Sequence")) {
        seen_sequence = true;
      } else if (item.contains("SpecialToken")) {
        const int32_t id = template_special_id(post, item["SpecialToken"].value("id", ""), what);
        if (!seen_sequence) s.add_bos = true, s.bos = id;
        else s.add_eos = true, s.eos = id;
      }
    }
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    for (const char* k : {"cls", "sep"}) {
      const Json* v = field(post, k);
      if (!v || !v->is_array() || v->size() != 2 || !(*v)[1].is_number_integer())
        throw Error(what + ": " + type + " needs '" + k + "' as [token, id]");
    }
    s.add_bos = true, s.bos = post["cls"][1].get<int32_t>();
    s.add_eos = true, s.eos = post["sep"][1].get<int32_t>();
  }
}

}  // namespace

Spec load_tokenizer_json(const std::string& path) {
  return parse_tokenizer_json(read_json_file(path, kMaxJsonBytes), path);
}

Spec parse_tokenizer_json(std::string_view text, const std::string& path) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) throw file_error(path, "not valid JSON");
  return parse_tokenizer_json(j, path);
}

Spec parse_tokenizer_json(const Json& j, const std::string& path) try {
  auto fail = [&](const std::string& what) { return file_error(path, what); };
  if (!j.is_object()) throw fail("not a tokenizer.json object");
  const Json* model = field(j, "model");
  if (!model || !model->is_object()) throw fail("no 'model'");
  const std::string type = model->value("type", model->contains("merges") ? "BPE" : "");
  if (type != "BPE")
    throw fail("model type '" + type + "' is not supported (tern reads BPE tokenizers)");
  const Json* vocab = field(*model, "vocab");
  if (!vocab || !vocab->is_object() || vocab->empty()) throw fail("model.vocab is missing or empty");

  Spec s;
  std::unordered_map<std::string, int32_t> ids;
  ids.reserve(vocab->size() * 2);
  // Ids may leave gaps (cl100k does), but not so many that a tiny file could
  // ask for gigabytes of placeholder tokens.
  const Json* added_list = field(j, "added_tokens");
  const int64_t max_id = int64_t(vocab->size()) + (added_list && added_list->is_array() ? int64_t(added_list->size()) : 0) + 65536;
  auto place = [&](const std::string& text, int64_t id, const char* what) {
    if (id < 0 || id >= max_id)
      throw fail(std::string(what) + " '" + text + "' has id " + std::to_string(id) + ", beyond what " +
                 std::to_string(vocab->size()) + " tokens can use");
    if (size_t(id) >= s.tokens.size()) s.tokens.resize(size_t(id) + 1), s.types.resize(size_t(id) + 1, 0);
    if (s.types[id] != 0 && s.tokens[id] != text)
      throw fail("id " + std::to_string(id) + " is both '" + s.tokens[id] + "' and '" + text + "'");
    s.tokens[id] = text;
    s.types[id] = kNormal;
    ids.emplace(text, int32_t(id));
  };
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer()) throw fail("model.vocab['" + it.key() + "'] is not an integer id");
    place(it.key(), it.value().get<int64_t>(), "token");
  }

  Json added = Json::array();
  if (const Json* at = field(j, "added_tokens")) {
    if (!at->is_array()) throw fail("added_tokens is not a list");
    for (const Json& a : *at) {
      const std::string what = "added token";
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string())
        throw fail("an added token lacks 'id' or 'content'");
      const std::string content = a["content"];
      if (content.empty()) throw fail("an added token has empty content");
      place(content, a["id"].get<int64_t>(), "added token");
      const bool special = get_bool(a, "special", path, false);
      s.types[a["id"].get<size_t>()] = special ? kControl : kUserDefined;
      added.push_back(a);
    }
  }
  // Ids the file leaves unused (cl100k has such gaps) get placeholder
  // tokens, as llama.cpp's converter writes them.
  for (size_t i = 0; i < s.types.size(); ++i)
    if (s.types[i] == 0) {
      s.tokens[i] = "[PAD" + std::to_string(i) + "]";
      s.types[i] = kUnused;
      ids.emplace(s.tokens[i], int32_t(i));
    }

  // Merges, as "a b" strings (the older format) or [a, b] pairs.
  const Json* merges = field(*model, "merges");
  if (!merges || !merges->is_array()) throw fail("model.merges is missing");
  s.merges.reserve(merges->size());
  std::vector<int64_t> produced_rank(s.tokens.size(), -1);
  for (size_t r = 0; r < merges->size(); ++r) {
    const Json& m = (*merges)[r];
    std::string a, b;
    if (m.is_string()) {
      const std::string& t = m.get_ref<const std::string&>();
      const size_t sp = t.find(' ', 1);
      if (sp == std::string::npos) throw fail("merge " + std::to_string(r) + " '" + t + "' is not 'left right'");
      a = t.substr(0, sp), b = t.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0], b = m[1];
      if (a.find(' ', 1) != std::string::npos || b.empty() || (a.empty()))
        throw fail("merge " + std::to_string(r) + " has a token GGUF merges cannot spell");
    } else {
      throw fail("merge " + std::to_string(r) + " is neither 'left right' nor [left, right]");
    }
    const auto ia = ids.find(a), ib = ids.find(b), ic = ids.find(a + b);
    if (ia == ids.end() || ib == ids.end())
      throw fail("merge " + std::to_string(r) + " names unknown token '" + (ia == ids.end() ? a : b) + "'");
    if (ic == ids.end()) throw fail("merge " + std::to_string(r) + " makes '" + a + b + "', which is not in the vocabulary");
    if (produced_rank[ic->second] < 0) produced_rank[ic->second] = int64_t(r);
    s.merges.push_back(a + " " + b);
  }

  Json pipeline = Json::object();
  for (const char* k : {"normalizer", "pre_tokenizer", "decoder", "post_processor"})
    pipeline[k] = j.contains(k) ? j[k] : Json();
  Json flags = Json::object();
  for (const char* k : {"byte_fallback", "ignore_merges", "fuse_unk", "unk_token", "continuing_subword_prefix",
                        "end_of_word_suffix", "dropout"})
    flags[k] = model->contains(k) ? (*model)[k] : Json();
  pipeline["model"] = flags;
  pipeline["added_tokens"] = added;

  const std::string unk = get_string(*model, "unk_token", path);
  if (!unk.empty()) {
    auto u = ids.find(unk);
    if (u == ids.end()) throw fail("model.unk_token '" + unk + "' is not in the vocabulary");
    s.unk = u->second;
  }
  if (is_byte_level(pipeline)) {
    s.model = "gpt2";
    s.pre = llamacpp_pre_name(pipeline);
  } else {
    // SentencePiece-style BPE: llama.cpp ranks merges by token score, so the
    // score of a token is minus the rank of the first merge that makes it.
    s.model = "llama";
    s.scores.assign(s.tokens.size(), 0.0f);
    for (size_t i = 0; i < s.tokens.size(); ++i) {
      if (produced_rank[i] >= 0) s.scores[i] = -float(produced_rank[i]);
      const std::string& t = s.tokens[i];
      if (s.types[i] == kNormal && byte_token_value(t) >= 0) s.types[i] = kByte;
    }
    if (s.unk >= 0) s.types[s.unk] = kUnknown;
  }
  if (s.unk >= 0 && s.model == "gpt2" && s.types[s.unk] == kNormal) s.types[s.unk] = kUnknown;
  if (const Json* post = field(j, "post_processor")) apply_post_processor(s, *post, path);
  if ((s.bos >= int32_t(s.tokens.size())) || (s.eos >= int32_t(s.tokens.size())))
    throw fail("post_processor names an id beyond the vocabulary");
  // llama.cpp's SentencePiece path prepends "▁" itself: tell it whether
  // this file's rules do (a Prepend normalizer, or Metaspace prepending).
  s.add_space_prefix = false;
  if (s.model == "llama") {
    const std::string rules = pipeline["normalizer"].dump() + pipeline["pre_tokenizer"].dump();
    const bool prepend_normalizer = rules.find("\"Prepend\"") != std::string::npos;
    bool metaspace_prepends = false;
    auto visit = [&](const Json& p, auto& self) -> void {
      if (!p.is_object()) return;
      if (p.value("type", "") == "Metaspace")
        metaspace_prepends = p.contains("prepend_scheme") ? p["prepend_scheme"] != "never" : p.value("add_prefix_space", true);
      if (p.contains("pretokenizers") && p["pretokenizers"].is_array())
        for (const Json& q : p["pretokenizers"]) self(q, self);
    };
    visit(pipeline["pre_tokenizer"], visit);
    s.add_space_prefix = prepend_normalizer || metaspace_prepends;
  }
  s.hf_pipeline = pipeline.dump();
  // Compile every rule now, so a bad regex or an unknown step fails at pack
  // time with this file's name rather than when the model is run.
  try {
    check_pipeline(s);
  } catch (const Error& e) {
    throw fail(e.what());
  }
  return s;
} catch (const nlohmann::json::exception& e) {
  // A value of the wrong JSON type somewhere in the file.
  throw file_error(path, std::string("malformed: ") + e.what());
}

void apply_hf_configs(Spec& s, const std::string& dir) {
  namespace fs = std::filesystem;
  auto id_of = [&](const std::string& text) -> int32_t {
    for (size_t i = 0; i < s.tokens.size(); ++i)
      if (s.tokens[i] == text) return int32_t(i);
    return -1;
  };
  const std::string tc = (fs::path(dir) / "tokenizer_config.json").string();
  if (fs::exists(tc)) {
    const Json j = read_json_file(tc, size_t(64) << 20);
    if (!j.is_object()) throw file_error(tc, "not a JSON object");
    // A token is a string or an AddedToken object {"content": ...}.
    auto token_field = [&](const char* key, int32_t& id) {
      const Json* v = field(j, key);
      if (!v) return;
      std::string text = v->is_string() ? v->get<std::string>() : v->is_object() ? get_string(*v, "content", tc) : "";
      if (text.empty()) throw file_error(tc, std::string("'") + key + "' is not a token");
      const int32_t found = id_of(text);
      if (found < 0) throw file_error(tc, std::string(key) + " '" + text + "' is not in the vocabulary");
      id = found;
    };
    token_field("bos_token", s.bos);
    token_field("eos_token", s.eos);
    token_field("unk_token", s.unk);
    token_field("pad_token", s.pad);
    try {
      s.add_bos = get_bool(j, "add_bos_token", tc, s.add_bos);
      s.add_eos = get_bool(j, "add_eos_token", tc, s.add_eos);
    } catch (const Error& e) {
      throw file_error(tc, e.what());
    }
    if (const Json* t = field(j, "chat_template")) {
      if (t->is_string()) {
        s.chat_template = t->get<std::string>();
      } else if (t->is_array()) {
        // Named templates: the "default" one is what apply_chat_template uses.
        for (const Json& e : *t)
          if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
            s.chat_template = e["template"];
      } else {
        throw file_error(tc, "'chat_template' is neither a string nor a list");
      }
    }
  }
  const std::string gc = (fs::path(dir) / "generation_config.json").string();
  if (fs::exists(gc)) {
    const Json j = read_json_file(gc, size_t(1) << 20);
    if (const Json* e = field(j, "eos_token_id")) {
      std::vector<int64_t> list;
      if (e->is_number_integer()) list.push_back(e->get<int64_t>());
      else if (e->is_array())
        for (const Json& x : *e) {
          if (!x.is_number_integer()) throw file_error(gc, "eos_token_id holds a non-integer");
          list.push_back(x.get<int64_t>());
        }
      else throw file_error(gc, "eos_token_id is neither an id nor a list of ids");
      for (int64_t id : list) {
        if (id < 0 || size_t(id) >= s.tokens.size())
          throw file_error(gc, "eos_token_id " + std::to_string(id) + " is out of range (" +
                                   std::to_string(s.tokens.size()) + " tokens)");
        s.eog.push_back(int32_t(id));
      }
    }
  }
  if (s.add_bos && s.bos < 0) throw file_error(dir, "the tokenizer adds a BOS token but names none");
}

Spec load_checkpoint_tokenizer(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path json = fs::path(dir) / "tokenizer.json";
  const fs::path spm = fs::path(dir) / "tokenizer.model";
  // tokenizer.json first: it is what transformers' AutoTokenizer runs.
  Spec s;
  if (fs::exists(json)) s = load_tokenizer_json(json.string());
  else if (fs::exists(spm)) s = load_sentencepiece(spm.string());
  else throw file_error(dir, "no tokenizer.json or tokenizer.model");
  apply_hf_configs(s, dir);
  return s;
}

}  // namespace tern::tok
