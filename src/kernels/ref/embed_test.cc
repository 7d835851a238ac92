// The transformer ops' reference kernels against the ONNX ops they replace, each run
// separately (as the unfused graph would run them): EmbedLayerNorm against Gather + Add +
// LayerNormalization, and the standalone Gelu and Swish (fused.cc) against their formulas.
#include <cmath>
#include <numbers>
#include <random>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace embed_test {

using testing::expect_close;
using testing::run_ref;
using testing::run_ref1;

using Attrs = std::map<std::string, Attribute>;

using testing::random_tensor;

template <typename T>
Tensor ids_tensor(const Dims& shape, uint32_t seed, int64_t lo, int64_t hi) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  Tensor t(std::is_same_v<T, int64_t> ? DType::kInt64 : DType::kInt32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(dist(gen));
  return t;
}

// The unfused graph: sum the gathers (and the addend), then LayerNormalization.
Tensor unfused(const std::vector<Tensor>& in, float eps, Tensor* sum = nullptr) {
  Tensor s;
  for (size_t i = 3; i < in.size(); i += 2) {
    Tensor g = run_ref1("Gather", {in[i], in[i + 1]});
    s = s.defined() ? run_ref1("Add", {s, g}) : g;
  }
  if (in[2].defined()) s = run_ref1("Add", {s, in[2]});
  if (sum) *sum = s;
  std::vector<Tensor> ln = {s, in[0]};
  if (in[1].defined()) ln.push_back(in[1]);
  return run_ref1("LayerNormalization", ln, {{"axis", attr_int(-1)}, {"epsilon", attr_float(eps)}});
}

TEST(EmbedLayerNormRef, EqualsGathersAddsAndLayerNorm) {
  const int64_t e = 12, b = 2, s = 5;
  Tensor word = random_tensor({30, e}, 1);
  Tensor pos = random_tensor({s, e}, 2);
  Tensor tok = random_tensor({2, e}, 3);
  Tensor gamma = random_tensor({e}, 4, 0.5f, 1.5f);
  Tensor beta = random_tensor({e}, 5);
  Tensor ids = ids_tensor<int64_t>({b, s}, 6, -30, 29);  // negative ids wrap
  Tensor types = ids_tensor<int32_t>({b, s}, 7, 0, 1);
  Tensor pos_rows = run_ref1("Gather", {pos, ids_tensor<int64_t>({1, s}, 8, 0, s - 1)});
  // Three lookups, no addend, with beta.
  std::vector<Tensor> in = {
      gamma, beta, Tensor(), word, ids, tok, types, pos, ids_tensor<int64_t>({b, s}, 9, 0, s - 1)};
  expect_close(run_ref1("EmbedLayerNorm", in, {{"epsilon", attr_float(1e-12f)}}),
               unfused(in, 1e-12f), 1e-5f, 1e-5f);
  // Two lookups and the gathered position rows as a broadcast addend, without beta, with the
  // sum as output 1.
  in = {gamma, Tensor(), pos_rows, word, ids, tok, types};
  std::vector<Tensor> got = run_ref("EmbedLayerNorm", in, {{"epsilon", attr_float(1e-5f)}}, 2);
  Tensor sum;
  expect_close(got[0], unfused(in, 1e-5f, &sum), 1e-5f, 1e-5f);
  expect_close(got[1], sum, 1e-6f, 1e-6f);
  EXPECT_EQ(got[0].shape(), (Dims{b, s, e}));
  // One lookup, a scalar addend, rank-1 ids.
  in = {gamma, beta, Tensor::scalar<float>(0.25f), word, ids_tensor<int64_t>({7}, 10, 0, 29)};
  expect_close(run_ref1("EmbedLayerNorm", in), unfused(in, 1e-5f), 1e-5f, 1e-5f);
}

TEST(EmbedLayerNormRef, BadIdsAndShapesThrowNamingTheNode) {
  Tensor word = random_tensor({4, 3}, 1);
  Tensor gamma = random_tensor({3}, 2);
  auto run = [&](Tensor ids, Tensor addend = Tensor(), Tensor table2 = Tensor(),
                 Tensor ids2 = Tensor()) {
    std::vector<Tensor> in = {gamma, Tensor(), addend, word, ids};
    if (table2.defined()) {
      in.push_back(table2);
      in.push_back(ids2);
    }
    return run_ref1("EmbedLayerNorm", in);
  };
  for (int64_t bad : std::vector<int64_t>{4, -5, int64_t{1} << 40}) {
    try {
      run(Tensor::from_vector<int64_t>({2}, {0, bad}));
      ADD_FAILURE() << "id " << bad << " did not throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("EmbedLayerNorm 'node'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(run(Tensor::from_vector<int64_t>({2}, {-4, 3})));
  // Ids of different shapes; an addend that would grow the output; a table of another width.
  EXPECT_THROW(run(Tensor::from_vector<int64_t>({2}, {0, 1}), Tensor(), word,
                   Tensor::from_vector<int64_t>({1, 2}, {0, 1})),
               Error);
  EXPECT_THROW(run(Tensor::from_vector<int64_t>({2}, {0, 1}), random_tensor({3, 2, 3}, 3)), Error);
  EXPECT_THROW(run(Tensor::from_vector<int64_t>({2}, {0, 1}), Tensor(), random_tensor({4, 5}, 4),
                   Tensor::from_vector<int64_t>({2}, {0, 1})),
               Error);
  // Float ids are refused by the support check.
  EXPECT_THROW(run_ref1("EmbedLayerNorm", {gamma, Tensor(), Tensor(), word, random_tensor({2}, 5)}),
               Error);
}

// ---- Gelu and Swish (ai.nnfuse)

double gelu_erf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

TEST(GeluRef, ErfAndTanhFormsAndSwish) {
  Tensor x = random_tensor({3, 41}, 1, -6.0f, 6.0f);
  Tensor none = run_ref1("Gelu", {x});
  Tensor none2 = run_ref1("Gelu", {x}, {{"approximate", attr_string("none")}});
  Tensor tanh = run_ref1("Gelu", {x}, {{"approximate", attr_string("tanh")}});
  Tensor silu = run_ref1("Swish", {x});
  Tensor swish = run_ref1("Swish", {x}, {{"alpha", attr_float(1.702f)}});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.data<float>()[i];
    EXPECT_NEAR(none.data<float>()[i], gelu_erf(v), 1e-6);
    EXPECT_EQ(none2.data<float>()[i], none.data<float>()[i]);
    EXPECT_NEAR(tanh.data<float>()[i], gelu_tanh(v), 1e-6);
    EXPECT_NEAR(silu.data<float>()[i], v / (1 + std::exp(-v)), 1e-6);
    EXPECT_NEAR(swish.data<float>()[i], v / (1 + std::exp(-1.702 * v)), 1e-6);
  }
  // The erf form equals the ONNX ops the exporters write.
  Tensor half = Tensor::scalar<float>(0.5f), one = Tensor::scalar<float>(1.0f);
  Tensor e = run_ref1("Erf", {run_ref1("Div", {x, Tensor::scalar<float>(std::sqrt(2.0f))})});
  Tensor composed = run_ref1("Mul", {run_ref1("Mul", {x, run_ref1("Add", {e, one})}), half});
  expect_close(none, composed, 1e-6f, 1e-6f);
  EXPECT_THROW(run_ref1("Gelu", {x}, {{"approximate", attr_string("fast")}}), Error);
}

}  // namespace embed_test
}  // namespace nnfuse
