// tern: one binary, one subcommand per stage of the pipeline.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "cli/commands.h"
#include "tern/error.h"
#include "tern/mapped_files.h"
#include "tern/output_file.h"
#include "tern/printable.h"

int main(int argc, char** argv) {
  // An interrupted pack removes its temporary (tern/output_file.h).
  tern::remove_temporaries_on_signals();
  tern::report_bus_errors_on_mapped_files();
  CLI::App app{"tern: ternary LLM inference on CPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tern 0.1.0");
  tern::cli::add_generate(app);
  tern::cli::add_perplexity(app);
  tern::cli::add_pack(app);
  tern::cli::add_info(app);
  tern::cli::add_kernels(app);
  tern::cli::add_bench(app);
  tern::cli::add_tokenize(app);
  tern::cli::add_chat(app);
  tern::cli::add_serve(app);
  // llama.cpp spells some options with one dash and several letters
  // (llama-bench's -pg, the cache types -ctk and -ctv, -np, -npl, -md);
  // CLI11 reads a single dash as one-letter options, so they are handed
  // over with two.
  static char pg[] = "--pg", ctk[] = "--cache-type-k", ctv[] = "--cache-type-v", np[] = "--parallel",
              npl[] = "--npl", md[] = "--model-draft";
  const struct {
    const char* llama;
    char* ours;
    const char* only_in;  // the one subcommand that has it, or null
  } spellings[] = {{"-pg", pg, "bench"}, {"-ctk", ctk, nullptr}, {"-ctv", ctv, nullptr},
                   {"-np", np, nullptr}, {"-npl", npl, "bench"}, {"-md", md, nullptr}};
  for (int i = 2; argc > 1 && i < argc; ++i)
    for (const auto& s : spellings)
      if (std::strcmp(argv[i], s.llama) == 0 && (!s.only_in || std::strcmp(argv[1], s.only_in) == 0)) argv[i] = s.ours;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, like every other tern error; --help has the details.
    std::fprintf(stderr, "tern: %s\n", tern::printable(e.what()).c_str());
    return 2;
  } catch (const tern::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tern: error: %s\n", tern::printable(e.what()).c_str());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "tern: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tern: error: %s\n", tern::printable(e.what()).c_str());
    return 1;
  }
  return 0;
}
