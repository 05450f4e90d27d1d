#include "clients/cpp/npy.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/cpp/status_macros_internal.h"

namespace gpuflow::client {
namespace {

constexpr absl::string_view kMagic = "\x93NUMPY";
// magic, major, minor: the fixed start of every version.
constexpr size_t kPreambleBytes = 8;
// NumPy aligns the data to this many bytes (also for version 1.0 since 1.14).
constexpr size_t kHeaderAlignment = 64;
// NumPy's GROWTH_AXIS_MAX_DIGITS.
constexpr size_t kGrowthAxisMaxDigits = 21;

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed .npy file: ", what));
}

// The element type a descr string names. `swap` is set for big-endian data.
struct ParsedDescr {
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  bool swap = false;
};

absl::StatusOr<ParsedDescr> ParseDescr(absl::string_view descr) {
  ParsedDescr out;
  absl::string_view type = descr;
  char order = '=';
  if (!type.empty() && (type[0] == '<' || type[0] == '>' || type[0] == '=' || type[0] == '|')) {
    order = type[0];
    type.remove_prefix(1);
  }
  struct Entry {
    absl::string_view code;
    v1::DType dtype;
  };
  static constexpr Entry kCodes[] = {
      {"b1", v1::DTYPE_BOOL},        {"?", v1::DTYPE_BOOL},      {"i1", v1::DTYPE_INT8},
      {"i2", v1::DTYPE_INT16},       {"i4", v1::DTYPE_INT32},    {"i8", v1::DTYPE_INT64},
      {"u1", v1::DTYPE_UINT8},       {"u2", v1::DTYPE_UINT16},   {"u4", v1::DTYPE_UINT32},
      {"u8", v1::DTYPE_UINT64},      {"f2", v1::DTYPE_FLOAT16},  {"f4", v1::DTYPE_FLOAT32},
      {"f8", v1::DTYPE_FLOAT64},     {"V2", v1::DTYPE_BFLOAT16}, {"c8", v1::DTYPE_COMPLEX64},
      {"c16", v1::DTYPE_COMPLEX128},
  };
  for (const Entry& entry : kCodes) {
    if (entry.code == type) out.dtype = entry.dtype;
  }
  if (out.dtype == v1::DTYPE_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the .npy dtype '", descr,
        "' has no gpuflow dtype; gpuflow takes bool, int8..int64, uint8..uint64, float16, "
        "float32, float64, complex64, complex128 and bfloat16 (stored as '<V2')"));
  }
  out.swap = order == '>' && ItemSize(out.dtype) > 1 && out.dtype != v1::DTYPE_BFLOAT16;
  if (order == '>' && out.dtype == v1::DTYPE_BFLOAT16) {
    // 'V2' is opaque bytes to NumPy: a byte order on it means nothing we
    // could undo, so only the little-endian words are bfloat16.
    return absl::InvalidArgumentError(
        absl::StrCat("the .npy dtype '", descr, "' is opaque bytes in big-endian order"));
  }
  return out;
}

// The header is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// This parses exactly the literals NumPy writes (and older writers' "3L").
class HeaderParser {
 public:
  explicit HeaderParser(absl::string_view text) : text_(text) {}

  struct Header {
    std::string descr;
    bool fortran_order = false;
    std::vector<int64_t> shape;
  };

  absl::StatusOr<Header> Parse() {
    Header header;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    SkipSpace();
    GPUFLOW_CLIENT_RETURN_IF_ERROR(Expect('{', "the header to start with '{'"));
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      GPUFLOW_CLIENT_ASSIGN_OR_RETURN(std::string key, ParseString("a quoted key"));
      SkipSpace();
      GPUFLOW_CLIENT_RETURN_IF_ERROR(Expect(':', absl::StrCat("':' after '", key, "'")));
      SkipSpace();
      bool* seen = nullptr;
      if (key == "descr") {
        seen = &seen_descr;
        if (Peek() == '[') {
          return Malformed(
              "structured dtypes (a descr list) are not supported: gpuflow arrays have one "
              "plain element type");
        }
        GPUFLOW_CLIENT_ASSIGN_OR_RETURN(header.descr, ParseString("a quoted descr"));
      } else if (key == "fortran_order") {
        seen = &seen_order;
        GPUFLOW_CLIENT_ASSIGN_OR_RETURN(header.fortran_order, ParseBool());
      } else if (key == "shape") {
        seen = &seen_shape;
        GPUFLOW_CLIENT_ASSIGN_OR_RETURN(header.shape, ParseShape());
      } else {
        return Malformed(absl::StrCat("unexpected key '", key,
                                      "' in the header (expected descr, fortran_order, shape)"));
      }
      if (*seen) return Malformed(absl::StrCat("the header repeats '", key, "'"));
      *seen = true;
      SkipSpace();
      if (Consume(',')) continue;
      GPUFLOW_CLIENT_RETURN_IF_ERROR(Expect('}', absl::StrCat("',' or '}' after '", key, "'")));
      break;
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("nothing after the closing '}'");
    for (auto [seen, name] :
         {std::pair{seen_descr, "descr"}, std::pair{seen_order, "fortran_order"},
          std::pair{seen_shape, "shape"}}) {
      if (!seen) return Malformed(absl::StrCat("the header has no '", name, "'"));
    }
    return header;
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }
  absl::Status Error(absl::string_view expected) const {
    return Malformed(absl::StrCat("expected ", expected, " at offset ", pos_, " of the header '",
                                  absl::StripAsciiWhitespace(text_), "'"));
  }
  absl::Status Expect(char c, absl::string_view what) {
    return Consume(c) ? absl::OkStatus() : Error(what);
  }

  absl::StatusOr<std::string> ParseString(absl::string_view what) {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error(what);
    ++pos_;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') return Error(absl::StrCat(what, " without escapes"));
      out.push_back(text_[pos_++]);
    }
    if (!Consume(quote)) return Error(absl::StrCat("the end of ", what));
    return out;
  }

  absl::StatusOr<bool> ParseBool() {
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      if (absl::StartsWith(text_.substr(pos_), word)) {
        pos_ += std::strlen(word);
        return value;
      }
    }
    return Error("True or False for 'fortran_order'");
  }

  absl::StatusOr<std::vector<int64_t>> ParseShape() {
    std::vector<int64_t> shape;
    GPUFLOW_CLIENT_RETURN_IF_ERROR(Expect('(', "a tuple for 'shape'"));
    while (true) {
      SkipSpace();
      if (Consume(')')) break;
      if (!absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
        return Error("a non-negative integer dimension in 'shape'");
      }
      int64_t dim = 0;
      while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
        const int digit = text_[pos_++] - '0';
        if (dim > (std::numeric_limits<int64_t>::max() - digit) / 10) {
          return Malformed("a dimension in 'shape' exceeds 2^63 - 1");
        }
        dim = dim * 10 + digit;
      }
      Consume('L');  // Python 2's long literals
      shape.push_back(dim);
      SkipSpace();
      if (Consume(',')) continue;
      GPUFLOW_CLIENT_RETURN_IF_ERROR(Expect(')', "',' or ')' in 'shape'"));
      break;
    }
    return shape;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

uint32_t ReadLittleEndian(absl::string_view bytes) {
  uint32_t value = 0;
  for (size_t i = bytes.size(); i-- > 0;) {
    value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  }
  return value;
}

std::string FileError(const std::string& path, int error_number, absl::string_view action) {
  return absl::StrCat(action, " ", path, ": ", std::strerror(error_number));
}

}  // namespace

absl::string_view NpyDescr(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_BOOL:
      return "|b1";
    case v1::DTYPE_INT8:
      return "|i1";
    case v1::DTYPE_INT16:
      return "<i2";
    case v1::DTYPE_INT32:
      return "<i4";
    case v1::DTYPE_INT64:
      return "<i8";
    case v1::DTYPE_UINT8:
      return "|u1";
    case v1::DTYPE_UINT16:
      return "<u2";
    case v1::DTYPE_UINT32:
      return "<u4";
    case v1::DTYPE_UINT64:
      return "<u8";
    case v1::DTYPE_FLOAT16:
      return "<f2";
    case v1::DTYPE_BFLOAT16:
      return "<V2";
    case v1::DTYPE_FLOAT32:
      return "<f4";
    case v1::DTYPE_FLOAT64:
      return "<f8";
    case v1::DTYPE_COMPLEX64:
      return "<c8";
    case v1::DTYPE_COMPLEX128:
      return "<c16";
    default:
      return "";
  }
}

absl::StatusOr<Array> ParseNpy(absl::string_view bytes) {
  if (bytes.size() < kPreambleBytes || !absl::StartsWith(bytes, kMagic)) {
    return Malformed("it does not start with the .npy magic \"\\x93NUMPY\"");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return Malformed(absl::StrCat("format version ", major, ".", minor,
                                  " is not supported (1.0, 2.0 and 3.0 are)"));
  }
  // Version 1.0 has a 2-byte header length, 2.0 and 3.0 a 4-byte one; 3.0's
  // header may be UTF-8, which changes nothing for the keys we read.
  const size_t length_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < kPreambleBytes + length_bytes) {
    return Malformed("the file ends inside the header length");
  }
  const size_t header_length = ReadLittleEndian(bytes.substr(kPreambleBytes, length_bytes));
  const size_t data_offset = kPreambleBytes + length_bytes + header_length;
  if (bytes.size() < data_offset) {
    return Malformed(absl::StrCat("the header is ", header_length,
                                  " bytes but the file ends after ",
                                  bytes.size() - kPreambleBytes - length_bytes));
  }
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(
      HeaderParser::Header header,
      HeaderParser(bytes.substr(kPreambleBytes + length_bytes, header_length)).Parse());
  absl::StatusOr<ParsedDescr> descr = ParseDescr(header.descr);
  if (!descr.ok()) return descr.status();
  if (header.fortran_order && header.shape.size() >= 2) {
    return absl::InvalidArgumentError(
        "the .npy array is in Fortran order (fortran_order: True); gpuflow takes C-order arrays: "
        "save np.ascontiguousarray(a) instead");
  }
  Array array;
  array.dtype = descr->dtype;
  array.shape = std::move(header.shape);
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(const int64_t n, NumElements(array.shape));
  const int64_t itemsize = ItemSize(array.dtype);
  const absl::string_view data = bytes.substr(data_offset);
  if (n > std::numeric_limits<int64_t>::max() / itemsize ||
      static_cast<int64_t>(data.size()) != n * itemsize) {
    return Malformed(absl::StrCat("a ", array.TypeString(), " array needs ",
                                  n > std::numeric_limits<int64_t>::max() / itemsize
                                      ? std::string("more than 2^63")
                                      : absl::StrCat(n * itemsize),
                                  " bytes of data but the file holds ", data.size()));
  }
  array.data.assign(data.data(), data.size());
  if (descr->swap) {
    // A complex element is two floats, each swapped on its own.
    const bool complex = array.dtype == v1::DTYPE_COMPLEX64 || array.dtype == v1::DTYPE_COMPLEX128;
    const size_t word = complex ? itemsize / 2 : itemsize;
    for (size_t i = 0; i < array.data.size(); i += word) {
      std::reverse(array.data.begin() + i, array.data.begin() + i + word);
    }
  }
  return array;
}

absl::StatusOr<std::string> SerializeNpy(const Array& array) {
  GPUFLOW_CLIENT_RETURN_IF_ERROR(array.Validate());
  std::string shape = absl::StrJoin(array.shape, ", ");
  if (array.shape.size() == 1) shape += ",";
  std::string header = absl::StrCat("{'descr': '", NpyDescr(array.dtype),
                                    "', 'fortran_order': False, 'shape': (", shape, "), }");
  // As NumPy (1.17 and later) does, leave room for the first dimension to
  // grow to 21 digits in place, then pad with spaces and end with a newline
  // so that the data starts on a kHeaderAlignment boundary: the bytes are
  // np.save's.
  if (!array.shape.empty()) {
    header.append(
        kGrowthAxisMaxDigits - std::min(kGrowthAxisMaxDigits, absl::StrCat(array.shape[0]).size()),
        ' ');
  }
  int major = 1;
  size_t fixed = kPreambleBytes + 2;
  if (fixed + header.size() + 1 > std::numeric_limits<uint16_t>::max()) {
    major = 2;
    fixed = kPreambleBytes + 4;
  }
  const size_t total = fixed + header.size() + 1;
  header.append((kHeaderAlignment - total % kHeaderAlignment) % kHeaderAlignment, ' ');
  header.push_back('\n');

  std::string out(kMagic);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  const uint32_t length = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < fixed - kPreambleBytes; ++i) {
    out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  }
  out += header;
  out += array.data;
  return out;
}

absl::StatusOr<Array> ReadNpyFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int error_number = errno;
    return absl::Status(absl::ErrnoToStatusCode(error_number),
                        FileError(path, error_number, "cannot open"));
  }
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  absl::StatusOr<Array> array = ParseNpy(bytes);
  if (!array.ok()) {
    return absl::Status(array.status().code(), absl::StrCat(path, ": ", array.status().message()));
  }
  return array;
}

absl::Status WriteNpyFile(const std::string& path, const Array& array) {
  absl::StatusOr<std::string> bytes = SerializeNpy(array);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(), absl::StrCat(path, ": ", bytes.status().message()));
  }
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    if (!file) {
      const int error_number = errno;
      return absl::Status(absl::ErrnoToStatusCode(error_number),
                          FileError(tmp, error_number, "cannot create"));
    }
    file.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
    file.close();
    if (!file) {
      std::remove(tmp.c_str());
      return absl::DataLossError(absl::StrCat("cannot write ", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error_number = errno;
    std::remove(tmp.c_str());
    return absl::Status(absl::ErrnoToStatusCode(error_number),
                        FileError(path, error_number, absl::StrCat("cannot rename ", tmp, " to")));
  }
  return absl::OkStatus();
}

}  // namespace gpuflow::client
