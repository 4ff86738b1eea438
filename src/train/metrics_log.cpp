// Implementation of MetricsLog.
#include "train/metrics_log.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/atomic_file.h"

namespace gossamer::train {

MetricsLog::MetricsLog(const std::string& path, int64_t keep_through_step) : path_(path) {
  std::string kept;
  if (keep_through_step >= 0) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
          j["step"].get<int64_t>() <= keep_through_step)
        kept += line + "\n";
    }
  }
  // The kept prefix replaces the old file in one step (a crash leaves one or the other whole),
  // then lines are appended.
  io::write_file_atomically(path, kept);
  f_ = std::fopen(path.c_str(), "a");
  GOSSAMER_CHECK(f_, "%s: cannot open for appending: %s", path.c_str(), std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (f_) std::fclose(f_);
}

void MetricsLog::write(const nlohmann::ordered_json& line) {
  std::string s = line.dump() + "\n";
  GOSSAMER_CHECK(std::fputs(s.c_str(), f_) >= 0 && std::fflush(f_) == 0, "%s: write failed: %s",
                 path_.c_str(), std::strerror(errno));
}

}  // namespace gossamer::train
