// A progress line for long steps on a terminal: one line on stderr, rewritten in place with
// '\r', holding the step's label, its count and the seconds since it began:
//
//   fusing: pass 23/38 LayerNormFusionPass  1.2 s
//
// Nothing is drawn until a step has run for a while (short commands print nothing), the line
// is redrawn at most ten times a second, and it is cleared when the step ends. It is drawn only
// when stderr is a terminal (progress_enabled()), never into pipes, files or CI logs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace nnfuse {

// Whether steps draw on stderr: never after set_progress_enabled(false) (the CLI's --quiet);
// otherwise always with NNFUSE_PROGRESS=1, never with NNFUSE_PROGRESS=0, else when stderr is a
// terminal.
void set_progress_enabled(bool on);
bool progress_enabled();

// Clears the stderr progress line if one is drawn, so that other text written to stderr starts
// on a clean line (warn() calls it); the line is drawn again at its next update.
void clear_progress_line();

class Progress;

// The line steps draw on: stderr's (terminal()), or a stream of its own in tests. Steps alive at
// once share it, each drawn after the one begun before it, with the time since the first began:
// "fusing: pass 38/38 AutoFusionPass > building kernels: 3/12  4.2 s".
class ProgressLine {
 public:
  struct Options {
    std::ostream* out = nullptr;    // where the line is written
    std::function<double()> clock;  // the time in seconds; empty: a steady clock
    bool enabled = true;            // false: steps on this line draw nothing
    double delay_s = 0.3;           // nothing is drawn before the first step has run this long
    double interval_s = 0.1;        // at most one redraw per interval
    size_t width = 0;               // lines are cut to width - 1 characters; 0: the width of the
                                    // terminal on stderr, 80 when it is not one
  };

  explicit ProgressLine(Options o);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // The line on stderr (its steps draw only when progress_enabled()).
  static ProgressLine& terminal();

  // Clears the line if it is drawn; the next update draws it again.
  void clear();

 private:
  friend class Progress;

  double now() const;
  // Writes the line if it is due: past the delay, and a full interval after the last draw
  // unless `force` (or nothing is drawn).
  void draw_locked(bool force);
  void clear_locked();
  std::string render_locked(double now) const;

  Options o_;
  std::mutex mu_;                 // guards what follows and every step's state
  std::vector<Progress*> steps_;  // the steps alive, oldest first
  double started_ = 0;            // when the oldest step began
  double last_draw_ = 0;
  size_t drawn_ = 0;  // characters written by the last draw; 0: nothing on the line
};

// One long step: constructed when the step begins, updated as it goes, finished (or destroyed)
// when it ends. update() may be called from one thread while others compute.
class Progress {
 public:
  // A step on the stderr line, drawn only when progress_enabled(). `total` is the count the
  // step goes to, 0 when it is not known.
  Progress(std::string label, int64_t total);
  // A step on `line`, drawn when the line's options enable it.
  Progress(std::string label, int64_t total, ProgressLine& line);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  // Now at `done` of the total ("label done/total detail"; "label done detail" without a
  // total), doing `detail`; the line is redrawn when due.
  void update(int64_t done, std::string_view detail = {});
  // Redraws the elapsed time every interval from a thread of its own until finish(), for a step
  // that goes long between updates (reading a model, running the compiler).
  void keep_ticking();
  // Ends the step: it leaves the line, which is cleared when no step is left on it.
  void finish();

 private:
  friend class ProgressLine;
  struct Ticker;

  Progress(std::string label, int64_t total, ProgressLine& line, bool enabled);
  void tick();
  std::string text() const;  // the label, the count and the detail

  ProgressLine& line_;
  const bool enabled_;
  bool active_ = false;  // on line_.steps_
  std::string label_;
  int64_t total_ = 0;
  int64_t done_ = 0;
  std::string detail_;
  std::unique_ptr<Ticker> ticker_;
};

}  // namespace nnfuse
