// Line-level text helpers shared by the corpus readers (data/prep.cpp, data/spm_train.cpp).
// Invariant: a line is blank when it holds nothing but spaces, tabs and carriage returns.
#pragma once

#include <string_view>

namespace gossamer::data {

inline bool is_blank_line(std::string_view line) {
  for (char c : line)
    if (c != ' ' && c != '\t' && c != '\r') return false;
  return true;
}

}  // namespace gossamer::data
