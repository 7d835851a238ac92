// The tensor readers behind --input files: NumPy .npy (any version, dtype and header) and the
// ONNX TensorProto .pb format; the first byte picks the reader. Whatever a reader returns must
// be self-consistent: its byte count is its element count times the element size.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "fuzz_common.h"
#include "ir/error.h"
#include "onnx/tensor_proto.h"
#include "runtime/npy.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  nnfuse::fuzz::init_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    nnfuse::Tensor t;
    if (data[0] & 1) {
      std::istringstream in(bytes);
      t = nnfuse::read_npy(in, "fuzz.npy");
    } else {
      t = nnfuse::parse_tensor_pb(bytes, "fuzz.pb");
    }
    size_t n = 1;
    for (int64_t d : t.shape()) n *= static_cast<size_t>(d);
    if (t.nbytes() != n * nnfuse::dtype_size(t.dtype())) std::abort();
  } catch (const nnfuse::Error&) {
  }
  return 0;
}
