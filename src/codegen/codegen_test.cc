#include "codegen/codegen.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/jit.h"
#include "codegen/test_cache_dir.h"
#include "codegen/test_reference.h"

namespace nnfuse::codegen {
namespace codegen_test {

namespace fs = std::filesystem;
using Shape = std::vector<int64_t>;

using CodegenTest = CacheDirTest;

// Random inputs in [lo, hi], builds the kernel, runs it over uneven [begin, end) chunks and
// compares against the reference within testing::tolerance (1e-5 relative, or 16 ulp of the terms).
void check_region(const Region& r, float lo, float hi, const std::string& name) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<std::vector<float>> ins;
  std::vector<const float*> ptrs;
  for (const Shape& s : r.input_shapes) {
    std::vector<float> x(static_cast<size_t>(num_elements(s)));
    for (float& e : x) e = dist(rng);
    ins.push_back(std::move(x));
  }
  for (const auto& x : ins) ptrs.push_back(x.data());

  const std::string src = emit_cpp(r, name);
  JitResult jr = jit_build(src, name);
  ASSERT_TRUE(jr.ok()) << jr.error << "\n" << src;

  const int64_t n = num_elements(r.output_shape);
  std::vector<float> out(static_cast<size_t>(n), -12345.0f);
  // Uneven chunks so rows are entered and left mid-way.
  const int64_t chunks[] = {0, 1, 4, 9, 10, 17, 33};
  int64_t begin = 0;
  for (size_t c = 0; begin < n; ++c) {
    const int64_t step = c < std::size(chunks) ? chunks[c] : 29;
    const int64_t end = std::min(n, begin + step);
    jr.fn(ptrs.data(), out.data(), begin, end);
    begin = end;
  }
  // The independent double-precision reference (test_reference.h).
  testing::Reference reference(r, ins);
  const std::vector<double> ref = reference.run();
  const std::vector<double>& mag = reference.magnitudes();
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    ASSERT_NEAR(out[k], ref[k], testing::tolerance(ref[k], mag[k]))
        << name << " element " << i << "\n"
        << src;
  }
  // The interpreter agrees with the same reference.
  std::vector<float> ev(static_cast<size_t>(n), -12345.0f);
  evaluate(r, ptrs, ev.data());
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    ASSERT_NEAR(ev[k], ref[k], testing::tolerance(ref[k], mag[k]))
        << name << " evaluate element " << i;
  }
}

const Shape kOut = {3, 5, 7};

TEST_F(CodegenTest, ReluAddRowTimesColumn) {
  Region r;
  r.output_shape = kOut;
  r.input_shapes = {kOut, {7}, {3, 1, 1}};
  const int x = r.add_input(0), b = r.add_input(1), c = r.add_input(2);
  r.output =
      r.add_binary(OpKind::kMul, r.add_unary(OpKind::kRelu, r.add_binary(OpKind::kAdd, x, b)), c);
  check_region(r, -2.0f, 2.0f, "k_relu_add");
}

TEST_F(CodegenTest, GeluErfWithScalarAndMiddleBroadcast) {
  // y = x * 0.5 * (1 + erf(x / sqrt(2))) + s * m, s a scalar tensor, m of shape [5, 1].
  Region r;
  r.output_shape = kOut;
  r.input_shapes = {kOut, {}, {5, 1}};
  const int x = r.add_input(0);
  const int e = r.add_unary(OpKind::kErf, r.add_binary(OpKind::kDiv, x, r.add_const(1.41421356f)));
  const int g = r.add_binary(OpKind::kMul, r.add_binary(OpKind::kMul, x, r.add_const(0.5f)),
                             r.add_binary(OpKind::kAdd, r.add_const(1.0f), e));
  const int sm = r.add_binary(OpKind::kMul, r.add_input(1), r.add_input(2));
  r.output = r.add_binary(OpKind::kAdd, g, sm);
  check_region(r, -3.0f, 3.0f, "k_gelu");
}

TEST_F(CodegenTest, TranscendentalChain) {
  // log(|x| + 1) / sqrt(exp(-y) + 2) + tanh(x) * sigmoid(y), y a row [1, 7].
  Region r;
  r.output_shape = kOut;
  r.input_shapes = {kOut, {1, 7}};
  const int x = r.add_input(0), y = r.add_input(1);
  const int num = r.add_unary(
      OpKind::kLog, r.add_binary(OpKind::kAdd, r.add_unary(OpKind::kAbs, x), r.add_const(1.0f)));
  const int den = r.add_unary(
      OpKind::kSqrt,
      r.add_binary(OpKind::kAdd, r.add_unary(OpKind::kExp, r.add_unary(OpKind::kNeg, y)),
                   r.add_const(2.0f)));
  const int ts =
      r.add_binary(OpKind::kMul, r.add_unary(OpKind::kTanh, x), r.add_unary(OpKind::kSigmoid, y));
  r.output = r.add_binary(OpKind::kAdd, r.add_binary(OpKind::kDiv, num, den), ts);
  check_region(r, -2.0f, 2.0f, "k_transc");
}

TEST_F(CodegenTest, MaxMinPowColumnAndScalar) {
  // max(x, c) - min(x, -0.25) + pow(|x| + 0.5, s), c a column [3, 5, 1], s a scalar [1, 1, 1].
  Region r;
  r.output_shape = kOut;
  r.input_shapes = {kOut, {3, 5, 1}, {1, 1, 1}};
  const int x = r.add_input(0);
  const int mx = r.add_binary(OpKind::kMax, x, r.add_input(1));
  const int mn = r.add_binary(OpKind::kMin, x, r.add_const(-0.25f));
  const int pw = r.add_binary(
      OpKind::kPow, r.add_binary(OpKind::kAdd, r.add_unary(OpKind::kAbs, x), r.add_const(0.5f)),
      r.add_input(2));
  r.output = r.add_binary(OpKind::kAdd, r.add_binary(OpKind::kSub, mx, mn), pw);
  check_region(r, -1.5f, 1.5f, "k_maxminpow");
}

TEST_F(CodegenTest, OuterProductBothBroadcast) {
  // column [4, 1] - row [1, 6]: every input broadcasts along some axis.
  Region r;
  r.output_shape = {4, 6};
  r.input_shapes = {{4, 1}, {1, 6}};
  r.output = r.add_binary(OpKind::kSub, r.add_input(0), r.add_input(1));
  check_region(r, -1.0f, 1.0f, "k_outer");
}

TEST_F(CodegenTest, ScalarOutputAndOnlyConstants) {
  Region r;
  r.output_shape = {};
  r.input_shapes = {{}};
  r.output =
      r.add_binary(OpKind::kAdd, r.add_unary(OpKind::kNeg, r.add_input(0)), r.add_const(3.0f));
  check_region(r, -1.0f, 1.0f, "k_scalar");

  Region c;
  c.output_shape = {2, 3};
  c.output = c.add_unary(OpKind::kExp, c.add_const(-0.5f));
  check_region(c, 0.0f, 1.0f, "k_const_only");
}

TEST_F(CodegenTest, EmptyOutputCompilesAndDoesNothing) {
  Region r;
  r.output_shape = {0, 4};
  r.input_shapes = {{0, 4}};
  r.output = r.add_unary(OpKind::kRelu, r.add_input(0));
  const std::string src = emit_cpp(r, "k_empty");
  JitResult jr = jit_build(src, "k_empty");
  ASSERT_TRUE(jr.ok()) << jr.error;
  jr.fn(nullptr, nullptr, 0, 0);
}

TEST_F(CodegenTest, EmittedSourceBakesInShapes) {
  Region r;
  r.output_shape = {2, 3, 8};
  r.input_shapes = {{2, 3, 8}, {3, 1}};
  r.output = r.add_binary(OpKind::kAdd, r.add_input(0), r.add_input(1));
  const std::string src = emit_cpp(r, "k_src");
  EXPECT_NE(src.find("extern \"C\" void k_src(const float* const* in, float* out, int64_t begin, "
                     "int64_t end)"),
            std::string::npos);
  EXPECT_NE(src.find("kInner = 8"), std::string::npos);
  EXPECT_NE(src.find("#pragma omp simd"), std::string::npos);
  EXPECT_NE(src.find("p1[0]"), std::string::npos) << src;  // broadcast along the inner axis
}

TEST_F(CodegenTest, InvalidRegionsAreRejected) {
  Region bad_shape;
  bad_shape.output_shape = {2, 3};
  bad_shape.input_shapes = {{4}};
  bad_shape.output = bad_shape.add_input(0);
  EXPECT_FALSE(validate(bad_shape).empty());
  EXPECT_THROW(emit_cpp(bad_shape, "f"), std::invalid_argument);

  Region forward_ref;
  forward_ref.output_shape = {2};
  forward_ref.add_unary(OpKind::kRelu, 1);
  forward_ref.output = forward_ref.add_const(1.0f);
  EXPECT_FALSE(validate(forward_ref).empty());

  Region no_output;
  no_output.output_shape = {2};
  no_output.add_const(1.0f);
  EXPECT_FALSE(validate(no_output).empty());

  Region ok;
  ok.output_shape = {2};
  ok.output = ok.add_const(1.0f);
  EXPECT_TRUE(validate(ok).empty());
  EXPECT_THROW(emit_cpp(ok, "1bad name"), std::invalid_argument);
}

}  // namespace codegen_test
}  // namespace nnfuse::codegen
