// Files the tool writes and libraries it opens (model/read_file.hpp): outputs are written whole or
// not at all, an output naming an input is recognised through any path, and no dlopen is handed
// a FIFO (it would block forever), a device or a folder.
#include <gtest/gtest.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "model/read_file.hpp"

namespace {

using namespace cco::model;

std::string tmp(const char* tag) {
  return testing::TempDir() + "cco_files_" + tag + "_" + std::to_string(::getpid());
}

// Temporary files of this process left in the test folder (write_file's ".cco-<pid>-<n>.tmp").
int leftovers() {
  int n = 0;
  const std::string prefix = ".cco-" + std::to_string(::getpid()) + "-";
  if (DIR* d = ::opendir(testing::TempDir().c_str())) {
    while (dirent* e = ::readdir(d)) n += std::string(e->d_name).rfind(prefix, 0) == 0;
    ::closedir(d);
  }
  return n;
}

TEST(Files, WriteIsWholeOrNothing) {
  const std::string p = tmp("out");
  write_file(p, "first");
  EXPECT_EQ(read_file(p, 100), "first");
  write_file(p, "second, longer");
  EXPECT_EQ(read_file(p, 100), "second, longer");
  // A folder that does not exist: WriteError naming the path, nothing left behind.
  try {
    write_file("/nonexistent/dir/x.json", "x");
    ADD_FAILURE() << "no error";
  } catch (const WriteError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write '/nonexistent/dir/x.json'"), std::string::npos);
  }
  // No temporary file stays beside the output.
  EXPECT_EQ(leftovers(), 0);
  std::remove(p.c_str());
}

// A disk that fills while an output is written (here: a file size limit, which fails the write
// with EFBIG as a full disk fails it with ENOSPC): one clear error, the old file left whole, no
// temporary file behind -- never a truncated file a reader would take as whole.
TEST(Files, AFullDiskLeavesTheOldFileWhole) {
  const std::string p = tmp("full");
  write_file(p, "old and whole");
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto sig = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    write_file(p, std::string(1 << 20, 'x'));
  } catch (const WriteError& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, sig);
  EXPECT_NE(error.find("cannot write '" + p + "'"), std::string::npos) << error;
  EXPECT_EQ(read_file(p, 100), "old and whole");
  EXPECT_EQ(leftovers(), 0);
  std::remove(p.c_str());
}

// Targets that are not regular files are written as they are (--json=/dev/stdout worked before
// outputs went through a temporary file); a symbolic link is written through, and a file keeps
// its mode.
// Any name the filesystem takes works (the temporary file has a short name of its own: a 250-
// character name failed when it became NAME.tmp.<pid>); a write-protected file and a symbolic
// link to nothing are refused with one line and left as they are (also for root, which could
// write them); a link to a file stays a link, its target written.
TEST(Files, LongNamesProtectedFilesAndLinks) {
  const std::string dir = testing::TempDir();
  const std::string longname = dir + std::string(250, 'n');
  write_file(longname, "long");
  EXPECT_EQ(read_file(longname, 100), "long");
  std::remove(longname.c_str());

  const std::string ro = tmp("ro");
  write_file(ro, "kept");
  ASSERT_EQ(::chmod(ro.c_str(), 0444), 0);
  EXPECT_EQ(output_problem(ro), "write-protected (mode 0444)");
  try {
    write_file(ro, "replaced");
    ADD_FAILURE() << "a write-protected file was replaced";
  } catch (const WriteError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write '" + ro + "': write-protected (mode 0444)");
  }
  EXPECT_EQ(read_file(ro, 100), "kept");
  std::remove(ro.c_str());

  const std::string dangling = tmp("dangling");
  ASSERT_EQ(::symlink((dir + "cco_files_nowhere").c_str(), dangling.c_str()), 0);
  EXPECT_EQ(output_problem(dangling), "a symbolic link to nothing (No such file or directory)");
  EXPECT_THROW(write_file(dangling, "x"), WriteError);
  struct stat lst {};
  ASSERT_EQ(::lstat(dangling.c_str(), &lst), 0);
  EXPECT_TRUE(S_ISLNK(lst.st_mode));  // still the link, nothing created behind it
  EXPECT_NE(::access((dir + "cco_files_nowhere").c_str(), F_OK), 0);
  std::remove(dangling.c_str());

  const std::string target = tmp("ltarget"), link = tmp("llink");
  write_file(target, "old");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(output_problem(link), "");
  write_file(link, "new");
  ASSERT_EQ(::lstat(link.c_str(), &lst), 0);
  EXPECT_TRUE(S_ISLNK(lst.st_mode));
  EXPECT_EQ(read_file(target, 100), "new");
  EXPECT_EQ(output_problem(tmp("never_made")), "");
  EXPECT_EQ(leftovers(), 0);
  std::remove(link.c_str());
  std::remove(target.c_str());
}

TEST(Files, WriteToDevicesLinksAndModes) {
  EXPECT_NO_THROW(write_file("/dev/null", "discarded"));
  const std::string target = tmp("target"), link = tmp("link");
  write_file(target, "old");
  ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  write_file(link, "new");
  EXPECT_EQ(read_file(target, 100), "new");
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link stays a link";
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::remove(link.c_str());
  std::remove(target.c_str());
}

// A named FIFO that no process reads: one error, at once (the open waited for a reader for
// ever: review of `cco report --svg FIFO`).
// Every input is read with a limit: a file over it is one clear line, never all of it.
TEST(Files, AFileOverItsLimitIsRefused) {
  const std::string path = ::testing::TempDir() + "cco_big_input";
  cco::model::write_file(path, std::string((2u << 20) + 1, 'x'));
  EXPECT_EQ(cco::model::read_file(path, 3u << 20).size(), (2u << 20) + 1);
  try {
    cco::model::read_file(path, 2u << 20);
    ADD_FAILURE() << "a file of 2 MiB + 1 byte was read with a limit of 2 MiB";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("larger than the limit of 2 MiB"), std::string::npos) << e.what();
  }
  ::unlink(path.c_str());
}

TEST(Files, WriteToAFifoNobodyReadsFailsAtOnce) {
  const std::string fifo = tmp("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    write_file(fifo, "text");
    ADD_FAILURE() << "a FIFO with no reader was written";
  } catch (const WriteError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write '" + fifo + "': a FIFO that no process reads");
  }
  std::remove(fifo.c_str());
}

TEST(Files, SameFileThroughAnyPath) {
  const std::string p = tmp("same");
  write_file(p, "x");
  const std::string dir = p.substr(0, p.rfind('/'));
  EXPECT_TRUE(same_file(p, dir + "/./" + p.substr(p.rfind('/') + 1)));
  EXPECT_FALSE(same_file(p, p + ".other"));  // missing
  const std::string q = tmp("other");
  write_file(q, "x");
  EXPECT_FALSE(same_file(p, q));
  std::remove(p.c_str());
  std::remove(q.c_str());
}

TEST(Files, LibraryPathsThatMustNotReachDlopen) {
  const std::string fifo = tmp("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(library_file_problem(fifo).find("not a regular file (a FIFO)"), std::string::npos);
  EXPECT_NE(library_file_problem("/dev/null").find("a socket or a device"), std::string::npos);
  EXPECT_NE(library_file_problem("/tmp").find("a folder"), std::string::npos);
  EXPECT_EQ(library_file_problem("libnccl.so.2"), "");  // the loader searches for it
  EXPECT_EQ(library_file_problem("/nonexistent/libx.so"), "");  // dlopen says it is missing
  const std::string reg = tmp("lib");
  write_file(reg, "not really a library");
  EXPECT_EQ(library_file_problem(reg), "");
  std::remove(fifo.c_str());
  std::remove(reg.c_str());
}

}  // namespace
