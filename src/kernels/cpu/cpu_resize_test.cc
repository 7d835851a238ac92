// cpu.resize against the reference kernel: nearest must be bit-equal, interpolation within
// 1e-5 relative (plus 1e-5 absolute, for outputs that cancel to near zero).
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_resize_test {

using testing::fast_accepts;
using testing::FastInput;
using testing::random_tensor;

constexpr const char* kKernel = "cpu.resize";
// tf_half_pixel_for_nn moves every coordinate by half a pixel, so it keeps an axis of scale 1
// only in nearest mode rounding down; it is swept there (and tested apart).
const char* const kCtms[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"};
const char* const kNearestModes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

Tensor f32s(const std::vector<float>& v) {
  return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
}
Tensor i64s(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// One resize: an input shape and either scales or sizes.
struct Case {
  Dims shape;
  std::vector<float> scales;
  std::vector<int64_t> sizes;
};

const std::vector<Case> kCases = {
    {{1, 2, 5, 7}, {1, 1, 2, 2}, {}},        // 2x up
    {{1, 3, 4, 6}, {1, 1, 0.5f, 0.5f}, {}},  // 2x down
    {{2, 3, 5, 7}, {1, 1, 1.7f, 0.6f}, {}},  // non-integer, up one way and down the other
    {{1, 2, 7, 5}, {1, 1, 3, 2.5f}, {}},
    {{1, 3, 6, 8}, {1, 1, 1, 2}, {}},  // only the last axis
    {{1, 3, 6, 8}, {1, 1, 2, 1}, {}},  // only rows: the last axis is kept
    {{1, 1, 1, 5}, {1, 1, 3, 1.5f}, {}},
    {{1, 1, 9, 13}, {}, {1, 1, 4, 6}},  // sizes, down
    {{2, 2, 3, 4}, {}, {2, 2, 7, 11}},  // sizes, odd up
    {{1, 1, 4, 4}, {}, {1, 1, 1, 1}},   // to a single pixel
    {{2, 3, 11}, {1, 1, 2.3f}, {}},     // 3-D
    {{2, 3, 11}, {}, {2, 3, 4}},
    {{1, 2, 3, 4, 5}, {1, 1, 2, 1.5f, 0.7f}, {}},  // 5-D
    {{1, 2, 4, 3, 6}, {}, {1, 2, 5, 3, 9}},
    {{1, 4, 3, 3}, {1, 2, 2, 2}, {}},    // C resized too: the last three axes
    {{5, 7}, {2, 0.5f}, {}},             // 2-D
    {{1, 8, 32, 48}, {1, 1, 2, 2}, {}},  // enough work to run threaded
    {{2, 16, 20, 15}, {}, {2, 16, 9, 31}},
};

std::string case_name(const Case& c) {
  std::ostringstream os;
  os << dims_str(c.shape);
  if (c.sizes.empty()) {
    os << " scales";
    for (float v : c.scales) os << " " << v;
  } else {
    os << " sizes " << dims_str(c.sizes);
  }
  return os.str();
}

// Inputs for opset >= 13 (roi omitted, scales or sizes constant), or opset 11's (roi and an
// empty scales always present).
std::vector<FastInput> inputs_for(const Case& c, uint32_t seed, int64_t opset,
                                  Layout layout = Layout::kPlain) {
  std::vector<FastInput> in = {{random_tensor(c.shape, seed, -3, 3), false, layout}};
  const bool old = opset < 13;
  in.push_back({old ? f32s({}) : Tensor(), old});
  if (!c.sizes.empty()) {
    in.push_back({old ? f32s({}) : Tensor(), old});
    in.push_back({i64s(c.sizes), true});
  } else {
    in.push_back({f32s(c.scales), true});
  }
  return in;
}

std::map<std::string, Attribute> attrs(const std::string& mode, const std::string& ctm,
                                       const std::string& nearest = "round_prefer_floor") {
  return {{"mode", attr_string(mode)},
          {"coordinate_transformation_mode", attr_string(ctm)},
          {"nearest_mode", attr_string(nearest)}};
}

// Runs cpu.resize on a channels-last input whose output is a graph output: it must write that
// output plain (no reorder after it) and match the reference.
void expect_graph_output_plain(const std::vector<FastInput>& in,
                               const std::map<std::string, Attribute>& at, bool exact) {
  const KernelFactory* f = testing::find_factory("Resize", kKernel);
  ASSERT_NE(f, nullptr);
  testing::OneNode one("Resize", in, at);
  one.g.add_output(one.node->output(0));
  const NodeInfo info = one.info();
  ASSERT_TRUE(f->accepts(info)) << f->declines(info);
  ASSERT_EQ(f->output_layout(info, 0), Layout::kPlain);
  auto kernel = f->create(info);
  const Tensor x = to_layout(in[0].value, Layout::kNHWC);
  KernelIO io;
  for (const FastInput& i : in) io.inputs.push_back(i.value.defined() ? &i.value : nullptr);
  io.inputs[0] = &x;
  io.outputs.resize(1);
  kernel->run(io);
  std::vector<Tensor> plain;
  for (const FastInput& i : in) plain.push_back(i.value);
  Tensor ref = testing::run_ref("Resize", plain, at)[0];
  ASSERT_EQ(io.outputs[0].layout(), Layout::kPlain);
  if (exact) {
    ASSERT_EQ(io.outputs[0].shape(), ref.shape());
    EXPECT_EQ(std::memcmp(io.outputs[0].raw(), ref.raw(), ref.nbytes()), 0);
  } else {
    testing::expect_close(io.outputs[0], ref, 1e-5f, 1e-5f);
  }
}

// Why cpu.resize declines the node, "" when it accepts it (the two must agree).
std::string reason(const std::vector<FastInput>& in, const std::map<std::string, Attribute>& at,
                   int64_t opset = 17) {
  const KernelFactory* f = testing::find_factory("Resize", kKernel);
  if (!f || !f->declines) return "(no factory)";
  testing::OneNode one("Resize", in, at);
  const NodeInfo info = one.info(opset);
  EXPECT_EQ(f->accepts(info), f->declines(info).empty());
  return f->declines(info);
}

// Runs cpu.resize (which must accept the node) and the reference; exact or within tolerance.
void expect_matches(const std::vector<FastInput>& in, const std::map<std::string, Attribute>& at,
                    bool exact, int64_t opset = 17) {
  ASSERT_EQ(reason(in, at, opset), "");
  testing::FastRun fast = testing::run_kernel("Resize", in, at, 1, kKernel, opset);
  std::vector<Tensor> plain;
  for (const FastInput& i : in) plain.push_back(i.value);
  Tensor ref = testing::run_ref("Resize", plain, at, 1, opset)[0];
  const Tensor& got = fast.outputs[0];
  ASSERT_EQ(got.shape(), ref.shape());
  ASSERT_GT(ref.numel(), 0);
  if (!exact) {
    testing::expect_close(got, ref, 1e-5f, 1e-5f);
    return;
  }
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    if (std::memcmp(&got.data<float>()[i], &ref.data<float>()[i], sizeof(float)) != 0) {
      if (bad++ == 0) first = i;
    }
  }
  EXPECT_EQ(bad, 0) << "first at element " << first << ": " << got.data<float>()[first] << " vs "
                    << ref.data<float>()[first];
}

TEST(CpuResize, NearestEveryModeMatchesExactly) {
  uint32_t seed = 1;
  for (const char* ctm : kCtms) {
    for (const char* nm : kNearestModes) {
      for (const Case& c : kCases) {
        SCOPED_TRACE(std::string(ctm) + " " + nm + " " + case_name(c));
        expect_matches(inputs_for(c, seed++, 17), attrs("nearest", ctm, nm), true);
      }
    }
  }
  for (const char* nm : {"round_prefer_floor", "floor"}) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string("tf_half_pixel_for_nn ") + nm + " " + case_name(c));
      expect_matches(inputs_for(c, seed++, 17), attrs("nearest", "tf_half_pixel_for_nn", nm), true);
    }
  }
}

TEST(CpuResize, TfHalfPixelForNnMovesAxesOfScaleOne) {
  // Scale 1 maps o to o + 0.5: rounding up (or interpolating) changes an axis of scale 1 too.
  // With N = 2 that makes four resized axes, which the kernel declines; with N = 1 (clamped back
  // to 0) C joins the last three resized axes, except in cubic mode; with rank 2 every axis is
  // resized.
  const Case n2 = kCases[2], n1 = kCases[0], rank2 = kCases[15];
  const std::vector<std::pair<std::string, std::string>> modes = {
      {"linear", ""}, {"cubic", ""}, {"nearest", "round_prefer_ceil"}, {"nearest", "ceil"}};
  uint32_t seed = 500;
  for (const auto& [mode, nm] : modes) {
    SCOPED_TRACE(mode + " " + nm);
    auto at = attrs(mode, "tf_half_pixel_for_nn", nm.empty() ? "round_prefer_floor" : nm);
    std::string r = reason(inputs_for(n2, seed++, 17), at);
    EXPECT_NE(r.find("resizes axis 0"), std::string::npos) << r;
    // Cubic's four taps at o = 0 all clamp onto index 0 of N: not kept as is either.
    if (mode != "cubic") expect_matches(inputs_for(n1, seed++, 17), at, mode == "nearest");
    expect_matches(inputs_for(rank2, seed++, 17), at, mode == "nearest");
  }
}

TEST(CpuResize, LinearEveryCoordinateMode) {
  uint32_t seed = 1000;
  for (const char* ctm : kCtms) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(ctm) + " " + case_name(c));
      expect_matches(inputs_for(c, seed++, 17), attrs("linear", ctm), false);
    }
  }
}

TEST(CpuResize, Cubic) {
  uint32_t seed = 2000;
  for (const char* ctm : kCtms) {
    for (const Case& c : kCases) {
      for (int exclude : {0, 1}) {
        for (float a : {-0.75f, -0.5f}) {
          SCOPED_TRACE(std::string(ctm) + " " + case_name(c) + " exclude_outside " +
                       std::to_string(exclude) + " a " + std::to_string(a));
          auto at = attrs("cubic", ctm);
          at["exclude_outside"] = attr_int(exclude);
          at["cubic_coeff_a"] = attr_float(a);
          expect_matches(inputs_for(c, seed++, 17), at, false);
        }
      }
    }
  }
}

TEST(CpuResize, Opset11WithRoiAndEmptyScales) {
  uint32_t seed = 3000;
  for (const Case& c : kCases) {
    SCOPED_TRACE(case_name(c));
    expect_matches(inputs_for(c, seed++, 11), attrs("nearest", "asymmetric", "floor"), true, 11);
    expect_matches(inputs_for(c, seed++, 11), attrs("linear", "half_pixel"), false, 11);
  }
}

TEST(CpuResize, DefaultAttributesAndFirstInTable) {
  // Default: nearest, half_pixel, round_prefer_floor; cpu.resize is picked before the reference.
  std::vector<FastInput> in = inputs_for(kCases[2], 7, 17);
  testing::FastRun fast = testing::run_kernel("Resize", in);
  EXPECT_EQ(fast.kernel, kKernel);
  expect_matches(in, {}, true);
}

TEST(CpuResize, ChannelsLastStaysChannelsLast) {
  const KernelFactory* f = testing::find_factory("Resize", kKernel);
  ASSERT_NE(f, nullptr);
  uint32_t seed = 4000;
  for (const Case& c : kCases) {
    if (c.shape.size() != 4 || (!c.scales.empty() && c.scales[1] != 1)) continue;
    for (const char* ctm : kCtms) {
      SCOPED_TRACE(std::string(ctm) + " " + case_name(c));
      std::vector<FastInput> in = inputs_for(c, seed++, 17, Layout::kNHWC);
      testing::OneNode one("Resize", in, attrs("linear", ctm));
      ASSERT_TRUE(f->accepts(one.info()));
      EXPECT_EQ(f->output_layout(one.info(), 0), Layout::kNHWC);
      expect_matches(in, attrs("nearest", ctm, "round_prefer_ceil"), true);
      expect_matches(in, attrs("linear", ctm), false);
      expect_matches(in, attrs("cubic", ctm), false);
    }
  }
  // A graph output is written plain straight from the channels-last input.
  for (const Case& c : {kCases[0], kCases[3], kCases[9], kCases[17]}) {
    for (const char* ctm : kCtms) {
      SCOPED_TRACE(std::string("graph output ") + ctm + " " + case_name(c));
      std::vector<FastInput> in = inputs_for(c, seed++, 17, Layout::kNHWC);
      expect_graph_output_plain(in, attrs("nearest", ctm, "floor"), true);
      expect_graph_output_plain(in, attrs("linear", ctm), false);
      expect_graph_output_plain(in, attrs("cubic", ctm), false);
    }
  }
  // Resizing C in NHWC is declined; the plain form (after a reorder) is accepted.
  EXPECT_FALSE(fast_accepts(kKernel, "Resize", inputs_for(kCases[14], 1, 17, Layout::kNHWC)));
  EXPECT_TRUE(fast_accepts(kKernel, "Resize", inputs_for(kCases[14], 1, 17)));
}

TEST(CpuResize, DeclinesWithReasons) {
  const Tensor x = random_tensor({1, 2, 4, 4}, 1);
  const std::vector<FastInput> ok = {{x}, {}, {f32s({1, 1, 2, 2}), true}};
  EXPECT_EQ(reason(ok, attrs("linear", "half_pixel")), "");

  // Scales or sizes known only at run time.
  std::string r = reason({{x}, {}, {f32s({1, 1, 2, 2}), false}}, {});
  EXPECT_NE(r.find("not a constant"), std::string::npos) << r;
  r = reason({{x}, {}, {}, {i64s({1, 2, 8, 8}), false}}, {});
  EXPECT_NE(r.find("sizes"), std::string::npos) << r;
  EXPECT_NE(r.find("not a constant"), std::string::npos) << r;

  r = reason({{x}, {f32s({0, 0, 0, 0, 1, 1, 1, 1}), true}, {f32s({1, 1, 2, 2}), true}},
             attrs("linear", "tf_crop_and_resize"));
  EXPECT_NE(r.find("tf_crop_and_resize"), std::string::npos) << r;

  r = reason({{x}, {}, {f32s({2, 1, 2, 2}), true}}, {});  // N resized: four axes
  EXPECT_NE(r.find("resizes axis 0"), std::string::npos) << r;
  r = reason({{Tensor(DType::kInt64, {1, 2, 4, 4})}, {}, {f32s({1, 1, 2, 2}), true}}, {});
  EXPECT_NE(r.find("not float32"), std::string::npos) << r;
  r = reason({{x}, {}, {f32s({1, 1, 2, 2}), true}, {i64s({1, 2, 8, 8}), true}}, {});
  EXPECT_NE(r.find("exactly one"), std::string::npos) << r;
  r = reason(ok, attrs("linear", "half_pixel"), 10);
  EXPECT_NE(r.find("opset 11"), std::string::npos) << r;
  r = reason(ok, {{"antialias", attr_int(1)}});
  EXPECT_NE(r.find("antialias"), std::string::npos) << r;

  // The reference kernel still runs what cpu.resize declines.
  testing::FastRun fast = testing::run_kernel("Resize", {{x}, {}, {f32s({1, 1, 2, 2}), false}}, {});
  EXPECT_EQ(fast.kernel, "ref");
}

}  // namespace cpu_resize_test
}  // namespace nnfuse
