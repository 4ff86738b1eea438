// check_ranks_agree (see rank_agreement.h): a hash all-gather, then rank 0's view broadcast.
#include "train/rank_agreement.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "comm/gather_values.h"
#include "core/error.h"
#include "core/sha256.h"

namespace gossamer::train {

namespace {

using nlohmann::json;

// The first leaf where two JSON values differ, as a dotted path ("" when equal).
std::string first_difference(const json& mine, const json& theirs, const std::string& path) {
  if (mine.is_object() && theirs.is_object()) {
    for (const auto& [key, value] : theirs.items()) {
      const std::string p = path.empty() ? key : path + "." + key;
      if (!mine.contains(key)) return p;
      const std::string d = first_difference(mine[key], value, p);
      if (!d.empty()) return d;
    }
    for (const auto& [key, value] : mine.items())
      if (!theirs.contains(key)) return path.empty() ? key : path + "." + key;
    return "";
  }
  return mine == theirs ? "" : (path.empty() ? std::string("(the whole value)") : path);
}

std::string text_at(const json& j, const std::string& dotted) {
  const json* node = &j;
  size_t start = 0;
  while (node->is_object()) {
    const size_t dot = dotted.find('.', start);
    auto it = node->find(dotted.substr(start, dot == std::string::npos ? dot : dot - start));
    if (it == node->end()) return "absent";
    node = &*it;
    if (dot == std::string::npos) return node->dump();
    start = dot + 1;
  }
  return node->dump();
}

}  // namespace

void check_ranks_agree(comm::Communicator& comm, const json& config, const json& data_files) {
  if (comm.size() == 1) return;
  json run = {{"config", config}, {"data_files", data_files}};
  // The run directory every rank means, spelled alike (a relative --out resolves against each
  // rank's working directory): ranks given different --out disagree here, by name.
  json& out_dir = run["config"]["train"]["out_dir"];
  if (out_dir.is_string()) {
    std::error_code ec;
    const auto canonical = std::filesystem::weakly_canonical(
        std::filesystem::absolute(out_dir.get<std::string>(), ec), ec);
    if (!ec) out_dir = canonical.string();
  }
  const std::string text = run.dump();
  const std::string digest = sha256_hex(text);
  double mine;
  uint64_t h = std::stoull(digest.substr(0, 16), nullptr, 16);
  std::memcpy(&mine, &h, sizeof h);
  const std::vector<double> all = comm::all_gather_doubles(comm, {&mine, 1});
  bool same = true;
  for (double x : all) same = same && std::memcmp(&x, &all[0], sizeof x) == 0;
  if (same) return;
  // Rank 0's view to everyone (length first), and each differing rank says where it differs.
  int64_t length = comm.rank() == 0 ? int64_t(text.size()) : 0;
  comm.broadcast(&length, 1, comm::DType::I64, 0).wait();
  std::string theirs(size_t(length), '\0');
  if (comm.rank() == 0) theirs = text;
  comm.broadcast(theirs.data(), theirs.size(), comm::DType::U8, 0).wait();
  std::string mismatch;  // this rank's difference from rank 0, "" when it agrees
  if (std::memcmp(&mine, &all[0], sizeof mine) != 0) {
    const json zero = json::parse(theirs);
    const std::string key = first_difference(run, zero, "");
    const std::string what = key.starts_with("config.") ? key.substr(7) : key;
    mismatch = strprintf(
        "rank %d was started with a different run than rank 0: %s is %s on rank 0 "
        "and %s on rank %d",
        comm.rank(), what.c_str(), text_at(zero, key).c_str(), text_at(run, key).c_str(),
        comm.rank());
  }
  // Every rank stops together (no abort racing the message): the lowest differing rank is named.
  int32_t first = mismatch.empty() ? int32_t(comm.size()) : int32_t(comm.rank());
  comm.all_reduce(&first, 1, comm::DType::I32, comm::ReduceOp::MIN).wait();
  if (!mismatch.empty()) throw CollectiveError(mismatch);
  throw CollectiveError(strprintf(
      "rank %d was started with a different run than rank 0 (its message names the key)", first));
}

}  // namespace gossamer::train
