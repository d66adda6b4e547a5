// The avx512-pext kernel's promise is a multiplication-free inner loop
// (FairyFuse): masked adds and subtracts only. This disassembles the hot
// function tern_pext_row_block out of the built libtern_kernels.a and fails
// on any multiply, fused multiply-add or dot-product instruction, and on any
// call or jump out of the function (which could hide one).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tern/kernels.h"

namespace {

bool pext_set_built() {
  for (const tern::KernelSet* s : tern::all_kernel_sets())
    if (std::string(s->name) == "avx512-pext") return true;
  return false;
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// The function's instructions ("mov 0x0(%r13,%rcx,8),%rbx"), one per line
// of objdump output ("  1c8:\tmov    0x0(%r13,%rcx,8),%rbx"); `found`
// counts the function's labels.
std::vector<std::string> function_instructions(const std::string& disasm, const std::string& symbol,
                                            int& found) {
  std::vector<std::string> out;
  std::istringstream in(disasm);
  std::string line;
  bool inside = false;
  found = 0;
  while (std::getline(in, line)) {
    if (line.find("<" + symbol + ">:") != std::string::npos) {
      inside = true;
      ++found;
      continue;
    }
    if (!inside) continue;
    if (line.empty() || line.find(">:") != std::string::npos) {
      inside = false;
      continue;
    }
    // "   1d3: R_X86_64_PLT32\t__asan_report_load8-0x4": what the last call calls.
    if (line.find("R_X86_64_") != std::string::npos) {
      if (!out.empty()) out.back() += " reloc " + line.substr(line.find_last_of('\t') + 1);
      continue;
    }
    const auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::istringstream ins(line.substr(tab + 1));
    std::string mnemonic, operands;
    ins >> mnemonic;
    std::getline(ins >> std::ws, operands);
    if (!mnemonic.empty()) out.push_back(mnemonic + " " + operands);
  }
  return out;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

}  // namespace

TEST(Avx512PextAsm, HotLoopHasNoMultiply) {
  if (!pext_set_built()) GTEST_SKIP() << "avx512-pext is not built for this architecture";
  const std::string lib = std::string(TERN_BINARY_DIR) + "/libtern_kernels.a";
  ASSERT_TRUE(std::filesystem::exists(lib)) << lib;
  ASSERT_EQ(std::system("objdump --version > /dev/null 2>&1"), 0) << "objdump (binutils) is needed";
  // -r names call targets, which object files leave unresolved.
  const std::string disasm = run("objdump -dr --no-show-raw-insn '" + lib + "' 2>/dev/null");
  int found = 0;
  const auto code = function_instructions(disasm, "tern_pext_row_block", found);
  ASSERT_EQ(found, 1) << "tern_pext_row_block must be defined exactly once in " << lib;
  ASSERT_GT(code.size(), 20u);

  const char* forbidden[] = {"vmul", "vfmadd", "vfmsub", "vfnmadd", "vfnmsub", "vpmul", "vpmadd",
                             "vpdp", "vdpbf16", "vgf2p8mul", "imul", "mul", "vrcp", "vdiv",
                             "div"};
  int pext = 0, masked_arith = 0;
  for (const std::string& insn : code) {
    const std::string m = insn.substr(0, insn.find(' '));
    for (const char* f : forbidden) EXPECT_FALSE(starts_with(m, f)) << "found: " << insn;
    // No calls, except a sanitizer build's checks (TERN_SANITIZE).
    if (m == "call") {
      const bool sanitizer = insn.find(" reloc __asan_") != std::string::npos ||
                             insn.find(" reloc __ubsan_") != std::string::npos;
      EXPECT_TRUE(sanitizer) << "found: " << insn;
    }
    // Jumps stay inside the function: no tail call to code not checked here.
    if (m[0] == 'j') {
      EXPECT_NE(insn.find("<tern_pext_row_block+"), std::string::npos) << "found: " << insn;
    }
    if (m == "pext") ++pext;
    if (m == "vaddps" && insn.find("{%k") != std::string::npos) ++masked_arith;
    if (m == "vsubps" && insn.find("{%k") != std::string::npos) ++masked_arith;
  }
  // The right function was read: pext extracts the masks (2 per row and
  // word; the compiler may or may not unroll the 4 rows), masked vaddps and
  // vsubps use them.
  EXPECT_GE(pext, 2);
  EXPECT_GE(masked_arith, 4);
}
