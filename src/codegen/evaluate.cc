// evaluate(): the region interpreted op by op, by coordinates. It is the reference the generated
// code is tested against and the runtime's fallback, so it favours being obviously right over
// speed. The float semantics match emit.cc's expressions.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/region_plan.h"

namespace nnfuse::codegen {

namespace {

float apply(OpKind k, float a, float b) {
  switch (k) {
    case OpKind::kRelu:
      return a < 0.0f ? 0.0f : a;
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
      return 1.0f / (1.0f + std::exp(-a));
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
      throw std::logic_error(std::string("evaluate: not an elementwise op: ") + op_name(k));
  }
}

// One reduction over a row. Max/Min: NaN if any element is NaN (ONNX ReduceMax/ReduceMin),
// else the extreme, -inf/+inf for an empty row. Sum/Mean accumulate in double (more accurate
// than the generated code's float accumulators, equal within rounding).
class Reducer {
 public:
  explicit Reducer(OpKind k) : kind_(k) {}
  void add(float x) {
    if (kind_ == OpKind::kReduceSum || kind_ == OpKind::kReduceMean) {
      sum_ += x;
    } else if (x != x) {
      nan_ = true;
    } else if (kind_ == OpKind::kReduceMax ? x > ext_ : x < ext_) {
      ext_ = x;
    }
  }
  float result(int64_t n) const {
    switch (kind_) {
      case OpKind::kReduceSum:
        return static_cast<float>(sum_);
      case OpKind::kReduceMean:
        return static_cast<float>(sum_) / static_cast<float>(n);  // NaN for an empty row
      default:
        return nan_ ? std::numeric_limits<float>::quiet_NaN() : ext_;
    }
  }

 private:
  OpKind kind_;
  double sum_ = 0;
  bool nan_ = false;
  float ext_ = kind_ == OpKind::kReduceMax ? -std::numeric_limits<float>::infinity()
                                           : std::numeric_limits<float>::infinity();
};

}  // namespace

void evaluate(const Region& r, const std::vector<const float*>& inputs, float* out) {
  if (std::string why = validate(r); !why.empty()) {
    throw std::invalid_argument(std::string("evaluate: ") + why);
  }
  if (inputs.size() != r.input_shapes.size()) {
    throw std::invalid_argument(std::string("evaluate: ") + std::to_string(inputs.size()) +
                                " inputs given, the region has " +
                                std::to_string(r.input_shapes.size()));
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k] == nullptr && num_elements(r.input_shapes[k]) > 0) {
      throw std::invalid_argument(std::string("evaluate: input ") + std::to_string(k) + " is null");
    }
  }
  const RegionPlan p = make_plan(r);
  const size_t rank = p.dom.size();
  std::vector<int64_t> coord(rank, 0);
  std::vector<float> v(r.ops.size(), 0.0f);

  // Evaluates the ops `mask` selects (all when null) at `coord`. Only the reduction's operands
  // or values broadcast along the row are read where coord's last entry may be out of the row
  // (validate guarantees that for row output), so every read is within its input.
  auto eval = [&](const std::vector<bool>* mask) {
    for (size_t i = 0; i < r.ops.size(); ++i) {
      if (mask != nullptr && !(*mask)[i]) continue;
      const Op& op = r.ops[i];
      if (op.kind == OpKind::kInput) {
        const auto k = static_cast<size_t>(op.input);
        int64_t off = 0;
        for (size_t d = 0; d < rank; ++d) off += coord[d] * p.strides[k][d];
        v[i] = inputs[k][off];
      } else if (op.kind == OpKind::kConst) {
        v[i] = op.value;
      } else if (is_unary(op.kind)) {
        v[i] = apply(op.kind, v[static_cast<size_t>(op.a)], 0.0f);
      } else if (is_binary(op.kind)) {
        v[i] = apply(op.kind, v[static_cast<size_t>(op.a)], v[static_cast<size_t>(op.b)]);
      }  // the reduction's value is set by the caller
    }
  };
  // Sets coord's leading entries to those of flat row index `row`.
  auto set_row = [&](int64_t row) {
    for (size_t d = rank - 1; d-- > 0;) {
      coord[d] = row % p.dom[d];
      row /= p.dom[d];
    }
  };

  const size_t last = rank - 1;
  if (p.red < 0) {
    for (int64_t row = 0; row < p.rows; ++row) {
      set_row(row);
      for (int64_t j = 0; j < p.row_len; ++j) {
        coord[last] = j;
        eval(nullptr);
        out[row * p.row_len + j] = v[static_cast<size_t>(r.output)];
      }
    }
    return;
  }
  const Op& red = r.ops[static_cast<size_t>(p.red)];
  for (int64_t row = 0; row < p.rows; ++row) {
    set_row(row);
    Reducer acc(red.kind);
    for (int64_t j = 0; j < p.row_len; ++j) {
      coord[last] = j;
      eval(&p.pre);
      acc.add(v[static_cast<size_t>(red.a)]);
    }
    v[static_cast<size_t>(p.red)] = acc.result(p.row_len);
    if (p.row_output) {
      coord[last] = 0;
      eval(&p.post);
      out[row] = v[static_cast<size_t>(r.output)];
    } else {
      for (int64_t j = 0; j < p.row_len; ++j) {
        coord[last] = j;
        eval(&p.post);
        out[row * p.row_len + j] = v[static_cast<size_t>(r.output)];
      }
    }
  }
}

}  // namespace nnfuse::codegen
