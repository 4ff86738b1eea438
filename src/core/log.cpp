// Implementation of log.h. The rank is process-wide state written once at start-up.
#include "core/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "core/error.h"

namespace gossamer {
namespace {
std::atomic<int> g_log_rank{0};

void emit(const char* level, bool all_ranks, const char* fmt, va_list args) {
  int rank = g_log_rank.load();
  if (!all_ranks && rank != 0) return;
  std::string msg = vstrprintf(fmt, args);
  if (all_ranks && rank != 0)
    std::fprintf(stderr, "[%s rank %d] %s\n", level, rank, msg.c_str());
  else
    std::fprintf(stderr, "[%s] %s\n", level, msg.c_str());
  std::fflush(stderr);
}
}  // namespace

void log_set_rank(int rank) {
  g_log_rank.store(rank);
}

#define GOSSAMER_DEFINE_LOG(fn, level, all) \
  void fn(const char* fmt, ...) {           \
    va_list args;                           \
    va_start(args, fmt);                    \
    emit(level, all, fmt, args);            \
    va_end(args);                           \
  }
GOSSAMER_DEFINE_LOG(log_info, "info", false)
GOSSAMER_DEFINE_LOG(log_warn, "warn", true)
GOSSAMER_DEFINE_LOG(log_error, "error", true)
#undef GOSSAMER_DEFINE_LOG

}  // namespace gossamer
