#include <random>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace matmul_test {

using testing::expect_close;
using testing::run_ref1;
using testing::values;

using testing::random_tensor;

TEST(RefNnMatMul, TwoByThree) {
  Tensor a = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_vector<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor y = run_ref1("MatMul", {a, b});
  EXPECT_EQ(y.shape(), (Dims{2, 2}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{58, 64, 139, 154}));
}

TEST(RefNnMatMul, OneDimensionalOperands) {
  Tensor v = Tensor::from_vector<float>({3}, {1, 2, 3});
  Tensor m = Tensor::from_vector<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor mt = Tensor::from_vector<float>({2, 3}, {1, 0, 1, 0, 1, 0});
  Tensor dot = run_ref1("MatMul", {v, v});
  EXPECT_EQ(dot.shape(), Dims{});
  EXPECT_EQ(values<float>(dot), (std::vector<float>{14}));
  Tensor vm = run_ref1("MatMul", {v, m});
  EXPECT_EQ(vm.shape(), (Dims{2}));
  EXPECT_EQ(values<float>(vm), (std::vector<float>{58, 64}));
  Tensor mv = run_ref1("MatMul", {mt, v});
  EXPECT_EQ(mv.shape(), (Dims{2}));
  EXPECT_EQ(values<float>(mv), (std::vector<float>{4, 2}));
  // A 1-D operand against a batched one: (3) x (2, 3, 2) -> (2, 2).
  Tensor bm = random_tensor({2, 3, 2}, 3);
  Tensor y = run_ref1("MatMul", {v, bm});
  EXPECT_EQ(y.shape(), (Dims{2, 2}));
  for (int64_t bi = 0; bi < 2; ++bi) {
    for (int64_t j = 0; j < 2; ++j) {
      double s = 0;
      for (int64_t k = 0; k < 3; ++k) s += (k + 1) * bm.data<float>()[(bi * 3 + k) * 2 + j];
      EXPECT_NEAR(y.data<float>()[bi * 2 + j], s, 1e-6);
    }
  }
}

TEST(RefNnMatMul, BroadcastBatchDims) {
  Tensor a = random_tensor({2, 1, 4, 3}, 1);
  Tensor b = random_tensor({3, 3, 5}, 2);
  Tensor y = run_ref1("MatMul", {a, b});
  ASSERT_EQ(y.shape(), (Dims{2, 3, 4, 5}));
  Tensor want(DType::kFloat32, y.shape());
  for (int64_t i0 = 0; i0 < 2; ++i0) {
    for (int64_t i1 = 0; i1 < 3; ++i1) {
      for (int64_t r = 0; r < 4; ++r) {
        for (int64_t c = 0; c < 5; ++c) {
          double s = 0;
          for (int64_t k = 0; k < 3; ++k) {
            s += static_cast<double>(a.data<float>()[(i0 * 4 + r) * 3 + k]) *
                 b.data<float>()[(i1 * 3 + k) * 5 + c];
          }
          want.data<float>()[((i0 * 3 + i1) * 4 + r) * 5 + c] = static_cast<float>(s);
        }
      }
    }
  }
  expect_close(y, want);
  // Float64 gives the same numbers.
  Tensor ad(DType::kFloat64, a.shape()), bd(DType::kFloat64, b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) ad.data<double>()[i] = a.data<float>()[i];
  for (int64_t i = 0; i < b.numel(); ++i) bd.data<double>()[i] = b.data<float>()[i];
  Tensor yd = run_ref1("MatMul", {ad, bd});
  ASSERT_EQ(yd.dtype(), DType::kFloat64);
  for (int64_t i = 0; i < y.numel(); ++i)
    EXPECT_NEAR(yd.data<double>()[i], want.data<float>()[i], 1e-6);
}

TEST(RefNnMatMul, ErrorsAndUnsupported) {
  EXPECT_THROW(run_ref1("MatMul", {random_tensor({2, 3}, 1), random_tensor({4, 2}, 2)}), Error);
  EXPECT_THROW(run_ref1("MatMul", {random_tensor({3}, 1), random_tensor({4}, 2)}), Error);
  EXPECT_THROW(run_ref1("MatMul", {random_tensor({2, 2, 3}, 1), random_tensor({3, 3, 2}, 2)}),
               Error);
  EXPECT_THROW(run_ref1("MatMul", {Tensor::scalar<float>(1), random_tensor({1, 2}, 2)}), Error);
  try {
    run_ref1("MatMul", {Tensor(DType::kInt64, {2, 2}), Tensor(DType::kInt64, {2, 2})});
    FAIL() << "expected an unsupported error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
}

// Gemm against alpha * op(A) op(B) + beta * C computed in the test.
void check_gemm(bool ta, bool tb, const Dims& c_shape, float alpha, float beta) {
  const int64_t m = 3, k = 4, n = 5;
  Tensor a = random_tensor(ta ? Dims{k, m} : Dims{m, k}, 11);
  Tensor b = random_tensor(tb ? Dims{n, k} : Dims{k, n}, 12);
  std::vector<Tensor> ins = {a, b};
  Tensor c;
  if (!c_shape.empty() || beta != 0) {
    c = random_tensor(c_shape, 13);
    ins.push_back(c);
  }
  Tensor y = run_ref1("Gemm", ins,
                      {{"transA", attr_int(ta)},
                       {"transB", attr_int(tb)},
                       {"alpha", attr_float(alpha)},
                       {"beta", attr_float(beta)}});
  Tensor want(DType::kFloat32, {m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        double av = ta ? a.data<float>()[p * m + i] : a.data<float>()[i * k + p];
        double bv = tb ? b.data<float>()[j * k + p] : b.data<float>()[p * n + j];
        s += av * bv;
      }
      double cv = 0;
      if (c.defined()) {
        // Unidirectional broadcast of C to (m, n).
        Dims cs = c.shape();
        while (cs.size() < 2) cs.insert(cs.begin(), 1);
        cv = c.data<float>()[(cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j)];
      }
      want.data<float>()[i * n + j] = static_cast<float>(alpha * s + beta * cv);
    }
  }
  expect_close(y, want);
}

TEST(RefNnGemm, TransposesAndBroadcastC) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::to_string(ta) + std::to_string(tb));
      check_gemm(ta, tb, {3, 5}, 1.0f, 1.0f);
      check_gemm(ta, tb, {5}, 0.5f, 2.0f);
      check_gemm(ta, tb, {3, 1}, 1.5f, -1.0f);
      check_gemm(ta, tb, {}, 2.0f, 0.5f);  // scalar C
      check_gemm(ta, tb, {1, 1}, 1.0f, 1.0f);
    }
  }
  // No C at all.
  Tensor a = Tensor::from_vector<float>({1, 2}, {1, 2});
  Tensor b = Tensor::from_vector<float>({2, 1}, {3, 4});
  EXPECT_EQ(values<float>(run_ref1("Gemm", {a, b})), (std::vector<float>{11}));
}

TEST(RefNnGemm, Errors) {
  EXPECT_THROW(run_ref1("Gemm", {random_tensor({2, 3}, 1), random_tensor({2, 3}, 2)}), Error);
  EXPECT_THROW(run_ref1("Gemm", {random_tensor({2, 3}, 1), random_tensor({3, 4}, 2),
                                 random_tensor({3, 4}, 3)}),
               Error);
  EXPECT_THROW(run_ref1("Gemm", {random_tensor({3}, 1), random_tensor({3, 4}, 2)}), Error);
}

}  // namespace matmul_test
}  // namespace nnfuse
