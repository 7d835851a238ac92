// The row kernels (onednn_matmul_rows.cc): products whose A has no static shape, against the
// reference kernel at several row counts (none included), and what they decline.
#include <gtest/gtest.h>

#include "kernels/cpu/onednn_test_util.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace onednn_matmul_rows_test {

using testing::Attrs;
using testing::random_tensor;

constexpr float kTol = 1e-4f;

// A one-node graph whose input A has shape `a_shape` (symbolic or unknown dims), the other
// inputs constants; the first factory in kernels_for(op) that accepts it.
struct DynamicNode {
  Graph g;
  Node* node = nullptr;
  std::unique_ptr<NodeInfo> info;
  const KernelFactory* chosen = nullptr;

  DynamicNode(const std::string& op, const Shape& a_shape, const std::vector<Tensor>& constants,
              const Attrs& attrs) {
    std::vector<Value*> ins = {g.add_value("a", DType::kFloat32, a_shape)};
    g.add_input(ins[0]);
    for (size_t i = 0; i < constants.size(); ++i) {
      Value* v =
          g.add_value("c" + std::to_string(i), DType::kFloat32, Shape::of(constants[i].shape()));
      v->set_constant(constants[i]);
      ins.push_back(v);
    }
    node = g.add_node(op, "node", ins, {g.add_value("y")}, ref_op_domain(op));
    for (auto& [k, a] : attrs) node->set_attr(k, a);
    info = std::make_unique<NodeInfo>(
        NodeInfo{*node, 17, std::vector<Layout>(ins.size(), Layout::kPlain), 2});
    for (const KernelFactory& f : kernels_for(op)) {
      if (f.accepts(*info)) {
        chosen = &f;
        break;
      }
    }
  }

  Tensor run(const Tensor& a, const std::vector<Tensor>& constants) const {
    std::unique_ptr<Kernel> k = chosen->create(*info);
    KernelIO io;
    io.inputs.push_back(&a);
    for (const Tensor& c : constants) io.inputs.push_back(&c);
    io.outputs.resize(1);
    k->run(io);
    return io.outputs[0];
  }
};

Shape rows_unknown(int64_t k) {  // [?, k]
  Shape s;
  s.has_rank = true;
  s.dims = {Dim{-1, "rois"}, Dim{k, ""}};
  return s;
}

void check(const std::string& op, const std::string& kernel, const Shape& a_shape,
           const std::vector<Dims>& a_dims, const std::vector<Tensor>& constants,
           const Attrs& attrs) {
  DynamicNode n(op, a_shape, constants, attrs);
  ASSERT_NE(n.chosen, nullptr);
  ASSERT_EQ(std::string(n.chosen->name), kernel) << op << " with A " << a_shape.str();
  uint32_t seed = 11;
  for (const Dims& d : a_dims) {
    SCOPED_TRACE(op + " A " + dims_str(d));
    const Tensor a = random_tensor(d, seed++, -2.0f, 2.0f);
    std::vector<Tensor> in = {a};
    in.insert(in.end(), constants.begin(), constants.end());
    const Tensor want = testing::run_ref(op, in, attrs)[0];
    const Tensor got = n.run(a, constants);
    ASSERT_EQ(got.shape(), want.shape());
    testing::expect_close(got, want, kTol, kTol);
  }
}

TEST(OnednnRowsMatMul, MatMulOfUnknownRows) {
  const Tensor b = random_tensor({24, 10}, 1);
  check("MatMul", "onednn.matmul_rows", rows_unknown(24), {{0, 24}, {1, 24}, {150, 24}}, {b}, {});
  // A of unknown rank: its leading dims fold into rows.
  check("MatMul", "onednn.matmul_rows", Shape::unknown(), {{3, 24}, {2, 5, 24}, {2, 0, 24}}, {b},
        {});
}

TEST(OnednnRowsMatMul, GemmWithTransposeScalesAndBias) {
  const Tensor b = random_tensor({10, 24}, 2), c = random_tensor({10}, 3);
  const Attrs attrs = {
      {"transB", attr_int(1)}, {"alpha", attr_float(0.5f)}, {"beta", attr_float(2.0f)}};
  check("Gemm", "onednn.gemm_rows", rows_unknown(24), {{0, 24}, {7, 24}, {150, 24}}, {b, c}, attrs);
  // C of [1, N] and a scalar C broadcast along the rows.
  check("Gemm", "onednn.gemm_rows", rows_unknown(24), {{5, 24}}, {b, random_tensor({1, 10}, 4)},
        attrs);
  check("Gemm", "onednn.gemm_rows", rows_unknown(24), {{5, 24}}, {b, random_tensor({1}, 5)}, attrs);
  check("Gemm", "onednn.gemm_rows", rows_unknown(24), {{5, 24}}, {random_tensor({24, 10}, 6)}, {});
}

TEST(OnednnRowsMatMul, FusedProductsWithActivations) {
  const Tensor b = random_tensor({24, 10}, 7), bias = random_tensor({10}, 8);
  for (const char* act : {"Relu", "Sigmoid", "Gelu", "LeakyRelu"}) {
    const Attrs attrs = {{"activation", attr_string(act)}};
    check("FusedGemm", "onednn.fused_gemm_rows", rows_unknown(24), {{0, 24}, {33, 24}}, {b, bias},
          attrs);
    check("FusedMatMul", "onednn.fused_matmul_rows", Shape::unknown(), {{4, 3, 24}}, {b, bias},
          attrs);
  }
}

TEST(OnednnRowsMatMul, GatedAndNormPrologueProducts) {
  // W [K, 2N]: gate columns then up columns; bias of 2N; gamma and beta of K.
  const Tensor w = random_tensor({24, 20}, 13), bias = random_tensor({20}, 14);
  const Tensor gamma = random_tensor({24}, 15, 0.5f, 1.5f), beta = random_tensor({24}, 16);
  const std::vector<Dims> rows = {{0, 24}, {1, 24}, {37, 24}};
  for (const char* act : {"SiLU", "Gelu", "Relu"}) {
    const Attrs attrs = {{"activation", attr_string(act)}};
    check("FusedGatedMatMul", "onednn.fused_gated_matmul_rows", rows_unknown(24), rows, {w}, attrs);
    check("FusedGatedMatMul", "onednn.fused_gated_matmul_rows", Shape::unknown(), {{2, 5, 24}},
          {w, bias}, attrs);
    check("FusedGatedMatMul", "onednn.fused_gated_matmul_rows", rows_unknown(24), rows,
          {w, bias, gamma, beta}, attrs);
  }
  Attrs rms = {{"activation", attr_string("SiLU")},
               {"norm", attr_string("rms")},
               {"epsilon", attr_float(1e-6f)}};
  check("FusedGatedMatMul", "onednn.fused_gated_matmul_rows", rows_unknown(24), rows,
        {w, bias, gamma}, rms);
  const Tensor b = random_tensor({24, 10}, 17), b_bias = random_tensor({10}, 18);
  check("FusedLayerNormMatMul", "onednn.fused_ln_matmul_rows", rows_unknown(24), rows,
        {b, b_bias, gamma, beta}, {});
  rms.erase("activation");
  check("FusedLayerNormMatMul", "onednn.fused_ln_matmul_rows", Shape::unknown(), {{3, 4, 24}},
        {b, b_bias, gamma}, rms);
  // A W of odd columns and a gamma of the wrong length are declined.
  EXPECT_STREQ(DynamicNode("FusedGatedMatMul", rows_unknown(24), {random_tensor({24, 9}, 19)}, {})
                   .chosen->name,
               "ref");
  EXPECT_STREQ(DynamicNode("FusedLayerNormMatMul", rows_unknown(24),
                           {b, b_bias, random_tensor({23}, 20)}, {})
                   .chosen->name,
               "ref");
}

TEST(OnednnRowsMatMul, StaticShapesGoToThePrepackedKernelsAndBadInputsFail) {
  const Tensor b = random_tensor({24, 10}, 9);
  Shape fixed = Shape::of({4, 24});
  EXPECT_EQ(std::string(DynamicNode("MatMul", fixed, {b}, {}).chosen->name), "onednn.matmul");
  // A known not to multiply B, a 3-D A for Gemm, a C with one row per A row: declined.
  EXPECT_STREQ(DynamicNode("MatMul", rows_unknown(23), {b}, {}).chosen->name, "ref");
  Shape three;
  three.has_rank = true;
  three.dims = {Dim{-1, "n"}, Dim{2, ""}, Dim{24, ""}};
  EXPECT_STREQ(DynamicNode("Gemm", three, {b}, {}).chosen->name, "ref");
  EXPECT_STREQ(
      DynamicNode("Gemm", rows_unknown(24), {b, random_tensor({5, 10}, 10)}, {}).chosen->name,
      "ref");
  // At run time: an A whose last dim is not B's rows, and a 3-D A for Gemm, are errors.
  DynamicNode mm("MatMul", Shape::unknown(), {b}, {});
  EXPECT_THROW(mm.run(random_tensor({3, 23}, 11), {b}), Error);
  DynamicNode gemm("Gemm", Shape::unknown(), {b}, {});
  EXPECT_STREQ(gemm.chosen->name, "onednn.gemm_rows");
  EXPECT_THROW(gemm.run(random_tensor({2, 3, 24}, 12), {b}), Error);
}

}  // namespace onednn_matmul_rows_test
}  // namespace nnfuse
