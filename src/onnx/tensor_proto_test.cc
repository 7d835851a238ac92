#include "onnx/tensor_proto.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "ir/error.h"

namespace nnfuse {
namespace {

// Found by fuzz_tensor: a shape far larger than its typed data field was allocated before the
// field's length was checked, so a few bytes could ask for hundreds of gigabytes.
TEST(TensorProto, ShapeLargerThanItsDataIsRefusedBeforeAllocating) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(int64_t{1} << 20);
  p.add_dims(int64_t{1} << 18);
  p.add_float_data(1.0f);
  try {
    parse_tensor_pb(p.SerializeAsString(), "t.pb");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("1 values"), std::string::npos) << e.what();
  }
}

TEST(TensorProto, TypedFieldsReadBack) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::INT32);
  p.add_dims(3);
  for (int v : {4, -5, 6}) p.add_int32_data(v);
  Tensor t = parse_tensor_pb(p.SerializeAsString(), "t.pb");
  ASSERT_EQ(t.shape(), (Dims{3}));
  EXPECT_EQ(t.data<int32_t>()[1], -5);
}

}  // namespace
}  // namespace nnfuse
