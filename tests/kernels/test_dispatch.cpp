// Kernel-set selection (a pure function of a name and an activation mode;
// TERN_KERNEL is read by tools/cli and tested in tests/cli) and CPU feature
// detection.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "tern/error.h"
#include "tern/kernels.h"

using namespace tern;

TEST(Dispatch, ScalarIsLastAndAlwaysAvailable) {
  const auto sets = all_kernel_sets();
  ASSERT_FALSE(sets.empty());
  EXPECT_EQ(sets.back(), &scalar_kernels());
  EXPECT_STREQ(scalar_kernels().name, "scalar");
  EXPECT_TRUE(scalar_kernels().available(cpu_features()));
  std::set<std::string> names;
  for (const KernelSet* s : sets) {
    EXPECT_TRUE(names.insert(s->name).second) << "duplicate kernel name " << s->name;
    // Every set has the entries every model needs.
    EXPECT_NE(s->dense_gemm, nullptr) << s->name;
    EXPECT_NE(s->quantize_i8, nullptr) << s->name;
    EXPECT_EQ(s->prepare == nullptr, s->prepared_bytes == nullptr) << s->name;
    EXPECT_TRUE(kernel_supports(*s, ActMode::Float) || kernel_supports(*s, ActMode::Int8)) << s->name;
  }
}

// decodes_as names another built set with an int8 path, available wherever
// this one is, and not itself decoding as a third: --kernel auto times the
// first set of each decode loop only, so a misspelt name would quietly time
// both.
TEST(Dispatch, DecodesAsNamesAnotherSet) {
  const auto sets = all_kernel_sets();
  for (const KernelSet* s : sets) {
    if (!s->decodes_as) continue;
    const KernelSet* t = nullptr;
    for (const KernelSet* u : sets)
      if (std::string(u->name) == s->decodes_as) t = u;
    ASSERT_NE(t, nullptr) << s->name << " decodes as unknown set " << s->decodes_as;
    EXPECT_NE(t, s) << s->name;
    EXPECT_EQ(t->decodes_as, nullptr) << s->name << " -> " << t->name;
    EXPECT_TRUE(kernel_supports(*s, ActMode::Int8) && kernel_supports(*t, ActMode::Int8)) << s->name;
    EXPECT_TRUE(!s->available(cpu_features()) || t->available(cpu_features())) << s->name;
  }
}

TEST(Dispatch, SelectByName) {
  EXPECT_EQ(&select_kernels("scalar", ActMode::Float), &scalar_kernels());
  EXPECT_EQ(find_kernel_set("scalar"), &scalar_kernels());
  EXPECT_EQ(find_kernel_set("auto"), nullptr);
  EXPECT_EQ(find_kernel_set(""), nullptr);
  try {
    select_kernels("nope", ActMode::Float);
    FAIL() << "no throw";
  } catch (const Error& e) {
    const std::string msg = e.what();
    // Every built set is listed, best first, so scalar comes last.
    EXPECT_EQ(msg.rfind("kernel nope: unknown kernel (known: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("scalar, auto)"), std::string::npos) << msg;
  }
  try {
    find_kernel_set("foo", "TERN_KERNEL=foo");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("TERN_KERNEL=foo: unknown kernel (known: ", 0), 0u) << e.what();
  }
  for (const KernelSet* s : all_kernel_sets())
    if (!s->available(cpu_features())) {
      EXPECT_THROW(find_kernel_set(s->name), Error) << s->name;
    }
  for (ActMode mode : {ActMode::Float, ActMode::Int8}) {
    const KernelSet* best = nullptr;
    for (const KernelSet* s : all_kernel_sets())
      if (!best && s->available(cpu_features()) && kernel_supports(*s, mode)) best = s;
    EXPECT_EQ(&select_kernels("", mode), best);
    EXPECT_EQ(&select_kernels("auto", mode), best);
  }
}

// A named set without the model's activation mode is an error that lists
// only the sets this CPU can run in that mode.
TEST(Dispatch, MissingModeNamesTheSetsThatHaveIt) {
  int ran = 0;
  for (const KernelSet* s : all_kernel_sets())
    for (ActMode mode : {ActMode::Float, ActMode::Int8}) {
      if (!s->available(cpu_features()) || kernel_supports(*s, mode)) continue;
      try {
        select_kernels(s->name, mode);
        ADD_FAILURE() << s->name << " has no path for the mode, yet no throw";
      } catch (const Error& e) {
        const std::string msg = e.what();
        const size_t at = msg.find("use one of: ");
        ASSERT_NE(at, std::string::npos) << msg;
        std::stringstream list(msg.substr(at + 12, msg.size() - at - 13));
        for (std::string name; std::getline(list >> std::ws, name, ',');) {
          const KernelSet* named = nullptr;
          for (const KernelSet* t : all_kernel_sets())
            if (name == t->name) named = t;
          ASSERT_NE(named, nullptr) << name << " in: " << msg;
          EXPECT_TRUE(kernel_supports(*named, mode)) << name << " in: " << msg;
        }
      }
      // The caller's reason for the mode goes before the list.
      try {
        select_kernels(s->name, mode, false, "the model says so");
        ADD_FAILURE() << s->name << " has no path for the mode, yet no throw";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(" path: the model says so (use one of: "), std::string::npos) << e.what();
      }
      ++ran;
    }
  if (ran == 0) GTEST_SKIP() << "every set available here has both modes";
}

TEST(CpuFeatures, SummaryAndConsistency) {
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(&f, &cpu_features());  // detected once
  EXPECT_FALSE(f.summary().empty());
  EXPECT_TRUE(!f.os_avx512 || f.os_avx);
  EXPECT_TRUE(!f.fast_pext || f.bmi2);
#if defined(__x86_64__)
  EXPECT_FALSE(f.vendor.empty());
  EXPECT_FALSE(f.neon);
  EXPECT_EQ(f.avx2, f.summary().find("avx2") != std::string::npos);
#endif
}

#if defined(__x86_64__) && defined(__linux__)
// Linux derives /proc/cpuinfo flags from the same CPUID bits and clears the
// AVX/AVX-512 ones when XCR0 does not enable their state.
TEST(CpuFeatures, AgreesWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  if (!in) GTEST_SKIP() << "no /proc/cpuinfo";
  std::string line, flags_line, vendor;
  while (std::getline(in, line)) {
    auto value = [&] { return line.substr(line.find(':') + 2); };
    if (flags_line.empty() && line.rfind("flags", 0) == 0) flags_line = value();
    if (vendor.empty() && line.rfind("vendor_id", 0) == 0) vendor = value();
  }
  std::set<std::string> flags;
  std::istringstream ss(flags_line);
  for (std::string w; ss >> w;) flags.insert(w);
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.vendor, vendor);
  // No brand check: in a guest the two can differ (an Oxide guest's CPUID
  // says "Oxide Virtual Turin-like Processor", its /proc/cpuinfo "AMD
  // EPYC"), and the brand decides nothing.
  EXPECT_FALSE(f.brand.empty());
  EXPECT_EQ(f.sse42, flags.count("sse4_2") == 1);
  EXPECT_EQ(f.bmi2, flags.count("bmi2") == 1);
  EXPECT_EQ(f.avx2 && f.os_avx, flags.count("avx2") == 1);
  EXPECT_EQ(f.fma && f.os_avx, flags.count("fma") == 1);
  EXPECT_EQ(f.avx512f && f.os_avx512, flags.count("avx512f") == 1);
  EXPECT_EQ(f.avx512bw && f.os_avx512, flags.count("avx512bw") == 1);
  EXPECT_EQ(f.avx512vl && f.os_avx512, flags.count("avx512vl") == 1);
  EXPECT_EQ(f.avx512vnni && f.os_avx512, flags.count("avx512_vnni") == 1);
  EXPECT_EQ(f.avx512vbmi && f.os_avx512, flags.count("avx512vbmi") == 1);
  EXPECT_EQ(f.avx_vnni && f.os_avx, flags.count("avx_vnni") == 1);
  EXPECT_EQ(f.clflushopt, flags.count("clflushopt") == 1);
}
#endif
