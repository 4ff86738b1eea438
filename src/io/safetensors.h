// safetensors files (https://github.com/huggingface/safetensors): 8-byte little-endian u64
// header length N, N bytes of JSON header {"name": {"dtype", "shape", "data_offsets": [b, e]},
// "__metadata__": {str: str}} padded with spaces, then the data buffer (offsets relative to it).
// Invariant: a SafetensorsReader that constructed successfully has validated every entry
// (dtype, shape, sizes, bounds, and that the tensors tile the buffer exactly with no overlap
// and no gap, as the reference implementation requires), so accessors never see bad data.
// SafetensorsWriter never leaves a partial file under the final path: it writes through
// io::AtomicFile (temporary sibling, fsync, rename, directory fsync). Implemented in
// safetensors.cpp (dtypes, shapes), safetensors_header.cpp (header validation),
// safetensors_reader.cpp and safetensors_writer.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gossamer::io {

// Element types, named as in the safetensors header ("F32", "BF16", ...).
enum class DType {
  DTYPE_BOOL,
  DTYPE_U8,
  DTYPE_I8,
  DTYPE_F8_E4M3,
  DTYPE_F8_E5M2,
  DTYPE_I16,
  DTYPE_U16,
  DTYPE_F16,
  DTYPE_BF16,
  DTYPE_I32,
  DTYPE_U32,
  DTYPE_F32,
  DTYPE_I64,
  DTYPE_U64,
  DTYPE_F64,
};

size_t dtype_size(DType dt);                                  // bytes per element
const char* dtype_name(DType dt);                             // "F32", ...
std::optional<DType> dtype_from_name(std::string_view name);  // nullopt if unknown

using Shape = std::vector<int64_t>;  // row-major; {} is a 0-d scalar (one element)

std::string shape_to_string(const Shape& shape);  // "[3, 13]", "[]"
int64_t shape_numel(const Shape& shape);          // product of dims (1 for {}); no checks

struct TensorInfo {
  std::string name;
  DType dtype = DType::DTYPE_F32;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte offsets relative to the start of the data buffer
  int64_t numel() const { return shape_numel(shape); }
  uint64_t nbytes() const { return end - begin; }
};

class SafetensorsReader {
 public:
  // Maps the file read-only and validates the whole header; throws gossamer::Error naming the
  // file (and the tensor) on any problem.
  explicit SafetensorsReader(const std::string& path);
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;
  SafetensorsReader(SafetensorsReader&& o) noexcept;
  SafetensorsReader& operator=(SafetensorsReader&& o) noexcept;

  const std::string& path() const { return path_; }
  // Tensor names in data order (ascending data_offsets; ties, i.e. empty tensors, by name).
  // For files from SafetensorsWriter this is the order in which the tensors were added.
  std::vector<std::string> names() const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // same order as names()
  size_t size() const { return tensors_.size(); }
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;  // throws if missing
  // Pointer into the mapping, valid while the reader lives. Alignment is only guaranteed to
  // the element size if the header length and the preceding tensors keep it (files from
  // SafetensorsWriter and from the reference implementation with one dtype do); copy with
  // read_into/read_as when in doubt.
  const void* data(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // metadata value for key; throws naming the key and the file if missing.
  const std::string& metadata(const std::string& key) const;
  // Checks every tensor that has a stored checksum (SafetensorsWriter::add_checksums) against
  // its bytes and returns how many it checked (0 for a file written without checksums); throws
  // naming the file and the tensor when one does not match (the file is damaged), or when a file
  // that holds checksums (checksum_algorithm) has a tensor without one (its header is damaged).
  size_t verify_checksums() const;
  // One value for the file's stored tensor checksums (their names and values, hashed in name
  // order; "" for a file without checksums): what ties the file to the record of another file
  // (a checkpoint's trainer.json). Reads the header only; verify_checksums() ties it to the bytes.
  std::string checksums_digest() const;

  // Checks that tensor `name` has exactly dtype `want` and shape `want_shape`, then copies its
  // nbytes() into dst. Errors: "tensor X in FILE has shape [..], expected [..]" (same for dtype).
  void read_into(const std::string& name, DType want, const Shape& want_shape, void* dst) const;
  // The same checks, then elements [first, first + count) only (of the flattened tensor): what a
  // rank reads of a sharded tensor, without a copy of the whole. A range past the end throws.
  void read_range_into(const std::string& name, DType want, const Shape& want_shape, size_t first,
                       size_t count, void* dst) const;
  // Returns the values converted to T (float, double, int32_t or int64_t). Float targets accept
  // any float or integer dtype (F64 -> float rounds to nearest); integer targets accept integer
  // dtypes only, and each value must fit T. The second form also checks the shape.
  template <class T>
  std::vector<T> read_as(const std::string& name) const;
  template <class T>
  std::vector<T> read_as(const std::string& name, const Shape& want_shape) const;

 private:
  void unmap();

  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const unsigned char* buffer_ = nullptr;  // start of the data buffer inside the mapping
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

class SafetensorsWriter {
 public:
  // Registers a tensor; `data` (shape_numel(shape) * dtype_size(dtype) bytes) is only read by
  // write(), so it must stay valid until then. Throws on a duplicate or reserved name
  // ("__metadata__", ""), on a negative dimension, or on null data for a non-empty tensor.
  void add(const std::string& name, DType dtype, const Shape& shape, const void* data);
  // Registers a tensor whose bytes are produced while write() runs, in file order, so that a
  // file larger than memory (or gathered piece by piece) is never held whole: write() calls
  // fill(sink) once, and fill must pass exactly the tensor's byte count to sink, in pieces.
  using Sink = std::function<void(const void* data, size_t bytes)>;
  using Filler = std::function<void(const Sink& sink)>;
  void add_streamed(const std::string& name, DType dtype, const Shape& shape, Filler fill);
  void set_metadata(const std::string& key, const std::string& value);  // overwrites
  // write() also stores a checksum of every tensor's bytes in the metadata ("checksum.NAME", and
  // "checksum_algorithm"; io/checksum.h), which SafetensorsReader::verify_checksums() checks.
  void add_checksums() { checksums_ = true; }
  // Header: {"__metadata__": {...} (if any), tensors in the order added}, compact JSON padded
  // with spaces to a multiple of 8 bytes; data in the order added, contiguous. The checksums
  // are computed while the data is written: the header goes first with placeholders of the same
  // length and is rewritten once the data is out. Written through io::AtomicFile; on failure
  // nothing is left behind and an Error names the path and strerror. Can be called more than
  // once (a streamed tensor's filler is then called again).
  void write(const std::string& path) const;

 private:
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    const void* data;  // or, for a streamed tensor, fill
    Filler fill;
    uint64_t nbytes;
  };
  std::string header(const std::vector<std::string>& checksums) const;
  uint64_t check_entry(const std::string& name, DType dtype, const Shape& shape) const;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  bool checksums_ = false;
};

}  // namespace gossamer::io
