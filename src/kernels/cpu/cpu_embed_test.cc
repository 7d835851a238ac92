// The transformer kernels against their reference kernels: EmbedLayerNorm (cpu_embed.cc) and
// the fast Gelu/Swish (cpu_unary.cc), over sizes with odd tails.
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_embed_test {

using testing::expect_in_place_matches_ref;
using testing::expect_matches_ref;
using testing::fast_accepts;
using testing::FastInput;
using testing::random_int64;
using testing::random_tensor;
using testing::run_kernel;

Tensor to_int32(const Tensor& t) {
  Tensor r(DType::kInt32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    r.data<int32_t>()[i] = static_cast<int32_t>(t.data<int64_t>()[i]);
  }
  return r;
}

TEST(CpuEmbedLayerNorm, MatchesReference) {
  uint32_t seed = 1;
  for (int64_t e : {1, 7, 16, 33, 768}) {
    for (const Dims& ids_shape : std::vector<Dims>{{1}, {3}, {2, 5}, {3, 1, 4}}) {
      SCOPED_TRACE("E " + std::to_string(e) + " ids " + dims_str(ids_shape));
      Tensor word = random_tensor({50, e}, seed++);
      Tensor tok = random_tensor({2, e}, seed++);
      Tensor gamma = random_tensor({e}, seed++, 0.5f, 1.5f);
      Tensor beta = random_tensor({e}, seed++);
      Tensor ids = random_int64(ids_shape, seed++, -50, 49);
      Tensor types = to_int32(random_int64(ids_shape, seed++, 0, 1));
      Dims addend_shape = ids_shape;
      addend_shape[0] = 1;
      addend_shape.push_back(e);
      Tensor addend = random_tensor(addend_shape, seed++);
      const std::map<std::string, Attribute> eps = {{"epsilon", attr_float(1e-12f)}};
      // Two lookups, a broadcast addend, beta, and the sum as output 1.
      expect_matches_ref(
          "cpu.embed_layer_norm", "EmbedLayerNorm",
          {{gamma, true}, {beta, true}, {addend, true}, {word, true}, {ids}, {tok, true}, {types}},
          eps, 2);
      // One lookup, no beta, no addend.
      expect_matches_ref("cpu.embed_layer_norm", "EmbedLayerNorm",
                         {{gamma}, {Tensor()}, {Tensor()}, {word}, {ids}});
      // A scalar addend (broadcast along E too).
      expect_matches_ref("cpu.embed_layer_norm", "EmbedLayerNorm",
                         {{gamma}, {beta}, {Tensor::scalar<float>(0.5f)}, {word}, {ids}});
    }
  }
}

TEST(CpuEmbedLayerNorm, BadIdsThrowBeforeAnyRead) {
  Tensor word = random_tensor({4, 3}, 1);
  Tensor gamma = random_tensor({3}, 2);
  for (int64_t bad : std::vector<int64_t>{4, -5, int64_t{1} << 40, -(int64_t{1} << 40)}) {
    try {
      run_kernel(
          "EmbedLayerNorm",
          {{gamma}, {Tensor()}, {Tensor()}, {word}, {Tensor::from_vector<int64_t>({2}, {0, bad})}},
          {}, 1, "cpu.embed_layer_norm");
      ADD_FAILURE() << "id " << bad << " did not throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("EmbedLayerNorm 'node'"), std::string::npos) << e.what();
    }
  }
  // Ids of different shapes.
  EXPECT_THROW(run_kernel("EmbedLayerNorm",
                          {{gamma},
                           {Tensor()},
                           {Tensor()},
                           {word},
                           {Tensor::from_vector<int64_t>({2}, {0, 1})},
                           {word},
                           {Tensor::from_vector<int64_t>({1, 2}, {0, 1})}},
                          {}, 1, "cpu.embed_layer_norm"),
               Error);
}

TEST(CpuEmbedLayerNorm, DeclinesWhatItCannotRun) {
  Tensor word = random_tensor({4, 3}, 1);
  Tensor gamma = random_tensor({3}, 2);
  Tensor ids = Tensor::from_vector<int64_t>({2}, {0, 1});
  EXPECT_TRUE(fast_accepts("cpu.embed_layer_norm", "EmbedLayerNorm",
                           {{gamma}, {Tensor()}, {Tensor()}, {word}, {ids}}));
  // Float ids; a missing table; an odd number of pair inputs.
  EXPECT_FALSE(fast_accepts("cpu.embed_layer_norm", "EmbedLayerNorm",
                            {{gamma}, {Tensor()}, {Tensor()}, {word}, {random_tensor({2}, 3)}}));
  EXPECT_FALSE(fast_accepts("cpu.embed_layer_norm", "EmbedLayerNorm",
                            {{gamma}, {Tensor()}, {Tensor()}, {Tensor()}, {ids}}));
  EXPECT_FALSE(fast_accepts("cpu.embed_layer_norm", "EmbedLayerNorm",
                            {{gamma}, {Tensor()}, {Tensor()}, {word}, {ids}, {word}}));
}

// ---- Gelu and Swish

const std::vector<Dims> kShapes = {{}, {1}, {7}, {15}, {17}, {33}, {1000}, {2, 3, 4, 5}, {70001}};

TEST(CpuGelu, MatchesReferenceOverShapes) {
  const std::vector<std::pair<std::string, std::map<std::string, Attribute>>> cases = {
      {"Gelu", {}},
      {"Gelu", {{"approximate", attr_string("none")}}},
      {"Gelu", {{"approximate", attr_string("tanh")}}},
      {"Swish", {}},
      {"Swish", {{"alpha", attr_float(1.702f)}}},
      {"Swish", {{"alpha", attr_float(-0.5f)}}},
  };
  uint32_t seed = 1;
  for (const auto& [op, attrs] : cases) {
    for (const Dims& s : kShapes) {
      SCOPED_TRACE(op + " " + dims_str(s));
      expect_matches_ref("cpu.gelu", op, {{random_tensor(s, seed++, -8.0f, 8.0f)}}, attrs, 1, 2e-6f,
                         2e-6f);
    }
    expect_in_place_matches_ref("cpu.gelu", op, {{random_tensor({1001}, seed++, -8, 8)}}, 0, attrs,
                                2e-6f, 2e-6f);
  }
}

TEST(CpuGelu, SpecialValues) {
  Tensor x = Tensor::from_vector<float>({7}, {0.0f, -0.0f, 1e-30f, 30.0f, -30.0f, INFINITY, NAN});
  for (const char* approx : {"none", "tanh"}) {
    SCOPED_TRACE(approx);
    Tensor y =
        run_kernel("Gelu", {{x}}, {{"approximate", attr_string(approx)}}, 1, "cpu.gelu").outputs[0];
    const float* p = y.data<float>();
    EXPECT_EQ(p[0], 0.0f);
    EXPECT_EQ(p[1], 0.0f);
    EXPECT_NEAR(p[2], 0.5e-30f, 1e-36f);
    EXPECT_EQ(p[3], 30.0f);
    EXPECT_NEAR(p[4], 0.0f, 1e-30f);
    EXPECT_EQ(p[5], INFINITY);
    EXPECT_TRUE(std::isnan(p[6]));
  }
  EXPECT_FALSE(fast_accepts("cpu.gelu", "Gelu", {{x}}, {{"approximate", attr_string("fast")}}));
}

}  // namespace cpu_embed_test
}  // namespace nnfuse
