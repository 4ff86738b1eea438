// Implementation of log.h: a rank per thread, the process's for threads that set none.
#include "core/log.h"

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "core/error.h"

namespace gossamer {
namespace {
constexpr int kUnset = -1;
std::atomic<int> g_process_rank{0};
thread_local int t_rank = kUnset;
// Set when stderr is a pipe whose reader has gone (EPIPE; SIGPIPE ignored by training): the
// log stops writing there and the process goes on (metrics.jsonl still records every step).
std::atomic<bool> g_log_pipe_closed{false};

void emit(const char* level, bool all_ranks, const char* fmt, va_list args) {
  const int rank = log_rank();
  if ((!all_ranks && rank != 0) || g_log_pipe_closed.load()) return;
  std::string msg = vstrprintf(fmt, args);
  int written;
  if (all_ranks && rank != 0)
    written = std::fprintf(stderr, "[%s rank %d] %s\n", level, rank, msg.c_str());
  else
    written = std::fprintf(stderr, "[%s] %s\n", level, msg.c_str());
  if ((written < 0 || std::fflush(stderr) != 0) && errno == EPIPE) g_log_pipe_closed.store(true);
}
}  // namespace

void log_set_rank(int rank) {
  t_rank = rank;
  g_process_rank.store(rank);
}

int log_rank() {
  return t_rank != kUnset ? t_rank : g_process_rank.load();
}

LogRankScope::LogRankScope(int rank) : previous_(t_rank) {
  t_rank = rank;
}

LogRankScope::~LogRankScope() {
  t_rank = previous_;
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
