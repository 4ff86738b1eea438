// SafetensorsWriter (see io/safetensors.h): tensors are registered with add() (name, dtype,
// shape and byte count checked there, data only borrowed) or add_streamed() (bytes produced
// during write()), and written by write() as one compact JSON header padded to 8 bytes followed
// by the data in the order added; the header is rewritten once the data's checksums are known. The
// file goes through io::AtomicFile (temporary sibling, fsync, rename, directory fsync), so the
// final path holds either the previous file or the complete new one, never a partial write.
#include "io/safetensors.h"

#include <bit>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/checksum.h"
#include "io/safetensors_detail.h"

static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

namespace gossamer::io {

using detail::kMetadataKey;

namespace {

void check_utf8(const std::string& s, const char* what) {
  try {
    (void)nlohmann::json(s).dump();
  } catch (const nlohmann::json::exception&) {
    fail("safetensors writer: %s '%s' is not valid UTF-8", what, s.c_str());
  }
}

}  // namespace

uint64_t SafetensorsWriter::check_entry(const std::string& name, DType dtype,
                                        const Shape& shape) const {
  (void)dtype_size(dtype);  // rejects invalid enum values
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
  return nbytes;
}

void SafetensorsWriter::add(const std::string& name, DType dtype, const Shape& shape,
                            const void* data) {
  const uint64_t nbytes = check_entry(name, dtype, shape);
  if (nbytes > 0 && data == nullptr) {
    fail("safetensors writer: tensor '%s' has null data for %llu bytes", name.c_str(),
         static_cast<unsigned long long>(nbytes));
  }
  index_[name] = entries_.size();
  entries_.push_back({name, dtype, shape, data, nullptr, nbytes});
}

void SafetensorsWriter::add_streamed(const std::string& name, DType dtype, const Shape& shape,
                                     Filler fill) {
  const uint64_t nbytes = check_entry(name, dtype, shape);
  GOSSAMER_CHECK(fill != nullptr, "safetensors writer: tensor '%s' has no filler", name.c_str());
  index_[name] = entries_.size();
  entries_.push_back({name, dtype, shape, nullptr, std::move(fill), nbytes});
}

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) {
  check_utf8(key, "metadata key");
  check_utf8(value, "metadata value");
  metadata_[key] = value;
}

// The header for the given checksums (one per entry; empty: no checksums).
std::string SafetensorsWriter::header(const std::vector<std::string>& checksums) const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::map<std::string, std::string> metadata = metadata_;
  if (!checksums.empty()) {
    metadata["checksum_algorithm"] = kChecksumAlgorithm;
    for (size_t i = 0; i < entries_.size(); ++i)
      metadata["checksum." + entries_[i].name] = checksums[i];
  }
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
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
  return h;
}

void SafetensorsWriter::write(const std::string& path) const {
  // Placeholders of a checksum's length (16 hex digits), so the final header has the same size.
  std::vector<std::string> checksums(checksums_ ? entries_.size() : 0, checksum_hex(0));
  const std::string placeholder = header(checksums);
  const uint64_t header_len = placeholder.size();

  AtomicFile f(path);
  f.write(&header_len, 8);
  f.write(placeholder);
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    Checksum64Stream sum;
    uint64_t written = 0;
    const Sink sink = [&](const void* data, size_t bytes) {
      GOSSAMER_CHECK(written + bytes <= e.nbytes,
                     "%s: tensor '%s' was given more than its %llu bytes", path.c_str(),
                     e.name.c_str(), static_cast<unsigned long long>(e.nbytes));
      f.write(data, bytes);
      if (checksums_) sum.add(data, bytes);
      written += bytes;
    };
    if (e.fill)
      e.fill(sink);
    else
      sink(e.data, e.nbytes);
    GOSSAMER_CHECK(written == e.nbytes, "%s: tensor '%s' was given %llu of its %llu bytes",
                   path.c_str(), e.name.c_str(), static_cast<unsigned long long>(written),
                   static_cast<unsigned long long>(e.nbytes));
    if (checksums_) checksums[i] = checksum_hex(sum.value());
  }
  if (checksums_) {
    const std::string h = header(checksums);
    GOSSAMER_CHECK(h.size() == header_len, "%s: the header changed size with its checksums",
                   path.c_str());
    f.write_at(8, h.data(), h.size());
  }
  f.commit();
}

}  // namespace gossamer::io
