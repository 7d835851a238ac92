// The patterns of the activations a fused kernel takes as its epilogue (and of GELU and Swish
// as exporters write them), and reading an activation's parameters from a match of one.
#include <cmath>
#include <numbers>

#include "ir/error.h"
#include "passes/fusions/fusion_util.h"

namespace nnfuse {

using pattern::Pat;

namespace {

// Product of factors[idx[0..]]; keys[i] identifies interchangeable factors.
Pat product_rec(const std::vector<Pat>& factors, const std::vector<int>& keys,
                const std::vector<size_t>& idx) {
  using namespace pattern;
  if (idx.size() == 1) return factors[idx[0]];
  auto key_of = [&](const std::vector<size_t>& part) {
    std::vector<int> k;
    for (size_t i : part) k.push_back(keys[i]);
    std::sort(k.begin(), k.end());
    return k;
  };
  std::set<std::pair<std::vector<int>, std::vector<int>>> seen;
  std::vector<Pat> alts;
  // Subsets containing idx[0] (so each unordered split is met once), proper and non-empty.
  const size_t n = idx.size();
  for (uint32_t mask = 1; mask < (1u << n) - 1; mask += 2) {
    std::vector<size_t> a, b;
    for (size_t i = 0; i < n; ++i) ((mask >> i) & 1 ? a : b).push_back(idx[i]);
    auto ka = key_of(a), kb = key_of(b);
    if (!seen.insert(std::minmax(ka, kb)).second) continue;
    alts.push_back(product_rec(factors, keys, a) * product_rec(factors, keys, b));
  }
  return alts.size() == 1 ? alts[0] : any_of(alts);
}

}  // namespace

Pat product_of(const std::vector<Pat>& factors) {
  if (factors.empty() || factors.size() > 4) {
    fail(ErrorKind::kInternal, "product_of: 1 to 4 factors, got ", factors.size());
  }
  std::vector<int> keys;
  std::vector<size_t> idx;
  for (size_t i = 0; i < factors.size(); ++i) {
    int k = static_cast<int>(i);
    for (size_t j = 0; j < i; ++j) {
      if (factors[j].get() == factors[i].get()) k = keys[j];
    }
    keys.push_back(k);
    idx.push_back(i);
  }
  return product_rec(factors, keys, idx);
}

namespace {

// 0.5 * x * g in any association.
Pat half_x_times(const Pat& x, const Pat& g) { return product_of({pattern::scalar(0.5f), x, g}); }

}  // namespace

Pat gelu_erf_pattern(const Pat& x) {
  using namespace pattern;
  const float kInvSqrt2 = static_cast<float>(1.0 / std::sqrt(2.0));
  const float kSqrt2 = static_cast<float>(std::sqrt(2.0));
  Pat inner = erf(any_of({x / scalar(kSqrt2, 1e-4f), x * scalar(kInvSqrt2, 1e-4f)}));
  return half_x_times(x, inner + 1.0f);
}

Pat gelu_tanh_pattern(const Pat& x) {
  using namespace pattern;
  const float kSqrt2OverPi = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
  auto k = [&] { return scalar(kSqrt2OverPi, 1e-4f); };
  auto c = [] { return scalar(0.044715f, 1e-6f); };
  // c * x^3: the cube as Pow(x, 3) or a product of three x.
  Pat cubic = any_of({product_of({c(), pow(x, 3.0f)}), product_of({c(), x, x, x})});
  // sqrt(2 / pi) * (x + c x^3), or sqrt(2 / pi) * x * (1 + c x^2) (Megatron's bias_gelu).
  Pat arg =
      any_of({product_of({k(), x + cubic}), product_of({k(), x, product_of({c(), x, x}) + 1.0f})});
  return half_x_times(x, tanh(arg) + 1.0f);
}

Pat swish_pattern(const Pat& x) {
  using namespace pattern;
  return x * sigmoid(x * constant("swish_alpha"));
}

// HardSwish written out, as models that predate the op spell it: x * Relu6(x + 3) / 6, with
// Relu6 as Clip(v, 0, 6) or Min(Max(v, 0), 6) and the division by 6 anywhere in the product.
Pat hard_swish_written_out(const Pat& x) {
  using namespace pattern;
  Pat v = x + 3.0f;
  Pat relu6 = any_of({op("Clip", {v, scalar(0.0f), scalar(6.0f)}),
                      op("Min", {op("Max", {v, scalar(0.0f)}), scalar(6.0f)})});
  return any_of({(x * relu6) / 6.0f, x * (relu6 / 6.0f), product_of({x, relu6, scalar(1.0f / 6)})});
}

std::vector<ActivationPattern> activation_patterns(const Pat& x) {
  using namespace pattern;
  using K = ops::ActivationKind;
  auto named = [](K k, Pat p) { return ActivationPattern{ops::activation_name(k), std::move(p)}; };
  return {
      named(K::kRelu, relu(x)),
      named(K::kClip, op("Clip", {x, constant("clip_min"), constant("clip_max")})),
      named(K::kLeakyRelu, op("LeakyRelu", {x}).named("act")),
      named(K::kTanh, tanh(x)),
      named(K::kSiLU, x * sigmoid(x)),
      named(K::kSwish, swish_pattern(x)),
      named(K::kSigmoid, sigmoid(x)),
      named(K::kHardSwish, op("HardSwish", {x})),
      named(K::kHardSwish, x * op("HardSigmoid", {x}).named("act")),
      named(K::kHardSwish, hard_swish_written_out(x)),
      named(K::kHardSigmoid, op("HardSigmoid", {x}).named("act")),
      named(K::kGelu, gelu_erf_pattern(x)),
      named(K::kGeluTanh, gelu_tanh_pattern(x)),
  };
}

std::optional<ops::Activation> activation_from_match(const std::string& variant,
                                                     const pattern::Match& m, std::string* why) {
  using K = ops::ActivationKind;
  const std::optional<K> kind = ops::activation_kind(variant);
  if (!kind) {
    *why = "no epilogue activation is named '" + variant + "'";
    return std::nullopt;
  }
  ops::Activation a{*kind, 0, 0};
  switch (*kind) {
    case K::kClip: {
      const Tensor* lo = pattern::constant_value(m.value("clip_min"));
      const Tensor* hi = pattern::constant_value(m.value("clip_max"));
      if (!lo || !hi || lo->numel() != 1 || hi->numel() != 1 || lo->dtype() != DType::kFloat32 ||
          hi->dtype() != DType::kFloat32) {
        *why = "Clip bounds are not float32 scalar constants";
        return std::nullopt;
      }
      a.alpha = lo->data<float>()[0];
      a.beta = hi->data<float>()[0];
      break;
    }
    case K::kSwish: {
      const Tensor* t = pattern::constant_value(m.value("swish_alpha"));
      if (!t || t->numel() != 1 || t->dtype() != DType::kFloat32) {
        *why = "the Swish alpha (x * sigmoid(alpha * x)) is not a float32 scalar constant";
        return std::nullopt;
      }
      a.alpha = t->data<float>()[0];
      if (a.alpha == 1.0f) a = ops::Activation{K::kSiLU, 0, 0};
      break;
    }
    case K::kLeakyRelu:
      a.alpha = m.node("act")->attr_float("alpha", 0.01f);
      break;
    case K::kHardSigmoid:
    case K::kHardSwish: {
      Node* hs = m.node("act");
      a.alpha = hs ? hs->attr_float("alpha", 0.2f) : 1.0f / 6.0f;
      a.beta = hs ? hs->attr_float("beta", 0.5f) : 0.5f;
      if (*kind == K::kHardSwish && hs &&
          (std::abs(a.alpha - 1.0f / 6.0f) > 1e-6f || a.beta != 0.5f)) {
        *why = "x * HardSigmoid(x) with alpha/beta other than 1/6 and 0.5 is not HardSwish";
        return std::nullopt;
      }
      break;
    }
    default:
      break;
  }
  return a;
}

}  // namespace nnfuse
