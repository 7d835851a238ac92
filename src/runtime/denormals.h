// Denormal floats flushed to zero while a plan runs. Products and sums over denormal inputs
// take microcode assists on x86 (tens to hundreds of cycles per operation): a softmax over a
// window-attention mask of -100 makes exp() values of 1e-44, and the product with V then runs
// 20x slower than the same product over normal numbers. With FTZ and DAZ set (what TensorFlow's
// executor threads and oneDNN's guidance do), such values are zero instead: the difference is
// below 1.2e-38 in absolute terms. NNFUSE_DENORMALS=keep turns it off.
#pragma once

namespace nnfuse {

// Sets flush-to-zero and denormals-are-zero on the calling thread and on the OpenMP threads
// the kernels use, for the scope; restores each thread's previous mode after. Nests.
class ScopedFlushDenormals {
 public:
  explicit ScopedFlushDenormals(bool on);
  ~ScopedFlushDenormals();
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
  bool on_ = false;
};

// False when NNFUSE_DENORMALS=keep asks to keep denormals.
bool flush_denormals_enabled();

}  // namespace nnfuse
