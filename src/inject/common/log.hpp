// Messages of the preload library: one line each, prefixed "cco-preload:", on standard error
// (written with write(2), so they work before main, at exit, and without stdio).
#pragma once

#include <string>
#include <string_view>

namespace cco::preload {

/// Where lines go. Tests install a sink that keeps them; the default writes to fd 2.
using LogSink = void (*)(const std::string& line);
void set_log_sink(LogSink sink);  ///< nullptr restores the default

/// Writes a whole line (prefix and newline included) to the sink, else to fd 2. The tuner
/// plugin writes its own "cco-tuner:" lines through this too.
void write_line(const std::string& line);

/// Writes "cco-preload: <msg>\n".
void log_line(std::string_view msg);

/// True the first time `key` is seen in this process (the dedupe behind warn_once). Thread-safe.
bool first_time(std::string_view key);

/// Writes "cco-preload: warning: <msg>\n" the first time `key` is seen in this process; later
/// calls with the same key are silent. Thread-safe. Returns true when it wrote.
bool warn_once(std::string_view key, std::string_view msg);

/// Forgets every key (tests only).
void reset_warnings();

/// "CUDA_ERROR_INVALID_VALUE (1)" style text for a driver result, without calling the driver.
std::string cu_error_text(int result);

}  // namespace cco::preload
