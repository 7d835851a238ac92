#include "runtime/denormals.h"

#include <omp.h>

#include <cstdlib>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define NNFUSE_HAS_MXCSR 1
#endif

namespace nnfuse {

namespace {

#ifdef NNFUSE_HAS_MXCSR
constexpr unsigned kFtzDaz = 0x8040;  // MXCSR: flush-to-zero (bit 15), denormals-are-zero (bit 6)
#endif

thread_local unsigned t_saved = 0;
thread_local int t_depth = 0;

void enter() {
#ifdef NNFUSE_HAS_MXCSR
  if (t_depth++ == 0) {
    t_saved = _mm_getcsr();
    _mm_setcsr(t_saved | kFtzDaz);
  }
#endif
}

void leave() {
#ifdef NNFUSE_HAS_MXCSR
  if (t_depth > 0 && --t_depth == 0) _mm_setcsr(t_saved);
#endif
}

}  // namespace

bool flush_denormals_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("NNFUSE_DENORMALS");
    return !(v && std::string(v) == "keep");
  }();
  return on;
}

ScopedFlushDenormals::ScopedFlushDenormals(bool on) : on_(on && flush_denormals_enabled()) {
  if (!on_) return;
  // The workers first: a thread the region creates inherits the caller's mode, which must
  // still be the caller's own for each worker to restore it.
  if (!omp_in_parallel()) {  // (inside a parallel region the kernels run single-threaded)
#pragma omp parallel
    {
      if (omp_get_thread_num() != 0) enter();
    }
  }
  enter();
}

ScopedFlushDenormals::~ScopedFlushDenormals() {
  if (!on_) return;
  if (!omp_in_parallel()) {
#pragma omp parallel
    {
      if (omp_get_thread_num() != 0) leave();
    }
  }
  leave();
}

}  // namespace nnfuse
