#include "model/read_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

}  // namespace cco::model
