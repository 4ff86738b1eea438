// peak_resident_bytes(): VmHWM from /proc/self/status (Linux), in kB there; reset_peak_resident():
// clear_refs 5.
#include "core/memory_usage.h"

#include <cstdio>
#include <cstring>

namespace gossamer {

size_t peak_resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  size_t kb = 0;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, "VmHWM:", 6) == 0 && std::sscanf(line + 6, "%zu", &kb) == 1) break;
  std::fclose(f);
  return kb * 1024;
}

bool reset_peak_resident() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

}  // namespace gossamer
