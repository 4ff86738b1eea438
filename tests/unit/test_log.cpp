// The log rank per thread (core/log.h): ranks run as threads of one process each log as
// themselves, concurrently; a thread that set no rank logs as the process; a scope restores.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/log.h"

namespace {

using gossamer::LogRankScope;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Log, EachThreadLogsAsItsOwnRank) {
  gossamer::log_set_rank(0);
  testing::internal::CaptureStderr();
  std::vector<std::thread> ranks;
  for (int r = 1; r <= 3; ++r)
    ranks.emplace_back([r] {
      const LogRankScope scope(r);
      for (int i = 0; i < 50; ++i) gossamer::log_warn("from %d", r);
      gossamer::log_info("info from %d", r);  // ranks other than 0 print no info
    });
  for (auto& t : ranks) t.join();
  gossamer::log_info("info from the main thread");
  const std::string out = testing::internal::GetCapturedStderr();
  for (int r = 1; r <= 3; ++r) {
    const std::string line = "[warn rank " + std::to_string(r) + "] from " + std::to_string(r);
    EXPECT_EQ(count(out, line + "\n"), 50) << out;
    EXPECT_EQ(count(out, "from " + std::to_string(r) + "\n"), 50) << "a line under another rank";
    EXPECT_EQ(count(out, "info from " + std::to_string(r)), 0);
  }
  EXPECT_EQ(count(out, "[info] info from the main thread\n"), 1);
}

TEST(Log, ThreadsWithoutARankUseTheProcessRankAndScopesRestore) {
  gossamer::log_set_rank(5);
  int seen = -1;
  std::thread([&] { seen = gossamer::log_rank(); }).join();
  EXPECT_EQ(seen, 5);
  {
    const LogRankScope scope(7);
    EXPECT_EQ(gossamer::log_rank(), 7);
    std::thread([&] { seen = gossamer::log_rank(); }).join();
    EXPECT_EQ(seen, 5) << "a scope is the calling thread's only";
  }
  EXPECT_EQ(gossamer::log_rank(), 5);
  gossamer::log_set_rank(0);
}

}  // namespace
