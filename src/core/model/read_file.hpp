// Reading an input file with a limit: every file the tool reads (workloads, plans, traces, bench
// results, step and decision files) goes through here, so a FIFO, a device file, a folder or a
// file larger than the limit gets one clear error instead of a hang or an exhausted memory.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "model/limits.hpp"

namespace cco::model {

/// Limits by kind of file (bytes).
inline constexpr std::size_t kPlanFileLimit = 16u << 20;       ///< plans, decision files
inline constexpr std::size_t kWorkloadFileLimit = 64u << 20;   ///< workloads, step files
inline constexpr std::size_t kResultFileLimit = 256u << 20;    ///< bench / tune results
inline constexpr std::size_t kTraceFileLimit = std::size_t{2} << 30;  ///< traces

/// Why a file could not be read: what() is "PATH: REASON", reason() the part after the path:
/// "cannot be read (No such file or directory)", "a folder, not a file", "not a regular file (a
/// FIFO, a socket or a device)", "larger than the limit of N MiB".
class FileError : public Error {
 public:
  FileError(const std::string& path, std::string reason)
      : Error(path + ": " + reason), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

/// The whole content of a regular file of at most `limit` bytes. Opening never blocks (a FIFO
/// without a writer is refused, not waited for). Throws FileError.
std::string read_file(const std::string& path, std::size_t limit);

/// An output file that could not be written (what(): "cannot write 'PATH' (REASON)").
class WriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Why `path` must not be written as an output, or "" when it may: a symbolic link to nothing (a
/// file would replace the link), or an existing file without any write permission bit (refused
/// also for root, as `rm` asks). Checked before a run (cco's outputs) and by write_file.
std::string output_problem(const std::string& path);

/// Writes `text` to `path` whole or not at all: into a temporary file beside it (a short name of
/// its own, ".cco-<pid>-<n>.tmp", so every name the filesystem takes works), then renamed over
/// `path` (the one writer of outputs: cco report, traces, the preload library's step and decision
/// files). On any failure (a missing or read-only folder, a full disk, output_problem) the
/// temporary file is removed, `path` is left as it was, and WriteError is thrown. A reader never
/// sees a half-written file. A symbolic link to a file is written through by the kernel (its
/// protection of links in shared sticky folders applies), in place, not renamed over.
void write_file(const std::string& path, std::string_view text);

/// Why `path` must not be given to dlopen, or "" when it may: a path (with a '/') that exists but
/// is not a regular file -- a FIFO would block dlopen forever, a device or folder cannot be a
/// library. A bare name (the loader searches for it) or a missing path is left to dlopen.
std::string library_file_problem(const std::string& path);

/// True when `path` exists and is a regular file (following links); `is_directory` likewise.
bool is_regular_file(const std::string& path);
bool is_directory(const std::string& path);

/// Why `text` (a file's contents) holds no value at all: "the file is empty" or "the file holds
/// only white space"; "" when it holds anything else. The JSON readers' one wording for it.
std::string blank_text_reason(std::string_view text);

/// True when `a` and `b` name one existing file (the same device and inode): an output that
/// names an input.
bool same_file(const std::string& a, const std::string& b);

}  // namespace cco::model
