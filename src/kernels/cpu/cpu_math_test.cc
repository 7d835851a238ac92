#include "kernels/cpu/cpu_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_elementwise.h"

namespace nnfuse::cpu {
namespace cpu_math_test {

struct Errors {
  double max_rel = 0, max_abs = 0;
  float worst_rel_x = 0, worst_abs_x = 0;
  int64_t count = 0;
};

// Every `step`-th float in [lo, hi], walking bit patterns so every binade is covered.
std::vector<float> sweep_points(float lo, float hi, uint32_t step) {
  std::vector<float> xs;
  if (lo < 0) {
    const float top = -lo, bottom = hi < 0 ? -hi : 0.0f;
    for (uint64_t bits = float_bits(bottom); bits <= float_bits(top); bits += step) {
      xs.push_back(-bits_float(static_cast<uint32_t>(bits)));
    }
    xs.push_back(lo);
  }
  if (hi >= 0) {
    for (uint64_t bits = float_bits(lo > 0 ? lo : 0.0f); bits <= float_bits(hi); bits += step) {
      xs.push_back(bits_float(static_cast<uint32_t>(bits)));
    }
    xs.push_back(hi);
  }
  return xs;
}

// Errors of ys = f(xs) against the double-precision reference g; relative errors only where
// the reference's magnitude exceeds `tiny`.
Errors errors(const std::vector<float>& xs, const std::vector<float>& ys,
              const std::function<double(double)>& g, double tiny) {
  Errors e;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = g(static_cast<double>(xs[i]));
    const double got = static_cast<double>(ys[i]);
    const double abs_err = std::abs(got - want);
    EXPECT_FALSE(std::isnan(got)) << "at " << xs[i];
    if (abs_err > e.max_abs) {
      e.max_abs = abs_err;
      e.worst_abs_x = xs[i];
    }
    if (std::abs(want) > tiny && std::isfinite(want)) {
      const double rel = abs_err / std::abs(want);
      if (rel > e.max_rel) {
        e.max_rel = rel;
        e.worst_rel_x = xs[i];
      }
    }
    ++e.count;
  }
  return e;
}

// The scalar function as compiled here (baseline x86-64, no FMA), or the vectorized kernel
// loop as dispatched on this machine (AVX-512 with FMA contraction, where available).
Errors sweep(const std::function<float(float)>& f, const std::function<double(double)>& g, float lo,
             float hi, uint32_t step, double tiny = 1e-37) {
  const std::vector<float> xs = sweep_points(lo, hi, step);
  std::vector<float> ys(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) ys[i] = f(xs[i]);
  return errors(xs, ys, g, tiny);
}
Errors sweep_kernel(UnaryKind kind, const std::function<double(double)>& g, float lo, float hi,
                    uint32_t step, double tiny = 1e-37) {
  const std::vector<float> xs = sweep_points(lo, hi, step);
  std::vector<float> ys(xs.size());
  unary_run(kind, xs.data(), ys.data(), static_cast<int64_t>(xs.size()), 0, 0);
  return errors(xs, ys, g, tiny);
}

void report(const char* name, const Errors& e) {
  std::printf("[ %-8s ] %lld points: max rel %.3g (x=%.9g), max abs %.3g (x=%.9g)\n", name,
              static_cast<long long>(e.count), e.max_rel, e.worst_rel_x, e.max_abs, e.worst_abs_x);
}

constexpr uint32_t kStep = 257;  // every 257th float pattern: every binade, densely

// One value through the dispatched vector loop (in the middle of a run long enough to be
// vectorized).
float kernel1(UnaryKind kind, float x) {
  std::vector<float> xs(67, x), ys(67);
  unary_run(kind, xs.data(), ys.data(), 67, 0, 0);
  return ys[33];
}

// The same bounds for the scalar function and the dispatched kernel.
void check_both(const char* name, const std::function<float(float)>& f, UnaryKind kind,
                const std::function<double(double)>& g, float lo, float hi, uint32_t step,
                double max_rel, double max_abs = 1e300, double tiny = 1e-37) {
  Errors e = sweep(f, g, lo, hi, step, tiny);
  report(name, e);
  EXPECT_LT(e.max_rel, max_rel) << name << " scalar";
  EXPECT_LT(e.max_abs, max_abs) << name << " scalar";
  Errors k = sweep_kernel(kind, g, lo, hi, step, tiny);
  report((std::string(name) + "/vec").c_str(), k);
  EXPECT_LT(k.max_rel, max_rel) << name << " kernel";
  EXPECT_LT(k.max_abs, max_abs) << name << " kernel";
}

TEST(CpuMath, ExpIsAccurateToAFewUlp) {
  check_both(
      "exp", exp_f, UnaryKind::kExp, [](double x) { return std::exp(x); }, -87.0f, 88.7f, kStep,
      2.5e-7);
  // Subnormal results: absolute error below the smallest normal's ulp.
  Errors sub = sweep(
      exp_f, [](double x) { return std::exp(x); }, -104.0f, -87.0f, 7, 1e300);
  EXPECT_LT(sub.max_abs, 1.5e-45);
}

TEST(CpuMath, ExpSpecialValues) {
  EXPECT_EQ(exp_f(0.0f), 1.0f);
  EXPECT_EQ(exp_f(kInf), kInf);
  EXPECT_EQ(exp_f(-kInf), 0.0f);
  EXPECT_EQ(exp_f(89.0f), kInf);
  EXPECT_EQ(exp_f(-200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(exp_f(kNaN)));
  EXPECT_TRUE(std::isfinite(exp_f(88.72f)));
  for (float x : {0.0f, kInf, -kInf, 89.0f, -200.0f, 88.72f, -100.0f}) {
    EXPECT_EQ(kernel1(UnaryKind::kExp, x), exp_f(x)) << x;
  }
  EXPECT_TRUE(std::isnan(kernel1(UnaryKind::kExp, kNaN)));
}

TEST(CpuMath, Expm1KeepsRelativeAccuracyNearZero) {
  Errors e = sweep(
      expm1_f, [](double x) { return std::expm1(x); }, -30.0f, 88.0f, kStep);
  report("expm1", e);
  EXPECT_LT(e.max_rel, 3e-7);
  EXPECT_EQ(expm1_f(-kInf), -1.0f);
  EXPECT_TRUE(std::isnan(expm1_f(kNaN)));
}

TEST(CpuMath, LogIsAccurateIncludingSubnormals) {
  check_both(
      "log", log_f, UnaryKind::kLog, [](double x) { return std::log(x); },
      std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(), kStep, 2.5e-7,
      1e300, 0.0);
  EXPECT_EQ(log_f(1.0f), 0.0f);
  EXPECT_EQ(log_f(0.0f), -kInf);
  EXPECT_EQ(log_f(-0.0f), -kInf);
  EXPECT_EQ(log_f(kInf), kInf);
  EXPECT_TRUE(std::isnan(log_f(-1.0f)));
  EXPECT_TRUE(std::isnan(log_f(-kInf)));
  EXPECT_TRUE(std::isnan(log_f(kNaN)));
  EXPECT_EQ(kernel1(UnaryKind::kLog, 0.0f), -kInf);
  EXPECT_EQ(kernel1(UnaryKind::kLog, kInf), kInf);
  EXPECT_TRUE(std::isnan(kernel1(UnaryKind::kLog, -1.0f)));
  EXPECT_TRUE(std::isnan(kernel1(UnaryKind::kLog, kNaN)));
}

TEST(CpuMath, TanhIsAccurateOverTheWholeRange) {
  check_both(
      "tanh", tanh_f, UnaryKind::kTanh, [](double x) { return std::tanh(x); }, -20.0f, 20.0f, kStep,
      3e-7);
  EXPECT_EQ(tanh_f(kInf), 1.0f);
  EXPECT_EQ(tanh_f(-kInf), -1.0f);
  EXPECT_EQ(tanh_f(1e4f), 1.0f);
  EXPECT_EQ(tanh_f(1e-30f), 1e-30f);
  EXPECT_TRUE(std::isnan(tanh_f(kNaN)));
  EXPECT_EQ(kernel1(UnaryKind::kTanh, kInf), 1.0f);
  EXPECT_EQ(kernel1(UnaryKind::kTanh, -kInf), -1.0f);
  EXPECT_TRUE(std::isnan(kernel1(UnaryKind::kTanh, kNaN)));
}

TEST(CpuMath, SigmoidIsAccurateOnBothSides) {
  check_both(
      "sigmoid", sigmoid_f, UnaryKind::kSigmoid,
      [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -87.0f, 30.0f, kStep, 3e-7);
  EXPECT_EQ(sigmoid_f(kInf), 1.0f);
  EXPECT_EQ(sigmoid_f(-kInf), 0.0f);
  EXPECT_EQ(sigmoid_f(0.0f), 0.5f);
  EXPECT_TRUE(std::isnan(sigmoid_f(kNaN)));
  EXPECT_EQ(kernel1(UnaryKind::kSigmoid, kInf), 1.0f);
  EXPECT_EQ(kernel1(UnaryKind::kSigmoid, -kInf), 0.0f);
  EXPECT_TRUE(std::isnan(kernel1(UnaryKind::kSigmoid, kNaN)));
}

TEST(CpuMath, ErfIsAccurateEnoughForGelu) {
  // The bar is 1e-6 absolute; the fit does better.
  check_both(
      "erf", erf_f, UnaryKind::kErf, [](double x) { return std::erf(x); }, -6.0f, 6.0f, 61, 3e-7,
      2e-7);
  EXPECT_EQ(erf_f(kInf), 1.0f);
  EXPECT_EQ(erf_f(-kInf), -1.0f);
  EXPECT_EQ(erf_f(100.0f), 1.0f);
  EXPECT_EQ(erf_f(0.0f), 0.0f);
  EXPECT_TRUE(std::isnan(erf_f(kNaN)));
  EXPECT_EQ(kernel1(UnaryKind::kErf, kInf), 1.0f);
  EXPECT_EQ(kernel1(UnaryKind::kErf, -kInf), -1.0f);
  EXPECT_TRUE(std::isnan(kernel1(UnaryKind::kErf, kNaN)));
}

TEST(CpuMath, SoftplusMatchesLog1pExp) {
  auto ref = [](double x) {
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  };
  check_both("softplus", softplus_f, UnaryKind::kSoftplus, ref, -80.0f, 80.0f, kStep, 5e-7);
  EXPECT_EQ(softplus_f(kInf), kInf);
  EXPECT_EQ(softplus_f(-kInf), 0.0f);
  EXPECT_TRUE(std::isnan(softplus_f(kNaN)));
}

TEST(CpuMath, Log1pKeepsTinyArguments) {
  Errors e = sweep(
      log1p_pos_f, [](double x) { return std::log1p(x); }, 0.0f, 1.0f, kStep, 0.0);
  report("log1p", e);
  EXPECT_LT(e.max_rel, 5e-7);
}

}  // namespace cpu_math_test
}  // namespace nnfuse::cpu
