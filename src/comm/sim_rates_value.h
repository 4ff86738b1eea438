// How the config visitors (core/config_visitors.h) read, write and name comm::SimRates: a list
// of numbers (Mbit/s, one per rank; may be empty when unused). Included where the run config's
// sections are parsed (run/run_config.cpp).
#pragma once

#include <string>

#include "comm/sim_config.h"
#include "core/config_visitors.h"

namespace gossamer::config_detail {

template <>
struct ConfigValue<comm::SimRates> {
  static std::string type_name() { return "a list of numbers (one per rank)"; }
  static comm::SimRates from_json(const json& j, const std::string& where) {
    if (!j.is_array())
      fail("%s: expected %s, found %s", where.c_str(), type_name().c_str(),
           describe_json(j).c_str());
    comm::SimRates r;
    for (size_t i = 0; i < j.size(); ++i)
      r.mbit.push_back(convert<double>(j[i], where + "[" + std::to_string(i) + "]"));
    return r;
  }
  static json to_json(const comm::SimRates& r) { return json(r.mbit); }
};

}  // namespace gossamer::config_detail
