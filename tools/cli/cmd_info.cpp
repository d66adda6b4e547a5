#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>

#include "cli/commands.h"
#include "tern/quant_group.h"
#include "tern/tokenizer.h"
#include "tern/error.h"
#include "tern/gguf.h"
#include "tern/kernels.h"
#include "tern/printable.h"
#include "tern/quant.h"

namespace tern::cli {
namespace {

const char* act_name(const Model& m) {
  if (m.config().act_mode == ActMode::Int8) return "int8 (per-token absmax)";
  if (m.int16_activations()) return "float, run as int16 (per-token absmax; --float-act f32: exact)";
  return m.int8_float_activations() ? "float, run as int8 (per-token absmax, lossy; --float-act f32: exact)"
                                    : "float";
}

void run_info(const std::string& path, const std::string& kernel, const std::string& float_act) {
  LoadOptions lo;
  lo.kernel = kernel_choice(kernel);
  lo.float_acts = float_acts(float_act);
  std::unique_ptr<Model> model = Model::load(path, lo);
  const gguf::File& f = model->file();
  const Config& c = model->config();
  std::printf("file:            %s (GGUF v%u, %.2f MiB)\n", printable(path).c_str(), f.version(),
              double(f.file_size()) / (1 << 20));
  if (const gguf::Value* v = f.find("general.name"))
    std::printf("name:            %s\n", printable(v->as_string("general.name")).c_str());
  std::printf("architecture:    %s (family: %s; %s, RoPE on %s%s%s%s)\n",
              printable(c.family->gguf_arch).c_str(), printable(c.family->name).c_str(),
              c.ffn_act == FfnAct::SiLU ? "SwiGLU" : "relu2 GLU",
              c.rope == RopeStyle::Pairs ? "adjacent pairs" : "halves",
              c.qk_norms ? ", q/k norms per head" : "", c.sub_norms ? ", sub-norms" : "",
              c.linear_norm_eps > 0 ? ", an RMSNorm inside every ternary linear" : "");
  std::printf("dim %d, ffn %d, layers %d, heads %d, kv heads %d, head dim %d\n", c.dim,
              c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim);
  std::printf("vocab %d, context %d, rope theta %g, norm eps %g, output %s\n", c.vocab_size,
              c.context_length, double(c.rope_theta), double(c.norm_eps),
              c.tied_output ? "tied to token_embd" : "separate");
  if (c.yarn.factor > 1)
    std::printf("rope scaling:    yarn, factor %g over a trained context of %d (beta fast %g, slow %g)\n",
                c.yarn.factor, c.yarn.orig_ctx, c.yarn.beta_fast, c.yarn.beta_slow);
  std::printf("activation mode: %s\n", act_name(*model));
  if (const gguf::Value* v = f.find("tern.scale_rule"))
    std::printf("scale rule:      %s\n", printable(v->as_string("tern.scale_rule")).c_str());
  {
    const Tokenizer tok(f);
    std::printf("tokenizer:       %s, %d tokens, BOS %s, %zu end-of-generation id%s, chat template %s\n",
                printable(tok.kind()).c_str(), tok.vocab_size(), tok.adds_bos() ? "added" : "not added", tok.eog_ids().size(),
                tok.eog_ids().size() == 1 ? "" : "s", tok.chat_template().empty() ? "none" : "present");
    print_notes(tok, path);
  }

  uint64_t tern_w = 0, tern_b = 0, all_w = 0, all_b = 0, phase_w = 0, phase_b = 0, phase_n = 0;
  std::printf("\n%-28s %-7s %-16s %12s\n", "tensor", "type", "shape", "bytes");
  for (const gguf::TensorInfo& t : f.tensors()) {
    std::printf("%-28s %-7s %-16s %12llu\n", printable(t.name).c_str(), gguf::traits(t.type).name,
                t.shape_string().c_str(), static_cast<unsigned long long>(t.nbytes));
    // A FAIRY2I tensor's last dimension is its stages, not more weights.
    const bool phase = t.type == gguf::TensorType::FAIRY2I && t.dims.size() == 3;  // [2m', 2n, stages]
    all_w += phase ? t.dims[0] * t.dims[1] : t.n_elements();
    all_b += t.nbytes;
    if (is_ternary_type(t.type) || t.type == gguf::TensorType::I2_S || is_group_type(t.type) ||
        converts_to_pq2_0(t.type)) {
      tern_w += t.n_elements();
      tern_b += t.nbytes;
    }
    if (phase) {
      phase_w += t.dims[0] * t.dims[1];
      phase_b += t.nbytes;
      ++phase_n;
    }
  }
  std::printf("\n%llu tensors, %.2f M weights, %.3f bits/weight overall\n",
              static_cast<unsigned long long>(f.tensors().size()), double(all_w) / 1e6,
              8.0 * double(all_b) / double(all_w));
  if (tern_w) {
    const gguf::TensorType stored = f.tensor("blk.0.attn_q.weight", {}, {}).type;
    std::printf("%s: %.2f M weights in %s, %.4f bits/weight%s\n",
                stored == gguf::TensorType::Q1_0 ? "binary" : "ternary", double(tern_w) / 1e6,
                gguf::traits(stored).name, 8.0 * double(tern_b) / double(tern_w),
                stored == c.weight_type ? ""
                                        : (std::string(", repacked to ") +
                                           gguf::traits(c.weight_type).name + " at load").c_str());
    if (std::any_of(f.tensors().begin(), f.tensors().end(), [](const auto& t) { return t.declared_q2_0; }))
      std::printf("type 42:         declared Q2_0 but in 128-weight blocks (PrismML's April 2026 files): read as PQ2_0\n");
    // Rows of whole blocks hold a width that is not a multiple of QK; no
    // other engine reads such a file (docs/FORMAT.md).
    std::string pads;
    int seen[3] = {0, 0, 0}, n_seen = 0;
    for (int w : {c.dim, c.q_dim(), c.hidden_dim}) {
      if (padded_cols(w) == w || std::find(seen, seen + n_seen, w) != seen + n_seen) continue;
      seen[n_seen++] = w;
      pads += (pads.empty() ? "" : ", ") + std::to_string(w) + " -> " + std::to_string(padded_cols(w));
    }
    if (!pads.empty())
      std::printf("padded rows:     %s (zero weights; llama.cpp cannot load this file)\n", pads.c_str());
  }
  if (phase_n)
    std::printf("Fairy2i: %llu linears in FAIRY2I, %d stages, %.4f bits/weight (padded columns counted)\n",
                static_cast<unsigned long long>(phase_n), model->weights().layers[0].wq.phase.stages,
                8.0 * double(phase_b) / double(phase_w));
  const CpuFeatures& cpu = cpu_features();
  std::printf("\ncpu:             %s\n", cpu.brand.c_str());
  std::printf("cpu features:    %s\n", cpu.summary().c_str());
  std::printf("kernel:          %s%s\n", model->kernels().name,
              model->kernel_choices().empty() ? "" : " (--kernel auto: linears by shape below)");
  // --kernel auto: each shape's candidates as timed at this load.
  for (const KernelChoice& k : model->kernel_choices()) {
    std::printf("  %6lld x %-6lld %s:", static_cast<long long>(k.rows), static_cast<long long>(k.cols),
                gguf::traits(k.type).name);
    for (const auto& [set, sec] : k.seconds) std::printf(" %s %.1f us,", set->name, sec * 1e6);
    if (!k.prompt_seconds.empty()) {
      std::printf(" tied; %d tokens:", kChoicePromptTokens);
      for (const auto& [set, sec] : k.prompt_seconds) std::printf(" %s %.1f us,", set->name, sec * 1e6);
    }
    std::printf(" runs on %s\n", k.chosen->name);
  }
}

}  // namespace

void add_info(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto kernel = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("info", "describe a model file and this CPU");
  cmd->add_option("file", *path, "GGUF model file")->required();
  cmd->add_option("--kernel", *kernel, "force a kernel set (see 'tern kernels'); auto: time them per shape");
  auto float_act = std::make_shared<std::string>();
  add_float_act_option(*cmd, *float_act);
  cmd->callback([path, kernel, float_act] { run_info(*path, *kernel, *float_act); });
}

void add_kernels(CLI::App& app) {
  auto kernel = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("kernels", "list kernel sets and which one runs");
  cmd->add_option("--kernel", *kernel, "force a kernel set");
  cmd->callback([kernel] {
    const std::string choice = kernel_choice(*kernel);
    const CpuFeatures& cpu = cpu_features();
    // A forced set may lack a mode; it is then selected for the other only.
    auto chosen = [&choice](ActMode mode, bool phase) -> const KernelSet* {
      try {
        return &select_kernels(choice, mode, phase);
      } catch (const Error&) {
        return nullptr;
      }
    };
    const KernelSet* for_float = chosen(ActMode::Float, false);
    const KernelSet* for_int8 = chosen(ActMode::Int8, false);
    const KernelSet* for_phase = chosen(ActMode::Float, true);  // Fairy2i models
    const KernelSet* for_phase_i8 = chosen(ActMode::Int8, true);  // their int16 / int8 inputs
    for (const KernelSet* k : all_kernel_sets()) {
      std::string modes, selected;
      for (auto [mode, phase, name, chosen] : {std::tuple{ActMode::Float, false, "float", for_float},
                                               std::tuple{ActMode::Int8, false, "int8", for_int8},
                                               std::tuple{ActMode::Float, true, "fairy2i", for_phase},
                                               std::tuple{ActMode::Int8, true, "fairy2i-int8", for_phase_i8}}) {
        if (!kernel_supports(*k, mode, phase)) continue;
        modes += modes.empty() ? name : std::string("+") + name;
        if (k == chosen) selected += std::string(" selected(") + name + ")";
      }
      char line[200];
      std::snprintf(line, sizeof line, "%-14s %-11s %-31s%s", k->name,
                    k->available(cpu) ? "available" : "unavailable", modes.c_str(), selected.c_str());
      std::string text = line;
      text.erase(text.find_last_not_of(' ') + 1);
      std::printf("%s\n", text.c_str());
    }
  });
}

}  // namespace tern::cli
