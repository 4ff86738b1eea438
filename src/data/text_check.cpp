// A streaming UTF-8 validator (RFC 3629 ranges: no overlongs, no surrogates, nothing above
// U+10FFFF) that counts maximal invalid subsequences and control bytes, chunk by chunk.
#include "data/text_check.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.h"

namespace gossamer::data {

namespace {

// Decoder state between bytes: how many continuation bytes are still expected and the range
// the next one must lie in (narrower than 80..BF right after E0, ED, F0 and F4).
class Utf8Counter {
 public:
  explicit Utf8Counter(TextScan& out) : out_(out) {}

  void feed(const unsigned char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) byte(p[i]);
  }
  void finish() {
    if (pending_ > 0) invalid(start_);
    pending_ = 0;
  }

 private:
  void byte(unsigned char c) {
    const uint64_t at = out_.bytes++;
    if (pending_ > 0) {
      if (c >= lo_ && c <= hi_) {
        --pending_;
        lo_ = 0x80;
        hi_ = 0xBF;
        return;
      }
      invalid(start_);  // a truncated sequence; c starts afresh
      pending_ = 0;
    }
    start_ = at;
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\f' && c != '\r') || c == 0x7F)
        ++out_.control_bytes;
      return;
    }
    lo_ = 0x80;
    hi_ = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      pending_ = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      pending_ = 2;
      if (c == 0xE0) lo_ = 0xA0;
      if (c == 0xED) hi_ = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      pending_ = 3;
      if (c == 0xF0) lo_ = 0x90;
      if (c == 0xF4) hi_ = 0x8F;
    } else {
      invalid(at);  // a lone continuation byte, C0, C1 or F5..FF
    }
  }
  void invalid(uint64_t at) {
    if (out_.invalid_sequences++ == 0) out_.first_invalid_offset = at;
  }

  TextScan& out_;
  int pending_ = 0;
  unsigned char lo_ = 0x80, hi_ = 0xBF;
  uint64_t start_ = 0;
};

}  // namespace

double TextScan::non_text_fraction() const {
  return bytes == 0 ? 0.0 : double(invalid_sequences + control_bytes) / double(bytes);
}

TextScan scan_text(const void* data, size_t bytes) {
  TextScan s;
  Utf8Counter counter(s);
  counter.feed(static_cast<const unsigned char*>(data), bytes);
  counter.finish();
  return s;
}

TextScan scan_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  GOSSAMER_CHECK(in.good(), "%s: cannot open for reading: %s", path.c_str(), std::strerror(errno));
  TextScan s;
  Utf8Counter counter(s);
  std::vector<char> chunk(size_t(1) << 20);
  while (in) {
    in.read(chunk.data(), std::streamsize(chunk.size()));
    counter.feed(reinterpret_cast<const unsigned char*>(chunk.data()), size_t(in.gcount()));
  }
  GOSSAMER_CHECK(!in.bad(), "%s: read error", path.c_str());
  counter.finish();
  return s;
}

}  // namespace gossamer::data
