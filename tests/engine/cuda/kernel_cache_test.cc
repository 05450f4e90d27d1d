// The on-disk kernel cache: keys, the entry format and its checks, eviction,
// degraded directories, and sharing between processes. No GPU needed: most
// tests "compile" with a fake compiler; KernelCacheNvrtcTest runs NVRTC in
// child processes (kernel_cache_helper) and checks the files they leave.
#include "engine/cuda/kernel_cache.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/kernel_cache_internal.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

#ifndef GPUFLOW_KERNEL_CACHE_HELPER
#error "GPUFLOW_KERNEL_CACHE_HELPER must name the kernel_cache_helper binary"
#endif

extern char** environ;

namespace gpuflow::cuda {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

KernelKey TestKey(const std::string& source) {
  KernelKey key;
  key.source = source;
  key.name = "gf_test";
  key.options = {"--gpu-architecture=sm_90", "-fmad=false"};
  key.arch = 90;
  key.nvrtc_version = "13.0";
  key.header_identity = "0123456789abcdef";
  return key;
}

// A stand-in cubin, different for each source.
std::string FakeCubin(const KernelKey& key) {
  return absl::StrCat("cubin of ", key.source, std::string(1000, 'x'));
}

// A compiler that counts its calls.
struct FakeCompiler {
  int calls = 0;
  absl::StatusOr<std::string> operator()(const KernelKey& key) {
    ++calls;
    return FakeCubin(key);
  }
};

class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = ::testing::TempDir() + "kernel_cache_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr) << std::strerror(errno);
    root_ = dir;
    dir_ = root_ + "/kernels";
  }
  void TearDown() override {
    std::error_code error;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, error);
    fs::remove_all(root_, error);
  }

  DiskKernelCacheOptions Options(int64_t max_bytes = int64_t{1} << 30) {
    return {.directory = dir_, .max_bytes = max_bytes, .warn = [this](absl::string_view message) {
              warnings_.emplace_back(message);
            }};
  }

  absl::StatusOr<CachedCubin> Get(DiskKernelCache& cache, const KernelKey& key) {
    return cache.GetOrCompile(key, [&] { return compiler_(key); });
  }

  // Names in the cache directory (entries and anything else).
  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    std::error_code error;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_, error)) {
      names.push_back(e.path().filename().string());
    }
    return names;
  }

  std::string EntryName(const KernelKey& key) const {
    return DigestHex(DigestOf(key)) + std::string(internal::kEntrySuffix);
  }

  // Stores `key`, damages its file with `damage`, and checks that a new
  // cache instance (a restarted server) recompiles it and replaces the file
  // with a valid entry.
  void ExpectRecompiledAfter(const std::function<void(std::string& file)>& damage) {
    const KernelKey key = TestKey("damaged");
    {
      DiskKernelCache cache(Options());
      ASSERT_THAT(Get(cache, key), IsOk());
    }
    ASSERT_EQ(compiler_.calls, 1);
    const std::string path = dir_ + "/" + EntryName(key);
    std::string file = ReadFile(path);
    damage(file);
    WriteFile(path, file);

    DiskKernelCache cache(Options());
    absl::StatusOr<CachedCubin> cubin = Get(cache, key);
    ASSERT_THAT(cubin, IsOk());
    EXPECT_FALSE(cubin->from_disk);
    EXPECT_EQ(compiler_.calls, 2);
    EXPECT_EQ(cache.stats().bad_entries, 1);
    EXPECT_THAT(internal::DecodeEntry(ReadFile(path), DigestOf(key)), IsOkAndHolds(cubin->cubin));
    EXPECT_THAT(Files(), ElementsAre(EntryName(key)));
    EXPECT_THAT(warnings_, IsEmpty());
  }

  std::string root_;
  std::string dir_;
  FakeCompiler compiler_;
  std::vector<std::string> warnings_;
};

TEST(KernelKeyTest, DigestCoversEveryField) {
  const KernelKey base = TestKey("source");
  const KernelDigest digest = DigestOf(base);
  EXPECT_EQ(DigestOf(TestKey("source")), digest);
  std::vector<KernelKey> changed(8, base);
  changed[0].source += " ";
  changed[1].name = "gf_other";
  changed[2].options.push_back("-lineinfo");
  changed[3].options = {"--gpu-architecture=sm_90-fmad=false"};  // same bytes, other split
  changed[4].arch = 100;
  changed[5].nvrtc_version = "13.1";
  changed[6].header_identity = "fedcba9876543210";
  changed[7].gpuflow_version = "9.9.9";
  for (size_t i = 0; i < changed.size(); ++i) {
    EXPECT_NE(DigestOf(changed[i]), digest) << "field " << i;
  }
  EXPECT_EQ(base.gpuflow_version, GpuflowVersion());
  EXPECT_THAT(DigestHex(digest), SizeIs(64));
}

TEST(KernelKeyTest, HeaderIdentityFollowsHeaderContentsAndDirectory) {
  std::string dir = ::testing::TempDir() + "kernel_cache_headers.XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string empty = CudaHeaderIdentity(dir);
  WriteFile(dir + "/cuda_fp16.h", "// version 1\n");
  const std::string v1 = CudaHeaderIdentity(dir);
  WriteFile(dir + "/cuda_fp16.h", "// version 2\n");
  const std::string v2 = CudaHeaderIdentity(dir);
  EXPECT_NE(empty, v1);
  EXPECT_NE(v1, v2);
  EXPECT_EQ(CudaHeaderIdentity(dir), v2);
  EXPECT_NE(CudaHeaderIdentity(dir + "/."), v2);  // another include path
  fs::remove_all(dir);
}

TEST(KernelKeyTest, ResolvesTheCacheDirectory) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::optional<std::string> saved_xdg = xdg ? std::optional<std::string>(xdg) : std::nullopt;
  const std::optional<std::string> saved_home =
      home ? std::optional<std::string>(home) : std::nullopt;

  EXPECT_EQ(ResolveKernelCacheDir("none"), "");
  EXPECT_EQ(ResolveKernelCacheDir("/var/cache/k"), "/var/cache/k");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(ResolveKernelCacheDir(""), "/xdg/gpuflow/kernels");
  setenv("XDG_CACHE_HOME", "relative", 1);  // the XDG spec says: ignore it
  EXPECT_EQ(ResolveKernelCacheDir(""), "/home/u/.cache/gpuflow/kernels");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(ResolveKernelCacheDir(""), "/home/u/.cache/gpuflow/kernels");
  unsetenv("HOME");
  EXPECT_EQ(ResolveKernelCacheDir(""), "");

  if (saved_xdg) setenv("XDG_CACHE_HOME", saved_xdg->c_str(), 1);
  if (saved_home) setenv("HOME", saved_home->c_str(), 1);
}

TEST(KernelCacheEntryTest, DecodeNamesWhatIsWrong) {
  const KernelDigest key = DigestOf(TestKey("a"));
  const std::string entry = internal::EncodeEntry(key, "cubin bytes");
  EXPECT_THAT(internal::DecodeEntry(entry, key), IsOkAndHolds("cubin bytes"));
  EXPECT_THAT(internal::DecodeEntry(entry.substr(0, 40), key),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated header")));
  EXPECT_THAT(internal::DecodeEntry(entry.substr(0, entry.size() - 1), key),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("the file holds")));
  EXPECT_THAT(internal::DecodeEntry(entry, DigestOf(TestKey("b"))),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("another key")));
  std::string bad = entry;
  bad[0] = 'X';
  EXPECT_THAT(internal::DecodeEntry(bad, key),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("magic")));
  bad = entry;
  bad[internal::kEntryVersionOffset] = 7;
  EXPECT_THAT(internal::DecodeEntry(bad, key),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("format version 7")));
  bad = entry;
  bad.back() ^= 1;
  EXPECT_THAT(internal::DecodeEntry(bad, key),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checksum")));
}

TEST_F(KernelCacheTest, MissCompilesAndStoresThenAnotherInstanceLoads) {
  const KernelKey key = TestKey("kernel");
  {
    DiskKernelCache cache(Options());
    absl::StatusOr<CachedCubin> cubin = Get(cache, key);
    ASSERT_THAT(cubin, IsOk());
    EXPECT_FALSE(cubin->from_disk);
    EXPECT_EQ(cache.stats().misses, 1);
    EXPECT_EQ(cache.stats().stores, 1);
    EXPECT_EQ(cache.stats().entries, 1);
    EXPECT_EQ(cache.stats().bytes,
              internal::kEntryHeaderBytes + static_cast<int64_t>(cubin->cubin.size()));
  }
  // Only the entry: no temporary file is left behind.
  EXPECT_THAT(Files(), ElementsAre(EntryName(key)));
  DiskKernelCache cache(Options());
  absl::StatusOr<CachedCubin> cubin = Get(cache, key);
  ASSERT_THAT(cubin, IsOk());
  EXPECT_TRUE(cubin->from_disk);
  EXPECT_EQ(compiler_.calls, 1);
  EXPECT_EQ(cache.stats().hits, 1);
  EXPECT_EQ(cubin->cubin, FakeCubin(key));
  EXPECT_THAT(warnings_, IsEmpty());
}

TEST_F(KernelCacheTest, CompileErrorIsReturnedAndNothingStored) {
  DiskKernelCache cache(Options());
  absl::StatusOr<CachedCubin> cubin =
      cache.GetOrCompile(TestKey("bad"), []() -> absl::StatusOr<std::string> {
        return absl::InvalidArgumentError("NVRTC could not compile");
      });
  EXPECT_THAT(cubin, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NVRTC")));
  EXPECT_THAT(Files(), IsEmpty());
}

TEST_F(KernelCacheTest, RecompilesCorruptEntry) {
  ExpectRecompiledAfter([](std::string& file) { file[file.size() / 2] ^= 0x40; });
}

TEST_F(KernelCacheTest, RecompilesTruncatedEntry) {
  ExpectRecompiledAfter([](std::string& file) { file.resize(file.size() - 100); });
}

TEST_F(KernelCacheTest, RecompilesEntryTruncatedInsideItsHeader) {
  ExpectRecompiledAfter([](std::string& file) { file.resize(20); });
}

TEST_F(KernelCacheTest, RecompilesEmptyEntry) {
  ExpectRecompiledAfter([](std::string& file) { file.clear(); });
}

TEST_F(KernelCacheTest, RecompilesEntryWithAnotherKey) {
  // A whole, valid entry of another kernel under this kernel's name.
  const KernelKey other = TestKey("another kernel");
  ExpectRecompiledAfter(
      [&](std::string& file) { file = internal::EncodeEntry(DigestOf(other), FakeCubin(other)); });
}

TEST_F(KernelCacheTest, RecompilesEntryOfAnotherFormatVersion) {
  ExpectRecompiledAfter([](std::string& file) {
    file[internal::kEntryVersionOffset] = internal::kEntryFormatVersion + 1;
  });
}

TEST_F(KernelCacheTest, EvictionKeepsTheMostRecentlyUsedWithinTheBound) {
  const KernelKey a = TestKey("a"), b = TestKey("b"), c = TestKey("c"), d = TestKey("d");
  const int64_t entry_bytes =
      internal::kEntryHeaderBytes + static_cast<int64_t>(FakeCubin(a).size());
  DiskKernelCache cache(Options(3 * entry_bytes));
  for (const KernelKey* key : {&a, &b, &c}) ASSERT_THAT(Get(cache, *key), IsOk());
  EXPECT_THAT(Files(), SizeIs(3));
  // Fix the LRU clock (mtimes) to a < b < c, then use a again.
  int64_t seconds = 1000;
  for (const KernelKey* key : {&a, &b, &c}) {
    const struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, (dir_ + "/" + EntryName(*key)).c_str(), times, 0), 0);
    seconds += 1000;
  }
  absl::StatusOr<CachedCubin> hit = Get(cache, a);
  ASSERT_THAT(hit, IsOk());
  EXPECT_TRUE(hit->from_disk);

  ASSERT_THAT(Get(cache, d), IsOk());  // over the bound: b, least recently used, goes
  EXPECT_THAT(Files(), UnorderedElementsAre(EntryName(a), EntryName(c), EntryName(d)));
  EXPECT_EQ(cache.stats().evictions, 1);
  EXPECT_EQ(cache.stats().entries, 3);
  EXPECT_EQ(cache.stats().bytes, 3 * entry_bytes);
  // b compiles again (and evicts c, now the oldest).
  absl::StatusOr<CachedCubin> again = Get(cache, b);
  ASSERT_THAT(again, IsOk());
  EXPECT_FALSE(again->from_disk);
  EXPECT_THAT(Files(), UnorderedElementsAre(EntryName(a), EntryName(b), EntryName(d)));
}

TEST_F(KernelCacheTest, RecentEntriesListsTheNewestFirstWithinTheBytes) {
  const KernelKey a = TestKey("a"), b = TestKey("b"), c = TestKey("c");
  const int64_t entry_bytes =
      internal::kEntryHeaderBytes + static_cast<int64_t>(FakeCubin(a).size());
  DiskKernelCache cache(Options());
  for (const KernelKey* key : {&a, &b, &c}) ASSERT_THAT(Get(cache, *key), IsOk());
  // LRU clock: b < c < a.
  int64_t seconds = 1000;
  for (const KernelKey* key : {&b, &c, &a}) {
    const struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, (dir_ + "/" + EntryName(*key)).c_str(), times, 0), 0);
    seconds += 1000;
  }
  EXPECT_THAT(cache.RecentEntries(3 * entry_bytes),
              ElementsAre(DigestOf(a), DigestOf(c), DigestOf(b)));
  EXPECT_THAT(cache.RecentEntries(2 * entry_bytes + 1), ElementsAre(DigestOf(a), DigestOf(c)));
  EXPECT_THAT(cache.RecentEntries(0), IsEmpty());
}

TEST_F(KernelCacheTest, OpeningEvictsDownToASmallerBound) {
  const KernelKey a = TestKey("a"), b = TestKey("b");
  {
    DiskKernelCache cache(Options());
    ASSERT_THAT(Get(cache, a), IsOk());
    ASSERT_THAT(Get(cache, b), IsOk());
  }
  const struct timespec old[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, (dir_ + "/" + EntryName(a)).c_str(), old, 0), 0);
  const int64_t entry_bytes =
      internal::kEntryHeaderBytes + static_cast<int64_t>(FakeCubin(a).size());
  DiskKernelCache cache(Options(entry_bytes));
  EXPECT_THAT(Files(), ElementsAre(EntryName(b)));
  EXPECT_EQ(cache.stats().evictions, 1);
}

TEST_F(KernelCacheTest, EntryLargerThanTheBoundIsNotStored) {
  DiskKernelCache cache(Options(/*max_bytes=*/100));
  ASSERT_THAT(Get(cache, TestKey("big")), IsOk());
  EXPECT_THAT(Files(), IsEmpty());
  EXPECT_THAT(warnings_, IsEmpty());
}

TEST_F(KernelCacheTest, RemovesStaleTemporaryFilesOnly) {
  fs::create_directories(dir_);
  const std::string stale = std::string(internal::kTempPrefix) + "stale";
  const std::string fresh = std::string(internal::kTempPrefix) + "fresh";
  WriteFile(dir_ + "/" + stale, "half an entry");
  WriteFile(dir_ + "/" + fresh, "an entry being written");
  WriteFile(dir_ + "/README", "not ours");
  const struct timespec old[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, (dir_ + "/" + stale).c_str(), old, 0), 0);
  DiskKernelCache cache(Options());
  EXPECT_THAT(Files(), UnorderedElementsAre(fresh, "README"));
  EXPECT_EQ(cache.stats().entries, 0);
}

TEST_F(KernelCacheTest, EmptyDirectoryMeansNoDiskLayer) {
  DiskKernelCache cache({.directory = "", .max_bytes = 0, .warn = nullptr});
  EXPECT_FALSE(cache.enabled());
  ASSERT_THAT(Get(cache, TestKey("k")), IsOk());
  ASSERT_THAT(Get(cache, TestKey("k")), IsOk());
  EXPECT_EQ(compiler_.calls, 2);
}

TEST_F(KernelCacheTest, DirectoryThatCannotBeCreatedMeansMemoryOnlyWithOneWarning) {
  // A path under a regular file: mkdir fails for every user, root included.
  WriteFile(root_ + "/file", "");
  dir_ = root_ + "/file/kernels";
  DiskKernelCache cache(Options());
  EXPECT_FALSE(cache.enabled());
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<CachedCubin> cubin = Get(cache, TestKey("k"));
    ASSERT_THAT(cubin, IsOk());
    EXPECT_FALSE(cubin->from_disk);
  }
  EXPECT_EQ(compiler_.calls, 3);
  ASSERT_THAT(warnings_, SizeIs(1));
  EXPECT_THAT(warnings_[0], HasSubstr("cannot create"));
  EXPECT_THAT(warnings_[0], HasSubstr("memory only"));
}

TEST_F(KernelCacheTest, ReadOnlyDirectoryIsReadButNotWrittenWithOneWarning) {
  if (geteuid() == 0) {
    GTEST_SKIP() << "root writes through directory permissions; the failed-write path is "
                    "covered by KernelCacheTest.FullDiskMeansMemoryOnlyWithOneWarning";
  }
  const KernelKey stored = TestKey("stored");
  {
    DiskKernelCache cache(Options());
    ASSERT_THAT(Get(cache, stored), IsOk());
  }
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  DiskKernelCache cache(Options());
  EXPECT_TRUE(cache.enabled());
  EXPECT_FALSE(cache.writable());
  absl::StatusOr<CachedCubin> hit = Get(cache, stored);
  ASSERT_THAT(hit, IsOk());
  EXPECT_TRUE(hit->from_disk);
  for (const char* source : {"new 1", "new 2"}) {
    absl::StatusOr<CachedCubin> cubin = Get(cache, TestKey(source));
    ASSERT_THAT(cubin, IsOk());
    EXPECT_FALSE(cubin->from_disk);
  }
  EXPECT_THAT(Files(), ElementsAre(EntryName(stored)));
  ASSERT_THAT(warnings_, SizeIs(1));
  EXPECT_THAT(warnings_[0], HasSubstr("not writable"));
}

// ---------------------------------------------------------------- other processes

struct HelperRun {
  int exit_status = -1;
  std::string output;  // stdout
};

// Starts kernel_cache_helper with `args`, its stdout to `out_path`.
pid_t SpawnHelper(const std::vector<std::string>& args, const std::string& out_path) {
  std::vector<std::string> strings = {GPUFLOW_KERNEL_CACHE_HELPER};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(error, 0) << "posix_spawn " << argv[0] << ": " << std::strerror(error);
  return error == 0 ? pid : -1;
}

HelperRun WaitHelper(pid_t pid, const std::string& out_path) {
  HelperRun run;
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)) {
    run.exit_status = WEXITSTATUS(status);
  }
  run.output = ReadFile(out_path);
  return run;
}

HelperRun RunHelper(const std::vector<std::string>& args, const std::string& out_path) {
  return WaitHelper(SpawnHelper(args, out_path), out_path);
}

// The digest a helper printed ("... digest=HEX").
std::string DigestIn(const std::string& output) {
  const size_t at = output.find("digest=");
  return at == std::string::npos ? "" : output.substr(at + 7, 64);
}

TEST_F(KernelCacheTest, FullDiskMeansMemoryOnlyWithOneWarning) {
  // RLIMIT_FSIZE makes writes past 1 KiB of a file fail (EFBIG) as a full
  // disk (ENOSPC) would: the 4 KiB entry cannot be written, the helper's
  // one line of output can. Needs no privileges and binds root too.
  const HelperRun run =
      RunHelper({dir_, "--fake", "--file_size_limit=1024"}, root_ + "/helper.out");
  EXPECT_EQ(run.exit_status, 0);
  EXPECT_THAT(run.output, StartsWith("result=compiled warnings=1 "));
  EXPECT_THAT(Files(), IsEmpty());  // the temporary file was removed too
}

// The kernel_cache_helper processes compile a trivial kernel with NVRTC
// (well under a second each).
using KernelCacheNvrtcTest = KernelCacheTest;

TEST_F(KernelCacheNvrtcTest, MissThenHitAcrossProcesses) {
  const HelperRun first = RunHelper({dir_}, root_ + "/first.out");
  ASSERT_EQ(first.exit_status, 0);
  EXPECT_THAT(first.output, StartsWith("result=compiled warnings=0 "));
  const HelperRun second = RunHelper({dir_}, root_ + "/second.out");
  ASSERT_EQ(second.exit_status, 0);
  EXPECT_THAT(second.output, StartsWith("result=disk_hit warnings=0 "));

  const std::string digest = DigestIn(first.output);
  ASSERT_THAT(digest, SizeIs(64));
  EXPECT_EQ(DigestIn(second.output), digest);
  EXPECT_THAT(Files(), ElementsAre(digest + std::string(internal::kEntrySuffix)));
  const std::string file = ReadFile(dir_ + "/" + Files()[0]);
  ASSERT_GT(file.size(), static_cast<size_t>(internal::kEntryHeaderBytes));
  EXPECT_THAT(file.substr(internal::kEntryHeaderBytes), StartsWith("\x7f"
                                                                   "ELF"));
}

TEST_F(KernelCacheNvrtcTest, ProcessesRacingOnOneKeyBothSucceedAndLeaveOneValidEntry) {
  const std::string barrier = root_ + "/go";
  const pid_t a = SpawnHelper({dir_, "--barrier=" + barrier}, root_ + "/a.out");
  const pid_t b = SpawnHelper({dir_, "--barrier=" + barrier}, root_ + "/b.out");
  WriteFile(barrier, "");
  const HelperRun run_a = WaitHelper(a, root_ + "/a.out");
  const HelperRun run_b = WaitHelper(b, root_ + "/b.out");
  EXPECT_EQ(run_a.exit_status, 0);
  EXPECT_EQ(run_b.exit_status, 0);
  EXPECT_THAT(run_a.output, HasSubstr("warnings=0"));
  EXPECT_THAT(run_b.output, HasSubstr("warnings=0"));

  const std::string digest = DigestIn(run_a.output);
  ASSERT_THAT(digest, SizeIs(64));
  EXPECT_EQ(DigestIn(run_b.output), digest);
  // One entry, no temporary files, and it is whole: a third process hits.
  EXPECT_THAT(Files(), ElementsAre(digest + std::string(internal::kEntrySuffix)));
  const HelperRun third = RunHelper({dir_}, root_ + "/third.out");
  EXPECT_EQ(third.exit_status, 0);
  EXPECT_THAT(third.output, StartsWith("result=disk_hit warnings=0 "));
}

}  // namespace
}  // namespace gpuflow::cuda
