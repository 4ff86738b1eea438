// Logging: printf-style lines to stderr (info/warn/error) prefixed by the level.
// Only the process whose log rank is 0 prints info lines; warnings and errors are
// printed by every rank with the rank in the prefix. The log rank is set once by
// main() after the communicator is known (default 0: single process).
#pragma once

namespace gossamer {

void log_set_rank(int rank);
void log_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace gossamer
