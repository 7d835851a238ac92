// Codegen tests: an independent double-precision reference for regions (elementwise and row),
// random inputs, and a tolerance check. The reference evaluates each output element recursively
// from its coordinates; it shares no code with evaluate() or the emitters.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/codegen.h"

namespace nnfuse::codegen::testing {

inline double ref_apply(OpKind k, double a, double b) {
  switch (k) {
    case OpKind::kRelu:
      return a < 0 ? 0 : a;
    case OpKind::kNeg:
      return -a;
    case OpKind::kAbs:
      return std::fabs(a);
    case OpKind::kExp:
      return std::exp(a);
    case OpKind::kLog:
      return std::log(a);
    case OpKind::kSqrt:
      return std::sqrt(a);
    case OpKind::kTanh:
      return std::tanh(a);
    case OpKind::kSigmoid:
      return 1.0 / (1.0 + std::exp(-a));
    case OpKind::kErf:
      return std::erf(a);
    case OpKind::kAdd:
      return a + b;
    case OpKind::kSub:
      return a - b;
    case OpKind::kMul:
      return a * b;
    case OpKind::kDiv:
      return a / b;
    case OpKind::kMax:
      return a < b ? b : a;
    case OpKind::kMin:
      return b < a ? b : a;
    case OpKind::kPow:
      return std::pow(a, b);
    default:
      throw std::logic_error("ref_apply");
  }
}

class Reference {
 public:
  Reference(const Region& r, const std::vector<std::vector<float>>& ins) : r_(r), ins_(ins) {
    dom_ = r.domain_shape.empty() ? r.output_shape : r.domain_shape;
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const OpKind k = r.ops[i].kind;
      if (k == OpKind::kReduceSum || k == OpKind::kReduceMean || k == OpKind::kReduceMax ||
          k == OpKind::kReduceMin) {
        red_ = static_cast<int>(i);
      }
    }
  }

  std::vector<double> run() {
    const int64_t dom_n = count(dom_);
    const int64_t out_n = count(r_.output_shape);
    const bool row_output = red_ >= 0 && out_n != dom_n;
    std::vector<double> out;
    magnitudes_.clear();
    for (int64_t e = 0; e < out_n; ++e) {
      // Row output: the row's first element stands for the row (validated to be row-uniform).
      std::vector<int64_t> c = row_output ? row_coords(e) : coords(e);
      out.push_back(value(r_.output, c));
      magnitudes_.push_back(magnitude(r_.output, c));
    }
    return out;
  }

  // Per output element of the last run(): the size of the terms it was summed from, |a| + |b|
  // through every Add and Sub (and scaled through Mul and Div). Where terms cancel, a float
  // kernel's error is that of the terms, a few ulp of this, not of the small result.
  const std::vector<double>& magnitudes() const { return magnitudes_; }

 private:
  static int64_t count(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  }
  std::vector<int64_t> coords(int64_t flat) const {
    std::vector<int64_t> c(dom_.size());
    for (size_t d = dom_.size(); d-- > 0;) {
      c[d] = flat % dom_[d];
      flat /= dom_[d];
    }
    return c;
  }
  std::vector<int64_t> row_coords(int64_t row) const {
    std::vector<int64_t> c(dom_.size(), 0);
    for (size_t d = dom_.size() - 1; d-- > 0;) {
      c[d] = row % dom_[d];
      row /= dom_[d];
    }
    return c;
  }
  double value(int i, const std::vector<int64_t>& c) {
    const Op& op = r_.ops[static_cast<size_t>(i)];
    if (op.kind == OpKind::kInput) {
      const auto& s = r_.input_shapes[static_cast<size_t>(op.input)];
      const size_t off = dom_.size() - s.size();
      int64_t idx = 0;
      for (size_t d = 0; d < s.size(); ++d) idx = idx * s[d] + (s[d] == 1 ? 0 : c[off + d]);
      return ins_[static_cast<size_t>(op.input)].at(static_cast<size_t>(idx));
    }
    if (op.kind == OpKind::kConst) return op.value;
    if (i == red_) return reduce(c);
    const double a = value(op.a, c);
    const double b = op.b >= 0 ? value(op.b, c) : 0.0;
    return ref_apply(op.kind, a, b);
  }
  double magnitude(int i, const std::vector<int64_t>& c) {
    const Op& op = r_.ops[static_cast<size_t>(i)];
    switch (op.kind) {
      case OpKind::kAdd:
      case OpKind::kSub:
        return magnitude(op.a, c) + magnitude(op.b, c);
      case OpKind::kMul:
        return magnitude(op.a, c) * magnitude(op.b, c);
      case OpKind::kDiv:
        return magnitude(op.a, c) / std::fabs(value(op.b, c));
      case OpKind::kNeg:
      case OpKind::kAbs:
        return magnitude(op.a, c);
      default:
        return std::fabs(value(i, c));
    }
  }
  double reduce(std::vector<int64_t> c) {
    int64_t row = 0;
    for (size_t d = 0; d + 1 < dom_.size(); ++d) row = row * dom_[d] + c[d];
    if (auto it = cache_.find(row); it != cache_.end()) return it->second;
    const Op& op = r_.ops[static_cast<size_t>(red_)];
    const int64_t n = dom_.back();
    double sum = 0;
    double ext = op.kind == OpKind::kReduceMax ? -INFINITY : INFINITY;
    bool nan = false;
    for (int64_t j = 0; j < n; ++j) {
      c.back() = j;
      const double x = value(op.a, c);
      sum += x;
      nan = nan || std::isnan(x);
      ext = op.kind == OpKind::kReduceMax ? std::max(ext, x) : std::min(ext, x);
    }
    double v = 0;
    if (op.kind == OpKind::kReduceSum) v = sum;
    if (op.kind == OpKind::kReduceMean) v = sum / static_cast<double>(n);
    if (op.kind == OpKind::kReduceMax || op.kind == OpKind::kReduceMin) {
      v = nan ? std::numeric_limits<double>::quiet_NaN() : ext;
    }
    cache_[row] = v;
    return v;
  }

  const Region& r_;
  const std::vector<std::vector<float>>& ins_;
  std::vector<int64_t> dom_;
  int red_ = -1;
  std::map<int64_t, double> cache_;
  std::vector<double> magnitudes_;
};

// What a float32 kernel may differ from the double reference at one element: 1e-5 of the
// result (at least of 1e-2), or 16 ulp of the terms the result was summed from, whichever is
// larger (vector math such as libmvec is within 4 ulp per call; a chain compounds it).
inline double tolerance(double want, double magnitude) {
  const double ulp = std::numeric_limits<float>::epsilon();
  return std::max(1e-5 * std::max(std::fabs(want), 1e-2), 16 * ulp * magnitude);
}

inline std::vector<std::vector<float>> random_inputs(const Region& r, float lo, float hi,
                                                     unsigned seed = 42) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<std::vector<float>> ins;
  for (const auto& s : r.input_shapes) {
    std::vector<float> x(static_cast<size_t>(num_elements(s)));
    for (float& e : x) e = dist(rng);
    ins.push_back(std::move(x));
  }
  return ins;
}

inline std::vector<const float*> pointers(const std::vector<std::vector<float>>& ins) {
  std::vector<const float*> p;
  for (const auto& x : ins) p.push_back(x.data());
  return p;
}

// `got` within 1e-5 of `want` relative to the largest |want| (NaN only where `want` is NaN).
inline void expect_close(const std::vector<float>& got, const std::vector<double>& want,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1e-2;
  for (double w : want) {
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      ASSERT_EQ(std::isnan(got[i]), std::isnan(want[i])) << what << " element " << i;
      if (std::isinf(want[i])) {
        ASSERT_EQ(static_cast<double>(got[i]), want[i]) << what << " element " << i;
      }
      continue;
    }
    ASSERT_NEAR(got[i], want[i], 1e-5 * scale) << what << " element " << i;
  }
}

}  // namespace nnfuse::codegen::testing
