// The dtype and shape vocabulary of io/safetensors.h: the one table mapping each DType to its
// header name and element size, and the shape helpers. The reader (safetensors_reader.cpp) and
// the writer (safetensors_writer.cpp) name dtypes only through these functions, so a name or
// size can never disagree between them. An out-of-range DType value is an error, never a guess.
#include "io/safetensors.h"

#include "core/error.h"
#include "io/safetensors_detail.h"

namespace gossamer::io {

namespace {

struct DTypeDesc {
  DType dtype;
  const char* name;
  size_t size;
};

constexpr DTypeDesc kDTypes[] = {
    {DType::DTYPE_BOOL, "BOOL", 1},       {DType::DTYPE_U8, "U8", 1},
    {DType::DTYPE_I8, "I8", 1},           {DType::DTYPE_F8_E4M3, "F8_E4M3", 1},
    {DType::DTYPE_F8_E5M2, "F8_E5M2", 1}, {DType::DTYPE_I16, "I16", 2},
    {DType::DTYPE_U16, "U16", 2},         {DType::DTYPE_F16, "F16", 2},
    {DType::DTYPE_BF16, "BF16", 2},       {DType::DTYPE_I32, "I32", 4},
    {DType::DTYPE_U32, "U32", 4},         {DType::DTYPE_F32, "F32", 4},
    {DType::DTYPE_I64, "I64", 8},         {DType::DTYPE_U64, "U64", 8},
    {DType::DTYPE_F64, "F64", 8},
};

const DTypeDesc& dtype_desc(DType dt) {
  for (const DTypeDesc& d : kDTypes) {
    if (d.dtype == dt) return d;
  }
  fail("invalid DType value %d", static_cast<int>(dt));
}

}  // namespace

size_t dtype_size(DType dt) {
  return dtype_desc(dt).size;
}
const char* dtype_name(DType dt) {
  return dtype_desc(dt).name;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeDesc& d : kDTypes) {
    if (name == d.name) return d.dtype;
  }
  return std::nullopt;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace detail {

std::string known_dtype_names() {
  std::string s;
  for (const DTypeDesc& d : kDTypes) {
    if (!s.empty()) s += ", ";
    s += d.name;
  }
  return s;
}

}  // namespace detail

}  // namespace gossamer::io
