#include "engine/ir/echo.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpuflow {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(EchoTest, ShortStringsAreQuotedUnchanged) {
  EXPECT_EQ(Echo("x"), "'x'");
  EXPECT_EQ(Echo(""), "''");
  EXPECT_EQ(Echo("../../etc/passwd"), "'../../etc/passwd'");
  EXPECT_EQ(EchoRaw("node_1"), "node_1");
}

TEST(EchoTest, OneMebibyteIsCutTo256BytesWithItsSize) {
  const std::string huge(1 << 20, 'a');
  const std::string echoed = Echo(huge);
  EXPECT_LE(echoed.size(), kMaxEchoBytes);
  EXPECT_THAT(echoed, StartsWith("'aaaa"));
  EXPECT_THAT(echoed, EndsWith("...' (1048576 bytes)"));
  const std::string raw = EchoRaw(huge);
  EXPECT_LE(raw.size(), kMaxEchoBytes);
  EXPECT_THAT(raw, EndsWith("... (1048576 bytes)"));
}

TEST(EchoTest, ControlBytesAreEscaped) {
  EXPECT_EQ(Echo("a\nb"), "'a\\nb'");
  EXPECT_EQ(Echo(std::string("a\0z", 3)), "'a\\x00z'");
  EXPECT_EQ(Echo("\x7f"), "'\\x7f'");
  EXPECT_EQ(Echo("it's"), "'it\\'s'");
  // Escaping grows the text: the cut still keeps the result within the bound
  // and never splits an escape sequence.
  const std::string controls(1000, '\x01');
  const std::string echoed = Echo(controls);
  EXPECT_LE(echoed.size(), kMaxEchoBytes);
  EXPECT_THAT(echoed, HasSubstr("\\x01...' (1000 bytes)"));
}

TEST(EchoTest, EchoRawNeverSplitsAUtf8Sequence) {
  // "é" is two bytes (C3 A9): 200 of them are 400 bytes, cut somewhere.
  std::string text;
  for (int i = 0; i < 200; ++i) text += "\xC3\xA9";
  const std::string raw = EchoRaw(text);
  EXPECT_LE(raw.size(), kMaxEchoBytes);
  const std::string kept = raw.substr(0, raw.find("..."));
  EXPECT_EQ(kept.size() % 2, 0u);
  for (size_t i = 0; i < kept.size(); i += 2) EXPECT_EQ(kept.substr(i, 2), "\xC3\xA9") << i;
  // Three-byte sequences too, at every offset of the cut.
  for (int lead = 0; lead < 3; ++lead) {
    std::string s(lead, 'a');
    for (int i = 0; i < 200; ++i) s += "\xE2\x82\xAC";  // the euro sign
    const std::string r = EchoRaw(s);
    const std::string body = r.substr(lead, r.find("...") - lead);
    EXPECT_EQ(body.size() % 3, 0u) << lead;
  }
}

}  // namespace
}  // namespace gpuflow
