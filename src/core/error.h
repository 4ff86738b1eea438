// Errors: one exception type for everything a user can get wrong (configs, files,
// arguments) and for broken internal invariants. Library code throws gossamer::Error
// with a message that names the file/key/offset, what was expected and what was found;
// executables catch it at the top, print one line and exit non-zero.
// Never assert() on user input: the check must survive -DNDEBUG.
#pragma once

#include <cstdarg>
#include <stdexcept>
#include <string>

namespace gossamer {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An error every rank of a job raises at the same point with the same message (a decision the
// ranks agreed on through a collective), so no rank is left waiting and the job can end
// normally instead of being aborted.
class CollectiveError : public Error {
 public:
  using Error::Error;
};

// printf-style formatting into a std::string.
std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string vstrprintf(const char* fmt, va_list args);
// A byte count for people: "512 B", "1.5 KB", "12.3 MB", "1.25 GB" (decimal units).
std::string format_bytes(double bytes);

// Throws gossamer::Error with a printf-formatted message.
[[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace gossamer

// Checks a condition that depends on input or on the environment; throws on failure.
#define GOSSAMER_CHECK(cond, ...)    \
  do {                               \
    if (!(cond)) {                   \
      ::gossamer::fail(__VA_ARGS__); \
    }                                \
  } while (0)
