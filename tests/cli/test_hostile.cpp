// Inputs that try to hurt the user rather than crash tern (issue 12): a FIFO
// or device where a file belongs, a file declaring a huge context, NaN
// weights, an output path that is not a plain new file, metadata carrying
// terminal escapes. Each must end in one line on stderr naming the file,
// a non-zero exit, no hang and nothing destroyed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/gguf_rewrite.h"
#include "support/test_env.h"
#include "tern/gguf.h"
#include "tern/mapped_files.h"
#include "tern/output_file.h"

namespace fs = std::filesystem;
using tern::test::quote;
using tern::gguf::TensorType;

namespace {

std::string tiny_model() { return (tern::test::test_models() / "bitnet" / "tq2_0.gguf").string(); }
fs::path tiny_checkpoint() { return tern::test::test_models() / "bitnet" / "hf"; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class Hostile : public ::testing::Test {
 protected:
  // `timeout` turns a hang (the FIFO bug) into a failure, not a stuck CI.
  tern::test::RunResult cli(const std::string& args, const std::string& tag = "out") {
    return tern::test::run("timeout 60 " + quote(TERN_EXE) + " " + args, tag, dir_);
  }
  void expect_error(const tern::test::RunResult& r, const std::string& what) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.exit_code, 124) << "timed out: tern blocked";
    EXPECT_LT(r.exit_code, 128) << "killed by a signal";
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
  }
  std::string fifo(const std::string& name) {
    const std::string p = (dir_ / name).string();
    EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0);
    return p;
  }
  // A copy of the tiny checkpoint the test may change.
  fs::path checkpoint_copy(const std::string& name) {
    const fs::path d = dir_ / name;
    fs::copy(tiny_checkpoint(), d, fs::copy_options::recursive);
    return d;
  }
  const fs::path dir_ = tern::test::test_dir();
};

// --- 1. A FIFO or a device is refused before anything reads it -----------

TEST_F(Hostile, FifoAsModelIsRefusedNotWaitedOn) {
  const std::string p = fifo("model.gguf");
  expect_error(cli("info " + quote(p)), p + ": is a FIFO, not a regular file");
  expect_error(cli("generate -m " + quote(p) + " -p x -n 1", "gen"), "is a FIFO");
}

TEST_F(Hostile, FifoAsTextOrTemplateIsRefused) {
  const std::string p = fifo("text.txt");
  expect_error(cli("perplexity -m " + quote(tiny_model()) + " -f " + quote(p), "ppl"), p + ": is a FIFO");
  expect_error(cli("tokenize -m " + quote(tiny_model()) + " -f " + quote(p), "tok"), p + ": is a FIFO");
  expect_error(cli("chat -m " + quote(tiny_model()) + " --chat-template " + quote(p), "chat"), p + ": is a FIFO");
}

TEST_F(Hostile, DeviceAsTextIsRefused) {
  const std::string link = (dir_ / "zero.txt").string();
  fs::create_symlink("/dev/zero", link);
  expect_error(cli("tokenize -m " + quote(tiny_model()) + " -f " + quote(link)), link + ": is a character device");
}

TEST_F(Hostile, FifoInsideCheckpointIsRefused) {
  for (const std::string name : {"config.json", "tokenizer.model", "model.safetensors"}) {
    const fs::path ck = checkpoint_copy("ck-" + name);
    fs::remove(ck / name);
    const std::string p = (ck / name).string();
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    const std::string out = (dir_ / (name + ".gguf")).string();
    expect_error(cli("pack " + quote(ck.string()) + " -o " + quote(out), name), "is a FIFO");
    EXPECT_FALSE(fs::exists(out));
  }
}

// Whole-file reads have limits; the error names the file, its size and the
// limit (a 17 MiB config.json against 16 MiB).
TEST_F(Hostile, OversizedInputNamesItsLimit) {
  const fs::path ck = checkpoint_copy("ck");
  {
    std::ofstream cfg(ck / "config.json", std::ios::app);
    cfg << std::string(17u << 20, ' ');
  }
  expect_error(cli("pack " + quote(ck.string()) + " -o " + quote((dir_ / "o.gguf").string())),
               (ck / "config.json").string() + ": 17.0 MiB, over the 16 MiB limit for a config.json");
}

// --- 2. The KV cache follows -c, not the file -----------------------------

class HugeContext : public Hostile {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_ADDRESS__)
    // tern is then an ASan binary too, whose shadow memory reserves
    // terabytes of address space: no `ulimit -v` leaves it room to start.
    // The Release run of the suite checks these.
    GTEST_SKIP() << "ulimit -v cannot bound an AddressSanitizer process";
#endif
    const tern::gguf::File f = tern::gguf::File::open(tiny_model());
    const std::string arch = f.get("general.architecture").as_string("general.architecture");
    tern::test::rewrite_file(tiny_model(), model_, {}, [](auto&&...) {}, tern::test::TernKeys::Keep,
                             {{arch + ".context_length", tern::gguf::Value::u32(1u << 24)}});
  }
  const std::string model_ = (dir_ / "ctx16m.gguf").string();
};

// 2^24 positions of this model's cache are 32 GiB; a 4 GiB address-space
// limit makes any attempt to allocate them fail loudly.
TEST_F(HugeContext, InfoAllocatesNoCache) {
  auto r = tern::test::run("ulimit -v 4000000; " + quote(TERN_EXE) + " info " + quote(model_), "info", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("context 16777216"), std::string::npos) << r.out;
}

TEST_F(HugeContext, DefaultCacheIsCappedAndAskingForAllOfItSaysWhy) {
  auto ok = tern::test::run("ulimit -v 4000000; " + quote(TERN_EXE) + " generate -m " + quote(model_) +
                                " -p 'In the beginning' -n 4 --temp 0",
                            "gen", dir_);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  auto big = tern::test::run("ulimit -v 4000000; timeout 60 " + quote(TERN_EXE) + " generate -m " +
                                 quote(model_) + " -p x -n 1 -c 0",
                             "big", dir_);
  expect_error(big, "KV cache of 16777216 positions");
}

TEST_F(Hostile, ContextOverTheTrainedOneWarns) {
  auto r = cli("generate -m " + quote(tiny_model()) + " -p x -n 2 --temp 0 -c 1000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: -c 1000 is more than the 128 positions"), std::string::npos) << r.err;
}

// --- 3. Non-finite weights are refused before any output, and at pack -----

void poison_first(TensorType type, std::vector<uint8_t>& bytes, bool inf) {
  switch (type) {
    case TensorType::F32: {
      const uint32_t v = inf ? 0x7f800000u : 0x7fc00000u;
      std::memcpy(bytes.data(), &v, 4);
      break;
    }
    case TensorType::F16: case TensorType::Q8_0: {
      const uint16_t v = inf ? 0x7c00u : 0x7e00u;
      std::memcpy(bytes.data(), &v, 2);
      break;
    }
    case TensorType::BF16: {
      const uint16_t v = inf ? 0x7f80u : 0x7fc0u;
      std::memcpy(bytes.data(), &v, 2);
      break;
    }
    case TensorType::Q6_K: {  // the first block's scale
      const uint16_t v = inf ? 0x7c00u : 0x7e00u;
      std::memcpy(bytes.data() + offsetof(tern::BlockQ6_K, d), &v, 2);
      break;
    }
    default:
      FAIL() << "not a float type";
  }
}

// Norms are refused at load; the head (here tied to the embedding) by the
// first product over it (Model::check_head), before any token is printed.
TEST_F(Hostile, NonFiniteNormOrEmbeddingIsRefused) {
  for (const std::string name : {"output_norm.weight", "blk.1.ffn_norm.weight", "token_embd.weight"}) {
    const std::string bad = (dir_ / (name + ".gguf")).string();
    tern::test::rewrite_file(
        tiny_model(), bad, {},
        [&](const tern::gguf::TensorInfo& t, const tern::gguf::File&, TensorType& type, std::vector<uint8_t>& b) {
          if (t.name == name) poison_first(type, b, name == "token_embd.weight");
        },
        tern::test::TernKeys::Keep);
    expect_error(cli("generate -m " + quote(bad) + " -p x -n 1", name), "tensor '" + name + "'");
  }
}

// Group-scaled linears (Ternary Bonsai): a NaN or infinite group scale is
// refused at load with its tensor, row and group; code 3 (+2d) runs, as
// the format defines it, so it is no error; a row that is not whole
// groups cannot be declared at all (the reader checks block sizes).
TEST_F(Hostile, GroupScaledLinearWithANonFiniteScaleIsRefused) {
  const fs::path bonsai = tern::test::test_models() / "family-bonsai";
  const std::string src = (bonsai / "pq2_0.gguf").string();
  // PQ2_0, and PrismML's PTQ1_0 and Q1_0 (converted at load, their scales
  // checked before): block bytes and where d sits in a block.
  const struct {
    const char* file;
    TensorType type;
    size_t block, d_at;
  } kinds[] = {{"pq2_0.gguf", TensorType::PQ2_0, 34, 0},
               {"ptq1_0.gguf", TensorType::PTQ1_0, 28, 26},
               {"q1_0.gguf", TensorType::Q1_0, 18, 0}};
  for (const auto& k : kinds)
    // A linear, and the tied embedding that is also the head (Bonsai's).
    for (const std::string name : {"blk.1.ffn_down.weight", "token_embd.weight"})
      for (const uint16_t h : {uint16_t(0x7e00), uint16_t(0x7c00)}) {  // NaN, infinity
        const std::string tag = std::string(k.file) + "-" + name + std::to_string(h);
        const std::string bad = (dir_ / ("group-scale-" + tag + ".gguf")).string();
        tern::test::rewrite_file(
            (bonsai / k.file).string(), bad, {},
            [&](const tern::gguf::TensorInfo& t, const tern::gguf::File&, TensorType& type, std::vector<uint8_t>& b) {
              if (t.name != name) return;
              ASSERT_EQ(type, k.type) << name;
              const size_t block = 3 * (t.dims[0] / 128) + 1;  // row 3, group 1
              std::memcpy(&b[block * k.block + k.d_at], &h, 2);
            },
            tern::test::TernKeys::Keep);
        expect_error(cli("generate -m " + quote(bad) + " -p x -n 1", tag),
                     "tensor '" + name + "' row 3 group 1 has a scale that is not finite");
      }
  const std::string plus2 = (dir_ / "group-code3.gguf").string();
  tern::test::rewrite_file(
      src, plus2, {},
      [&](const tern::gguf::TensorInfo& t, const tern::gguf::File&, TensorType&, std::vector<uint8_t>& b) {
        if (t.name == "blk.0.attn_v.weight") b[2] = 0xff;  // row 0's first four weights: code 3
      },
      tern::test::TernKeys::Keep);
  const auto r = cli("generate -m " + quote(plus2) + " -p x -n 2 --temp 0", "code3");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Untied heads (F16, Q6_K), checked by their first product; an untied
// embedding row, checked as the prompt looks it up (every row is poisoned,
// so whatever the prompt's tokens are).
TEST_F(Hostile, NonFiniteUntiedHeadOrEmbeddingRowIsRefused) {
  const fs::path models = tern::test::test_models();
  const struct {
    std::string model, tensor;
    bool every_row;
  } cases[] = {{"family-1bitllm/tq2_0.gguf", "output.weight", false},
               {"family-llama3-1.58/q6_k-head.gguf", "output.weight", false},
               {"family-1bitllm/tq2_0.gguf", "token_embd.weight", true}};
  for (const auto& c : cases) {
    const std::string bad = (dir_ / ("untied-" + c.tensor + std::to_string(c.every_row) + ".gguf")).string();
    tern::test::rewrite_file(
        (models / c.model).string(), bad, {},
        [&](const tern::gguf::TensorInfo& t, const tern::gguf::File&, TensorType& type, std::vector<uint8_t>& b) {
          if (t.name != c.tensor) return;
          const size_t rb = size_t(tern::gguf::row_bytes(type, t.dims[0]));
          for (size_t r = 0; r < (c.every_row ? b.size() / rb : 1); ++r) {
            std::vector<uint8_t> row(b.begin() + std::ptrdiff_t(r * rb), b.begin() + std::ptrdiff_t((r + 1) * rb));
            poison_first(type, row, r % 2 == 1);
            std::copy(row.begin(), row.end(), b.begin() + std::ptrdiff_t(r * rb));
          }
        },
        tern::test::TernKeys::Keep);
    expect_error(cli("generate -m " + quote(bad) + " -p 'In the beginning' -n 1", c.tensor),
                 "tensor '" + c.tensor + "' row ");
  }
}

// Overwrites element 0 of a checkpoint tensor with NaN, in place.
void poison_safetensor(const fs::path& file, const std::string& tensor) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  uint64_t n = 0;
  io.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, '\0');
  io.read(header.data(), std::streamsize(n));
  const auto j = nlohmann::json::parse(header);
  const auto& t = j.at(tensor);
  ASSERT_EQ(t.at("dtype"), "F32");
  const uint64_t at = 8 + n + t.at("data_offsets")[0].get<uint64_t>();
  const uint32_t nan = 0x7fc00000u;
  io.seekp(std::streamoff(at));
  io.write(reinterpret_cast<const char*>(&nan), 4);
}

TEST_F(Hostile, NonFiniteNormOrEmbeddingIsRefusedAtPack) {
  for (const std::string name : {"model.norm.weight", "model.embed_tokens.weight"}) {
    const fs::path ck = checkpoint_copy("ck-" + name);
    poison_safetensor(ck / "model.safetensors", name);
    const std::string out = (dir_ / (name + ".gguf")).string();
    expect_error(cli("pack " + quote(ck.string()) + " -o " + quote(out), name), "tensor '" + name + "' row 0 has a non-finite value");
    EXPECT_FALSE(fs::exists(out));
  }
}

// --- 4. tern pack -o never destroys what is at the path -------------------

TEST_F(Hostile, PackRefusesAnOutputThatIsNotAPlainFile) {
  const std::string ck = tiny_checkpoint().string();
  const std::string f = fifo("out.gguf");
  expect_error(cli("pack " + quote(ck) + " -o " + quote(f), "fifo"), f + ": output exists and is a FIFO");
  struct stat st {};
  ASSERT_EQ(::lstat(f.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));

  const std::string target = (dir_ / "precious.txt").string(), link = (dir_ / "link.gguf").string();
  std::ofstream(target) << "keep me";
  fs::create_symlink(target, link);
  expect_error(cli("pack " + quote(ck) + " -o " + quote(link), "link"), link + ": output exists and is a symbolic link");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "keep me");

  const std::string in_dir = (dir_ / "d").string();
  fs::create_directory(in_dir);
  expect_error(cli("pack " + quote(ck) + " -o " + quote(in_dir), "dir"), "output exists and is a directory");
}

TEST_F(Hostile, PackRefusesToOverwriteItsOwnInput) {
  const fs::path ck = checkpoint_copy("ck");
  const std::string before = slurp(ck / "model.safetensors");
  for (const std::string name : {"model.safetensors", "config.json"}) {
    const std::string out = (ck / name).string();
    expect_error(cli("pack " + quote(ck.string()) + " -o " + quote(out), name), out + ": is ");
  }
  // Another spelling of the same file: a hard link outside the checkpoint.
  const fs::path hard = dir_ / "hard.gguf";
  fs::create_hard_link(ck / "model.safetensors", hard);
  expect_error(cli("pack " + quote(ck.string()) + " -o " + quote(hard.string()), "hard"), "one of the pack's inputs");
  EXPECT_EQ(slurp(ck / "model.safetensors"), before);
}

TEST_F(Hostile, PackChecksTheOutputDirectoryFirst) {
  const std::string out = (dir_ / "no-such-dir" / "m.gguf").string();
  auto r = cli("pack " + quote(tiny_checkpoint().string()) + " -o " + quote(out));
  expect_error(r, "cannot create a temporary in");
  EXPECT_EQ(r.out.find("checking the source"), std::string::npos);
}

// --- 5. An interrupted pack leaves no temporary ---------------------------

std::vector<std::string> temporaries_in(const fs::path& d) {
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(d))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) left.push_back(e.path().string());
  return left;
}

// The handlers main() installs, in a child that signals itself while a
// Writer holds its temporary: the child dies of the signal, and the
// temporary is gone. Without the handlers the same child leaves it.
TEST_F(Hostile, SignalsRemoveThePackTemporary) {
  for (const bool handlers : {false, true}) {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGXFSZ}) {
      const fs::path d = dir_ / (std::to_string(sig) + (handlers ? "-handled" : "-default"));
      fs::create_directory(d);
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        if (handlers) tern::remove_temporaries_on_signals();
        tern::gguf::Writer w((d / "m.gguf").string());
        ::raise(sig);
        ::_exit(0);
      }
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << sig;
      EXPECT_EQ(temporaries_in(d).size(), handlers ? 0u : 1u) << "signal " << sig;
      EXPECT_FALSE(fs::exists(d / "m.gguf"));
    }
  }
}

// Through the binary: a file-size limit kills the pack with SIGXFSZ partway
// through writing, deterministically.
TEST_F(Hostile, PackOverTheFileSizeLimitLeavesNothing) {
  const std::string out = (dir_ / "m.gguf").string();
  auto r = tern::test::run("bash -c " + quote("ulimit -f 8; exec " + quote(TERN_EXE) + " pack " +
                                              quote(tiny_checkpoint().string()) + " -o " + quote(out)),
                           "xfsz", dir_);
  EXPECT_EQ(r.exit_code, 128 + SIGXFSZ) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(temporaries_in(dir_).empty());
}

// --- 6. A model file that shrinks while mapped -----------------------------

// A child maps a copy of the model, the copy is truncated, and the child
// touches its last tensor: with the handler main() installs, that is one
// line naming the file and exit status 1, not a bare SIGBUS. Read with
// use_mmap false, the same steps succeed.
TEST_F(Hostile, TruncatedWhileMappedIsOneLineNotSigbus) {
  for (const bool mmap : {true, false}) {
    const fs::path copy = dir_ / (mmap ? "mapped.gguf" : "read.gguf");
    fs::copy_file(tiny_model(), copy);
    const fs::path err = dir_ / (mmap ? "mapped.err" : "read.err");
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::freopen(err.c_str(), "w", stderr);
      tern::report_bus_errors_on_mapped_files();
      const tern::gguf::File f = tern::gguf::File::open(copy.string(), mmap);
      ::truncate(copy.c_str(), 0);
      const tern::gguf::TensorInfo& t = f.tensors().back();
      volatile uint8_t sum = 0;
      for (uint64_t i = 0; i < t.nbytes; ++i) sum = uint8_t(sum + t.data[i]);
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    if (mmap) {
      EXPECT_EQ(WEXITSTATUS(status), 1);
      EXPECT_EQ(slurp(err), "tern: error: " + copy.string() +
                                ": changed on disk while mapped (truncated or rewritten in place); run again, or use --no-mmap\n");
    } else {
      EXPECT_EQ(WEXITSTATUS(status), 0) << slurp(err);
    }
  }
}

TEST_F(Hostile, NoMmapGivesTheSameText) {
  const std::string args = "generate -m " + quote(tiny_model()) + " -p 'In the beginning' -n 12 --temp 0";
  auto a = cli(args, "mmap"), b = cli(args + " --no-mmap", "read");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
}

// --- 7. File text reaches the terminal escaped ----------------------------

TEST_F(Hostile, EscapesInMetadataAreShownNotObeyed) {
  const std::string evil = (dir_ / "evil.gguf").string();
  tern::test::rewrite_file(tiny_model(), evil, {}, [](auto&&...) {}, tern::test::TernKeys::Keep,
                           {{"general.name", tern::gguf::Value::string("x\x1b]0;owned\x07\x1b[2J\xc2\x9b" "31m")}});
  auto r = cli("info " + quote(evil));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos);
  EXPECT_NE(r.out.find("x\\x1b]0;owned\\x07\\x1b[2J\\u009b31m"), std::string::npos) << r.out;

  const std::string arch = (dir_ / "arch.gguf").string();
  tern::test::rewrite_file(tiny_model(), arch, {}, [](auto&&...) {}, tern::test::TernKeys::Keep,
                           {{"general.architecture", tern::gguf::Value::string("bit\x1b[31mnet")}});
  auto e = cli("info " + quote(arch), "arch");
  expect_error(e, "unsupported architecture");
  EXPECT_EQ(e.err.find('\x1b'), std::string::npos) << e.err;
}

}  // namespace

// --- 8. Quiet validation gaps ----------------------------------------------

namespace {

class Gaps : public Hostile {
 protected:
  // The tiny model with one metadata key replaced.
  std::string with_key(const std::string& name, const std::string& key, tern::gguf::Value v, bool arch_key = true) {
    const tern::gguf::File f = tern::gguf::File::open(tiny_model());
    const std::string arch = f.get("general.architecture").as_string("general.architecture");
    const std::string out = (dir_ / (name + ".gguf")).string();
    tern::test::rewrite_file(tiny_model(), out, {}, [](auto&&...) {}, tern::test::TernKeys::Keep,
                             {{arch_key ? arch + "." + key : key, std::move(v)}});
    return out;
  }
};

TEST_F(Gaps, NanSamplingFlagsAreRefused) {
  const std::string run = "generate -m " + quote(tiny_model()) + " -p x -n 2 ";
  expect_error(cli(run + "--temp nan", "temp"), "--temp: 'nan' is not a finite number");
  expect_error(cli(run + "--temp inf", "tinf"), "--temp: 'inf' is not a finite number");
  expect_error(cli(run + "--top-p nan", "topp"), "--top-p: 'nan' is not a finite number from 0 to 1");
}

TEST_F(Gaps, ZeroChunksIsAnErrorNotNan) {
  const std::string text = (dir_ / "t.txt").string();
  std::ofstream(text) << "In the beginning God created the heaven and the earth.";
  expect_error(cli("perplexity -m " + quote(tiny_model()) + " -f " + quote(text) + " --chunks 0"), "--chunks");
}

TEST_F(Gaps, BenchPastTheContextPrintsNoTable) {
  auto r = cli("bench -m " + quote(tiny_model()) + " -p 0 -n 200 -r 1");
  expect_error(r, "a bench test needs 200 positions; the model's context is 128");
  EXPECT_EQ(r.out, "");
}

TEST_F(Gaps, InfiniteRopeThetaOrEpsIsRefused) {
  expect_error(cli("info " + quote(with_key("rope", "rope.freq_base", tern::gguf::Value::f32(INFINITY))), "rope"),
               "must be positive and finite");
  expect_error(cli("info " + quote(with_key("eps", "attention.layer_norm_rms_epsilon", tern::gguf::Value::f32(NAN))), "eps"),
               "must be positive and finite");
}

// RoPE keys that would change every angle silently: a scaling tern does
// not compute, a YaRN factor below 1 or NaN, a rotary width that is not
// the head's.
TEST_F(Gaps, RopeScalingTernDoesNotComputeIsRefused) {
  using tern::gguf::Value;
  expect_error(cli("info " + quote(with_key("linear", "rope.scaling.type", Value::string("linear")))),
               "rope.scaling.type 'linear' is not supported (tern runs yarn)");
  const std::string yarn = with_key("yarn", "rope.scaling.type", Value::string("yarn"));
  for (const auto& [name, v] : {std::pair{"nan", NAN}, std::pair{"half", 0.5f}}) {
    const std::string out = (dir_ / (std::string("factor-") + name + ".gguf")).string();
    const tern::gguf::File f = tern::gguf::File::open(yarn);
    const std::string arch = f.get("general.architecture").as_string("general.architecture");
    tern::test::rewrite_file(yarn, out, {}, [](auto&&...) {}, tern::test::TernKeys::Keep,
                             {{arch + ".rope.scaling.factor", Value::f32(v)}});
    expect_error(cli("info " + quote(out), name), "yarn needs factor >= 1");
  }
  expect_error(cli("info " + quote(with_key("rot", "rope.dimension_count", Value::u32(16)))),
               "rope.dimension_count 16 is not the head size");
}

TEST_F(Gaps, BlockCountBelowTheLayersIsRefused) {
  expect_error(cli("info " + quote(with_key("blocks", "block_count", tern::gguf::Value::u32(1)))),
               "tensor 'blk.1.");
}

TEST_F(Gaps, HugeTokenIdsAreRefusedNotWrapped) {
  const std::string bos = with_key("bos", "tokenizer.ggml.bos_token_id", tern::gguf::Value::u32(0x80000000u), false);
  expect_error(cli("generate -m " + quote(bos) + " -p x -n 1"), "tokenizer.ggml.bos_token_id = 2147483648 is out of range");
  const fs::path ck = checkpoint_copy("ck");
  auto cfg = nlohmann::json::parse(slurp(ck / "config.json"));
  cfg["eos_token_id"] = 2147483648LL;
  std::ofstream(ck / "config.json") << cfg.dump();
  expect_error(cli("pack " + quote(ck.string()) + " -o " + quote((dir_ / "o.gguf").string()), "pack"),
               "'eos_token_id' must be a token id");
}

TEST_F(Gaps, ADirectoryAsTokenizerNamesIt) {
  const fs::path ck = checkpoint_copy("ck");
  fs::remove(ck / "tokenizer.model");
  fs::create_directory(ck / "tokenizer.model");
  expect_error(cli("pack " + quote(ck.string()) + " -o " + quote((dir_ / "o.gguf").string())),
               (ck / "tokenizer.model").string() + ": is a directory");
}

}  // namespace
