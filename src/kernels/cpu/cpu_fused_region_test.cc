// The generated-kernel FusedRegion against its reference kernel: plain and channels-last
// inputs, a row region, the layouts it accepts, and declining (so the reference runs) when its
// code cannot be built.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "codegen/test_cache_dir.h"
#include "kernels/cpu/cpu_test_support.h"
#include "ops/region.h"

namespace nnfuse {
namespace cpu_fused_region_test {

using codegen::OpKind;
using testing::FastInput;

class CpuFusedRegion : public codegen::CacheDirTest {};

// A FusedRegion node over `inputs` computing `r`, with its output's static shape.
struct RegionNode {
  testing::OneNode one;
  RegionNode(const codegen::Region& r, const std::vector<FastInput>& inputs)
      : one("FusedRegion", inputs, ops::fused_region_attrs(r)) {
    Value* out = one.node->output(0);
    out->set_dtype(DType::kFloat32);
    out->set_shape(Shape::of(Dims(r.output_shape.begin(), r.output_shape.end())));
  }
};

// Runs the cpu.generated kernel (which must accept) and the reference kernel; returns the
// output layout the factory chose.
Layout expect_generated_matches_ref(const codegen::Region& r, const std::vector<FastInput>& in) {
  RegionNode n(r, in);
  const NodeInfo info = n.one.info();
  const KernelFactory* f = testing::find_factory("FusedRegion", "cpu.generated");
  EXPECT_NE(f, nullptr);
  if (!f || !f->accepts(info)) {
    ADD_FAILURE() << "cpu.generated declines";
    return Layout::kPlain;
  }
  const Layout layout = f->output_layout(info, 0);
  auto kernel = f->create(info);
  std::vector<Tensor> converted;
  KernelIO io;
  for (const FastInput& x : in) converted.push_back(to_layout(x.value, x.layout));
  for (const Tensor& t : converted) io.inputs.push_back(&t);
  io.outputs.resize(1);
  kernel->run(io);
  EXPECT_EQ(io.outputs[0].layout(), layout);
  KernelContext ctx{*n.one.node, 17, {}, std::vector<Tensor>(1)};
  for (const FastInput& x : in) ctx.inputs.push_back(&x.value);
  find_ref_kernel("FusedRegion")->run(ctx);
  testing::expect_close(to_layout(io.outputs[0], Layout::kPlain), ctx.outputs[0], 1e-6f, 1e-5f);
  return layout;
}

// tanh(a * 2 + b) * c
codegen::Region ew(std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int64_t> c,
                   std::vector<int64_t> out) {
  codegen::Region r;
  r.input_shapes = {a, b, c};
  r.output_shape = out;
  const int x = r.add_binary(OpKind::kMul, r.add_input(0), r.add_const(2));
  const int t = r.add_unary(OpKind::kTanh, r.add_binary(OpKind::kAdd, x, r.add_input(1)));
  r.output = r.add_binary(OpKind::kMul, t, r.add_input(2));
  return r;
}

TEST_F(CpuFusedRegion, PlainInputsWithBroadcasting) {
  const Dims s{2, 3, 5, 7};
  const codegen::Region r = ew({2, 3, 5, 7}, {3, 1, 1}, {1}, {2, 3, 5, 7});
  EXPECT_EQ(expect_generated_matches_ref(r, {{testing::random_tensor(s, 1)},
                                             {testing::random_tensor({3, 1, 1}, 2)},
                                             {testing::random_tensor({1}, 3)}}),
            Layout::kPlain);
}

TEST_F(CpuFusedRegion, ChannelsLastStaysChannelsLastWhenEveryInputIsFullOrScalar) {
  const Dims s{2, 16, 9, 9};
  const codegen::Region r = ew({2, 16, 9, 9}, {2, 16, 9, 9}, {1}, {2, 16, 9, 9});
  EXPECT_EQ(expect_generated_matches_ref(r, {{testing::random_tensor(s, 1), false, Layout::kNHWC},
                                             {testing::random_tensor(s, 2), false, Layout::kNHWC},
                                             {testing::random_tensor({1}, 3)}}),
            Layout::kNHWC);
  // A per-channel input depends on the order of positions: declined in channels-last.
  const codegen::Region bc = ew({2, 16, 9, 9}, {16, 1, 1}, {1}, {2, 16, 9, 9});
  RegionNode n(bc, {{testing::random_tensor(s, 1), false, Layout::kNHWC},
                    {testing::random_tensor({16, 1, 1}, 2)},
                    {testing::random_tensor({1}, 3)}});
  EXPECT_FALSE(testing::find_factory("FusedRegion", "cpu.generated")->accepts(n.one.info()));
}

TEST_F(CpuFusedRegion, RowRegionOverManyRowsUsesTheThreads) {
  // x / sqrt(mean(x * x) + eps) over 300 rows of 257.
  codegen::Region r;
  r.input_shapes = {{300, 257}};
  r.output_shape = {300, 257};
  const int x = r.add_input(0);
  const int m = r.add_reduction(OpKind::kReduceMean, r.add_binary(OpKind::kMul, x, x));
  const int d = r.add_unary(OpKind::kSqrt, r.add_binary(OpKind::kAdd, m, r.add_const(1e-5f)));
  r.output = r.add_binary(OpKind::kDiv, x, d);
  expect_generated_matches_ref(r, {{testing::random_tensor({300, 257}, 4)}});
}

TEST_F(CpuFusedRegion, DeclinesWhenTheCodeCannotBeBuilt) {
  setenv("NNFUSE_CXX", "false", 1);
  // A region no other test builds (the process keeps what it built).
  codegen::Region r = ew({4, 4}, {4, 4}, {1}, {4, 4});
  r.ops[2].value = 2.71828f;
  RegionNode n(r, {{testing::random_tensor({4, 4}, 1)},
                   {testing::random_tensor({4, 4}, 2)},
                   {testing::random_tensor({1}, 3)}});
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(testing::find_factory("FusedRegion", "cpu.generated")->accepts(n.one.info()));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("fallback: region FusedRegion 'node'"), std::string::npos) << err;
}

TEST_F(CpuFusedRegion, MalformedRegionsAreUnsupportedWithTheReason) {
  const codegen::Region r = ew({4, 4}, {4, 4}, {1}, {4, 4});
  const std::vector<FastInput> in{{testing::random_tensor({4, 4}, 1)},
                                  {testing::random_tensor({4, 4}, 2)},
                                  {testing::random_tensor({1}, 3)}};
  {
    RegionNode n(r, in);
    EXPECT_EQ(ref_unsupported_reason(*n.one.node, 17), "");
    Attribute ops = *n.one.node->find_attr("ops");
    ops.ints[ops.ints.size() - 3] = 99;  // an operand that does not exist
    n.one.node->set_attr("ops", ops);
    const std::string why = ref_unsupported_reason(*n.one.node, 17);
    EXPECT_NE(why.find("FusedRegion 'node': malformed region"), std::string::npos) << why;
    EXPECT_FALSE(testing::find_factory("FusedRegion", "cpu.generated")->accepts(n.one.info()));
  }
  {
    RegionNode n(r, in);
    n.one.node->output(0)->set_shape(Shape::unknown());
    const std::string why = ref_unsupported_reason(*n.one.node, 17);
    EXPECT_NE(why.find("has no static shape"), std::string::npos) << why;
  }
}

}  // namespace cpu_fused_region_test
}  // namespace nnfuse
