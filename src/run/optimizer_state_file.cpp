// Gathering, writing and restoring typed optimizer state (see optimizer_state_file.h). The
// file is written tensor by tensor as each is gathered: rank 0 holds one gathered tensor at a
// time, and state that is whole on this rank is written from where it lives, not copied.
#include "run/optimizer_state_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"

namespace gossamer::run {

namespace {

using optim::StateDType;
using optim::StateScope;
using optim::StateTensor;

// A state dtype on the wire and in the file.
struct DTypeRow {
  StateDType state;
  comm::DType wire;
  io::DType file;
};
constexpr DTypeRow kDTypes[] = {
    {StateDType::STATE_DTYPE_F32, comm::DType::F32, io::DType::DTYPE_F32},
    {StateDType::STATE_DTYPE_BF16, comm::DType::BF16, io::DType::DTYPE_BF16},
    {StateDType::STATE_DTYPE_I32, comm::DType::I32, io::DType::DTYPE_I32},
    {StateDType::STATE_DTYPE_U8, comm::DType::U8, io::DType::DTYPE_U8},
};

const DTypeRow& row_of(StateDType d) {
  for (const DTypeRow& r : kDTypes)
    if (r.state == d) return r;
  fail("optimizer state: unknown dtype %d", int(d));
}
comm::DType wire_dtype(StateDType d) {
  return row_of(d).wire;
}
io::DType file_dtype(StateDType d) {
  return row_of(d).file;
}

std::string rank_tensor_name(const std::string& name, int rank) {
  return name + "@rank" + std::to_string(rank);
}

// Every rank's element count of a tensor, in rank order.
std::vector<size_t> counts_of_ranks(comm::Communicator& comm, size_t mine) {
  std::vector<int64_t> sizes(size_t(comm.size()));
  const int64_t n = int64_t(mine);
  const std::vector<size_t> ones(size_t(comm.size()), 1);
  comm.all_gather(&n, sizes.data(), ones, comm::DType::I64).wait();
  return {sizes.begin(), sizes.end()};
}

// Reads `numel` elements of tensor `name` as `dtype` into dst. A file written before typed
// state holds integer state as F32; it converts when every value is an exact integer in range.
void read_state_tensor(const io::SafetensorsReader& reader, const std::string& name,
                       StateDType dtype, size_t numel, void* dst) {
  const io::Shape shape = {int64_t(numel)};
  const io::DType want = file_dtype(dtype);
  const io::TensorInfo& info = reader.info(name);
  const bool integer = dtype == StateDType::STATE_DTYPE_U8 || dtype == StateDType::STATE_DTYPE_I32;
  if (info.dtype == want || !integer || info.dtype != io::DType::DTYPE_F32) {
    reader.read_into(name, want, shape, dst);
    return;
  }
  const std::vector<float> v = reader.read_as<float>(name, shape);
  const double hi = dtype == StateDType::STATE_DTYPE_U8 ? 255.0 : 2147483647.0;
  const double lo = dtype == StateDType::STATE_DTYPE_U8 ? 0.0 : -2147483648.0;
  for (size_t i = 0; i < numel; ++i) {
    GOSSAMER_CHECK(std::floor(v[i]) == v[i] && v[i] >= lo && v[i] <= hi,
                   "%s: tensor %s (F32, written before typed state) holds %g at %zu, not a %s "
                   "value",
                   reader.path().c_str(), name.c_str(), double(v[i]), i,
                   std::string(enum_name(dtype)).c_str());
    if (dtype == StateDType::STATE_DTYPE_U8)
      static_cast<uint8_t*>(dst)[i] = uint8_t(v[i]);
    else
      static_cast<int32_t*>(dst)[i] = int32_t(v[i]);
  }
}

// Summed rows: at the saved world size each rank its own row; at another, rank 0 their sum.
void load_summed_rows(const io::SafetensorsReader& reader, const StateTensor& s, int rank,
                      int world) {
  const size_t saved = size_t(reader.info(s.name).numel());
  float* out = static_cast<float*>(s.data);
  const size_t rows = s.numel ? saved / s.numel : 0;
  GOSSAMER_CHECK(rows > 0 && rows * s.numel == saved,
                 "%s: optimizer tensor %s holds %zu elements, not rows of %zu",
                 reader.path().c_str(), s.name.c_str(), saved, s.numel);
  std::vector<float> all(saved);
  reader.read_into(s.name, io::DType::DTYPE_F32, {int64_t(saved)}, all.data());
  if (rows == size_t(world)) {
    std::memcpy(out, all.data() + size_t(rank) * s.numel, s.numel * sizeof(float));
    return;
  }
  std::fill(out, out + s.numel, 0.0f);
  if (rank == 0)
    for (size_t r = 0; r < rows; ++r)
      for (size_t i = 0; i < s.numel; ++i) out[i] += all[r * s.numel + i];
}

// A sharded tensor: the whole flat tensor is read, and this rank keeps its pieces (packed), so
// any world size and bucket size loads it.
void load_sharded(const io::SafetensorsReader& reader, const StateTensor& s) {
  const size_t esize = optim::state_dtype_size(s.dtype);
  if (s.layout && reader.info(s.name).dtype == file_dtype(s.dtype)) {
    // This rank's pieces straight from the mapped file: no copy of the whole tensor.
    const io::Shape shape = {int64_t(s.total)};
    reader.read_range_into(s.name, file_dtype(s.dtype), shape, 0, 0, nullptr);  // checks only
    for (const optim::ShardPiece& p : s.layout->pieces(s.rank))
      reader.read_range_into(s.name, file_dtype(s.dtype), shape, p.begin, p.size(),
                             static_cast<uint8_t*>(s.data) + p.local * esize);
    return;
  }
  // Replicated state, or a file that holds integer state as F32 (converted whole).
  std::vector<uint8_t> whole(s.total * esize);
  read_state_tensor(reader, s.name, s.dtype, s.total, whole.data());
  if (!s.layout) {
    std::memcpy(s.data, whole.data(), s.numel * esize);
    return;
  }
  for (const optim::ShardPiece& p : s.layout->pieces(s.rank))
    std::memcpy(static_cast<uint8_t*>(s.data) + p.local * esize, whole.data() + p.begin * esize,
                p.size() * esize);
}

// An optimizer's state tensors as host memory: those on device memory point at host copies,
// read back on construction; upload() writes the copies back.
class HostState {
 public:
  explicit HostState(std::vector<StateTensor> tensors) : tensors_(std::move(tensors)) {
    staged_.reserve(tensors_.size());  // never moved: tensors_ point into the copies
    for (StateTensor& s : tensors_) {
      if (s.on_host()) continue;
      staged_.push_back({s.data, s.memory, std::vector<uint8_t>(s.bytes())});
      Staged& c = staged_.back();
      if (!c.copy.empty()) s.memory->download(c.copy.data(), s.data, c.copy.size());
      s.data = c.copy.data();
      s.memory = nullptr;
    }
  }
  HostState(const HostState&) = delete;
  HostState& operator=(const HostState&) = delete;
  const std::vector<StateTensor>& tensors() const { return tensors_; }
  void upload() const {
    for (const Staged& c : staged_)
      if (!c.copy.empty()) c.memory->upload(c.device, c.copy.data(), c.copy.size());
  }

 private:
  struct Staged {
    void* device;
    const MemoryOps* memory;
    std::vector<uint8_t> copy;
  };
  std::vector<StateTensor> tensors_;
  std::vector<Staged> staged_;
};

// One tensor of the file: borrowed from this rank's state, or produced by a gather while the
// file is written (`fill`, a collective: every rank runs the fills of every tensor, in order).
struct FileTensor {
  std::string name;
  StateDType dtype;
  size_t numel;
  const void* data;  // or fill
  io::SafetensorsWriter::Filler fill;
};

// A sharded tensor: the same whole tensor on every rank is borrowed; otherwise every rank's
// packed pieces are gathered and passed on in the order of the flat tensor.
void plan_sharded(const StateTensor& s, comm::Communicator& comm, std::vector<FileTensor>& out) {
  if (!s.layout) {
    GOSSAMER_CHECK(s.numel == s.total, "optimizer state %s: %zu of %zu elements and no layout",
                   s.name.c_str(), s.numel, s.total);
    out.push_back({s.name, s.dtype, s.total, s.data, nullptr});
    return;
  }
  const optim::ShardLayout& layout = *s.layout;
  const std::vector<size_t> counts = counts_of_ranks(comm, s.numel);
  GOSSAMER_CHECK(
      layout.world() == comm.size() && layout.total() == s.total && counts == layout.counts(),
      "optimizer state %s: the ranks' pieces do not match a layout of %zu elements over "
      "%d ranks",
      s.name.c_str(), s.total, comm.size());
  // (flat begin, packed offset, size) of every piece of every rank, in the flat tensor's order.
  struct Run {
    size_t begin, packed, size;
  };
  std::vector<Run> runs;
  size_t base = 0;
  for (int r = 0; r < comm.size(); ++r) {
    for (const optim::ShardPiece& p : layout.pieces(r))
      runs.push_back({p.begin, base + p.local, p.size()});
    base += counts[size_t(r)];
  }
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.begin < b.begin; });
  auto fill = [&comm, s, counts, runs](const io::SafetensorsWriter::Sink& sink) {
    const size_t esize = optim::state_dtype_size(s.dtype);
    std::vector<uint8_t> packed(s.total * esize);
    comm.all_gather(s.data, packed.data(), counts, wire_dtype(s.dtype)).wait();
    for (const Run& r : runs) sink(packed.data() + r.packed * esize, r.size * esize);
  };
  out.push_back({s.name, s.dtype, s.total, nullptr, fill});
}

// Per-rank tensors and summed rows: every rank's tensor, in rank order (summed rows: from one
// gather).
void plan_rows(const StateTensor& s, comm::Communicator& comm, std::vector<FileTensor>& out) {
  const size_t esize = optim::state_dtype_size(s.dtype);
  const std::vector<size_t> counts = counts_of_ranks(comm, s.numel);
  size_t sum = 0;
  for (size_t c : counts) sum += c;
  if (s.scope == StateScope::STATE_SCOPE_SUMMED_ROWS) {
    GOSSAMER_CHECK(s.dtype == StateDType::STATE_DTYPE_F32 && sum == s.numel * size_t(comm.size()),
                   "optimizer state %s: summed rows must be F32 and of one size on every rank",
                   s.name.c_str());
    out.push_back({s.name, s.dtype, sum, nullptr, [&comm, s, counts, sum, esize](const auto& sink) {
                     std::vector<uint8_t> all(sum * esize);
                     comm.all_gather(s.data, all.data(), counts, wire_dtype(s.dtype)).wait();
                     sink(all.data(), all.size());
                   }});
    return;
  }
  // Per-rank: rank r sends its own tensor to rank 0 alone when rank 0 writes it, so rank 0 holds
  // one rank's tensor at a time and the others nothing more (an all-gather would give each of
  // many ranks in one process every rank's copy).
  for (int r = 0; r < comm.size(); ++r) {
    const size_t n = counts[size_t(r)];
    out.push_back({rank_tensor_name(s.name, r), s.dtype, n, nullptr,
                   [&comm, s, r, n, esize](const auto& sink) {
                     const comm::DType wire = wire_dtype(s.dtype);
                     if (comm.rank() == r && r != 0) {
                       comm.send(s.data, n, wire, 0).wait();
                     } else if (comm.rank() == 0 && r == 0) {
                       sink(s.data, n * esize);
                     } else if (comm.rank() == 0) {
                       std::vector<uint8_t> piece(n * esize);
                       comm.recv(piece.data(), n, wire, r).wait();
                       sink(piece.data(), piece.size());
                     }
                   }});
  }
}

}  // namespace

void write_optimizer_state(const std::string& path, int64_t step, optim::Optimizer& optimizer,
                           comm::Communicator& comm) {
  const HostState host(optimizer.state());  // device state read back
  std::vector<FileTensor> tensors;
  for (const StateTensor& s : host.tensors()) {
    if (s.scope == StateScope::STATE_SCOPE_SHARDED)
      plan_sharded(s, comm, tensors);
    else
      plan_rows(s, comm, tensors);
  }
  if (comm.rank() != 0) {  // only the gathers, in the order rank 0 writes them
    const io::SafetensorsWriter::Sink discard = [](const void*, size_t) {};
    for (const FileTensor& t : tensors)
      if (t.fill) t.fill(discard);
    return;
  }
  io::SafetensorsWriter w;
  w.set_metadata("format", "gossamer-optimizer");
  w.set_metadata("checkpoint_step", std::to_string(step));
  w.set_metadata("optimizer", optimizer.name());
  w.set_metadata("state_format", "2");
  w.set_metadata("world_size", std::to_string(comm.size()));
  w.add_checksums();
  for (const FileTensor& t : tensors) {
    const io::Shape shape = {int64_t(t.numel)};
    if (t.fill)
      w.add_streamed(t.name, file_dtype(t.dtype), shape, t.fill);
    else
      w.add(t.name, file_dtype(t.dtype), shape, t.data);
  }
  w.write(path);
}

void load_optimizer_state(const std::string& path, optim::Optimizer& optimizer, int rank,
                          int world) {
  io::SafetensorsReader reader(path);
  reader.verify_checksums();
  const auto& meta = reader.metadata();
  auto it = meta.find("optimizer");
  GOSSAMER_CHECK(it != meta.end() && it->second == optimizer.name(),
                 "%s: optimizer state is for \"%s\", the run uses \"%s\"", path.c_str(),
                 it == meta.end() ? "?" : it->second.c_str(), optimizer.name());
  const bool typed = meta.count("state_format") != 0;
  const int saved_world = typed ? std::stoi(reader.metadata("world_size")) : 0;
  // Device state is read back first (a tensor the file lacks keeps its values) and written
  // back once every tensor is read.
  const HostState host(optimizer.state());
  for (const StateTensor& s : host.tensors()) {
    if (s.scope == StateScope::STATE_SCOPE_PER_RANK) {
      GOSSAMER_CHECK(typed,
                     "%s: optimizer state %s is per rank, and this file was written before "
                     "per-rank state existed",
                     path.c_str(), s.name.c_str());
      GOSSAMER_CHECK(saved_world == world,
                     "%s: optimizer state %s is per rank (each rank's own), saved at %d rank(s); "
                     "this run has %d: resume at %d rank(s), or start a new run from the weights "
                     "with --init-from",
                     path.c_str(), s.name.c_str(), saved_world, world, saved_world);
      const std::string name = rank_tensor_name(s.name, rank);
      GOSSAMER_CHECK(reader.contains(name), "%s: missing optimizer tensor %s", path.c_str(),
                     name.c_str());
      read_state_tensor(reader, name, s.dtype, s.numel, s.data);
      continue;
    }
    if (s.optional && !reader.contains(s.name)) continue;  // written before it existed
    GOSSAMER_CHECK(reader.contains(s.name), "%s: missing optimizer tensor %s", path.c_str(),
                   s.name.c_str());
    if (s.scope == StateScope::STATE_SCOPE_SUMMED_ROWS)
      load_summed_rows(reader, s, rank, world);
    else
      load_sharded(reader, s);
  }
  host.upload();
  optimizer.state_loaded();
}

}  // namespace gossamer::run
