// What the safetensors reader, its header validation and the writer share beyond the public
// io/safetensors.h: the reserved header key, the dtype names for messages, and the header
// validation itself. Internal to src/io. Invariant: a SafetensorsHeader returned by
// validate_safetensors_header has passed every check the reader promises (see
// io/safetensors.h), so the reader only maps the file and copies the result.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace gossamer::io::detail {

// The header entry holding string metadata instead of a tensor.
inline constexpr const char* kMetadataKey = "__metadata__";

// "BOOL, U8, ..., F64": every dtype name, in the order of the DType enum.
std::string known_dtype_names();

struct SafetensorsHeader {
  uint64_t buffer_offset = 0;       // where the data buffer starts in the file (8 + header length)
  std::vector<TensorInfo> tensors;  // in data order (ascending offsets; ties by name)
  std::map<std::string, std::string> metadata;
};

// Validates the header of the file `bytes` (its whole contents, file_size >= 8 bytes): the length
// field, the JSON (no duplicate keys), every entry, and that the tensors tile the data buffer
// exactly. Throws gossamer::Error starting with "safetensors file 'PATH'" on any problem.
SafetensorsHeader validate_safetensors_header(const std::string& path, const unsigned char* bytes,
                                              uint64_t file_size);

}  // namespace gossamer::io::detail
