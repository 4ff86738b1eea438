// MetricsLog: one JSON object per line in <run>/metrics.jsonl. On resume the file is cut back
// to the lines of steps up to the checkpoint's, so a resumed run's log reads as if the run had
// never stopped; the cut is atomic (io/atomic_file.h). Each line is appended and flushed as
// written.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace gossamer::train {

class MetricsLog {
 public:
  // keep_through_step < 0: start a new file; otherwise keep lines with "step" <= it.
  MetricsLog(const std::string& path, int64_t keep_through_step);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const nlohmann::ordered_json& line);

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

}  // namespace gossamer::train
