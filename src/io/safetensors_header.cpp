// Validation of a safetensors file's header, for SafetensorsReader (see io/safetensors.h). The
// steps run in file order: the 8-byte length, the JSON (nlohmann, with a parser callback that
// rejects duplicate keys, which nlohmann would otherwise resolve silently to the last one), each
// entry (__metadata__ strings, or a tensor's dtype, shape, byte count and offsets within the data
// buffer), then the tiling of the buffer by all tensors. Whatever validate_safetensors_header
// returns has passed every step; every error starts with "safetensors file 'PATH'" and names the
// tensor if any.
#include "io/safetensors_detail.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "core/error.h"

static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

namespace gossamer::io::detail {

namespace {

using Json = nlohmann::ordered_json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // same limit as the reference implementation

std::string json_type(const Json& j) {
  return j.type_name();
}

// The little-endian u64 at the start of the file, checked against the limit and the file size.
uint64_t read_header_length(const char* p, const unsigned char* bytes, uint64_t file_size) {
  uint64_t header_len;
  std::memcpy(&header_len, bytes, sizeof header_len);
  if (header_len > kMaxHeaderBytes) {
    fail("safetensors file '%s': header length %llu exceeds the limit of %llu bytes", p,
         static_cast<unsigned long long>(header_len),
         static_cast<unsigned long long>(kMaxHeaderBytes));
  }
  if (header_len > file_size - 8) {
    fail(
        "safetensors file '%s': header length %llu exceeds the %llu bytes after the length "
        "field (file is %llu bytes; truncated?)",
        p, static_cast<unsigned long long>(header_len),
        static_cast<unsigned long long>(file_size - 8), static_cast<unsigned long long>(file_size));
  }
  return header_len;
}

// The header text as a JSON object, rejecting duplicate keys at any depth.
Json parse_header_json(const char* p, const char* begin, uint64_t header_len) {
  std::vector<std::set<std::string>> key_stack;
  std::string duplicate;
  auto callback = [&](int, Json::parse_event_t ev, Json& parsed) {
    using E = Json::parse_event_t;
    if (ev == E::object_start) {
      key_stack.emplace_back();
    } else if (ev == E::object_end) {
      if (!key_stack.empty()) key_stack.pop_back();
    } else if (ev == E::key && !key_stack.empty()) {
      const std::string& k = parsed.get_ref<const std::string&>();
      if (!key_stack.back().insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  Json header;
  try {
    header = Json::parse(begin, begin + header_len, callback);
  } catch (const nlohmann::json::exception& e) {
    fail("safetensors file '%s': header (%llu bytes) is not valid JSON: %s", p,
         static_cast<unsigned long long>(header_len), e.what());
  }
  if (!duplicate.empty()) {
    fail("safetensors file '%s': header has duplicate key '%s'", p, duplicate.c_str());
  }
  if (!header.is_object()) {
    fail("safetensors file '%s': header is a JSON %s, expected an object", p,
         json_type(header).c_str());
  }
  return header;
}

// The __metadata__ entry: an object of strings, added to `out`.
void read_metadata(const char* p, const Json& v, std::map<std::string, std::string>& out) {
  if (!v.is_object()) {
    fail("safetensors file '%s': __metadata__ is a JSON %s, expected an object of strings", p,
         json_type(v).c_str());
  }
  for (auto m = v.begin(); m != v.end(); ++m) {
    if (!m.value().is_string()) {
      fail("safetensors file '%s': __metadata__ key '%s' is a JSON %s, expected a string", p,
           m.key().c_str(), json_type(m.value()).c_str());
    }
    out[m.key()] = m.value().get<std::string>();
  }
}

// A tensor entry is an object with exactly dtype, shape and data_offsets.
void check_entry_keys(const char* p, const char* n, const Json& v) {
  if (!v.is_object()) {
    fail(
        "safetensors file '%s': tensor '%s': entry is a JSON %s, expected an object with "
        "dtype, shape, data_offsets",
        p, n, json_type(v).c_str());
  }
  for (auto k = v.begin(); k != v.end(); ++k) {
    if (k.key() != "dtype" && k.key() != "shape" && k.key() != "data_offsets") {
      fail(
          "safetensors file '%s': tensor '%s': unknown key '%s', expected only dtype, shape, "
          "data_offsets",
          p, n, k.key().c_str());
    }
  }
  for (const char* req : {"dtype", "shape", "data_offsets"}) {
    if (!v.contains(req)) fail("safetensors file '%s': tensor '%s': missing '%s'", p, n, req);
  }
}

DType read_dtype(const char* p, const char* n, const Json& jd) {
  if (!jd.is_string()) {
    fail("safetensors file '%s': tensor '%s': dtype is a JSON %s, expected a string", p, n,
         json_type(jd).c_str());
  }
  auto dt = dtype_from_name(jd.get_ref<const std::string&>());
  if (!dt) {
    fail("safetensors file '%s': tensor '%s': unknown dtype '%s', expected one of %s", p, n,
         jd.get_ref<const std::string&>().c_str(), known_dtype_names().c_str());
  }
  return *dt;
}

// Reads t.shape (each dimension below 2^63) and returns the tensor's byte count, checking that
// neither the element count nor the byte count overflows.
uint64_t read_shape(const char* p, const char* n, const Json& js, TensorInfo& t) {
  if (!js.is_array()) {
    fail("safetensors file '%s': tensor '%s': shape is a JSON %s, expected an array", p, n,
         json_type(js).c_str());
  }
  uint64_t numel = 1;
  bool overflow = false;
  for (size_t i = 0; i < js.size(); ++i) {
    const auto& d = js[i];
    if (!d.is_number_integer()) {
      fail(
          "safetensors file '%s': tensor '%s': shape[%zu] is %s, expected a non-negative "
          "integer",
          p, n, i, d.dump().c_str());
    }
    if (!d.is_number_unsigned() ||
        d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(
          "safetensors file '%s': tensor '%s': shape[%zu] is %s, expected a non-negative "
          "integer below 2^63",
          p, n, i, d.dump().c_str());
    }
    uint64_t dim = d.get<uint64_t>();
    t.shape.push_back(static_cast<int64_t>(dim));
    overflow |= __builtin_mul_overflow(numel, dim, &numel);
  }
  uint64_t nbytes = 0;
  overflow |= __builtin_mul_overflow(numel, dtype_size(t.dtype), &nbytes);
  if (overflow || numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail("safetensors file '%s': tensor '%s': shape %s x %zu bytes overflows 64 bits", p, n,
         shape_to_string(t.shape).c_str(), dtype_size(t.dtype));
  }
  return nbytes;
}

// Reads t.begin and t.end: ordered, spanning exactly `nbytes`, inside the data buffer.
void read_data_offsets(const char* p, const char* n, const Json& jo, uint64_t nbytes,
                       uint64_t buffer_size, TensorInfo& t) {
  if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() ||
      !jo[1].is_number_unsigned()) {
    fail(
        "safetensors file '%s': tensor '%s': data_offsets is %s, expected [begin, end] with "
        "non-negative integers",
        p, n, jo.dump().c_str());
  }
  t.begin = jo[0].get<uint64_t>();
  t.end = jo[1].get<uint64_t>();
  if (t.end < t.begin) {
    fail("safetensors file '%s': tensor '%s': data_offsets [%llu, %llu] has end < begin", p, n,
         static_cast<unsigned long long>(t.begin), static_cast<unsigned long long>(t.end));
  }
  if (t.end - t.begin != nbytes) {
    fail(
        "safetensors file '%s': tensor '%s': data_offsets [%llu, %llu] span %llu bytes, "
        "expected %llu (shape %s, %s)",
        p, n, static_cast<unsigned long long>(t.begin), static_cast<unsigned long long>(t.end),
        static_cast<unsigned long long>(t.end - t.begin), static_cast<unsigned long long>(nbytes),
        shape_to_string(t.shape).c_str(), dtype_name(t.dtype));
  }
  if (t.end > buffer_size) {
    fail(
        "safetensors file '%s': tensor '%s': data_offsets [%llu, %llu] exceed the data "
        "buffer of %llu bytes (truncated file?)",
        p, n, static_cast<unsigned long long>(t.begin), static_cast<unsigned long long>(t.end),
        static_cast<unsigned long long>(buffer_size));
  }
}

// One tensor entry, checked on its own (keys, dtype, shape, offsets within the buffer).
TensorInfo read_tensor_entry(const char* p, const std::string& name, const Json& v,
                             uint64_t buffer_size) {
  const char* n = name.c_str();
  check_entry_keys(p, n, v);
  TensorInfo t;
  t.name = name;
  t.dtype = read_dtype(p, n, v["dtype"]);
  const uint64_t nbytes = read_shape(p, n, v["shape"], t);
  read_data_offsets(p, n, v["data_offsets"], nbytes, buffer_size, t);
  return t;
}

// Sorts by data offset (ties, i.e. empty tensors, by name) and checks that the tensors tile
// [0, buffer_size) exactly: no overlap, no gap, no trailing bytes.
void sort_and_check_tiling(const char* p, std::vector<TensorInfo>& tensors, uint64_t buffer_size) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.name < b.name;
  });
  uint64_t pos = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    if (t.begin < pos) {
      const TensorInfo& prev = tensors[i - 1];
      fail(
          "safetensors file '%s': tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s' "
          "at [%llu, %llu]",
          p, t.name.c_str(), static_cast<unsigned long long>(t.begin),
          static_cast<unsigned long long>(t.end), prev.name.c_str(),
          static_cast<unsigned long long>(prev.begin), static_cast<unsigned long long>(prev.end));
    }
    if (t.begin > pos) {
      fail(
          "safetensors file '%s': tensor '%s': data_offsets [%llu, %llu] leave a gap: expected "
          "begin %llu (tensors must be contiguous)",
          p, t.name.c_str(), static_cast<unsigned long long>(t.begin),
          static_cast<unsigned long long>(t.end), static_cast<unsigned long long>(pos));
    }
    pos = t.end;
  }
  if (pos != buffer_size) {
    std::string last =
        tensors.empty() ? std::string("no tensors") : "last tensor '" + tensors.back().name + "'";
    fail(
        "safetensors file '%s': data buffer is %llu bytes but the tensors end at %llu (%s); "
        "expected no trailing bytes",
        p, static_cast<unsigned long long>(buffer_size), static_cast<unsigned long long>(pos),
        last.c_str());
  }
}

}  // namespace

SafetensorsHeader validate_safetensors_header(const std::string& path, const unsigned char* bytes,
                                              uint64_t file_size) {
  const char* p = path.c_str();
  SafetensorsHeader h;
  const uint64_t header_len = read_header_length(p, bytes, file_size);
  h.buffer_offset = 8 + header_len;
  const uint64_t buffer_size = file_size - h.buffer_offset;
  const Json header = parse_header_json(p, reinterpret_cast<const char*>(bytes + 8), header_len);
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == kMetadataKey)
      read_metadata(p, it.value(), h.metadata);
    else
      h.tensors.push_back(read_tensor_entry(p, it.key(), it.value(), buffer_size));
  }
  sort_and_check_tiling(p, h.tensors, buffer_size);
  return h;
}

}  // namespace gossamer::io::detail
