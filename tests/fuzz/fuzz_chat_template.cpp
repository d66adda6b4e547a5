// libFuzzer target for chat templates: any input must either parse or throw
// tern::Error, and a template that parses must render a short conversation
// or throw tern::Error, within the renderer's work and output budgets (a
// hang or a huge allocation is a finding too).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "tern/chat_template.h"
#include "tern/error.h"

namespace {
volatile uint64_t g_sink;

// TERN_FUZZ_VERBOSE=1 prints why a template failed (for checking seeds).
void note(const tern::Error& e) {
  static const bool verbose = std::getenv("TERN_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "rejected: %s\n", e.what());
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  try {
    const tern::chat::Template t = tern::chat::Template::parse(source);
    const std::vector<tern::chat::Message> messages = {
        {"system", "You are terse."},
        {"user", "Hi there! \xC3\xA9\xE6\x97\xA5 {{ not a tag }}"},
        {"assistant", "  Hello.\n"},
        {"user", "Again?"},
    };
    tern::chat::RenderOptions o;
    o.bos_token = "<s>";
    o.eos_token = "</s>";
    o.now = 1721952000;  // 26 Jul 2024: strftime_now output stays reproducible
    // Ten times what the published templates need (test_chat_template's
    // WorkBudgetIsAnOption): a looping input stops 100x sooner than under the
    // default, so the fuzzer tries more inputs; the limits it exercises are
    // the same code at any budget.
    o.work_budget = 20'000;
    for (bool gen : {true, false}) {
      o.add_generation_prompt = gen;
      try {
        g_sink = g_sink + t.render(messages, o).size();
      } catch (const tern::Error& e) {
        note(e);
      }
    }
    // The variables templates read besides messages.
    o.extra = {{"tools", R"([{"type":"function","function":{"name":"f","parameters":{"x":[1,2.5,null,true]}}}])"},
               {"date_string", "\"26 Jul 2024\""}};
    g_sink = g_sink + t.render({messages.begin(), messages.begin() + 2}, o).size();
  } catch (const tern::Error& e) {
    note(e);
  }
  return 0;
}
