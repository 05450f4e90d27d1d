#include "engine/ir/echo.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace gpuflow {

namespace {

// The longest prefix of `text` of at most `bytes` bytes that does not end
// inside a UTF-8 sequence.
absl::string_view Utf8Prefix(absl::string_view text, size_t bytes) {
  if (text.size() <= bytes) return text;
  size_t end = bytes;
  // Step back over continuation bytes (10xxxxxx) to a sequence start.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

}  // namespace

std::string Echo(absl::string_view text) {
  std::string escaped = absl::CHexEscape(text);
  if (escaped.size() + 2 <= kMaxEchoBytes) return absl::StrCat("'", escaped, "'");
  const std::string note = absl::StrCat("...' (", text.size(), " bytes)");
  // Cut the escaped form, not inside an escape sequence: escape the longest
  // prefix of the input whose escaped form fits.
  const size_t room = kMaxEchoBytes - 1 - note.size();
  size_t lo = 0;
  size_t hi = std::min(text.size(), room);
  while (lo < hi) {  // largest n with escaped(prefix n).size() <= room
    const size_t mid = (lo + hi + 1) / 2;
    if (absl::CHexEscape(text.substr(0, mid)).size() <= room) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return absl::StrCat("'", absl::CHexEscape(text.substr(0, lo)), note);
}

std::string EchoRaw(absl::string_view text) {
  if (text.size() <= kMaxEchoBytes) return std::string(text);
  const std::string note = absl::StrCat("... (", text.size(), " bytes)");
  return absl::StrCat(Utf8Prefix(text, kMaxEchoBytes - note.size()), note);
}

}  // namespace gpuflow
