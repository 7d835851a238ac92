#include "ir/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <system_error>
#include <thread>

namespace nnfuse {

namespace {

std::atomic<bool> g_quiet{false};

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Columns of the terminal on stderr; 80 when it is not one.
size_t terminal_width() {
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

}  // namespace

void set_progress_enabled(bool on) { g_quiet = !on; }

bool progress_enabled() {
  if (g_quiet) return false;
  const char* v = std::getenv("NNFUSE_PROGRESS");
  const std::string_view env = v != nullptr ? v : "";
  if (env == "1") return true;
  if (env == "0") return false;
  return isatty(STDERR_FILENO) == 1;
}

void clear_progress_line() { ProgressLine::terminal().clear(); }

ProgressLine::ProgressLine(Options o) : o_(std::move(o)) {}

ProgressLine& ProgressLine::terminal() {
  // Never destroyed: a step still ticking while the process exits keeps a valid line.
  static ProgressLine* line = [] {
    Options o;
    o.out = &std::cerr;
    return new ProgressLine(std::move(o));
  }();
  return *line;
}

double ProgressLine::now() const { return o_.clock ? o_.clock() : steady_seconds(); }

void ProgressLine::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  clear_locked();
}

void ProgressLine::clear_locked() {
  if (drawn_ == 0) return;
  *o_.out << '\r' << std::string(drawn_, ' ') << '\r' << std::flush;
  drawn_ = 0;
}

std::string ProgressLine::render_locked(double now) const {
  std::string text;
  for (const Progress* p : steps_) text += (text.empty() ? "" : " > ") + p->text();
  char tail[48];
  std::snprintf(tail, sizeof tail, "  %.1f s", now - started_);
  const size_t width = o_.width > 0 ? o_.width : terminal_width();
  const size_t room = width > 1 ? width - 1 : 1;
  const std::string_view t = tail;
  // Too long for the terminal: the text is cut, the elapsed time kept.
  if (text.size() + t.size() > room) text.resize(room > t.size() ? room - t.size() : 0);
  std::string line = text + tail;
  if (line.size() > room) line.resize(room);
  return line;
}

void ProgressLine::draw_locked(bool force) {
  if (steps_.empty()) return;
  const double t = now();
  if (t - started_ < o_.delay_s) return;
  if (!force && drawn_ > 0 && t - last_draw_ < o_.interval_s) return;
  const std::string line = render_locked(t);
  // Spaces over what is left of a longer line drawn before.
  const size_t pad = drawn_ > line.size() ? drawn_ - line.size() : 0;
  *o_.out << '\r' << line << std::string(pad, ' ') << std::flush;
  drawn_ = line.size();
  last_draw_ = t;
}

// A thread that redraws the line every interval until it is destroyed.
struct Progress::Ticker {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;

  ~Ticker() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
  }
};

Progress::Progress(std::string label, int64_t total)
    : Progress(std::move(label), total, ProgressLine::terminal(), progress_enabled()) {}

Progress::Progress(std::string label, int64_t total, ProgressLine& line)
    : Progress(std::move(label), total, line, true) {}

Progress::Progress(std::string label, int64_t total, ProgressLine& line, bool enabled)
    : line_(line),
      enabled_(enabled && line.o_.enabled && line.o_.out != nullptr),
      label_(std::move(label)),
      total_(std::max<int64_t>(total, 0)) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(line_.mu_);
  if (line_.steps_.empty()) line_.started_ = line_.now();
  line_.steps_.push_back(this);
  active_ = true;
}

Progress::~Progress() { finish(); }

std::string Progress::text() const {
  std::string s = label_;
  if (total_ > 0 || done_ > 0) s.append(" ").append(std::to_string(done_));
  if (total_ > 0) s.append("/").append(std::to_string(total_));
  if (!detail_.empty()) s += " " + detail_;
  return s;
}

void Progress::update(int64_t done, std::string_view detail) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(line_.mu_);
  if (!active_) return;
  done_ = done;
  if (detail != detail_) detail_.assign(detail);
  line_.draw_locked(false);
}

void Progress::tick() {
  std::lock_guard<std::mutex> lock(line_.mu_);
  if (active_) line_.draw_locked(false);
}

void Progress::keep_ticking() {
  if (!enabled_ || ticker_) return;
  auto ticker = std::make_unique<Ticker>();
  Ticker* t = ticker.get();
  const auto every = std::chrono::milliseconds(
      std::max<int64_t>(1, static_cast<int64_t>(line_.o_.interval_s * 1000)));
  try {
    t->thread = std::thread([this, t, every] {
      std::unique_lock<std::mutex> lock(t->mu);
      while (!t->cv.wait_for(lock, every, [t] { return t->stop; })) {
        lock.unlock();
        tick();
        lock.lock();
      }
    });
  } catch (const std::system_error&) {
    return;  // no thread to spare: the line moves with update() alone
  }
  ticker_ = std::move(ticker);
}

void Progress::finish() {
  if (!enabled_) return;
  ticker_.reset();  // stops and joins the ticking thread, which takes the line's lock
  std::lock_guard<std::mutex> lock(line_.mu_);
  if (!active_) return;
  active_ = false;
  std::vector<Progress*>& steps = line_.steps_;
  steps.erase(std::find(steps.begin(), steps.end(), this));
  if (steps.empty()) {
    line_.clear_locked();
  } else if (line_.drawn_ > 0) {
    line_.draw_locked(true);  // the steps left, without this one
  }
}

}  // namespace nnfuse
