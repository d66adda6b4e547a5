// Writer behaviour: key replacement, declaration checks, and atomicity (no
// output and no temporary left behind on any failure path).
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "gguf_test_util.h"

namespace tern::gguf::test {
namespace {

TEST(Writer, SetReplacesKeepingPosition) {
  const auto path = (scratch_dir() / "r.gguf").string();
  {
    Writer w(path);
    w.set("a", Value::u32(1));
    w.set("b", Value::u32(2));
    w.set("a", Value::string("x"));
    w.finish();
  }
  File f = File::open(path);
  ASSERT_EQ(f.metadata().size(), 2u);
  EXPECT_EQ(f.metadata()[0].first, "a");
  EXPECT_EQ(f.metadata()[0].second.as_string("a"), "x");
}

TEST(Writer, NothingLeftWhenDestroyedBeforeFinish) {
  const auto dir = scratch_dir();
  {
    Writer w((dir / "x.gguf").string());
    w.add_tensor("x", TensorType::F32, {4});
    w.write_header();
    w.write_tensor("x", std::vector<uint8_t>(16));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // the temporary
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(Writer, NothingLeftAfterException) {
  const auto dir = scratch_dir();
  try {
    Writer w((dir / "x.gguf").string());
    w.add_tensor("x", TensorType::F32, {4});
    w.write_header();
    w.write_tensor("x", std::vector<uint8_t>(15));
    FAIL() << "short tensor accepted";
  } catch (const tern::Error& e) {
    EXPECT_CONTAINS(e.what(), "tensor 'x': got 15 bytes, expected 16");
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(Writer, OnlyFinalFileAfterFinish) {
  const auto dir = scratch_dir();
  Writer w((dir / "x.gguf").string());
  w.finish();
  ASSERT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  EXPECT_TRUE(fs::exists(dir / "x.gguf"));
  EXPECT_EQ(File::open((dir / "x.gguf").string()).metadata().size(), 0u);
}

TEST(Writer, TensorOrderAndCountAreChecked) {
  const auto dir = scratch_dir();
  Writer w((dir / "o.gguf").string());
  w.add_tensor("a", TensorType::F32, {1});
  w.add_tensor("b", TensorType::F32, {1});
  EXPECT_THROW(w.add_tensor("a", TensorType::F32, {1}), tern::Error);
  EXPECT_THROW(w.write_tensor("a", std::vector<uint8_t>(4)), tern::Error);  // before header
  w.write_header();
  try {
    w.write_tensor("b", std::vector<uint8_t>(4));
    FAIL();
  } catch (const tern::Error& e) {
    EXPECT_CONTAINS(e.what(), "expected tensor 'a' next");
  }
  w.write_tensor("a", std::vector<uint8_t>(4));
  try {
    w.finish();
    FAIL();
  } catch (const tern::Error& e) {
    EXPECT_CONTAINS(e.what(), "1 of 2 tensors unwritten");
  }
  EXPECT_FALSE(fs::exists(dir / "o.gguf"));
}

// The packer streams big float tensors in pieces: the file must be the same
// bytes as one write, and a piece past the declared size is an error.
TEST(Writer, AppendedPiecesEqualOneWrite) {
  const auto dir = scratch_dir();
  std::vector<uint8_t> a(40), b(12);
  for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i * 7);
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(200 - i);
  auto write = [&](const std::string& name, bool pieces) {
    Writer w((dir / name).string());
    w.add_tensor("a", TensorType::F32, {10});
    w.add_tensor("b", TensorType::F32, {3});
    w.write_header();
    if (pieces) {
      w.append_tensor("a", std::span(a).first(16));
      EXPECT_THROW(w.write_tensor("a", std::span(a).subspan(16)), tern::Error);  // mid-tensor
      w.append_tensor("a", std::span(a).subspan(16, 20));
      w.append_tensor("a", std::span(a).subspan(36));
    } else {
      w.write_tensor("a", a);
    }
    w.write_tensor("b", b);
    w.finish();
    std::ifstream in(dir / name, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
  };
  EXPECT_EQ(write("one.gguf", false), write("pieces.gguf", true));

  Writer w((dir / "over.gguf").string());
  w.add_tensor("a", TensorType::F32, {10});
  w.write_header();
  w.append_tensor("a", std::span(a).first(32));
  try {
    w.append_tensor("a", std::span(a).first(12));
    FAIL();
  } catch (const tern::Error& e) {
    EXPECT_CONTAINS(e.what(), "tensor 'a': got 44 bytes, expected 40");
  }
}

TEST(Writer, RejectsBadDeclarations) {
  const auto dir = scratch_dir();
  Writer w((dir / "d.gguf").string());
  EXPECT_THROW(w.add_tensor("z", TensorType::F32, {}), tern::Error);
  EXPECT_THROW(w.add_tensor("z", TensorType::F32, {1, 1, 1, 1, 1}), tern::Error);
  EXPECT_THROW(w.add_tensor("z", TensorType::F32, {0}), tern::Error);
  EXPECT_THROW(w.add_tensor("z", TensorType::TQ2_0, {100}), tern::Error);
  EXPECT_THROW(w.add_tensor("z", static_cast<TensorType>(99), {1}), tern::Error);
  EXPECT_THROW(w.add_tensor("z", TensorType::F32, {1ull << 40, 1ull << 40}), tern::Error);
  EXPECT_THROW(w.set("v", scalar(ValueType::U8, 256)), tern::Error);
  EXPECT_THROW(w.set("general.alignment", Value::u32(64)), tern::Error);
  EXPECT_NO_THROW(w.set("general.alignment", Value::u32(32)));
  Value broken = Value::f32_array(std::vector<float>{1, 2});
  broken.count = 3;
  EXPECT_THROW(w.set("v", broken), tern::Error);
  EXPECT_THROW(Writer((dir / "e.gguf").string(), 48), tern::Error);
}

TEST(Writer, CannotCreateInMissingDirectory) {
  const auto dir = scratch_dir();
  const std::string path = (dir / "nope" / "x.gguf").string();
  try {
    Writer w(path);
    FAIL();
  } catch (const tern::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": cannot create a temporary in " + (dir / "nope").string() + ": No such file or directory");
  }
}

// Root ignores directory permissions, so as root the attempt runs in a child
// that has dropped to "nobody".
TEST(Writer, CannotCreateInUnwritableDirectory) {
  const auto dir = scratch_dir() / "ro";
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::others_read |
                           fs::perms::others_exec);
  const std::string path = (dir / "x.gguf").string();
  auto attempt = [&]() -> std::string {
    try {
      Writer w(path);
    } catch (const tern::Error& e) {
      return e.what();
    }
    return "<no error>";
  };
  std::string msg;
  if (::geteuid() != 0) {
    msg = attempt();
  } else {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      std::string m = ::setgid(65534) == 0 && ::setuid(65534) == 0 ? attempt() : "setuid failed";
      (void)!::write(fds[1], m.data(), m.size());
      ::_exit(0);
    }
    ::close(fds[1]);
    char buf[512];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (msg == "setuid failed") GTEST_SKIP() << "cannot drop privileges";
  }
  fs::permissions(dir, fs::perms::owner_all);
  EXPECT_EQ(msg, path + ": cannot create a temporary in " + fs::path(path).parent_path().string() + ": Permission denied");
  EXPECT_TRUE(fs::is_empty(dir));
}

// A file size limit makes write(2) fail with EFBIG, standing in for ENOSPC:
// the writer must report it and leave nothing behind.
TEST(Writer, WriteFailureIsReportedAndCleanedUp) {
  const auto dir = scratch_dir();
  const std::string path = (dir / "big.gguf").string();
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 64 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string msg;
  try {
    Writer w(path);
    w.add_tensor("x", TensorType::F32, {1024, 1024});
    w.write_header();
    w.write_tensor("x", std::vector<uint8_t>(4u << 20));
    w.finish();
  } catch (const tern::Error& e) {
    msg = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(msg, path + ": write failed: File too large");
  EXPECT_TRUE(fs::is_empty(dir));
}

}  // namespace
}  // namespace tern::gguf::test
