// Tests of Einsum and Det on hand-computed cases.
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace linalg_test {

using testing::run_ref1;
using testing::values;
using F = std::vector<float>;

Tensor m23() { return Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}); }

TEST(RefLinalg, EinsumForms) {
  auto eq = [](const char* e) {
    return std::map<std::string, Attribute>{{"equation", attr_string(e)}};
  };
  EXPECT_EQ(values<float>(run_ref1("Einsum", {m23()}, eq("ij->ji"), 12)), (F{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(values<float>(run_ref1("Einsum", {m23()}, eq("ij->i"), 12)), (F{6, 15}));
  EXPECT_EQ(values<float>(run_ref1("Einsum", {m23()}, eq("ij"), 12)), (F{1, 2, 3, 4, 5, 6}));
  Tensor b = Tensor::from_vector<float>({3, 1}, {1, 0, -1});
  EXPECT_EQ(values<float>(run_ref1("Einsum", {m23(), b}, eq("ij,jk->ik"), 12)), (F{-2, -2}));
  // A repeated label takes the diagonal; the ellipsis carries the batch.
  Tensor sq = Tensor::from_vector<float>({1, 2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(values<float>(run_ref1("Einsum", {sq}, eq("...ii->...i"), 12)), (F{1, 4}));
  EXPECT_THROW(run_ref1("Einsum", {m23()}, eq("ijk->i"), 12), Error);
}

TEST(RefLinalg, Determinants) {
  Tensor x = Tensor::from_vector<float>({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0});
  Tensor d = run_ref1("Det", {x}, {}, 11);
  EXPECT_EQ(d.shape(), (Dims{2}));
  EXPECT_NEAR(values<float>(d)[0], -2, 1e-6);
  EXPECT_NEAR(values<float>(d)[1], -1, 1e-6);  // a row swap
  Tensor singular = Tensor::from_vector<float>({2, 2}, {1, 2, 2, 4});
  EXPECT_EQ(values<float>(run_ref1("Det", {singular}, {}, 11)), (F{0}));
  EXPECT_THROW(run_ref1("Det", {m23()}, {}, 11), Error);
}

}  // namespace linalg_test
}  // namespace nnfuse
