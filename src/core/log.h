// Logging: printf-style lines to stderr (info/warn/error) prefixed by the level.
// Only rank 0 prints info lines; warnings and errors are printed by every rank with the rank in
// the prefix. The rank is the calling thread's: a thread that runs a rank sets it
// (log_set_rank, or LogRankScope for a while); a thread that never did uses the process's,
// which log_set_rank also sets (default 0: a single process). So several ranks run as threads
// of one process each log as themselves, and the helper threads of a one-rank process log as
// its rank.
#pragma once

namespace gossamer {

// Sets the calling thread's rank and the process's (the rank of threads that set none).
void log_set_rank(int rank);
// The rank the calling thread logs as.
int log_rank();

// The calling thread logs as `rank` until the scope ends (then as before); the process's rank
// is left alone.
class LogRankScope {
 public:
  explicit LogRankScope(int rank);
  ~LogRankScope();
  LogRankScope(const LogRankScope&) = delete;
  LogRankScope& operator=(const LogRankScope&) = delete;

 private:
  int previous_;
};

void log_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace gossamer
