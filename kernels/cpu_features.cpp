// CPU feature detection, done once. On x86 a feature is usable only if CPUID
// reports it *and* the OS saves the register state (XCR0): a CPU with
// AVX-512 under an OS or hypervisor that does not enable ZMM state faults on
// the first AVX-512 instruction. Both are recorded; kernels check both.
#include <cstring>
#include <string>

#include "tern/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TERN_X86 1
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#elif defined(__aarch64__)
#define TERN_ARM64 1
#if defined(__linux__)
#include <sys/auxv.h>
#endif
#endif

namespace tern {
namespace {

#if defined(TERN_X86)

struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub = 0) {
  Regs r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) r = Regs{};
  return r;
}

bool bit(unsigned v, int n) { return (v >> n) & 1u; }

// xgetbv via its encoding-independent inline asm, so this file needs no -mxsave.
uint64_t xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

// Linux keeps the 8 KiB tile state disabled until a process asks for it
// (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); a tile instruction before
// that is SIGILL. The grant is for the whole process, every thread.
bool request_amx() {
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

CpuFeatures detect() {
  CpuFeatures f;
  const Regs l0 = cpuid(0);
  const unsigned max_leaf = l0.a;
  char vendor[13] = {};
  std::memcpy(vendor + 0, &l0.b, 4);
  std::memcpy(vendor + 4, &l0.d, 4);
  std::memcpy(vendor + 8, &l0.c, 4);
  f.vendor = vendor;

  unsigned family = 0;
  if (max_leaf >= 1) {
    const Regs l1 = cpuid(1);
    f.sse42 = bit(l1.c, 20);
    f.fma = bit(l1.c, 12);
    f.avx = bit(l1.c, 28);
    f.f16c = bit(l1.c, 29);
    const unsigned base = (l1.a >> 8) & 0xf;
    family = base == 0xf ? base + ((l1.a >> 20) & 0xff) : base;
    if (bit(l1.c, 27)) {  // OSXSAVE: xgetbv is allowed
      const uint64_t x = xcr0();
      f.os_avx = (x & 0x6) == 0x6;      // XMM + YMM state
      f.os_avx512 = (x & 0xe6) == 0xe6;  // plus opmask, ZMM_Hi256, Hi16_ZMM
    }
  }
  if (max_leaf >= 7) {
    const Regs l7 = cpuid(7, 0);
    f.avx2 = bit(l7.b, 5);
    f.bmi2 = bit(l7.b, 8);
    f.avx512f = bit(l7.b, 16);
    f.avx512bw = bit(l7.b, 30);
    f.avx512vl = bit(l7.b, 31);
    f.clflushopt = bit(l7.b, 23);
    f.avx512vbmi = bit(l7.c, 1);
    f.avx512vnni = bit(l7.c, 11);
    if (l7.a >= 1) f.avx_vnni = bit(cpuid(7, 1).a, 4);
    f.amx_tile = bit(l7.d, 24);
    f.amx_int8 = bit(l7.d, 25);
    f.os_amx = f.amx_tile && f.os_avx512 && (xcr0() & 0x60000) == 0x60000 && request_amx();
  }

  const unsigned max_ext = cpuid(0x80000000u).a;
  if (max_ext >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      const Regs r = cpuid(0x80000002u + i);
      std::memcpy(brand + 16 * i + 0, &r.a, 4);
      std::memcpy(brand + 16 * i + 4, &r.b, 4);
      std::memcpy(brand + 16 * i + 8, &r.c, 4);
      std::memcpy(brand + 16 * i + 12, &r.d, 4);
    }
    f.brand = trim(brand);
  }

  // pext/pdep are microcoded (~18 cycles per 64-bit op, worse with more set
  // bits) on AMD before Zen 3 (family 0x19), and on Hygon (Zen 1 based).
  // Other vendors are assumed slow until measured.
  f.fast_pext = f.bmi2 && (f.vendor == "GenuineIntel" ||
                           (f.vendor == "AuthenticAMD" && family >= 0x19));
  return f;
}

#elif defined(TERN_ARM64)

CpuFeatures detect() {
  CpuFeatures f;
  f.vendor = "arm";
  f.neon = true;  // Advanced SIMD is mandatory in ARMv8-A
#if defined(__linux__) && defined(HWCAP_ASIMDDP)
  f.dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
  return f;
}

#else

CpuFeatures detect() { return CpuFeatures{}; }

#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

std::string CpuFeatures::summary() const {
  const std::pair<bool, const char*> flags[] = {
      {sse42, "sse4.2"},         {avx, "avx"},           {avx2, "avx2"},
      {fma, "fma"},              {f16c, "f16c"},         {bmi2, "bmi2"},
      {fast_pext, "fast_pext"},  {avx_vnni, "avx_vnni"}, {avx512f, "avx512f"},
      {avx512bw, "avx512bw"},    {avx512vl, "avx512vl"}, {avx512vnni, "avx512vnni"},
      {avx512vbmi, "avx512vbmi"}, {os_avx, "os_avx"},    {os_avx512, "os_avx512"},
      {amx_tile, "amx_tile"},    {amx_int8, "amx_int8"}, {os_amx, "os_amx"},
      {neon, "neon"},            {dotprod, "dotprod"},
  };
  std::string out;
  for (const auto& [on, name] : flags) {
    if (!on) continue;
    if (!out.empty()) out += ' ';
    out += name;
  }
  return out.empty() ? "none" : out;
}

}  // namespace tern
