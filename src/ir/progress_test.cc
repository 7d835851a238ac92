// The progress line: drawn only when enabled and only once a step has run past the delay,
// redrawn at most once per interval, cleared when the step ends; nested steps share it.
#include "ir/progress.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

namespace nnfuse {
namespace progress_test {

// A line on a string stream with a clock the test sets.
struct FakeLine {
  std::ostringstream out;
  std::atomic<double> now{0};
  std::atomic<int> reads{0};  // how many times the line read the clock
  ProgressLine line;

  explicit FakeLine(bool enabled = true, size_t width = 80) : line(options(enabled, width)) {}

  ProgressLine::Options options(bool enabled, size_t width) {
    ProgressLine::Options o;
    o.out = &out;
    o.clock = [this] {
      ++reads;
      return now.load();
    };
    o.enabled = enabled;
    o.width = width;
    return o;
  }
};

TEST(Progress, DisabledLinePrintsNothing) {
  FakeLine f(false);
  {
    Progress p("bench: run", 10, f.line);
    f.now = 5;
    p.update(3);
    f.now = 6;
    p.update(4, "x");
  }
  EXPECT_EQ(f.out.str(), "");
}

TEST(Progress, DrawsLabelCountDetailAndElapsed) {
  FakeLine f;
  Progress p("fusing: pass", 61, f.line);
  f.now = 1.5;
  p.update(23, "LayerNormFusionPass");
  EXPECT_EQ(f.out.str(), "\rfusing: pass 23/61 LayerNormFusionPass  1.5 s");
}

TEST(Progress, UnknownTotalShowsTheCountAlone) {
  FakeLine f;
  Progress p("reading", 0, f.line);
  f.now = 0.5;
  p.update(0);
  EXPECT_EQ(f.out.str(), "\rreading  0.5 s");
  f.now = 1.5;
  p.update(7);
  EXPECT_EQ(f.out.str(), "\rreading  0.5 s\rreading 7  1.5 s");
}

TEST(Progress, RedrawsAtMostOncePerInterval) {
  FakeLine f;
  Progress p("bench: run", 200, f.line);
  f.now = 0.5;
  p.update(1);
  const std::string first = f.out.str();
  EXPECT_EQ(first, "\rbench: run 1/200  0.5 s");
  for (int i = 2; i < 50; ++i) {
    f.now = 0.5 + i * 0.001;  // 48 updates within 0.05 s
    p.update(i);
  }
  EXPECT_EQ(f.out.str(), first);
  f.now = 0.7;
  p.update(140);
  EXPECT_EQ(f.out.str(), first + "\rbench: run 140/200  0.7 s");
}

TEST(Progress, FinishClearsTheLine) {
  FakeLine f;
  Progress p("bench: run", 10, f.line);
  f.now = 1;
  p.update(5);
  const std::string drawn = "bench: run 5/10  1.0 s";
  p.finish();
  EXPECT_EQ(f.out.str(), "\r" + drawn + "\r" + std::string(drawn.size(), ' ') + "\r");
  p.update(6);  // after finish: nothing
  p.finish();
  EXPECT_EQ(f.out.str(), "\r" + drawn + "\r" + std::string(drawn.size(), ' ') + "\r");
}

TEST(Progress, ShortStepPrintsNothing) {
  FakeLine f;
  {
    Progress p("fusing: pass", 3, f.line);
    for (int i = 1; i <= 3; ++i) {
      f.now = i * 0.09;
      p.update(i, "SomePass");
    }
  }
  EXPECT_EQ(f.out.str(), "");
}

TEST(Progress, ShorterLinePadsOverTheLonger) {
  FakeLine f;
  Progress p("x", 0, f.line);
  f.now = 1;
  p.update(1, "a long detail");
  f.now = 2;
  p.update(2, "b");
  const std::string first = "x 1 a long detail  1.0 s", second = "x 2 b  2.0 s";
  EXPECT_EQ(f.out.str(),
            "\r" + first + "\r" + second + std::string(first.size() - second.size(), ' '));
}

TEST(Progress, NestedStepsShareTheLine) {
  FakeLine f;
  Progress outer("fusing: pass", 38, f.line);
  outer.update(38, "AutoFusionPass");
  f.now = 1;
  {
    Progress inner("building kernels:", 12, f.line);
    inner.update(3);
    EXPECT_EQ(f.out.str(), "\rfusing: pass 38/38 AutoFusionPass > building kernels: 3/12  1.0 s");
    f.now = 2;
  }
  // The inner step's end draws the outer one again at once, padded over the longer line.
  const std::string s = f.out.str();
  const std::string line = "fusing: pass 38/38 AutoFusionPass  2.0 s";
  EXPECT_EQ(s.substr(s.rfind('\r')),
            "\r" + line + std::string(std::string(" > building kernels: 3/12").size(), ' '));
}

TEST(Progress, LongLinesAreCutToTheWidthKeepingTheTime) {
  FakeLine f(true, 20);
  Progress p("a very long label that does not fit", 5, f.line);
  f.now = 1;
  p.update(1);
  const std::string s = f.out.str();
  EXPECT_EQ(s, "\ra very long   1.0 s");
  EXPECT_EQ(s.size(), 1u + 19u);
}

TEST(Progress, ClearMakesRoomForOtherText) {
  FakeLine f;
  Progress p("bench: run", 10, f.line);
  f.now = 1;
  p.update(1);
  f.line.clear();
  const std::string cleared = f.out.str();
  EXPECT_EQ(cleared.back(), '\r');
  f.now = 1.01;  // drawn again at once: nothing is on the line
  p.update(2);
  EXPECT_EQ(f.out.str(), cleared + "\rbench: run 2/10  1.0 s");
}

TEST(Progress, KeepTickingRedrawsWithoutUpdates) {
  FakeLine f;
  ProgressLine::Options o = f.options(true, 80);
  o.interval_s = 0.01;
  ProgressLine line(o);
  Progress p("loading", 0, line);
  p.keep_ticking();
  f.now = 2;
  // Two clock reads after the time moved: the first one's draw is done by the second.
  const int reads = f.reads;
  for (int i = 0; i < 500 && f.reads < reads + 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  p.finish();  // joins the ticking thread before the stream is read
  EXPECT_NE(f.out.str().find("\rloading  2.0 s"), std::string::npos) << f.out.str();
}

TEST(Progress, EnabledBySwitchAndEnvironment) {
  const char* old = std::getenv("NNFUSE_PROGRESS");
  const std::string saved = old != nullptr ? old : "";
  setenv("NNFUSE_PROGRESS", "1", 1);
  EXPECT_TRUE(progress_enabled());
  set_progress_enabled(false);  // --quiet beats NNFUSE_PROGRESS=1
  EXPECT_FALSE(progress_enabled());
  set_progress_enabled(true);
  EXPECT_TRUE(progress_enabled());
  setenv("NNFUSE_PROGRESS", "0", 1);
  EXPECT_FALSE(progress_enabled());
  if (old != nullptr) {
    setenv("NNFUSE_PROGRESS", saved.c_str(), 1);
  } else {
    unsetenv("NNFUSE_PROGRESS");
  }
}

}  // namespace progress_test
}  // namespace nnfuse
