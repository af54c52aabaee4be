#include "model/read_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "model/limits.hpp"

namespace cco::model {

std::string read_file(const std::string& path, std::size_t limit) {
  const std::string too_large =
      "larger than the limit of " +
      (limit >= (1u << 20) ? std::to_string(limit >> 20) + " MiB" : std::to_string(limit) + " bytes");
  // O_NONBLOCK: opening a FIFO with no writer must not hang; it is refused below anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw FileError(path, std::string("cannot be read (") + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    throw FileError(path, dir ? "a folder, not a file"
                              : "not a regular file (a FIFO, a socket or a device)");
  }
  if (static_cast<std::size_t>(st.st_size) > limit) {
    ::close(fd);
    throw FileError(path, too_large);
  }
  std::string out;
  out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int e = errno;
      ::close(fd);
      throw FileError(path, std::string("cannot be read (") + std::strerror(e) + ")");
    }
    if (r == 0) break;
    out.append(buf, static_cast<std::size_t>(r));
    if (out.size() > limit) {  // the file grew while being read
      ::close(fd);
      throw FileError(path, too_large);
    }
  }
  ::close(fd);
  return out;
}

namespace {
// Writes all of `text` to `fd`; false (errno set) on failure.
bool write_all(int fd, std::string_view text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}
}  // namespace

std::string output_problem(const std::string& path) {
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0) return {};  // a new file
  struct stat st {};
  if (S_ISLNK(lst.st_mode) && ::stat(path.c_str(), &st) != 0)
    return "a symbolic link to nothing (" + std::string(std::strerror(errno)) + ")";
  if (S_ISLNK(lst.st_mode)) lst = st;
  if (S_ISREG(lst.st_mode) && (lst.st_mode & 0222) == 0) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(lst.st_mode & 07777));
    return std::string("write-protected (mode ") + mode + ")";
  }
  return {};
}

namespace {

// Writes `text` into the already opened `fd` and closes it; throws WriteError naming `path`.
void write_and_close(int fd, const std::string& path, std::string_view text) {
  const bool ok = write_all(fd, text);
  const int err = errno;
  ::close(fd);
  if (!ok) throw WriteError("cannot write '" + path + "' (" + std::strerror(err) + ")");
}

}  // namespace

void write_file(const std::string& path, std::string_view text) {
  if (const std::string why = output_problem(path); !why.empty())
    throw WriteError("cannot write '" + path + "': " + why);
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  struct stat lst {};
  const bool link = ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
  if (exists && !S_ISREG(st.st_mode)) {
    // /dev/stdout, a pipe, a terminal: written as it is (there is nothing to rename over). A named
    // FIFO no process reads would block the open for ever (review): opened without waiting, and
    // refused when nobody reads it.
    const bool fifo = S_ISFIFO(st.st_mode);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
    if (fd < 0 && fifo && errno == ENXIO)
      throw WriteError("cannot write '" + path + "': a FIFO that no process reads");
    if (fd < 0) throw WriteError("cannot write '" + path + "' (" + std::strerror(errno) + ")");
    if (fifo) (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    write_and_close(fd, path, text);
    return;
  }
  if (link) {
    // A symbolic link to a file: written through by the kernel (which applies its protection of
    // links in shared sticky folders), in place: a rename would replace the link itself.
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) throw WriteError("cannot write '" + path + "' (" + std::strerror(errno) + ")");
    write_and_close(fd, path, text);
    return;
  }
  // The temporary file: a short name of its own in the same folder, so any name the filesystem
  // takes for `path` works (PATH.tmp.<pid> failed past 243 characters).
  static std::atomic<unsigned> serial{0};
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string tmp = dir + ".cco-" + std::to_string(::getpid()) + "-" +
                          std::to_string(serial.fetch_add(1)) + ".tmp";
  auto fail = [&](const char* what, int err) {
    ::unlink(tmp.c_str());
    throw WriteError("cannot write '" + path + "' (" + what + ": " + std::strerror(err) + ")");
  };
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::open(tmp.c_str(), flags, 0644);
  if (fd < 0 && errno == EEXIST) {  // a leftover of an earlier run with this pid
    ::unlink(tmp.c_str());
    fd = ::open(tmp.c_str(), flags, 0644);
  }
  if (fd < 0) throw WriteError("cannot write '" + path + "' (" + std::strerror(errno) + ")");
  if (exists) (void)::fchmod(fd, st.st_mode & 07777);  // keep the file's mode
  // No fsync: the rename alone keeps readers from a partial file, and the step clock writes
  // through here from inside the training process.
  if (!write_all(fd, text)) {
    const int err = errno;
    ::close(fd);
    fail("disk full?", err);
  }
  if (::close(fd) != 0) fail("close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename", errno);
}

std::string library_file_problem(const std::string& path) {
  if (path.find('/') == std::string::npos) return {};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};  // dlopen says what is missing
  if (S_ISREG(st.st_mode)) return {};
  return path + ": not a regular file (" +
         (S_ISDIR(st.st_mode)    ? std::string("a folder")
          : S_ISFIFO(st.st_mode) ? std::string("a FIFO")
                                 : std::string("a socket or a device")) +
         "), not a library";
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string blank_text_reason(std::string_view text) {
  if (text.empty()) return "the file is empty";
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return "the file holds only white space";
  return "";
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace cco::model
