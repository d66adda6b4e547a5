#include <cstdio>
#include <optional>

#include "cli/commands.h"
#include "pack/packer.h"
#include "tern/error.h"
#include "tern/phase.h"
#include "tern/quant.h"

namespace tern::cli {

void add_pack(CLI::App& app) {
  auto o = std::make_shared<pack::PackOptions>();
  auto type = std::make_shared<std::string>("tq2_0");
  CLI::App* cmd = app.add_subcommand("pack", "pack a Hugging Face checkpoint into a ternary GGUF");
  cmd->add_option("checkpoint", o->input_dir, "Hugging Face checkpoint directory")->required();
  cmd->add_option("-o,--output", o->output_path, "output .gguf file")->required();
  CLI::Option* type_opt =
      cmd->add_option("--type", *type,
                      "tq2_0 (2.06 bits/weight, default) or tq1_0 (1.69); for weights ternary per group of 128 "
                      "(Ternary Bonsai): pq2_0 (2.125, PrismML's) or q2_0 (2.25, mainline llama.cpp's groups of 64)")
          ->check(CLI::IsMember({"tq2_0", "tq1_0", "pq2_0", "q2_0"}, CLI::ignore_case));
  auto head = std::make_shared<std::string>(), embd = std::make_shared<std::string>();
  // Lower-case names of the dense kernels' types, as llama-quantize spells them.
  std::vector<std::string> float_types;
  for (gguf::TensorType t : kDenseTypes) float_types.push_back(ascii_lower(gguf::traits(t).name));
  cmd->add_option("--output-type", *head,
                  "output head type: " + ascii_lower(dense_type_names()) + " (default: the source's, lossless)")
      ->check(CLI::IsMember(float_types, CLI::ignore_case));
  cmd->add_option("--token-embedding-type", *embd,
                  "token embedding type, as --output-type (tied embeddings follow --output-type)")
      ->check(CLI::IsMember(float_types, CLI::ignore_case));
  CLI::Option* ternarize = cmd->add_flag("--ternarize", o->force_ternarize,
                                         "quantize non-ternary weights by absmean (per tensor)");
  auto fairy = std::make_shared<bool>(false);
  auto stages = std::make_shared<int>(2);
  CLI::Option* fairy_opt =
      cmd->add_flag("--fairy2i", *fairy,
                    "make a float LLaMA checkpoint a Fairy2i-W2 model: every linear and the head "
                    "phase-quantized to {+1, -1, +i, -i} (docs/FAIRY2I.md)")
          ->excludes(type_opt)
          ->excludes(ternarize);
  cmd->add_option("--fairy2i-stages", *stages, "residual stages of --fairy2i (default 2: W2)")
      ->check(CLI::Range(1, kMaxPhaseStages))
      ->needs(fairy_opt);
  cmd->add_flag("--verify", o->verify, "re-read the output and check every value against the source");
  cmd->callback([o, type, head, embd, fairy, stages] {
    o->fairy2i_stages = *fairy ? *stages : 0;
    const std::string t = ascii_lower(*type);
    o->type = t == "tq1_0"   ? gguf::TensorType::TQ1_0
              : t == "pq2_0" ? gguf::TensorType::PQ2_0
              : t == "q2_0"  ? gguf::TensorType::Q2_0
                             : gguf::TensorType::TQ2_0;
    auto float_type = [](const std::string& s) -> std::optional<gguf::TensorType> {
      const std::string name = ascii_lower(s);
      for (gguf::TensorType t : kDenseTypes)
        if (name == ascii_lower(gguf::traits(t).name)) return t;
      return std::nullopt;  // empty: the check lets no other name through
    };
    o->output_type = float_type(*head);
    o->embedding_type = float_type(*embd);
    // Progress is the command's output; stderr stays for the one error line.
    o->progress = [](const std::string& line) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
    const pack::PackReport r = pack::pack_checkpoint(*o);
    std::printf(
                 "wrote %s: %llu tensors (%llu %s, %.4f bits/weight), %.2f MiB, "
                 "activations %s\n",
                 o->output_path.c_str(), static_cast<unsigned long long>(r.n_tensors),
                 static_cast<unsigned long long>(r.n_ternary), *fairy ? "Fairy2i" : "ternary",
                 r.bits_per_weight_ternary,
                 double(r.bytes_written) / (1 << 20), r.activation_mode.c_str());
    if (o->verify)  // pack_checkpoint has already re-read and checked the output
      std::printf("verified %s against %s\n", o->output_path.c_str(), o->input_dir.c_str());
  });
}

}  // namespace tern::cli
