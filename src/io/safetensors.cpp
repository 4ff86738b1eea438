// Implementation of the safetensors reader (mmap + full header validation) and writer
// (io/atomic_file.h: temporary file, fsync, rename). The header is parsed with nlohmann::json; a
// parser callback rejects duplicate keys, which nlohmann would otherwise silently resolve to the
// last one. Every error message starts with "safetensors file 'PATH'" and names the tensor if any.
#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "io/atomic_file.h"

static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

namespace gossamer::io {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // same limit as the reference implementation
constexpr const char* kMetadataKey = "__metadata__";

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

std::string known_dtypes() {
  std::string s;
  for (const DTypeDesc& d : kDTypes) {
    if (!s.empty()) s += ", ";
    s += d.name;
  }
  return s;
}

// IEEE binary16 -> binary32, exact (including subnormals, inf and NaN).
float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

template <class T>
T load(const unsigned char* p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}

bool is_float_dtype(DType dt) {
  switch (dt) {
    case DType::DTYPE_F8_E4M3:
    case DType::DTYPE_F8_E5M2:
    case DType::DTYPE_F16:
    case DType::DTYPE_BF16:
    case DType::DTYPE_F32:
    case DType::DTYPE_F64:
      return true;
    default:
      return false;
  }
}

std::string json_type(const nlohmann::ordered_json& j) {
  return j.type_name();
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

// ---- reader ------------------------------------------------------------------------

SafetensorsReader::SafetensorsReader(const std::string& path) : path_(path) {
  const char* p = path.c_str();
  int fd = ::open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("safetensors file '%s': cannot open: %s", p, std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail("safetensors file '%s': cannot stat: %s", p, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("safetensors file '%s': not a regular file", p);
  }
  uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8) {
    ::close(fd);
    fail("safetensors file '%s': is %llu bytes, expected at least 8 (the header length)", p,
         static_cast<unsigned long long>(file_size));
  }
  void* m = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_err = errno;
  ::close(fd);
  if (m == MAP_FAILED) fail("safetensors file '%s': cannot mmap: %s", p, std::strerror(map_err));
  map_ = m;
  map_size_ = file_size;
  // From here on the destructor will not run if we throw, so unmap explicitly.
  try {
    const auto* bytes = static_cast<const unsigned char*>(map_);
    uint64_t header_len = load<uint64_t>(bytes, 0);
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
          static_cast<unsigned long long>(file_size - 8),
          static_cast<unsigned long long>(file_size));
    }
    const char* hbeg = reinterpret_cast<const char*>(bytes + 8);
    const char* hend = hbeg + header_len;
    buffer_ = bytes + 8 + header_len;
    const uint64_t buffer_size = file_size - 8 - header_len;

    // Parse, rejecting duplicate keys at any depth.
    std::vector<std::set<std::string>> key_stack;
    std::string duplicate;
    auto callback = [&](int, nlohmann::ordered_json::parse_event_t ev,
                        nlohmann::ordered_json& parsed) {
      using E = nlohmann::ordered_json::parse_event_t;
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
    nlohmann::ordered_json header;
    try {
      header = nlohmann::ordered_json::parse(hbeg, hend, callback);
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

    for (auto it = header.begin(); it != header.end(); ++it) {
      const std::string& name = it.key();
      const nlohmann::ordered_json& v = it.value();
      const char* n = name.c_str();
      if (name == kMetadataKey) {
        if (!v.is_object()) {
          fail("safetensors file '%s': __metadata__ is a JSON %s, expected an object of strings", p,
               json_type(v).c_str());
        }
        for (auto m2 = v.begin(); m2 != v.end(); ++m2) {
          if (!m2.value().is_string()) {
            fail("safetensors file '%s': __metadata__ key '%s' is a JSON %s, expected a string", p,
                 m2.key().c_str(), json_type(m2.value()).c_str());
          }
          metadata_[m2.key()] = m2.value().get<std::string>();
        }
        continue;
      }
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
      TensorInfo t;
      t.name = name;
      // dtype
      const auto& jd = v["dtype"];
      if (!jd.is_string()) {
        fail("safetensors file '%s': tensor '%s': dtype is a JSON %s, expected a string", p, n,
             json_type(jd).c_str());
      }
      auto dt = dtype_from_name(jd.get_ref<const std::string&>());
      if (!dt) {
        fail("safetensors file '%s': tensor '%s': unknown dtype '%s', expected one of %s", p, n,
             jd.get_ref<const std::string&>().c_str(), known_dtypes().c_str());
      }
      t.dtype = *dt;
      // shape, with overflow-checked byte count
      const auto& js = v["shape"];
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
      // data_offsets
      const auto& jo = v["data_offsets"];
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
            static_cast<unsigned long long>(t.end - t.begin),
            static_cast<unsigned long long>(nbytes), shape_to_string(t.shape).c_str(),
            dtype_name(t.dtype));
      }
      if (t.end > buffer_size) {
        fail(
            "safetensors file '%s': tensor '%s': data_offsets [%llu, %llu] exceed the data "
            "buffer of %llu bytes (truncated file?)",
            p, n, static_cast<unsigned long long>(t.begin), static_cast<unsigned long long>(t.end),
            static_cast<unsigned long long>(buffer_size));
      }
      tensors_.push_back(std::move(t));
    }

    // The tensors must tile [0, buffer_size) exactly: no overlap, no gap, no trailing bytes.
    std::sort(tensors_.begin(), tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
      if (a.begin != b.begin) return a.begin < b.begin;
      if (a.end != b.end) return a.end < b.end;
      return a.name < b.name;
    });
    uint64_t pos = 0;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const TensorInfo& t = tensors_[i];
      if (t.begin < pos) {
        const TensorInfo& prev = tensors_[i - 1];
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
      std::string last = tensors_.empty() ? std::string("no tensors")
                                          : "last tensor '" + tensors_.back().name + "'";
      fail(
          "safetensors file '%s': data buffer is %llu bytes but the tensors end at %llu (%s); "
          "expected no trailing bytes",
          p, static_cast<unsigned long long>(buffer_size), static_cast<unsigned long long>(pos),
          last.c_str());
    }
    for (size_t i = 0; i < tensors_.size(); ++i) index_[tensors_[i].name] = i;
  } catch (...) {
    unmap();
    throw;
  }
}

SafetensorsReader::~SafetensorsReader() {
  unmap();
}

void SafetensorsReader::unmap() {
  if (map_) ::munmap(map_, map_size_);
  map_ = nullptr;
  map_size_ = 0;
  buffer_ = nullptr;
}

SafetensorsReader::SafetensorsReader(SafetensorsReader&& o) noexcept
    : path_(std::move(o.path_)),
      map_(std::exchange(o.map_, nullptr)),
      map_size_(std::exchange(o.map_size_, 0)),
      buffer_(std::exchange(o.buffer_, nullptr)),
      tensors_(std::move(o.tensors_)),
      index_(std::move(o.index_)),
      metadata_(std::move(o.metadata_)) {}

SafetensorsReader& SafetensorsReader::operator=(SafetensorsReader&& o) noexcept {
  if (this != &o) {
    unmap();
    path_ = std::move(o.path_);
    map_ = std::exchange(o.map_, nullptr);
    map_size_ = std::exchange(o.map_size_, 0);
    buffer_ = std::exchange(o.buffer_, nullptr);
    tensors_ = std::move(o.tensors_);
    index_ = std::move(o.index_);
    metadata_ = std::move(o.metadata_);
  }
  return *this;
}

std::vector<std::string> SafetensorsReader::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const TensorInfo& t : tensors_) out.push_back(t.name);
  return out;
}

const TensorInfo& SafetensorsReader::info(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    fail("safetensors file '%s': no tensor named '%s' (file has %zu tensors)", path_.c_str(),
         name.c_str(), tensors_.size());
  }
  return tensors_[it->second];
}

const void* SafetensorsReader::data(const std::string& name) const {
  return buffer_ + info(name).begin;
}

const std::string& SafetensorsReader::metadata(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) {
    fail("safetensors file '%s': no __metadata__ key '%s'", path_.c_str(), key.c_str());
  }
  return it->second;
}

void SafetensorsReader::read_into(const std::string& name, DType want, const Shape& want_shape,
                                  void* dst) const {
  const TensorInfo& t = info(name);
  if (t.dtype != want) {
    fail("tensor '%s' in '%s' has dtype %s, expected %s", name.c_str(), path_.c_str(),
         dtype_name(t.dtype), dtype_name(want));
  }
  if (t.shape != want_shape) {
    fail("tensor '%s' in '%s' has shape %s, expected %s", name.c_str(), path_.c_str(),
         shape_to_string(t.shape).c_str(), shape_to_string(want_shape).c_str());
  }
  if (t.nbytes() > 0) std::memcpy(dst, buffer_ + t.begin, t.nbytes());
}

template <class T>
std::vector<T> SafetensorsReader::read_as(const std::string& name, const Shape& want_shape) const {
  const TensorInfo& t = info(name);
  if (t.shape != want_shape) {
    fail("tensor '%s' in '%s' has shape %s, expected %s", name.c_str(), path_.c_str(),
         shape_to_string(t.shape).c_str(), shape_to_string(want_shape).c_str());
  }
  return read_as<T>(name);
}

template <class T>
std::vector<T> SafetensorsReader::read_as(const std::string& name) const {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> ||
                std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>);
  const TensorInfo& t = info(name);
  const unsigned char* src = buffer_ + t.begin;
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<T> out(n);
  const char* target = std::is_same_v<T, float>     ? "float"
                       : std::is_same_v<T, double>  ? "double"
                       : std::is_same_v<T, int32_t> ? "int32"
                                                    : "int64";
  if (t.dtype == DType::DTYPE_F8_E4M3 || t.dtype == DType::DTYPE_F8_E5M2 ||
      (std::is_integral_v<T> && is_float_dtype(t.dtype))) {
    fail("tensor '%s' in '%s' has dtype %s, which cannot be converted to %s", name.c_str(),
         path_.c_str(), dtype_name(t.dtype), target);
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (t.dtype) {
      case DType::DTYPE_F64:
        for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(load<double>(src, i));
        return out;
      case DType::DTYPE_F32:
        for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(load<float>(src, i));
        return out;
      case DType::DTYPE_F16:
        for (size_t i = 0; i < n; ++i)
          out[i] = static_cast<T>(half_to_float(load<uint16_t>(src, i)));
        return out;
      case DType::DTYPE_BF16:
        for (size_t i = 0; i < n; ++i) {
          uint32_t bits = static_cast<uint32_t>(load<uint16_t>(src, i)) << 16;
          out[i] = static_cast<T>(std::bit_cast<float>(bits));
        }
        return out;
      default:
        break;  // integers below
    }
  }
  // Integer source: load as a wide signed/unsigned value and range-check integer targets.
  const bool is_unsigned64 = t.dtype == DType::DTYPE_U64;
  for (size_t i = 0; i < n; ++i) {
    int64_t s = 0;
    uint64_t u = 0;
    switch (t.dtype) {
      case DType::DTYPE_BOOL:
      case DType::DTYPE_U8:
        s = load<uint8_t>(src, i);
        break;
      case DType::DTYPE_I8:
        s = load<int8_t>(src, i);
        break;
      case DType::DTYPE_I16:
        s = load<int16_t>(src, i);
        break;
      case DType::DTYPE_U16:
        s = load<uint16_t>(src, i);
        break;
      case DType::DTYPE_I32:
        s = load<int32_t>(src, i);
        break;
      case DType::DTYPE_U32:
        s = load<uint32_t>(src, i);
        break;
      case DType::DTYPE_I64:
        s = load<int64_t>(src, i);
        break;
      case DType::DTYPE_U64:
        u = load<uint64_t>(src, i);
        break;
      default:
        fail("tensor '%s' in '%s': unexpected dtype %s", name.c_str(), path_.c_str(),
             dtype_name(t.dtype));
    }
    if constexpr (std::is_floating_point_v<T>) {
      out[i] = is_unsigned64 ? static_cast<T>(u) : static_cast<T>(s);
    } else {
      bool fits = is_unsigned64
                      ? u <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                      : (s >= std::numeric_limits<T>::min() && s <= std::numeric_limits<T>::max());
      if (!fits) {
        fail("tensor '%s' in '%s': element %zu (%s) does not fit %s", name.c_str(), path_.c_str(),
             i, is_unsigned64 ? std::to_string(u).c_str() : std::to_string(s).c_str(), target);
      }
      out[i] = is_unsigned64 ? static_cast<T>(u) : static_cast<T>(s);
    }
  }
  return out;
}

template std::vector<float> SafetensorsReader::read_as<float>(const std::string&) const;
template std::vector<double> SafetensorsReader::read_as<double>(const std::string&) const;
template std::vector<int32_t> SafetensorsReader::read_as<int32_t>(const std::string&) const;
template std::vector<int64_t> SafetensorsReader::read_as<int64_t>(const std::string&) const;
template std::vector<float> SafetensorsReader::read_as<float>(const std::string&,
                                                              const Shape&) const;
template std::vector<double> SafetensorsReader::read_as<double>(const std::string&,
                                                                const Shape&) const;
template std::vector<int32_t> SafetensorsReader::read_as<int32_t>(const std::string&,
                                                                  const Shape&) const;
template std::vector<int64_t> SafetensorsReader::read_as<int64_t>(const std::string&,
                                                                  const Shape&) const;

// ---- writer ------------------------------------------------------------------------

namespace {

void check_utf8(const std::string& s, const char* what) {
  try {
    (void)nlohmann::json(s).dump();
  } catch (const nlohmann::json::exception&) {
    fail("safetensors writer: %s '%s' is not valid UTF-8", what, s.c_str());
  }
}

}  // namespace

void SafetensorsWriter::add(const std::string& name, DType dtype, const Shape& shape,
                            const void* data) {
  (void)dtype_desc(dtype);  // rejects invalid enum values
  if (name.empty() || name == kMetadataKey) {
    fail("safetensors writer: invalid tensor name '%s'", name.c_str());
  }
  check_utf8(name, "tensor name");
  if (index_.count(name)) fail("safetensors writer: duplicate tensor name '%s'", name.c_str());
  uint64_t numel = 1;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0) {
      fail("safetensors writer: tensor '%s' has negative dimension in shape %s", name.c_str(),
           shape_to_string(shape).c_str());
    }
    overflow |= __builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel);
  }
  uint64_t nbytes = 0;
  overflow |= __builtin_mul_overflow(numel, dtype_size(dtype), &nbytes);
  if (overflow) {
    fail("safetensors writer: tensor '%s' shape %s overflows 64 bits", name.c_str(),
         shape_to_string(shape).c_str());
  }
  if (nbytes > 0 && data == nullptr) {
    fail("safetensors writer: tensor '%s' has null data for %llu bytes", name.c_str(),
         static_cast<unsigned long long>(nbytes));
  }
  index_[name] = entries_.size();
  entries_.push_back({name, dtype, shape, data, nbytes});
}

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) {
  check_utf8(key, "metadata key");
  check_utf8(value, "metadata value");
  metadata_[key] = value;
}

void SafetensorsWriter::write(const std::string& path) const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata_) m[k] = v;
    header[kMetadataKey] = std::move(m);
  }
  uint64_t offset = 0;
  for (const Entry& e : entries_) {
    nlohmann::ordered_json t = nlohmann::ordered_json::object();
    t["dtype"] = dtype_name(e.dtype);
    t["shape"] = e.shape;
    t["data_offsets"] = {offset, offset + e.nbytes};
    header[e.name] = std::move(t);
    offset += e.nbytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  const uint64_t header_len = h.size();

  AtomicFile f(path);
  f.write(&header_len, 8);
  f.write(h);
  for (const Entry& e : entries_) f.write(e.data, e.nbytes);
  f.commit();
}

}  // namespace gossamer::io
