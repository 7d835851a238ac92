#include "onnx/tensor_proto.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "ir/error.h"

namespace nnfuse {
namespace tensor_proto_test {

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

// Each element type from the typed field ONNX keeps it in, converted to its own width.
TEST(TensorProto, EveryTypedFieldReadsBack) {
  auto read = [](int type, auto fill) {
    onnx::TensorProto p;
    p.set_data_type(type);
    p.add_dims(2);
    fill(p);
    return parse_tensor_pb(p.SerializeAsString(), "t.pb");
  };
  using P = onnx::TensorProto;
  Tensor t = read(P::FLOAT, [](P& p) { p.add_float_data(1.5f), p.add_float_data(-2.0f); });
  EXPECT_EQ(t.data<float>()[1], -2.0f);
  t = read(P::DOUBLE, [](P& p) { p.add_double_data(0.25), p.add_double_data(3.0); });
  EXPECT_EQ(t.data<double>()[0], 0.25);
  t = read(P::INT64, [](P& p) { p.add_int64_data(int64_t{1} << 40), p.add_int64_data(-1); });
  EXPECT_EQ(t.data<int64_t>()[0], int64_t{1} << 40);
  t = read(P::UINT32, [](P& p) { p.add_uint64_data(4000000000u), p.add_uint64_data(7); });
  EXPECT_EQ(t.data<uint32_t>()[0], 4000000000u);
  t = read(P::UINT64, [](P& p) { p.add_uint64_data(uint64_t{1} << 63), p.add_uint64_data(7); });
  EXPECT_EQ(t.data<uint64_t>()[0], uint64_t{1} << 63);
  t = read(P::INT16, [](P& p) { p.add_int32_data(-300), p.add_int32_data(5); });
  EXPECT_EQ(t.data<int16_t>()[0], -300);
  t = read(P::INT8, [](P& p) { p.add_int32_data(-7), p.add_int32_data(5); });
  EXPECT_EQ(t.data<int8_t>()[0], -7);
  t = read(P::UINT16, [](P& p) { p.add_int32_data(65000), p.add_int32_data(5); });
  EXPECT_EQ(t.data<uint16_t>()[0], 65000);
  t = read(P::FLOAT16, [](P& p) { p.add_int32_data(0x3C00), p.add_int32_data(0xC000); });
  EXPECT_EQ(static_cast<const uint16_t*>(t.raw())[1], 0xC000);  // the bit pattern of -2
  t = read(P::BFLOAT16, [](P& p) { p.add_int32_data(0x3F80), p.add_int32_data(0); });
  EXPECT_EQ(static_cast<const uint16_t*>(t.raw())[0], 0x3F80);
  t = read(P::UINT8, [](P& p) { p.add_int32_data(200), p.add_int32_data(5); });
  EXPECT_EQ(t.data<uint8_t>()[0], 200);
  t = read(P::BOOL, [](P& p) { p.add_int32_data(0), p.add_int32_data(3); });
  EXPECT_FALSE(t.data<bool>()[0]);
  EXPECT_TRUE(t.data<bool>()[1]);
  // A typed field one value short is refused, whichever field it is.
  EXPECT_THROW(read(P::DOUBLE, [](P& p) { p.add_double_data(1.0); }), Error);
  EXPECT_THROW(read(P::BOOL, [](P& p) { p.add_int32_data(1); }), Error);
}

}  // namespace tensor_proto_test
}  // namespace nnfuse
