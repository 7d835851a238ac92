// MultiHeadAttention's reference kernel: by hand on tiny cases, and against the ONNX ops it
// replaces (Reshape, Transpose, MatMul, Mul, Add, Softmax), each run by its own reference
// kernel as the unfused graph would run them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace attention_test {

using testing::expect_close;
using testing::run_ref;
using testing::run_ref1;
using testing::values;

using Attrs = std::map<std::string, Attribute>;

constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor random_tensor(const Dims& shape, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

Tensor f32(const Dims& shape, const std::vector<float>& v) {
  return Tensor::from_vector<float>(shape, v);
}

Tensor i64(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

Attrs mha_attrs(int64_t heads, bool causal = false, bool packed = false) {
  Attrs a = {{"num_heads", attr_int(heads)}};
  if (causal) a["causal"] = attr_int(1);
  if (packed) a["qkv_packed"] = attr_int(1);
  return a;
}

// [B, S, H*D] -> [B, H, S, D] (or [B, H, D, S] for K).
Tensor split_heads(const Tensor& x, int64_t heads, bool transpose_k) {
  const int64_t b = x.dim(0), s = x.dim(1), d = x.dim(2) / heads;
  const Tensor r = run_ref1("Reshape", {x, i64({b, s, heads, d})});
  const std::vector<int64_t> perm =
      transpose_k ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3};
  return run_ref1("Transpose", {r}, {{"perm", attr_ints(perm)}});
}

// The unfused graph: BERT's attention chain, with the causal mask as an additive [Sq, Sk]
// tensor of 0 and -inf.
Tensor composed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                int64_t heads, float scale, bool causal) {
  const int64_t b = q.dim(0), sq = q.dim(1), sk = k.dim(1), hidden = q.dim(2);
  Tensor s = run_ref1("MatMul", {split_heads(q, heads, false), split_heads(k, heads, true)});
  s = run_ref1("Mul", {s, Tensor::scalar<float>(scale)});
  if (mask.defined()) s = run_ref1("Add", {s, mask});
  if (causal) {
    Tensor c(DType::kFloat32, {sq, sk});
    for (int64_t i = 0; i < sq; ++i) {
      for (int64_t j = 0; j < sk; ++j) c.data<float>()[i * sk + j] = j > i + sk - sq ? -kInf : 0;
    }
    s = run_ref1("Add", {s, c});
  }
  const Tensor p = run_ref1("Softmax", {s}, {{"axis", attr_int(-1)}});
  const Tensor o = run_ref1("MatMul", {p, split_heads(v, heads, false)});
  const Tensor t = run_ref1("Transpose", {o}, {{"perm", attr_ints({0, 2, 1, 3})}});
  return run_ref1("Reshape", {t, i64({b, sq, hidden})});
}

TEST(RefAttention, ByHand) {
  // One query, two keys, D = 2, two heads with different data. Head 0: q = [1, 0] against keys
  // [1, 0] and [0, 1] with scale 1 gives scores [1, 0]; head 1: q = [0, 2], keys [0, 1] and
  // [0, 0], scores [2, 0].
  const Tensor q = f32({1, 1, 4}, {1, 0, 0, 2});
  const Tensor k = f32({1, 2, 4}, {1, 0, 0, 1, 0, 1, 0, 0});
  const Tensor v = f32({1, 2, 4}, {1, 2, 10, 20, 3, 4, 30, 40});
  Attrs a = mha_attrs(2);
  a["scale"] = attr_float(1.0f);
  const std::vector<float> got = values<float>(run_ref1("MultiHeadAttention", {q, k, v}, a));
  const double p0 = std::exp(1.0) / (std::exp(1.0) + 1), p1 = std::exp(2.0) / (std::exp(2.0) + 1);
  const std::vector<double> want = {p0 * 1 + (1 - p0) * 3, p0 * 2 + (1 - p0) * 4,
                                    p1 * 10 + (1 - p1) * 30, p1 * 20 + (1 - p1) * 40};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;

  // Default scale 1 / sqrt(2) and an additive mask [H, 1, Sk] hiding key 0 of head 0 only.
  const Tensor mask = f32({2, 1, 2}, {-kInf, 0, 0, 0});
  const std::vector<float> masked =
      values<float>(run_ref1("MultiHeadAttention", {q, k, v, mask}, mha_attrs(2)));
  const double s = 1 / std::sqrt(2.0), p2 = std::exp(2 * s) / (std::exp(2 * s) + 1);
  EXPECT_NEAR(masked[0], 3, 1e-6);
  EXPECT_NEAR(masked[1], 4, 1e-6);
  EXPECT_NEAR(masked[2], p2 * 10 + (1 - p2) * 30, 1e-5);
  EXPECT_NEAR(masked[3], p2 * 20 + (1 - p2) * 40, 1e-5);

  // Packed [Q | K | V], one head of size 1, causal: query 0 sees only key 0.
  const Tensor packed = f32({1, 2, 3}, {1, 1, 5, 1, 2, 7});
  const std::vector<float> c =
      values<float>(run_ref1("MultiHeadAttention", {packed}, mha_attrs(1, true, true)));
  const double w = std::exp(1.0) / (std::exp(1.0) + std::exp(2.0));  // query 1: scores [1, 2]
  EXPECT_NEAR(c[0], 5, 1e-6);
  EXPECT_NEAR(c[1], w * 5 + (1 - w) * 7, 1e-5);
}

struct Case {
  int64_t batch, heads, head_size, sq, sk;
  Dims mask;  // empty: no mask
  bool causal = false;
  bool packed = false;
};

void check_composed(const Case& c, uint32_t seed) {
  std::ostringstream what;
  what << "B" << c.batch << " H" << c.heads << " D" << c.head_size << " Sq" << c.sq << " Sk" << c.sk
       << " mask" << dims_str(c.mask) << (c.causal ? " causal" : "") << (c.packed ? " packed" : "");
  SCOPED_TRACE(what.str());
  const int64_t hidden = c.heads * c.head_size;
  Tensor q, k, v, mask;
  std::vector<Tensor> inputs;
  if (c.packed) {
    const Tensor x = random_tensor({c.batch, c.sq, 3 * hidden}, seed, 2.0f);
    const std::vector<Tensor> qkv = run_ref("Split", {x}, {{"axis", attr_int(2)}}, 3);
    q = qkv[0];
    k = qkv[1];
    v = qkv[2];
    inputs = {x, Tensor(), Tensor()};
  } else {
    q = random_tensor({c.batch, c.sq, hidden}, seed, 2.0f);
    k = random_tensor({c.batch, c.sk, hidden}, seed + 1, 2.0f);
    v = random_tensor({c.batch, c.sk, hidden}, seed + 2);
    inputs = {q, k, v};
  }
  if (!c.mask.empty()) {
    mask = random_tensor(c.mask, seed + 3, 3.0f);
    // Padding-style -10000 and -inf on a few keys, never key 0 (so no row is fully masked,
    // causal or not).
    const int64_t keys = c.mask.back();
    for (int64_t i = 0; keys > 1 && i < mask.numel(); ++i) {
      if (i % keys != 0 && i % 3 == 1) mask.data<float>()[i] = i % 2 ? -1e4f : -kInf;
    }
    inputs.resize(3);
    inputs.push_back(mask);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_size));
  const Tensor want = composed(q, k, v, mask, c.heads, scale, c.causal);
  const Tensor got = run_ref1("MultiHeadAttention", inputs, mha_attrs(c.heads, c.causal, c.packed));
  expect_close(got, want, 1e-5f, 1e-4f);
}

TEST(RefAttention, MatchesComposedOps) {
  const std::vector<Case> cases = {
      {1, 1, 4, 3, 3, {}},
      {2, 2, 3, 4, 5, {}},
      {1, 4, 8, 6, 9, {1, 1, 1, 9}},
      {2, 2, 5, 3, 7, {2, 1, 1, 7}},  // BERT padding mask [B, 1, 1, Sk]
      {2, 3, 4, 5, 5, {2, 1, 5, 5}},
      {2, 3, 4, 5, 6, {1, 3, 5, 6}},
      {1, 2, 4, 4, 4, {4, 4}},        // rank 2: [Sq, Sk]
      {2, 2, 4, 3, 3, {2, 1, 3, 1}},  // broadcast over keys
      {1, 2, 6, 5, 5, {}, true},
      {1, 2, 6, 3, 7, {}, true},  // causal with Sk > Sq
      {2, 2, 6, 4, 4, {2, 1, 1, 4}, true},
      {2, 3, 2, 4, 4, {}, false, true},
      {1, 2, 8, 6, 6, {1, 1, 1, 6}, true, true},
      {1, 1, 1, 1, 1, {}},
  };
  uint32_t seed = 10;
  for (const Case& c : cases) check_composed(c, seed += 5);
}

// The rotate-half rotary embedding as the exporter writes it (Slice, Neg, Concat, Mul, Add on
// [B, H, S, D]), of the first R dims of every head, for x [B, S, H*D] and cos, sin [S, R].
Tensor rotary_composed(const Tensor& x, int64_t heads, const Tensor& cos, const Tensor& sin) {
  const int64_t b = x.dim(0), s = x.dim(1), d = x.dim(2) / heads, r = cos.dim(1);
  const Tensor x4 = split_heads(x, heads, false);
  auto slice = [&](int64_t from, int64_t to) {
    return run_ref1("Slice", {x4, i64({from}), i64({to}), i64({3})});
  };
  const Tensor rot = run_ref1("Concat", {run_ref1("Neg", {slice(r / 2, r)}), slice(0, r / 2)},
                              {{"axis", attr_int(-1)}});
  Tensor y = run_ref1("Add", {run_ref1("Mul", {slice(0, r), cos}), run_ref1("Mul", {rot, sin})});
  if (r < d) y = run_ref1("Concat", {y, slice(r, d)}, {{"axis", attr_int(-1)}});
  const Tensor t = run_ref1("Transpose", {y}, {{"perm", attr_ints({0, 2, 1, 3})}});
  return run_ref1("Reshape", {t, i64({b, s, heads * d})});
}

// K/V of G heads [B, S, G*D] widened to H heads, head h reading h / (H / G) (repeat_kv).
Tensor widen(const Tensor& x, int64_t kv_heads, int64_t heads) {
  const int64_t b = x.dim(0), s = x.dim(1), d = x.dim(2) / kv_heads;
  Tensor y(DType::kFloat32, {b, s, heads * d});
  for (int64_t r = 0; r < b * s; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* from = x.data<float>() + r * kv_heads * d + h / (heads / kv_heads) * d;
      std::copy(from, from + d, y.data<float>() + (r * heads + h) * d);
    }
  }
  return y;
}

// Grouped-query attention with rotary embeddings (rotate-half, full and partial) against the
// composed ops: the rotation as exported, the K/V heads widened, then plain attention.
TEST(RefAttention, GroupedQueryWithRotaryMatchesComposedOps) {
  struct G {
    int64_t batch, heads, kv_heads, d, s, rotary;
    bool packed;
  };
  uint32_t seed = 500;
  for (const G& c : {G{1, 4, 2, 8, 5, 8, false}, G{2, 4, 1, 8, 6, 4, false},
                     G{1, 6, 3, 4, 3, 0, false}, G{2, 4, 2, 8, 5, 8, true}}) {
    SCOPED_TRACE(c.heads * 100 + c.kv_heads * 10 + c.rotary);
    const int64_t hd = c.heads * c.d, kd = c.kv_heads * c.d;
    Tensor q = random_tensor({c.batch, c.s, hd}, seed++),
           k = random_tensor({c.batch, c.s, kd}, seed++);
    Tensor v = random_tensor({c.batch, c.s, kd}, seed++);
    Tensor cos = random_tensor({c.s, std::max<int64_t>(c.rotary, 2)}, seed++);
    Tensor sin = random_tensor({c.s, std::max<int64_t>(c.rotary, 2)}, seed++);
    Attrs a = mha_attrs(c.heads, true, c.packed);
    a["kv_num_heads"] = attr_int(c.kv_heads);
    std::vector<Tensor> in = {q, k, v, Tensor()};
    if (c.packed)
      in = {run_ref1("Concat", {q, k, v}, {{"axis", attr_int(-1)}}), Tensor(), Tensor(), Tensor()};
    if (c.rotary > 0) in.insert(in.end(), {cos, sin});
    const Tensor got = run_ref1("MultiHeadAttention", in, a);
    const Tensor rq = c.rotary > 0 ? rotary_composed(q, c.heads, cos, sin) : q;
    const Tensor rk = c.rotary > 0 ? rotary_composed(k, c.kv_heads, cos, sin) : k;
    const Tensor want =
        composed(rq, widen(rk, c.kv_heads, c.heads), widen(v, c.kv_heads, c.heads), Tensor(),
                 c.heads, 1.0f / std::sqrt(static_cast<float>(c.d)), true);
    expect_close(got, want, 1e-5f, 1e-5f);
  }
}

// Interleaved (GPT-J) rotary is rotate-half on each head's dims reordered evens first: the
// scores are the same when Q, K and the tables are reordered alike.
TEST(RefAttention, InterleavedRotaryIsRotateHalfOnReorderedDims) {
  const int64_t b = 1, h = 2, d = 8, s = 4, r = 6;
  const Tensor q = random_tensor({b, s, h * d}, 1), k = random_tensor({b, s, h * d}, 2);
  const Tensor v = random_tensor({b, s, h * d}, 3);
  const Tensor cos = random_tensor({s, r}, 4), sin = random_tensor({s, r}, 5);
  auto reorder = [&](const Tensor& x, int64_t width, int64_t stride) {
    Tensor y = x.clone();
    for (int64_t row = 0; row < x.numel() / stride; ++row) {
      for (int64_t hh = 0; hh < stride / width; ++hh) {
        const float* from = x.data<float>() + row * stride + hh * width;
        float* to = y.data<float>() + row * stride + hh * width;
        for (int64_t t = 0; t < r / 2; ++t) {
          to[t] = from[2 * t];
          to[r / 2 + t] = from[2 * t + 1];
        }
      }
    }
    return y;
  };
  Attrs il = mha_attrs(h);
  il["rotary_interleaved"] = attr_int(1);
  const Tensor got = run_ref1("MultiHeadAttention", {q, k, v, Tensor(), cos, sin}, il);
  const Tensor want = run_ref1("MultiHeadAttention",
                               {reorder(q, d, h * d), reorder(k, d, h * d), v, Tensor(),
                                reorder(cos, r, r), reorder(sin, r, r)},
                               mha_attrs(h));
  expect_close(got, want, 1e-6f, 1e-6f);
}

// With a KV cache the present outputs are the past then the new keys and values, and the
// attention is the one over all of them.
TEST(RefAttention, KvCacheAttendsThePastAndTheNew) {
  const int64_t b = 2, h = 4, g = 2, d = 8, p = 5, s = 2;
  const Tensor q = random_tensor({b, s, h * d}, 1), k = random_tensor({b, s, g * d}, 2);
  const Tensor v = random_tensor({b, s, g * d}, 3);
  const Tensor pk = random_tensor({b, g, p, d}, 4), pv = random_tensor({b, g, p, d}, 5);
  Attrs a = mha_attrs(h, true);
  a["kv_num_heads"] = attr_int(g);
  const std::vector<Tensor> got =
      run_ref("MultiHeadAttention", {q, k, v, Tensor(), Tensor(), Tensor(), pk, pv}, a, 3);
  ASSERT_EQ(got.size(), 3u);
  const Tensor* fresh[2] = {&k, &v};
  const Tensor* past[2] = {&pk, &pv};
  Tensor rows[2];
  for (int c = 0; c < 2; ++c) {
    // [B, G, S, D] of the new rows, then along the sequence after the past.
    const Tensor heads4 = split_heads(*fresh[c], g, false);
    const Tensor want = run_ref1("Concat", {*past[c], heads4}, {{"axis", attr_int(2)}});
    expect_close(got[1 + static_cast<size_t>(c)], want, 0.0f, 0.0f);
    const Tensor t = run_ref1("Transpose", {want}, {{"perm", attr_ints({0, 2, 1, 3})}});
    rows[c] = run_ref1("Reshape", {t, i64({b, p + s, g * d})});
  }
  const Tensor want = run_ref1("MultiHeadAttention", {q, rows[0], rows[1]}, a);
  expect_close(got[0], want, 0.0f, 0.0f);
}

TEST(RefAttention, FullyMaskedRowsAreNaN) {
  // Causal with Sq > Sk: query 0 of 3 sees no key of 2. Padding -inf over every key of batch 1.
  const Tensor q = random_tensor({2, 3, 4}, 1), k = random_tensor({2, 2, 4}, 2);
  const Tensor v = random_tensor({2, 2, 4}, 3);
  const Tensor c = run_ref1("MultiHeadAttention", {q, k, v}, mha_attrs(2, true));
  for (int64_t i = 0; i < c.numel(); ++i) {
    const int64_t row = i / 4 % 3;
    EXPECT_EQ(std::isnan(c.data<float>()[i]), row == 0) << i;
  }
  const Tensor mask = f32({2, 1, 1, 2}, {0, -kInf, -kInf, -kInf});
  const Tensor m = run_ref1("MultiHeadAttention", {q, k, v, mask}, mha_attrs(2));
  for (int64_t i = 0; i < m.numel(); ++i) EXPECT_EQ(std::isnan(m.data<float>()[i]), i >= 12) << i;
  // The unfused graph agrees where it is finite, and is NaN where the fused one is.
  const Tensor want = composed(q, k, v, mask, 2, 0.5f, false);
  for (int64_t i = 0; i < m.numel(); ++i) {
    EXPECT_EQ(std::isnan(want.data<float>()[i]), i >= 12) << i;
  }
}

TEST(RefAttention, NoKeysGivesZeros) {
  const Tensor q = random_tensor({1, 2, 4}, 1), kv(DType::kFloat32, {1, 0, 4});
  const Tensor y = run_ref1("MultiHeadAttention", {q, kv, kv}, mha_attrs(2));
  ASSERT_EQ(y.shape(), (Dims{1, 2, 4}));
  for (float x : values<float>(y)) EXPECT_EQ(x, 0.0f);
}

TEST(RefAttention, Float64) {
  Tensor q(DType::kFloat64, {1, 2, 2}), k(DType::kFloat64, {1, 2, 2});
  for (int64_t i = 0; i < 4; ++i) {
    q.data<double>()[i] = 0.1 * static_cast<double>(i);
    k.data<double>()[i] = 1.0 - 0.2 * static_cast<double>(i);
  }
  const Tensor y = run_ref1("MultiHeadAttention", {q, k, k}, mha_attrs(1));
  EXPECT_EQ(y.dtype(), DType::kFloat64);
  EXPECT_EQ(y.shape(), (Dims{1, 2, 2}));
}

void expect_error(const std::vector<Tensor>& inputs, const Attrs& attrs, const std::string& what) {
  try {
    run_ref1("MultiHeadAttention", inputs, attrs);
    ADD_FAILURE() << "no error for " << what;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(RefAttention, Errors) {
  const Tensor q = random_tensor({2, 3, 8}, 1), k = random_tensor({2, 5, 8}, 2);
  const Tensor v = random_tensor({2, 5, 8}, 3);
  expect_error({q, k, v}, {}, "num_heads");
  expect_error({q, k, v}, mha_attrs(0), "num_heads");
  expect_error({q, k, v}, mha_attrs(3), "does not divide the hidden size 8");
  expect_error({random_tensor({3, 8}, 1), k, v}, mha_attrs(2), "'node': input 0 must have rank 3");
  expect_error({q, random_tensor({2, 5, 4}, 2), v}, mha_attrs(2), "must both be");
  expect_error({q, k, random_tensor({2, 4, 8}, 2)}, mha_attrs(2), "must both be");
  expect_error({q, random_tensor({1, 5, 8}, 2), random_tensor({1, 5, 8}, 2)}, mha_attrs(2),
               "must both be");
  expect_error({q, k, v, random_tensor({2, 1, 3, 4}, 4)}, mha_attrs(2), "does not broadcast");
  expect_error({q, k, v, random_tensor({3, 1, 1, 5}, 4)}, mha_attrs(2), "does not broadcast");
  expect_error({q, k, v, random_tensor({1, 2, 1, 3, 5}, 4)}, mha_attrs(2), "does not broadcast");
  expect_error({q, k, v}, {{"num_heads", attr_int(2)}, {"causal", attr_int(2)}}, "causal");
  expect_error({random_tensor({2, 3, 10}, 1)}, mha_attrs(1, false, true), "does not split");
  expect_error({q, k, v}, mha_attrs(2, false, true), "must be omitted");
  expect_error({q}, mha_attrs(2), "K and V are required");
  expect_error({q, k, v}, {{"num_heads", attr_int(2)}, {"kv_num_heads", attr_int(3)}},
               "does not divide num_heads");
  expect_error({q, k, v}, {{"num_heads", attr_int(2)}, {"kv_num_heads", attr_int(1)}},
               "must both be [2, Sk, 4]");
  expect_error({q, k, v, Tensor(), random_tensor({3, 3}, 5), random_tensor({3, 3}, 6)},
               mha_attrs(2), "R even");
  Tensor half(DType::kFloat16, {2, 3, 8});
  expect_error({half, half, half}, mha_attrs(2), "float16");
}

}  // namespace attention_test
}  // namespace nnfuse
