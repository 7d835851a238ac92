#include <gtest/gtest.h>

#include "kernels/cpu/onednn_test_util.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace onednn_matmul_test {

using testing::Attrs;
using testing::BuiltKernel;
using testing::expect_matches_ref;
using testing::FastInput;
using testing::random_tensor;
using testing::run_kernel;

constexpr float kTol = 1e-4f;

void check_matmul(const Dims& a, const Dims& b, bool b_const, uint32_t seed) {
  SCOPED_TRACE(dims_str(a) + " x " + dims_str(b) + (b_const ? " (B constant)" : ""));
  expect_matches_ref("onednn.matmul", "MatMul",
                     {{random_tensor(a, seed)}, {random_tensor(b, seed + 1), b_const}}, {}, 1, kTol,
                     kTol);
}

TEST(OnednnMatMul, TwoDimensional) {
  uint32_t seed = 1;
  for (bool b_const : {true, false}) {
    check_matmul({7, 9}, {9, 5}, b_const, seed++);
    check_matmul({1, 17}, {17, 3}, b_const, seed++);
    check_matmul({33, 64}, {64, 48}, b_const, seed++);
  }
}

TEST(OnednnMatMul, LeadingDimsFoldIntoRows) {
  uint32_t seed = 20;
  for (bool b_const : {true, false}) {
    check_matmul({2, 7, 9}, {9, 5}, b_const, seed++);
    check_matmul({2, 3, 7, 9}, {9, 5}, b_const, seed++);
    check_matmul({2, 16, 64}, {64, 96}, b_const, seed++);  // a small BERT dense layer
    check_matmul({2, 7, 9}, {1, 9, 5}, b_const, seed++);   // B's batch dims all 1
  }
}

TEST(OnednnMatMul, Batched) {
  uint32_t seed = 40;
  for (bool b_const : {true, false}) {
    check_matmul({3, 7, 9}, {3, 9, 5}, b_const, seed++);
    check_matmul({2, 3, 7, 9}, {2, 3, 9, 5}, b_const, seed++);
    check_matmul({1, 4, 16, 8}, {1, 4, 8, 16}, b_const, seed++);   // attention QK^T
    check_matmul({1, 4, 16, 16}, {1, 4, 16, 8}, b_const, seed++);  // attention PV
  }
}

TEST(OnednnMatMul, BroadcastBatchDims) {
  uint32_t seed = 60;
  for (bool b_const : {true, false}) {
    check_matmul({2, 1, 7, 9}, {1, 3, 9, 5}, b_const, seed++);
    check_matmul({1, 3, 7, 9}, {2, 1, 9, 5}, b_const, seed++);
    check_matmul({7, 9}, {2, 3, 9, 5}, b_const, seed++);
    check_matmul({3, 7, 9}, {2, 3, 9, 5}, b_const, seed++);
    check_matmul({2, 3, 7, 9}, {3, 9, 5}, b_const, seed++);
    check_matmul({2, 1, 2, 7, 9}, {3, 1, 9, 5}, b_const, seed++);
  }
}

TEST(OnednnMatMul, VectorOperands) {
  uint32_t seed = 80;
  for (bool b_const : {true, false}) {
    check_matmul({9}, {9, 5}, b_const, seed++);
    check_matmul({2, 7, 9}, {9}, b_const, seed++);
    check_matmul({9}, {9}, b_const, seed++);
    check_matmul({9}, {2, 9, 5}, b_const, seed++);
  }
}

TEST(OnednnMatMul, LargeReductionWithinTolerance) { check_matmul({8, 3072}, {3072, 40}, true, 90); }

TEST(OnednnMatMul, RunRejectsWrongShapesAndDeclinesOthers) {
  Tensor a = random_tensor({4, 9}, 1), b = random_tensor({9, 5}, 2);
  BuiltKernel k("onednn.matmul", "MatMul", {{a}, {b, true}});
  ASSERT_TRUE(k.accepted);
  EXPECT_EQ(k.output_layout(), Layout::kPlain);
  EXPECT_THROW(k.run({random_tensor({5, 9}, 3), b}), Error);
  EXPECT_NO_THROW(k.run({a, b}));
  BuiltKernel dyn("onednn.matmul", "MatMul", {{a}, {b}});
  ASSERT_TRUE(dyn.accepted);
  EXPECT_THROW(dyn.run({a, random_tensor({9, 6}, 3)}), Error);
  // Mismatched inner dims and float64 are left to the reference kernel.
  EXPECT_FALSE(BuiltKernel("onednn.matmul", "MatMul", {{a}, {random_tensor({8, 5}, 2)}}).accepted);
  Tensor a64 = testing::run_ref1("Cast", {a}, {{"to", attr_int(11)}});
  Tensor b64 = testing::run_ref1("Cast", {b}, {{"to", attr_int(11)}});
  EXPECT_EQ(run_kernel("MatMul", {{a64}, {b64, true}}).kernel, "ref");
  EXPECT_EQ(run_kernel("MatMul", {{a}, {b, true}}).kernel, "onednn.matmul");
}

// Gemm.

struct GemmCase {
  int64_t m, k, n;
  bool ta = false, tb = false;
  float alpha = 1.0f, beta = 1.0f;
  std::optional<Dims> c = {};  // C's shape, or no C
  bool b_const = true, c_const = true;
};

std::vector<FastInput> gemm_inputs(const GemmCase& g, uint32_t seed) {
  Dims a = g.ta ? Dims{g.k, g.m} : Dims{g.m, g.k};
  Dims b = g.tb ? Dims{g.n, g.k} : Dims{g.k, g.n};
  std::vector<FastInput> in = {{random_tensor(a, seed)}, {random_tensor(b, seed + 1), g.b_const}};
  if (g.c) in.push_back({random_tensor(*g.c, seed + 2), g.c_const});
  return in;
}

Attrs gemm_attrs(const GemmCase& g) {
  return {{"transA", attr_int(g.ta)},
          {"transB", attr_int(g.tb)},
          {"alpha", attr_float(g.alpha)},
          {"beta", attr_float(g.beta)}};
}

void check_gemm(const GemmCase& g, uint32_t seed) {
  SCOPED_TRACE("gemm " + std::to_string(g.m) + "x" + std::to_string(g.k) + "x" +
               std::to_string(g.n) + " ta=" + std::to_string(g.ta) + " tb=" + std::to_string(g.tb) +
               " alpha=" + std::to_string(g.alpha) + " beta=" + std::to_string(g.beta) +
               " c=" + (g.c ? dims_str(*g.c) : "none") + (g.b_const ? " B const" : "") +
               (g.c_const ? " C const" : ""));
  expect_matches_ref("onednn.gemm", "Gemm", gemm_inputs(g, seed), gemm_attrs(g), 1, kTol, kTol);
}

TEST(OnednnGemm, TransposesAndScales) {
  uint32_t seed = 1;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (float alpha : {1.0f, 0.5f}) {
        for (float beta : {1.0f, -2.0f}) {
          check_gemm({5, 9, 7, ta, tb, alpha, beta, Dims{7}}, seed++);
          check_gemm({5, 9, 7, ta, tb, alpha, beta}, seed++);
        }
      }
    }
  }
}

TEST(OnednnGemm, BroadcastC) {
  uint32_t seed = 50;
  for (const Dims& c : {Dims{}, Dims{1}, Dims{7}, Dims{1, 7}, Dims{5, 1}, Dims{5, 7}, Dims{1, 1}}) {
    for (bool c_const : {true, false}) {
      check_gemm({5, 9, 7, false, true, 1.0f, 1.0f, c, true, c_const}, seed++);
      if (c_const) check_gemm({5, 9, 7, false, true, 1.5f, 0.25f, c, true, c_const}, seed++);
    }
  }
}

TEST(OnednnGemm, ClassifierHeadAndRunTimeB) {
  check_gemm({2, 512, 100, false, true, 1.0f, 1.0f, Dims{100}}, 70);  // torchvision's fc
  check_gemm({3, 8, 6, false, false, 1.0f, 1.0f, Dims{6}, false, true}, 71);
  check_gemm({3, 8, 6, true, true, 1.0f, 1.0f, Dims{3, 6}, false, false}, 72);
  check_gemm({3, 8, 6, false, false, 1.0f, 0.0f, Dims{3, 6}, true, false}, 73);  // beta 0: no C
}

TEST(OnednnGemm, Declines) {
  // alpha with a run-time B, and beta with a run-time C, are left to the reference kernel.
  GemmCase g{3, 8, 6, false, false, 2.0f, 1.0f, Dims{6}, false, true};
  EXPECT_EQ(run_kernel("Gemm", gemm_inputs(g, 1), gemm_attrs(g)).kernel, "ref");
  GemmCase h{3, 8, 6, false, false, 1.0f, 3.0f, Dims{6}, true, false};
  EXPECT_EQ(run_kernel("Gemm", gemm_inputs(h, 1), gemm_attrs(h)).kernel, "ref");
  GemmCase ok{3, 8, 6, false, false, 2.0f, 3.0f, Dims{6}, true, true};
  EXPECT_EQ(run_kernel("Gemm", gemm_inputs(ok, 1), gemm_attrs(ok)).kernel, "onednn.gemm");
  // C that does not broadcast.
  GemmCase bad{3, 8, 6, false, false, 1.0f, 1.0f, Dims{2, 6}};
  EXPECT_FALSE(BuiltKernel("onednn.gemm", "Gemm", gemm_inputs(bad, 1), gemm_attrs(bad)).accepted);
}

}  // namespace onednn_matmul_test
}  // namespace nnfuse
