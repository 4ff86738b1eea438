// SafetensorsReader (see io/safetensors.h): maps the file read-only, takes the validated header
// from validate_safetensors_header (safetensors_header.cpp) and serves typed views and copies of
// its tensors. Invariant: a constructed reader has validated every entry (a failed validation
// unmaps and throws), so the accessors below index the mapping without further bounds checks;
// read_as converts element types and range-checks integer targets.
#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "io/checksum.h"
#include "io/safetensors_detail.h"

static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

namespace gossamer::io {

namespace {

struct Mapping {
  void* addr = nullptr;
  uint64_t size = 0;
};

// Maps a regular file of at least 8 bytes (the header length field) read-only.
Mapping map_file(const char* p) {
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
  return {m, file_size};
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

// Converts n float-typed elements (F64, F32, F16, BF16) to T; false for any other dtype.
template <class T>
bool load_floats(DType dt, const unsigned char* src, size_t n, T* out) {
  switch (dt) {
    case DType::DTYPE_F64:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(load<double>(src, i));
      return true;
    case DType::DTYPE_F32:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(load<float>(src, i));
      return true;
    case DType::DTYPE_F16:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(half_to_float(load<uint16_t>(src, i)));
      return true;
    case DType::DTYPE_BF16:
      for (size_t i = 0; i < n; ++i) {
        uint32_t bits = static_cast<uint32_t>(load<uint16_t>(src, i)) << 16;
        out[i] = static_cast<T>(std::bit_cast<float>(bits));
      }
      return true;
    default:
      return false;
  }
}

// Element i of an integer-typed buffer, widened: U64 into *u, every other integer type into *s.
// False for a non-integer dtype.
bool load_integer(DType dt, const unsigned char* src, size_t i, int64_t* s, uint64_t* u) {
  switch (dt) {
    case DType::DTYPE_BOOL:
    case DType::DTYPE_U8:
      *s = load<uint8_t>(src, i);
      return true;
    case DType::DTYPE_I8:
      *s = load<int8_t>(src, i);
      return true;
    case DType::DTYPE_I16:
      *s = load<int16_t>(src, i);
      return true;
    case DType::DTYPE_U16:
      *s = load<uint16_t>(src, i);
      return true;
    case DType::DTYPE_I32:
      *s = load<int32_t>(src, i);
      return true;
    case DType::DTYPE_U32:
      *s = load<uint32_t>(src, i);
      return true;
    case DType::DTYPE_I64:
      *s = load<int64_t>(src, i);
      return true;
    case DType::DTYPE_U64:
      *u = load<uint64_t>(src, i);
      return true;
    default:
      return false;
  }
}

template <class T>
constexpr const char* target_name() {
  return std::is_same_v<T, float>     ? "float"
         : std::is_same_v<T, double>  ? "double"
         : std::is_same_v<T, int32_t> ? "int32"
                                      : "int64";
}

}  // namespace

SafetensorsReader::SafetensorsReader(const std::string& path) : path_(path) {
  const Mapping m = map_file(path.c_str());  // throws before anything needs undoing
  map_ = m.addr;
  map_size_ = m.size;
  // From here on the destructor will not run if we throw, so unmap explicitly.
  try {
    const auto* bytes = static_cast<const unsigned char*>(map_);
    detail::SafetensorsHeader header = detail::validate_safetensors_header(path, bytes, m.size);
    buffer_ = bytes + header.buffer_offset;
    tensors_ = std::move(header.tensors);
    metadata_ = std::move(header.metadata);
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

void SafetensorsReader::read_range_into(const std::string& name, DType want,
                                        const Shape& want_shape, size_t first, size_t count,
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
  const size_t numel = size_t(t.numel()), es = dtype_size(t.dtype);
  GOSSAMER_CHECK(first <= numel && count <= numel - first,
                 "tensor '%s' in '%s': elements [%zu, %zu) asked of %zu", name.c_str(),
                 path_.c_str(), first, first + count, numel);
  if (count > 0) std::memcpy(dst, buffer_ + t.begin + first * es, count * es);
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
  const char* target = target_name<T>();
  if (t.dtype == DType::DTYPE_F8_E4M3 || t.dtype == DType::DTYPE_F8_E5M2 ||
      (std::is_integral_v<T> && is_float_dtype(t.dtype))) {
    fail("tensor '%s' in '%s' has dtype %s, which cannot be converted to %s", name.c_str(),
         path_.c_str(), dtype_name(t.dtype), target);
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (load_floats(t.dtype, src, n, out.data())) return out;  // else integers below
  }
  // Integer source: load as a wide signed/unsigned value and range-check integer targets.
  const bool is_unsigned64 = t.dtype == DType::DTYPE_U64;
  for (size_t i = 0; i < n; ++i) {
    int64_t s = 0;
    uint64_t u = 0;
    if (!load_integer(t.dtype, src, i, &s, &u)) {
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

size_t SafetensorsReader::verify_checksums() const {
  size_t checked = 0;
  for (const auto& [key, value] : metadata_) {
    if (!key.starts_with("checksum.")) continue;
    const std::string name = key.substr(9);
    auto alg = metadata_.find("checksum_algorithm");
    if (alg == metadata_.end() || alg->second != kChecksumAlgorithm)
      fail("safetensors file '%s': checksums of another algorithm (%s; this build knows %s)",
           path_.c_str(), alg == metadata_.end() ? "none named" : alg->second.c_str(),
           kChecksumAlgorithm);
    if (!contains(name))
      fail("safetensors file '%s': a checksum for tensor '%s', which the file does not hold",
           path_.c_str(), name.c_str());
    const TensorInfo& t = info(name);
    const std::string got = checksum_hex(checksum64(buffer_ + t.begin, t.nbytes()));
    if (got != value)
      fail(
          "safetensors file '%s': tensor '%s' does not match its checksum (%s stored, %s "
          "computed): the file is damaged",
          path_.c_str(), name.c_str(), value.c_str(), got.c_str());
    ++checked;
  }
  // The writer stores a checksum for every tensor, so a tensor without one in a file that holds
  // checksums means a damaged header, which would otherwise let that tensor load unchecked.
  if (metadata_.count("checksum_algorithm")) {
    for (const TensorInfo& t : tensors_)
      if (!metadata_.count("checksum." + t.name))
        fail(
            "safetensors file '%s': tensor '%s' has no checksum, though the file holds checksums "
            "(checksum_algorithm): the header is damaged",
            path_.c_str(), t.name.c_str());
  }
  return checked;
}

std::string SafetensorsReader::checksums_digest() const {
  std::string entries;
  for (const auto& [key, value] : metadata_)  // std::map: in name order
    if (key.starts_with("checksum.")) entries += key + "=" + value + "\n";
  return entries.empty() ? "" : checksum_hex(checksum64(entries.data(), entries.size()));
}

}  // namespace gossamer::io
