// Tests of NonMaxSuppression, RoiAlign, GridSample and MaxUnpool on small hand-computed cases.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace vision_test {

using testing::run_ref1;
using testing::values;
using F = std::vector<float>;
using I = std::vector<int64_t>;

// ---- NonMaxSuppression ----

// Three unit boxes [y1, x1, y2, x2] in one batch and class: box 1 overlaps box 0 with IoU
// 0.9 / 1.1, box 2 is disjoint.
Tensor nms_boxes() {
  return Tensor::from_vector<float>({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3});
}
Tensor nms_scores() { return Tensor::from_vector<float>({1, 1, 3}, {0.8f, 0.9f, 0.7f}); }

TEST(RefVision, NmsSuppressesByIouAndScore) {
  const Tensor max_out = Tensor::from_vector<int64_t>({1}, {3});
  const Tensor iou = Tensor::from_vector<float>({1}, {0.5f});
  // Box 1 scores highest and suppresses box 0 (IoU 0.82 > 0.5); box 2 stays.
  Tensor y = run_ref1("NonMaxSuppression", {nms_boxes(), nms_scores(), max_out, iou});
  EXPECT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(y.shape(), (Dims{2, 3}));
  EXPECT_EQ(values<int64_t>(y), (I{0, 0, 1, 0, 0, 2}));
  // A score threshold of 0.75 drops box 2; an IoU threshold of 0.9 keeps box 0.
  const Tensor score = Tensor::from_vector<float>({1}, {0.75f});
  y = run_ref1("NonMaxSuppression", {nms_boxes(), nms_scores(), max_out, iou, score});
  EXPECT_EQ(values<int64_t>(y), (I{0, 0, 1}));
  const Tensor loose = Tensor::from_vector<float>({1}, {0.9f});
  y = run_ref1("NonMaxSuppression", {nms_boxes(), nms_scores(), max_out, loose});
  EXPECT_EQ(values<int64_t>(y), (I{0, 0, 1, 0, 0, 0, 0, 0, 2}));
  // Without max_output_boxes_per_class nothing is selected.
  y = run_ref1("NonMaxSuppression", {nms_boxes(), nms_scores()});
  EXPECT_EQ(y.shape(), (Dims{0, 3}));
}

TEST(RefVision, NmsCenterPointBoxes) {
  // The same boxes as [x_center, y_center, width, height].
  Tensor boxes =
      Tensor::from_vector<float>({1, 3, 4}, {0.5f, 0.5f, 1, 1, 0.6f, 0.5f, 1, 1, 2.5f, 0.5f, 1, 1});
  Tensor y = run_ref1("NonMaxSuppression",
                      {boxes, nms_scores(), Tensor::from_vector<int64_t>({1}, {3}),
                       Tensor::from_vector<float>({1}, {0.5f})},
                      {{"center_point_box", attr_int(1)}});
  EXPECT_EQ(values<int64_t>(y), (I{0, 0, 1, 0, 0, 2}));
}

TEST(RefVision, NmsBadShapesAreErrors) {
  Tensor scores = Tensor::from_vector<float>({1, 1, 2}, {0.8f, 0.9f});  // 2 scores, 3 boxes
  EXPECT_THROW(run_ref1("NonMaxSuppression", {nms_boxes(), scores}), Error);
  EXPECT_THROW(run_ref1("NonMaxSuppression", {nms_boxes(), nms_scores()},
                        {{"center_point_box", attr_int(2)}}),
               Error);
}

// Greedy NMS as the spec words it: each candidate (by descending score, ties by index) against
// every box kept so far, with the kernel's IoU test. The oracle for the kernel's pruned search.
std::vector<int64_t> brute_force_nms(const std::vector<float>& boxes,
                                     const std::vector<float>& scores, int64_t batches,
                                     int64_t classes, int64_t n, int64_t max_out, double iou,
                                     const float* score_threshold, bool center) {
  struct B {
    double y1, x1, y2, x2;
  };
  auto read = [&](const float* f) {
    const double a = f[0], b = f[1], c = f[2], d = f[3];
    if (center) return B{b - d / 2, a - c / 2, b + d / 2, a + c / 2};
    return B{std::min(a, c), std::min(b, d), std::max(a, c), std::max(b, d)};
  };
  auto sup = [&](const B& a, const B& b) {
    const double ix1 = std::max(a.x1, b.x1), ix2 = std::min(a.x2, b.x2);
    const double iy1 = std::max(a.y1, b.y1), iy2 = std::min(a.y2, b.y2);
    if (ix2 <= ix1 || iy2 <= iy1) return false;
    const double inter = (ix2 - ix1) * (iy2 - iy1);
    const double aa = (a.x2 - a.x1) * (a.y2 - a.y1), ab = (b.x2 - b.x1) * (b.y2 - b.y1);
    const double uni = aa + ab - inter;
    if (aa <= 0 || ab <= 0 || uni <= 0) return false;
    return inter / uni > iou;
  };
  std::vector<int64_t> out;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const float* s = &scores[static_cast<size_t>((b * classes + c) * n)];
      std::vector<int64_t> order;
      for (int64_t i = 0; i < n; ++i) {
        if (!score_threshold || s[i] > *score_threshold) order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return static_cast<double>(s[x]) > static_cast<double>(s[y]);
      });
      std::vector<B> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const B cand = read(&boxes[static_cast<size_t>((b * n + i) * 4)]);
        bool drop = false;
        for (const B& k : kept) drop = drop || sup(k, cand);
        if (drop) continue;
        kept.push_back(cand);
        out.insert(out.end(), {b, c, i});
      }
    }
  }
  return out;
}

// The kernel against the oracle on random box sets: torchvision's batched form (every class in
// one call, each class's boxes offset far apart), clustered and duplicate boxes, tied scores,
// degenerate, inverted, huge, infinite and NaN boxes, both box encodings, score thresholds and
// output limits.
TEST(RefVision, NmsMatchesBruteForceOnRandomBoxes) {
  uint64_t state = 12345;
  auto next = [&]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
  };
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t batches = 1 + trial % 2, classes = 1 + trial % 3;
    const int64_t n = trial < 50 ? 20 + trial * 13 : 1500;
    const bool center = trial % 4 == 3;
    const bool offsets = trial % 5 < 2;  // the coordinate trick: 30 groups far apart
    std::vector<float> boxes(static_cast<size_t>(batches * n * 4));
    std::vector<float> scores(static_cast<size_t>(batches * classes * n));
    for (int64_t i = 0; i < batches * n; ++i) {
      float* f = &boxes[static_cast<size_t>(i * 4)];
      const double shift = offsets ? 1000.0 * static_cast<double>(i % 30) : 0.0;
      const double y = shift + next() * 100, x = shift + next() * 100;
      const double h = next() * 30, w = next() * 30;
      if (center) {
        f[0] = static_cast<float>(x), f[1] = static_cast<float>(y);
        f[2] = static_cast<float>(w), f[3] = static_cast<float>(h);
      } else {
        f[0] = static_cast<float>(y), f[1] = static_cast<float>(x);
        f[2] = static_cast<float>(y + h), f[3] = static_cast<float>(x + w);
      }
      const double kind = next();
      if (kind < 0.05 && i > 0) {
        std::copy(f - 4, f, f);  // a duplicate of the previous box
      } else if (kind < 0.07) {
        f[2] = f[0];  // zero height (corners) or zero width (center)
      } else if (kind < 0.09) {
        std::swap(f[0], f[2]);  // corners in the other order; a negative width (center)
      } else if (kind < 0.10) {
        f[static_cast<size_t>(next() * 4)] = std::numeric_limits<float>::quiet_NaN();
      } else if (kind < 0.11) {
        f[static_cast<size_t>(next() * 4)] = std::numeric_limits<float>::infinity();
      } else if (kind < 0.12) {
        f[3] = f[1] + 5000.0f;  // one very wide box
      }
    }
    for (float& v : scores) v = static_cast<float>(std::floor(next() * 50) / 50);  // many ties
    const int64_t max_out = trial % 7 == 0 ? 3 : 1000000;
    const double iou = trial % 6 == 5 ? 0.0 : 0.1 + 0.8 * next();
    const float threshold = 0.3f;
    const float* thr = trial % 3 == 1 ? &threshold : nullptr;
    std::vector<Tensor> in = {Tensor::from_vector<float>({batches, n, 4}, boxes),
                              Tensor::from_vector<float>({batches, classes, n}, scores),
                              Tensor::from_vector<int64_t>({1}, {max_out}),
                              Tensor::from_vector<float>({1}, {static_cast<float>(iou)})};
    if (thr) in.push_back(Tensor::from_vector<float>({1}, {threshold}));
    const Tensor y = run_ref1("NonMaxSuppression", in, {{"center_point_box", attr_int(center)}});
    const std::vector<int64_t> want =
        brute_force_nms(boxes, scores, batches, classes, n, max_out,
                        static_cast<double>(static_cast<float>(iou)), thr, center);
    ASSERT_EQ(values<int64_t>(y), want) << "trial " << trial;
    checked += static_cast<int>(want.size() / 3);
  }
  EXPECT_GT(checked, 5000);
}

// ---- RoiAlign ----

// A 3x3 plane holding 3y + x: bilinear interpolation reproduces it exactly inside.
Tensor ramp() { return Tensor::from_vector<float>({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}); }

TEST(RefVision, RoiAlignAverages) {
  const Tensor rois = Tensor::from_vector<float>({1, 4}, {0, 0, 2, 2});
  const Tensor batch = Tensor::from_vector<int64_t>({1}, {0});
  // Opset 10 (no pixel shift): 2x2 bins of 1x1, one sample at each bin center.
  Tensor y = run_ref1("RoiAlign", {ramp(), rois, batch},
                      {{"output_height", attr_int(2)},
                       {"output_width", attr_int(2)},
                       {"sampling_ratio", attr_int(1)}},
                      10);
  EXPECT_EQ(y.shape(), (Dims{1, 1, 2, 2}));
  EXPECT_EQ(values<float>(y), (F{2, 3, 5, 6}));
  // One bin averaging 2x2 samples at (0.5 | 1.5, 0.5 | 1.5): 3 * 1 + 1.
  y = run_ref1("RoiAlign", {ramp(), rois, batch}, {{"sampling_ratio", attr_int(2)}}, 10);
  EXPECT_NEAR(values<float>(y)[0], 4.0f, 1e-6);
  // Opset 16's half_pixel shifts the roi by -0.5: a roi 0.5 further gives the first result.
  const Tensor shifted = Tensor::from_vector<float>({1, 4}, {0.5f, 0.5f, 2.5f, 2.5f});
  y = run_ref1("RoiAlign", {ramp(), shifted, batch},
               {{"output_height", attr_int(2)},
                {"output_width", attr_int(2)},
                {"sampling_ratio", attr_int(1)}},
               16);
  EXPECT_EQ(values<float>(y), (F{2, 3, 5, 6}));
}

TEST(RefVision, RoiAlignMaxTakesTheLargestWeightedCorner) {
  // The sample at (0.5, 0.5) has corners 0, 1, 3, 4 each weighted 0.25: max is 0.25 * 4.
  Tensor x = Tensor::from_vector<double>({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  Tensor rois = Tensor::from_vector<double>({1, 4}, {0, 0, 1, 1});
  Tensor y = run_ref1("RoiAlign", {x, rois, Tensor::from_vector<int64_t>({1}, {0})},
                      {{"mode", attr_string("max")}, {"sampling_ratio", attr_int(1)}}, 10);
  EXPECT_EQ(y.dtype(), DType::kFloat64);
  EXPECT_NEAR(values<double>(y)[0], 1.0, 1e-12);
}

TEST(RefVision, RoiAlignBadBatchIndexIsAnError) {
  const Tensor rois = Tensor::from_vector<float>({1, 4}, {0, 0, 2, 2});
  EXPECT_THROW(run_ref1("RoiAlign", {ramp(), rois, Tensor::from_vector<int64_t>({1}, {1})}), Error);
  EXPECT_THROW(run_ref1("RoiAlign", {ramp(), rois, Tensor::from_vector<int64_t>({1}, {0})},
                        {{"mode", attr_string("median")}}),
               Error);
}

// ---- GridSample ----

Tensor square() { return Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4}); }

TEST(RefVision, GridSampleBilinearAndNearest) {
  // (x, y) points: the center, the top-left corner and the top-right corner.
  const Tensor grid = Tensor::from_vector<float>({1, 1, 3, 2}, {0, 0, -1, -1, 1, -1});
  Tensor y = run_ref1("GridSample", {square(), grid}, {{"align_corners", attr_int(1)}}, 16);
  EXPECT_EQ(y.shape(), (Dims{1, 1, 1, 3}));
  EXPECT_EQ(values<float>(y), (F{2.5f, 1, 2}));
  // Without align_corners -1 is the outer edge, pixel coordinate -0.5: a quarter of pixel 0
  // with zeros padding, all of it with border or reflection padding.
  y = run_ref1("GridSample", {square(), grid}, {}, 16);
  EXPECT_EQ(values<float>(y), (F{2.5f, 0.25f, 0.5f}));
  y = run_ref1("GridSample", {square(), grid}, {{"padding_mode", attr_string("border")}}, 16);
  EXPECT_EQ(values<float>(y), (F{2.5f, 1, 2}));
  y = run_ref1("GridSample", {square(), grid}, {{"padding_mode", attr_string("reflection")}}, 16);
  EXPECT_EQ(values<float>(y), (F{2.5f, 1, 2}));
  // nearest rounds half to even: the center (0.5, 0.5) reads pixel (0, 0), and the top-right
  // corner (1.5, -0.5) pixel (0, 2), a zero outside the image.
  y = run_ref1("GridSample", {square(), grid}, {{"mode", attr_string("nearest")}}, 16);
  EXPECT_EQ(values<float>(y), (F{1, 1, 0}));
}

TEST(RefVision, GridSampleBicubicKeepsAConstant) {
  Tensor x = Tensor::from_vector<double>({1, 1, 2, 2}, {5, 5, 5, 5});
  Tensor grid = Tensor::from_vector<double>({1, 1, 2, 2}, {0.3, -0.7, 2.5, 0.1});
  Tensor y =
      run_ref1("GridSample", {x, grid},
               {{"mode", attr_string("bicubic")}, {"padding_mode", attr_string("border")}}, 16);
  EXPECT_NEAR(values<double>(y)[0], 5.0, 1e-12);
  EXPECT_NEAR(values<double>(y)[1], 5.0, 1e-12);
}

TEST(RefVision, GridSampleBadGridIsAnError) {
  const Tensor grid = Tensor::from_vector<float>({1, 1, 1, 3}, {0, 0, 0});
  EXPECT_THROW(run_ref1("GridSample", {square(), grid}, {}, 16), Error);
  EXPECT_THROW(run_ref1("GridSample", {square(), Tensor::from_vector<float>({1, 1, 1, 2}, {0, 0})},
                        {{"padding_mode", attr_string("wrap")}}, 16),
               Error);
}

// ---- MaxUnpool ----

TEST(RefVision, MaxUnpoolScattersIntoTheUnpooledShape) {
  const Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor ind = Tensor::from_vector<int64_t>({1, 1, 2, 2}, {0, 3, 9, 14});
  const std::map<std::string, Attribute> attrs = {{"kernel_shape", attr_ints({2, 2})},
                                                  {"strides", attr_ints({2, 2})}};
  Tensor y = run_ref1("MaxUnpool", {x, ind}, attrs);
  EXPECT_EQ(y.shape(), (Dims{1, 1, 4, 4}));
  EXPECT_EQ(values<float>(y), (F{1, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4, 0}));
  // A larger output_shape holds the 4x4 result at its origin: (0,0) (0,3) (2,1) (3,2) of 5x5.
  Tensor y5 =
      run_ref1("MaxUnpool", {x, ind, Tensor::from_vector<int64_t>({4}, {1, 1, 5, 5})}, attrs);
  EXPECT_EQ(y5.shape(), (Dims{1, 1, 5, 5}));
  F want(25, 0);
  want[0] = 1;
  want[3] = 2;
  want[11] = 3;
  want[17] = 4;
  EXPECT_EQ(values<float>(y5), want);
}

TEST(RefVision, MaxUnpoolBadIndexIsAnError) {
  const Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor ind = Tensor::from_vector<int64_t>({1, 1, 2, 2}, {0, 3, 9, 16});  // 16 >= 4x4
  EXPECT_THROW(run_ref1("MaxUnpool", {x, ind},
                        {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}}),
               Error);
}

}  // namespace vision_test
}  // namespace nnfuse
