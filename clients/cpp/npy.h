// NumPy's .npy files, read and written without NumPy, for every gpuflow
// dtype.
//
//   absl::StatusOr<Array> a = ReadNpyFile("x.npy");      // np.save(...)'s output
//   absl::Status s = WriteNpyFile("y.npy", *a);          // np.load(...) reads it
//
// What is read: format versions 1.0, 2.0 and 3.0; the descr of a gpuflow
// dtype in any byte order ('<', '=', '|', or '>' which is byte-swapped to
// little-endian); C order. fortran_order True is an error for arrays of two
// or more dimensions (re-save with np.ascontiguousarray), accepted for 0-d
// and 1-d ones, whose bytes are the same in both orders. Structured, complex,
// string, object and datetime dtypes, and files whose data is shorter or
// longer than the header says, are INVALID_ARGUMENT errors naming the
// problem.
//
// What is written: version 1.0 (2.0 when the header needs it), little-endian,
// C order, the bytes np.save writes for the same array (bfloat16 aside, see
// below): np.load reads it back with the same dtype, shape and data.
//
// bfloat16: NumPy has no such dtype. It is stored with descr '<V2' (two
// opaque bytes), which is what np.save writes for ml_dtypes.bfloat16 (the
// type JAX and TensorFlow use): np.load gives a 'V2' array, and
// `a.view(ml_dtypes.bfloat16)` or `a.view(np.uint16)` recovers the values or
// the raw words. Reading '<V2' or '|V2' gives bfloat16. A '<u2' file reads as
// uint16 (raw words stay uint16 unless the caller says otherwise, as
// `gpuflow upload --dtype=bfloat16` does).
//
// All functions are thread-safe (they share no state).
#ifndef GPUFLOW_CLIENTS_CPP_NPY_H_
#define GPUFLOW_CLIENTS_CPP_NPY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "clients/cpp/array.h"

namespace gpuflow::client {

// The descr written for `dtype`: "|b1", "<i4", "<f2", "<V2" (bfloat16), ...;
// empty for DTYPE_UNSPECIFIED.
absl::string_view NpyDescr(v1::DType dtype);

// Parses the bytes of a whole .npy file.
absl::StatusOr<Array> ParseNpy(absl::string_view bytes);

// The bytes of a .npy file holding `array`; INVALID_ARGUMENT when the array
// is not valid (see Array::Validate).
absl::StatusOr<std::string> SerializeNpy(const Array& array);

// ParseNpy / SerializeNpy on a file. Errors name the path; a missing file is
// NOT_FOUND. WriteNpyFile writes a temporary file beside `path` and renames
// it, so `path` is never left half-written.
absl::StatusOr<Array> ReadNpyFile(const std::string& path);
absl::Status WriteNpyFile(const std::string& path, const Array& array);

}  // namespace gpuflow::client

#endif  // GPUFLOW_CLIENTS_CPP_NPY_H_
