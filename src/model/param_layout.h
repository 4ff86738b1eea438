// ParamLayout: the table of named views into a model's flat parameter buffer. The gradient
// buffer has the same layout. Optimizer state, checkpoints and (later) shards and masks are
// index ranges over this one flat space.
// Invariant: views are contiguous, non-overlapping and added in buffer order; the model adds
// them in backward order (last layer first) so gradients become final as a growing prefix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace gossamer::model {

enum class ParamKind {
  PARAM_KIND_WEIGHT,     // a matrix of a linear layer (weight decay applies)
  PARAM_KIND_BIAS,       // a bias vector
  PARAM_KIND_NORM,       // a normalisation gain or shift
  PARAM_KIND_EMBEDDING,  // token or position embedding table
};

const char* param_kind_name(ParamKind kind);

struct ParamView {
  std::string name;
  std::vector<int64_t> shape;
  size_t offset = 0;  // in elements, into the flat buffer
  size_t numel = 0;
  ParamKind kind = ParamKind::PARAM_KIND_WEIGHT;
};

class ParamLayout {
 public:
  // Appends a view at the current end of the buffer; returns its offset.
  size_t add(const std::string& name, std::vector<int64_t> shape, ParamKind kind);

  const std::vector<ParamView>& views() const { return views_; }
  size_t total() const { return total_; }
  // Throws gossamer::Error naming the parameter when absent.
  const ParamView& find(const std::string& name) const;
  bool contains(const std::string& name) const { return index_.count(name) != 0; }

 private:
  std::vector<ParamView> views_;
  std::unordered_map<std::string, size_t> index_;
  size_t total_ = 0;
};

}  // namespace gossamer::model
