// Implementation of the printf-style helpers of error.h.
#include "core/error.h"

#include <cstdio>
#include <vector>

namespace gossamer {

std::string vstrprintf(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n < 0) return fmt;
  std::vector<char> buf(static_cast<size_t>(n) + 1);
  std::vsnprintf(buf.data(), buf.size(), fmt, args);
  return std::string(buf.data(), static_cast<size_t>(n));
}

std::string strprintf(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = vstrprintf(fmt, args);
  va_end(args);
  return s;
}

void fail(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = vstrprintf(fmt, args);
  va_end(args);
  throw Error(s);
}

std::string format_bytes(double b) {
  if (b < 1e3) return strprintf("%.0f B", b);
  if (b < 1e6) return strprintf("%.1f KB", b / 1e3);
  if (b < 1e9) return strprintf("%.1f MB", b / 1e6);
  return strprintf("%.2f GB", b / 1e9);
}

}  // namespace gossamer
