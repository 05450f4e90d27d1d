#include "clients/cpp/npy.h"

#include <complex>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::client {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

// np.save's header, as NumPy 1.24 writes it: `dict` padded with spaces to
// `total` bytes (magic, version and length included), ending in '\n'.
std::string NumpyHeader(char major, const std::string& dict, size_t total) {
  const size_t length_bytes = major == 1 ? 2 : 4;
  std::string out = absl::StrCat("\x93NUMPY", std::string(1, major), std::string(1, '\0'));
  const size_t header_length = total - 8 - length_bytes;
  for (size_t i = 0; i < length_bytes; ++i) {
    out.push_back(static_cast<char>((header_length >> (8 * i)) & 0xff));
  }
  out += dict;
  out.append(total - out.size() - 1, ' ');
  out += '\n';
  return out;
}

std::string RandomBytes(size_t n, uint32_t seed, bool booleans) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(booleans ? rng() % 2 : rng() % 256);
  return out;
}

Array RandomArray(v1::DType dtype, std::vector<int64_t> shape, uint32_t seed) {
  Array array;
  array.dtype = dtype;
  array.shape = std::move(shape);
  array.data = RandomBytes(array.num_elements() * ItemSize(dtype), seed, dtype == v1::DTYPE_BOOL);
  return array;
}

class NpyDTypeTest : public ::testing::TestWithParam<v1::DType> {};

TEST_P(NpyDTypeTest, RoundTripsEveryShape) {
  const std::vector<std::vector<int64_t>> shapes = {{},        {0},       {1},   {7},
                                                    {3, 0, 2}, {2, 3, 5}, {1023}};
  uint32_t seed = 7;
  for (const std::vector<int64_t>& shape : shapes) {
    const Array array = RandomArray(GetParam(), shape, seed++);
    ASSERT_OK_AND_ASSIGN(const std::string bytes, SerializeNpy(array));
    EXPECT_EQ(bytes.size() % 64, array.data.size() % 64) << "data starts 64-byte aligned";
    ASSERT_OK_AND_ASSIGN(const Array back, ParseNpy(bytes));
    EXPECT_EQ(back, array) << array.TypeString();
  }
}

TEST_P(NpyDTypeTest, RoundTripsThroughAFile) {
  const Array array = RandomArray(GetParam(), {4, 5}, 11);
  const std::string path =
      ::testing::TempDir() + "npy_test_" + std::string(DTypeName(GetParam())) + ".npy";
  ASSERT_THAT(WriteNpyFile(path, array), IsOk());
  ASSERT_OK_AND_ASSIGN(const Array back, ReadNpyFile(path));
  EXPECT_EQ(back, array);
  std::remove(path.c_str());
}

TEST_P(NpyDTypeTest, WritesNumpysHeader) {
  const Array array = RandomArray(GetParam(), {7}, 3);
  ASSERT_OK_AND_ASSIGN(const std::string bytes, SerializeNpy(array));
  const std::string expected =
      NumpyHeader(1,
                  absl::StrCat("{'descr': '", NpyDescr(GetParam()),
                               "', 'fortran_order': False, 'shape': (7,), }"),
                  128);
  EXPECT_EQ(bytes.substr(0, 128), expected);
  EXPECT_EQ(bytes.substr(128), array.data);
}

INSTANTIATE_TEST_SUITE_P(EveryDType, NpyDTypeTest,
                         ::testing::ValuesIn(AllDTypes().begin(), AllDTypes().end()),
                         [](const ::testing::TestParamInfo<v1::DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

TEST(NpyTest, DescrsAreNumpys) {
  EXPECT_EQ(NpyDescr(v1::DTYPE_BOOL), "|b1");
  EXPECT_EQ(NpyDescr(v1::DTYPE_INT8), "|i1");
  EXPECT_EQ(NpyDescr(v1::DTYPE_UINT8), "|u1");
  EXPECT_EQ(NpyDescr(v1::DTYPE_INT64), "<i8");
  EXPECT_EQ(NpyDescr(v1::DTYPE_UINT32), "<u4");
  EXPECT_EQ(NpyDescr(v1::DTYPE_FLOAT16), "<f2");
  EXPECT_EQ(NpyDescr(v1::DTYPE_FLOAT64), "<f8");
  EXPECT_EQ(NpyDescr(v1::DTYPE_BFLOAT16), "<V2");
  EXPECT_EQ(NpyDescr(v1::DTYPE_COMPLEX64), "<c8");
  EXPECT_EQ(NpyDescr(v1::DTYPE_COMPLEX128), "<c16");
  EXPECT_EQ(NpyDescr(v1::DTYPE_UNSPECIFIED), "");
}

// The exact bytes of np.save(np.zeros((2, 3), np.float32)) and np.save(np.array(True)).
TEST(NpyTest, MatchesNumpyBytesForTwoDAndZeroD) {
  Array matrix;
  matrix.dtype = v1::DTYPE_FLOAT32;
  matrix.shape = {2, 3};
  matrix.data = std::string(24, '\0');
  ASSERT_OK_AND_ASSIGN(const std::string bytes, SerializeNpy(matrix));
  EXPECT_EQ(bytes,
            NumpyHeader(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 128) +
                std::string(24, '\0'));

  Array scalar;
  scalar.dtype = v1::DTYPE_BOOL;
  scalar.data = std::string(1, '\1');
  ASSERT_OK_AND_ASSIGN(const std::string scalar_bytes, SerializeNpy(scalar));
  EXPECT_EQ(scalar_bytes,
            NumpyHeader(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }", 128) + "\1");
}

// np.lib.format.write_array(f, np.arange(3, dtype='>i4'), version=(2, 0))
TEST(NpyTest, ReadsVersion2AndSwapsBigEndian) {
  const std::string file =
      NumpyHeader(2, "{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }", 128) +
      std::string("\0\0\0\0\0\0\0\1\0\0\0\2", 12);
  ASSERT_OK_AND_ASSIGN(const Array array, ParseNpy(file));
  EXPECT_EQ(array.dtype, v1::DTYPE_INT32);
  EXPECT_EQ(array.shape, std::vector<int64_t>({3}));
  EXPECT_EQ(array.ValuesAs<int32_t>(), std::vector<int32_t>({0, 1, 2}));
}

// np.lib.format.write_array(f, np.arange(3, dtype='<f2'), version=(3, 0))
// np.array([1+2j], '>c8'): each float32 part is swapped on its own.
TEST(NpyTest, SwapsBigEndianComplexPartByPart) {
  const std::string file =
      NumpyHeader(1, "{'descr': '>c8', 'fortran_order': False, 'shape': (1,), }", 128) +
      std::string("\x3f\x80\0\0\x40\0\0\0", 8);
  ASSERT_OK_AND_ASSIGN(const Array array, ParseNpy(file));
  EXPECT_EQ(array.dtype, v1::DTYPE_COMPLEX64);
  EXPECT_EQ(array.ValuesAs<std::complex<float>>(),
            std::vector<std::complex<float>>({{1.0f, 2.0f}}));
}

TEST(NpyTest, ReadsVersion3) {
  const std::string file =
      NumpyHeader(3, "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", 128) +
      std::string("\0\0\0<\0@", 6);
  ASSERT_OK_AND_ASSIGN(const Array array, ParseNpy(file));
  EXPECT_EQ(array.dtype, v1::DTYPE_FLOAT16);
  EXPECT_EQ(array.ValuesAs<uint16_t>(), std::vector<uint16_t>({0x0000, 0x3c00, 0x4000}));
}

TEST(NpyTest, WritesVersion2WhenTheHeaderIsLong) {
  Array array;
  array.dtype = v1::DTYPE_UINT8;
  array.shape = std::vector<int64_t>(30000, 1);  // a header over 64 KiB
  array.data = "x";
  ASSERT_OK_AND_ASSIGN(const std::string bytes, SerializeNpy(array));
  EXPECT_EQ(bytes[6], 2);
  EXPECT_EQ((bytes.size() - 1) % 64, 0u);
  ASSERT_OK_AND_ASSIGN(const Array back, ParseNpy(bytes));
  EXPECT_EQ(back, array);
}

TEST(NpyTest, ReadsHeadersWrittenDifferently) {
  // Key order, double quotes, no trailing comma, no padding, Python 2 longs,
  // an explicit native byte order.
  const std::string dict = "{\"shape\": (2L,3L), \"fortran_order\": False, \"descr\": \"=u2\"}";
  std::string file = absl::StrCat("\x93NUMPY", std::string("\1\0", 2),
                                  std::string(1, static_cast<char>(dict.size())),
                                  std::string(1, '\0'), dict, std::string(12, '\xab'));
  ASSERT_OK_AND_ASSIGN(const Array array, ParseNpy(file));
  EXPECT_EQ(array.dtype, v1::DTYPE_UINT16);
  EXPECT_EQ(array.shape, std::vector<int64_t>({2, 3}));
}

TEST(NpyTest, ReadsBFloat16FromOpaqueTwoByteDescrs) {
  for (const char* descr : {"<V2", "|V2"}) {
    const std::string file =
        NumpyHeader(
            1, absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (1,), }"),
            128) +
        std::string("\x80\x3f", 2);
    ASSERT_OK_AND_ASSIGN(const Array array, ParseNpy(file));
    EXPECT_EQ(array.dtype, v1::DTYPE_BFLOAT16) << descr;
    EXPECT_EQ(BFloat16ToFloat(array.ValuesAs<uint16_t>()[0]), 1.0f);
  }
}

TEST(NpyTest, AcceptsFortranOrderOnlyWhereItChangesNothing) {
  const std::string one_d =
      NumpyHeader(1, "{'descr': '<i2', 'fortran_order': True, 'shape': (3,), }", 128) +
      std::string(6, '\0');
  EXPECT_THAT(ParseNpy(one_d), IsOk());
  // np.save(np.asfortranarray(np.arange(6, dtype='<i2').reshape(2, 3)))
  const std::string two_d =
      NumpyHeader(1, "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }", 128) +
      std::string("\0\0\3\0\1\0\4\0\2\0\5\0", 12);
  EXPECT_THAT(ParseNpy(two_d),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("np.ascontiguousarray")));
}

struct MalformedCase {
  std::string name;
  std::string bytes;
  std::string message;
};

std::string WithDict(const std::string& dict, const std::string& data = "") {
  return NumpyHeader(1, dict, 128) + data;
}

class NpyMalformedTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(NpyMalformedTest, IsAClearError) {
  EXPECT_THAT(ParseNpy(GetParam().bytes),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().message)));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NpyMalformedTest,
    ::testing::Values(
        MalformedCase{"Empty", "", "magic"},
        MalformedCase{"NotNpy", "PK\3\4 a zip file, perhaps an .npz", "magic"},
        MalformedCase{"Version4", std::string("\x93NUMPY\4\0\0\0", 10), "version 4.0"},
        MalformedCase{"TruncatedLength", std::string("\x93NUMPY\1\0\x76", 9), "header length"},
        MalformedCase{
            "TruncatedHeader",
            WithDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }").substr(0, 60),
            "the file ends after"},
        MalformedCase{"TruncatedData",
                      WithDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                               std::string(7, '\0')),
                      "needs 8 bytes of data but the file holds 7"},
        MalformedCase{"TrailingData",
                      WithDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                               std::string(9, '\0')),
                      "holds 9"},
        MalformedCase{
            "Structured",
            WithDict("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"),
            "structured dtypes"},
        MalformedCase{"LongDoubleComplex",
                      WithDict("{'descr': '<c32', 'fortran_order': False, 'shape': (1,), }"),
                      "'<c32' has no gpuflow dtype"},
        MalformedCase{"Object",
                      WithDict("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"),
                      "'|O' has no gpuflow dtype"},
        MalformedCase{"BigEndianBFloat16",
                      WithDict("{'descr': '>V2', 'fortran_order': False, 'shape': (1,), }", "ab"),
                      "big-endian"},
        MalformedCase{"MissingShape", WithDict("{'descr': '<f4', 'fortran_order': False, }"),
                      "no 'shape'"},
        MalformedCase{"ExtraKey",
                      WithDict("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}"),
                      "unexpected key 'x'"},
        MalformedCase{
            "RepeatedKey",
            WithDict("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}"),
            "repeats 'descr'"},
        MalformedCase{"NegativeDimension",
                      WithDict("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"),
                      "non-negative integer dimension"},
        MalformedCase{"ShapeAsList",
                      WithDict("{'descr': '<f4', 'fortran_order': False, 'shape': [1], }"),
                      "a tuple for 'shape'"},
        MalformedCase{
            "HugeDimension",
            WithDict(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
            "exceeds 2^63 - 1"},
        MalformedCase{
            "OverflowingShape",
            WithDict(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"),
            "more than 2^63 elements"},
        MalformedCase{"BadFortranOrder",
                      WithDict("{'descr': '<f4', 'fortran_order': 0, 'shape': (), }"),
                      "True or False"},
        MalformedCase{"NotADict", WithDict("('<f4', False, ())"), "start with '{'"},
        MalformedCase{"UnterminatedDescr", WithDict("{'descr': '<f4"),
                      "the end of a quoted descr"}),
    [](const ::testing::TestParamInfo<MalformedCase>& info) { return info.param.name; });

TEST(NpyTest, SerializeRejectsInvalidArrays) {
  Array short_data;
  short_data.dtype = v1::DTYPE_INT32;
  short_data.shape = {2};
  short_data.data = "abc";
  EXPECT_THAT(SerializeNpy(short_data),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs 8 bytes but holds 3")));
  Array no_dtype;
  EXPECT_THAT(SerializeNpy(no_dtype),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype is not set")));
}

TEST(NpyTest, FileErrorsNameThePath) {
  const std::string missing = ::testing::TempDir() + "npy_test_missing.npy";
  EXPECT_THAT(ReadNpyFile(missing), StatusIs(absl::StatusCode::kNotFound, HasSubstr(missing)));
  const std::string garbage = ::testing::TempDir() + "npy_test_garbage.npy";
  {
    std::FILE* f = std::fopen(garbage.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("hello", f);
    std::fclose(f);
  }
  EXPECT_THAT(ReadNpyFile(garbage),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(garbage + ": malformed")));
  std::remove(garbage.c_str());
  Array array = RandomArray(v1::DTYPE_INT8, {2}, 1);
  EXPECT_THAT(WriteNpyFile(::testing::TempDir() + "no/such/dir/x.npy", array),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no/such/dir/x.npy")));
}

}  // namespace
}  // namespace gpuflow::client
