// Row regions (one reduction over the domain's last axis): the generated C++ and evaluate()
// against the independent double reference of test_reference.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/jit.h"
#include "codegen/test_cache_dir.h"
#include "codegen/test_reference.h"

namespace nnfuse::codegen {
namespace row_region_test {

using Shape = std::vector<int64_t>;
using testing::expect_close;
using testing::pointers;
using testing::random_inputs;
using testing::Reference;

using RowRegionTest = CacheDirTest;

// Builds the kernel, runs it over all work items at once and in uneven [begin, end) chunks, and
// checks both runs and evaluate() against the reference.
void check(const Region& r, const std::vector<std::vector<float>>& ins, const std::string& name) {
  ASSERT_EQ(validate(r), "");
  const std::vector<double> want = Reference(r, ins).run();
  const auto in = pointers(ins);
  const size_t out_n = static_cast<size_t>(num_elements(r.output_shape));

  std::vector<float> ev(out_n, -12345.0f);
  evaluate(r, in, ev.data());
  expect_close(ev, want, name + " evaluate");

  const std::string src = emit_cpp(r, name);
  JitResult jr = jit_build(src, name);
  ASSERT_TRUE(jr.ok()) << jr.error << "\n" << src;
  const int64_t n = work_items(r);
  std::vector<float> all(out_n, -12345.0f);
  jr.fn(in.data(), all.data(), 0, n);
  expect_close(all, want, name + " one call\n" + src);

  std::vector<float> chunked(out_n, -12345.0f);
  int64_t begin = 0;
  for (int64_t step = 1; begin < n; ++step) {
    const int64_t end = std::min(n, begin + step);
    jr.fn(in.data(), chunked.data(), begin, end);
    begin = end;
  }
  expect_close(chunked, want, name + " chunks");
}

void check(const Region& r, float lo, float hi, const std::string& name) {
  check(r, random_inputs(r, lo, hi), name);
}

TEST_F(RowRegionTest, SumOfWeightedRowsRowOutput) {
  Region r;
  r.domain_shape = {5, 7};
  r.output_shape = {5};
  r.input_shapes = {{5, 7}, {7}};
  r.output = r.add_reduction(OpKind::kReduceSum,
                             r.add_binary(OpKind::kMul, r.add_input(0), r.add_input(1)));
  EXPECT_EQ(work_items(r), 5);
  EXPECT_EQ(work_per_item(r), 7);
  EXPECT_EQ(reduction_op(r), 3);
  check(r, -1.0f, 1.0f, "k_row_sum");
  EXPECT_NE(emit_cpp(r, "k").find("#pragma omp simd reduction(+ : acc)"), std::string::npos);
}

TEST_F(RowRegionTest, NormDenominatorMeanOfSquaresRank3) {
  // sqrt(mean(x * x) + eps), one value per row, out [2, 3, 1].
  Region r;
  r.domain_shape = {2, 3, 64};
  r.output_shape = {2, 3, 1};
  r.input_shapes = {{2, 3, 64}};
  const int x = r.add_input(0);
  const int ms = r.add_reduction(OpKind::kReduceMean, r.add_binary(OpKind::kMul, x, x));
  r.output = r.add_unary(OpKind::kSqrt, r.add_binary(OpKind::kAdd, ms, r.add_const(1e-5f)));
  check(r, -2.0f, 2.0f, "k_norm_den");
}

TEST_F(RowRegionTest, ExpOfXMinusMaxRank4FullOutput) {
  Region r;
  r.output_shape = {2, 2, 3, 7};
  r.input_shapes = {{2, 2, 3, 7}};
  const int x = r.add_input(0);
  const int mx = r.add_reduction(OpKind::kReduceMax, x);
  r.output = r.add_unary(OpKind::kExp, r.add_binary(OpKind::kSub, x, mx));
  EXPECT_EQ(work_items(r), 12);
  check(r, -5.0f, 5.0f, "k_exp_sub_max");
}

TEST_F(RowRegionTest, SoftmaxRowLength1000) {
  // exp(x) / sum(exp(x)): the exp feeds the reduction and, recomputed, the division.
  Region r;
  r.output_shape = {3, 1000};
  r.input_shapes = {{3, 1000}};
  const int e = r.add_unary(OpKind::kExp, r.add_input(0));
  r.output = r.add_binary(OpKind::kDiv, e, r.add_reduction(OpKind::kReduceSum, e));
  check(r, -3.0f, 3.0f, "k_softmax");
}

TEST_F(RowRegionTest, MinRank1TimesScalar) {
  Region r;
  r.domain_shape = {1000};
  r.output_shape = {1};
  r.input_shapes = {{1000}, {}};
  r.output = r.add_binary(OpKind::kMul, r.add_reduction(OpKind::kReduceMin, r.add_input(0)),
                          r.add_input(1));
  EXPECT_EQ(work_items(r), 1);
  check(r, -3.0f, 3.0f, "k_min_rank1");

  Region c;  // rank 1, full output: x - mean(x)
  c.output_shape = {64};
  c.input_shapes = {{64}};
  const int x = c.add_input(0);
  c.output = c.add_binary(OpKind::kSub, x, c.add_reduction(OpKind::kReduceMean, x));
  check(c, -1.0f, 1.0f, "k_center_rank1");
}

TEST_F(RowRegionTest, PerRowPerColumnAndScalarBroadcast) {
  // y = x * c + g; out = (y - mean(y)) * s + z, with c per column, g per row, s a scalar and z
  // read only after the reduction.
  Region r;
  r.output_shape = {4, 64};
  r.input_shapes = {{4, 64}, {64}, {4, 1}, {}, {4, 64}};
  const int y = r.add_binary(
      OpKind::kAdd, r.add_binary(OpKind::kMul, r.add_input(0), r.add_input(1)), r.add_input(2));
  const int m = r.add_reduction(OpKind::kReduceMean, y);
  r.output = r.add_binary(
      OpKind::kAdd, r.add_binary(OpKind::kMul, r.add_binary(OpKind::kSub, y, m), r.add_input(3)),
      r.add_input(4));
  check(r, -2.0f, 2.0f, "k_bcast_full");

  // Row output: sum(x * c) * g + s, out [4, 1].
  Region o;
  o.domain_shape = {4, 64};
  o.output_shape = {4, 1};
  o.input_shapes = {{4, 64}, {1, 64}, {4, 1}, {1}};
  const int s = o.add_reduction(OpKind::kReduceSum,
                                o.add_binary(OpKind::kMul, o.add_input(0), o.add_input(1)));
  o.output =
      o.add_binary(OpKind::kAdd, o.add_binary(OpKind::kMul, s, o.add_input(2)), o.add_input(3));
  check(o, -2.0f, 2.0f, "k_bcast_row");
}

TEST_F(RowRegionTest, RowLengthOne) {
  Region r;
  r.output_shape = {6, 1};
  r.input_shapes = {{6, 1}};
  const int x = r.add_input(0);
  r.output = r.add_binary(OpKind::kAdd,
                          r.add_unary(OpKind::kExp, r.add_reduction(OpKind::kReduceMax, x)), x);
  check(r, -1.0f, 1.0f, "k_len1");
}

TEST_F(RowRegionTest, ReductionIsTheOutput) {
  for (OpKind k :
       {OpKind::kReduceSum, OpKind::kReduceMean, OpKind::kReduceMax, OpKind::kReduceMin}) {
    Region r;
    r.domain_shape = {3, 7};
    r.output_shape = {3};
    r.input_shapes = {{3, 7}};
    r.output = r.add_reduction(k, r.add_input(0));
    check(r, -4.0f, 4.0f, std::string("k_out_") + op_name(k));
  }
}

TEST_F(RowRegionTest, MaxAndMinPropagateNaN) {
  for (OpKind k : {OpKind::kReduceMax, OpKind::kReduceMin}) {
    Region r;
    r.domain_shape = {3, 37};
    r.output_shape = {3};
    r.input_shapes = {{3, 37}};
    r.output = r.add_reduction(k, r.add_input(0));
    auto ins = random_inputs(r, -1.0f, 1.0f);
    ins[0][37 + 20] = std::numeric_limits<float>::quiet_NaN();  // row 1
    check(r, ins, std::string("k_nan_") + op_name(k));
    std::vector<float> out(3);
    evaluate(r, pointers(ins), out.data());
    EXPECT_FALSE(std::isnan(out[0]));
    EXPECT_TRUE(std::isnan(out[1]));
  }
}

TEST_F(RowRegionTest, EmptyRows) {
  // Rows of length 0: sum 0, mean NaN (0 / 0), max -inf, min +inf.
  for (OpKind k :
       {OpKind::kReduceSum, OpKind::kReduceMean, OpKind::kReduceMax, OpKind::kReduceMin}) {
    Region r;
    r.domain_shape = {3, 0};
    r.output_shape = {3};
    r.input_shapes = {{3, 0}};
    r.output = r.add_reduction(k, r.add_input(0));
    check(r, 0.0f, 1.0f, std::string("k_empty_") + op_name(k));
  }
  Region none;  // no rows at all
  none.output_shape = {0, 5};
  none.input_shapes = {{0, 5}};
  none.output = none.add_reduction(OpKind::kReduceSum, none.add_input(0));
  EXPECT_EQ(work_items(none), 0);
  check(none, 0.0f, 1.0f, "k_no_rows");
}

TEST_F(RowRegionTest, ElementwiseWithExplicitDomainAndRank0) {
  Region r;  // out [6] computed over the domain [2, 3]
  r.domain_shape = {2, 3};
  r.output_shape = {6};
  r.input_shapes = {{2, 1}, {3}};
  r.output = r.add_binary(OpKind::kPow, r.add_unary(OpKind::kAbs, r.add_input(0)), r.add_input(1));
  EXPECT_EQ(work_items(r), 6);
  EXPECT_EQ(work_per_item(r), 1);
  check(r, -2.0f, 2.0f, "k_ew_domain");

  Region s;
  s.output_shape = {};
  s.input_shapes = {{}};
  s.output = s.add_unary(OpKind::kSigmoid, s.add_input(0));
  EXPECT_EQ(work_items(s), 1);
  check(s, -2.0f, 2.0f, "k_ew_rank0");
}

TEST(RowRegionValidate, Rejections) {
  auto base = [] {
    Region r;
    r.domain_shape = {4, 8};
    r.output_shape = {4};
    r.input_shapes = {{4, 8}, {4, 1}};
    return r;
  };
  Region two = base();
  two.output_shape = {4, 8};
  const int x = two.add_input(0);
  two.output = two.add_binary(OpKind::kAdd, two.add_reduction(OpKind::kReduceSum, x),
                              two.add_reduction(OpKind::kReduceMax, x));
  EXPECT_NE(validate(two).find("more than one reduction"), std::string::npos) << validate(two);

  Region count = base();
  count.output_shape = {5};
  count.output = count.add_reduction(OpKind::kReduceSum, count.add_input(0));
  EXPECT_NE(validate(count).find("elements"), std::string::npos) << validate(count);

  Region ew = base();  // elementwise: the output must have the domain's elements
  ew.output = ew.add_input(0);
  EXPECT_NE(validate(ew).find("elements"), std::string::npos) << validate(ew);

  Region varies = base();  // sum(x) + x, one value per row: x varies along the row
  const int vx = varies.add_input(0);
  varies.output = varies.add_binary(OpKind::kAdd, varies.add_reduction(OpKind::kReduceSum, vx), vx);
  EXPECT_NE(validate(varies).find("varies along the row"), std::string::npos) << validate(varies);
  EXPECT_THROW(emit_cpp(varies, "f"), std::invalid_argument);
  EXPECT_THROW(emit_cuda(varies, "f"), std::invalid_argument);
  std::vector<float> in0(32), in1(4), out(4);
  EXPECT_THROW(evaluate(varies, {in0.data(), in1.data()}, out.data()), std::invalid_argument);

  // Row-uniform values after the reduction are fine: sum(x * x) * g + 2 with g per row.
  Region ok = base();
  const int ox = ok.add_input(0);
  ok.output = ok.add_binary(
      OpKind::kAdd,
      ok.add_binary(OpKind::kMul,
                    ok.add_reduction(OpKind::kReduceSum, ok.add_binary(OpKind::kMul, ox, ox)),
                    ok.add_input(1)),
      ok.add_const(2.0f));
  EXPECT_EQ(validate(ok), "");

  Region rank0;  // a row region needs a last axis
  rank0.output_shape = {};
  rank0.input_shapes = {{}};
  rank0.output = rank0.add_reduction(OpKind::kReduceSum, rank0.add_input(0));
  EXPECT_NE(validate(rank0).find("rank"), std::string::npos) << validate(rank0);

  Region bad_red = base();  // a reduction with no operand
  bad_red.add_input(0);
  bad_red.output = bad_red.add_reduction(OpKind::kReduceSum, -1);
  EXPECT_NE(validate(bad_red).find("bad operand"), std::string::npos);

  Region bcast = base();  // inputs broadcast to the domain, not to the output
  bcast.input_shapes = {{4, 8}, {8, 1}};
  bcast.output = bcast.add_reduction(OpKind::kReduceSum, bcast.add_input(1));
  EXPECT_NE(validate(bcast).find("broadcast"), std::string::npos) << validate(bcast);
}

}  // namespace row_region_test
}  // namespace nnfuse::codegen
