// The flat tables of zip_tables.h, and the portable decoder's status texts.
#include "comm/zip/zip_tables.h"

#include "comm/zip/crc32c.h"
#include "comm/zip/exponent_model.h"

namespace gossamer::comm::zip {

ZipTablesView ZipTables::view() const {
  ZipTablesView v;
  v.length = length.data();
  v.code = code.data();
  v.single = single.data();
  v.crc = crc.data();
  v.choice = codebook_choice_params();
  return v;
}

const ZipTables& zip_tables() {
  static const ZipTables tables = [] {
    ZipTables t;
    t.length.resize(size_t(kNumCodebooks) * kNumSymbols);
    t.code.resize(size_t(kNumCodebooks) * kNumSymbols);
    t.single.resize(size_t(kNumCodebooks) * kLutSize);
    for (int id = 0; id < kNumCodebooks; ++id) {
      const Codebook& book = codebook(id);
      for (int s = 0; s < kNumSymbols; ++s) {
        t.length[size_t(id) * kNumSymbols + size_t(s)] = book.length[size_t(s)];
        t.code[size_t(id) * kNumSymbols + size_t(s)] = book.code[size_t(s)];
      }
      for (int w = 0; w < kLutSize; ++w)
        t.single[size_t(id) * kLutSize + size_t(w)] = book.single[size_t(w)];
    }
    t.crc.assign(crc32c_table(), crc32c_table() + 256);
    return t;
  }();
  return tables;
}

const char* zip_status_message(ZipStatus status) {
  switch (status) {
    case ZipStatus::OK:
      return "no error";
    case ZipStatus::SHORT_CHUNK:
      return "chunk shorter than its header";
    case ZipStatus::CHECKSUM:
      return "checksum mismatch";
    case ZipStatus::RAW_SIZE:
      return "raw chunk's payload is not its elements' size";
    case ZipStatus::ZERO_SIZE:
      return "zero chunk holds a payload";
    case ZipStatus::UNKNOWN_MODE:
      return "unknown chunk mode";
    case ZipStatus::BYTEMAP_SHORT:
      return "sparse chunk shorter than its byte bitmap";
    case ZipStatus::BYTEMAP_PAST_END:
      return "sparse chunk's byte bitmap marks bytes past the element bitmap's end";
    case ZipStatus::BITMAP_SHORT:
      return "sparse chunk shorter than its bitmap bytes";
    case ZipStatus::BITMAP_EMPTY_BYTE:
      return "sparse chunk stores an empty bitmap byte";
    case ZipStatus::BITMAP_PAST_END:
      return "sparse chunk's bitmap marks elements past the chunk's end";
    case ZipStatus::ESCAPES_OVER_ELEMENTS:
      return "more escaped exponents than coded elements";
    case ZipStatus::PAYLOAD_SHORT:
      return "payload shorter than its raw bytes and escaped exponents";
    case ZipStatus::BAD_CODEBOOK:
      return "codebook outside the table";
    case ZipStatus::STREAM_TABLE_SHORT:
      return "exponent bits region shorter than its table";
    case ZipStatus::STREAM_BITS_OVER_TOTAL:
      return "exponent bit streams hold more than the bits stored";
    case ZipStatus::STREAM_PAST_END:
      return "exponent bit streams run past the chunk's end";
    case ZipStatus::REGION_SIZE:
      return "exponent bit streams do not fill their region";
    case ZipStatus::STREAM_ENDS_EARLY:
      return "an exponent bit stream ends before its last element";
    case ZipStatus::STREAM_BITS_LEFT:
      return "an exponent bit stream holds bits past its last element";
    case ZipStatus::ESCAPES_OVER:
      return "more escaped exponents than stored";
    case ZipStatus::ESCAPES_UNDER:
      return "fewer escaped exponents than stored";
  }
  return "unknown status";
}

}  // namespace gossamer::comm::zip
