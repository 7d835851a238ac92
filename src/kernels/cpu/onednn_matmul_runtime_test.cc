// onednn.matmul_runtime (onednn_matmul_runtime.cc): MatMul of two operands of shapes known only
// at run time, against the reference kernel: batched with broadcast batch dims, 1-D operands,
// empty dims, a KV cache's growing length; what it declines, and operands that do not multiply.
#include <gtest/gtest.h>

#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"
#include "testing/numeric.h"

namespace nnfuse {
namespace onednn_matmul_runtime_test {

using testing::random_tensor;

// MatMul over two graph inputs of unknown shape (or the given static ones).
struct RuntimeMatMul {
  Graph g;
  Node* node = nullptr;
  const KernelFactory* chosen = nullptr;

  explicit RuntimeMatMul(const Shape& a = Shape::unknown(), const Shape& b = Shape::unknown()) {
    Value* va = g.add_value("a", DType::kFloat32, a);
    Value* vb = g.add_value("b", DType::kFloat32, b);
    g.add_input(va);
    g.add_input(vb);
    node = g.add_node("MatMul", "mm", {va, vb}, {g.add_value("y")});
    const NodeInfo info{*node, 17, {Layout::kPlain, Layout::kPlain}, 2};
    for (const KernelFactory& f : kernels_for("MatMul")) {
      if (f.accepts(info)) {
        chosen = &f;
        break;
      }
    }
  }

  Tensor run(const Tensor& a, const Tensor& b) const {
    const NodeInfo info{*node, 17, {Layout::kPlain, Layout::kPlain}, 2};
    std::unique_ptr<Kernel> k = chosen->create(info);
    KernelIO io;
    io.inputs = {&a, &b};
    io.outputs.resize(1);
    k->run(io);
    return io.outputs[0];
  }
};

TEST(OnednnRuntimeMatMul, MatchesTheReferenceOnShapesKnownOnlyWhenRunning) {
  RuntimeMatMul mm;
  ASSERT_NE(mm.chosen, nullptr);
  ASSERT_STREQ(mm.chosen->name, "onednn.matmul_runtime");
  const std::vector<std::pair<Dims, Dims>> cases = {
      {{4, 1, 32}, {4, 32, 17}},  // Q K^T of one decoding step, 17 cached positions
      {{4, 1, 18}, {4, 18, 32}},  // the weighted sum of V, one position later
      {{2, 3, 5, 6}, {3, 6, 7}},  // B broadcast over A's leading batch dim
      {{1, 5, 6}, {4, 1, 6, 2}},  // both broadcast
      {{6}, {2, 6, 3}},           // a 1-D A
      {{2, 4, 6}, {6}},           // a 1-D B
      {{6}, {6}},                 // a dot product
      {{3, 0, 6}, {3, 6, 2}},     // no rows
      {{2, 3, 0}, {2, 0, 4}},     // K of 0: zeros
      {{1, 64, 48}, {48, 40}}};   // one larger matrix
  uint32_t seed = 1;
  for (const auto& [as, bs] : cases) {
    SCOPED_TRACE(dims_str(as) + " x " + dims_str(bs));
    const Tensor a = random_tensor(as, seed++), b = random_tensor(bs, seed++);
    const Tensor want = testing::run_ref("MatMul", {a, b})[0];
    const Tensor got = mm.run(a, b);
    ASSERT_EQ(got.shape(), want.shape());
    testing::expect_close(got, want, 1e-4f, 1e-4f);
  }
  EXPECT_THROW(mm.run(random_tensor({2, 3}, 1), random_tensor({4, 2}, 2)), Error);
  EXPECT_THROW(mm.run(random_tensor({2, 2, 3}, 1), random_tensor({3, 3, 2}, 2)), Error);
}

TEST(OnednnRuntimeMatMul, StaticOperandsGoToThePrepackedKernel) {
  RuntimeMatMul fixed(Shape::of({4, 1, 32}), Shape::of({4, 32, 17}));
  ASSERT_NE(fixed.chosen, nullptr);
  EXPECT_STREQ(fixed.chosen->name, "onednn.matmul");
}

}  // namespace onednn_matmul_runtime_test
}  // namespace nnfuse
