// How the config visitors (core/config_visitors.h) read, write and name optim::LocalSteps: a
// number for every rank, or a non-empty list with one number per rank. Included where the run
// config's sections are parsed (run/run_config.cpp); without it a LocalSteps field does not
// compile there.
#pragma once

#include <string>

#include "core/config_visitors.h"
#include "optim/local_steps_config.h"

namespace gossamer::config_detail {

template <>
struct ConfigValue<optim::LocalSteps> {
  static std::string type_name() { return "an integer or list of integers (one per rank)"; }
  static optim::LocalSteps from_json(const json& j, const std::string& where) {
    auto mismatch = [&]() {
      fail("%s: expected %s, found %s", where.c_str(), type_name().c_str(),
           describe_json(j).c_str());
    };
    optim::LocalSteps steps{{}};
    if (!j.is_array() && !j.is_number()) mismatch();
    if (j.is_array()) {
      if (j.empty()) mismatch();
      for (size_t i = 0; i < j.size(); ++i)
        steps.values.push_back(convert<int64_t>(j[i], where + "[" + std::to_string(i) + "]"));
    } else {
      steps.values.push_back(convert<int64_t>(j, where));
    }
    return steps;
  }
  static json to_json(const optim::LocalSteps& s) {
    return s.per_rank() ? json(s.values) : json(s.values.front());
  }
};

}  // namespace gossamer::config_detail
