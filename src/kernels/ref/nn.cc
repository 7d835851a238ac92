#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

void append_nn_kernels(std::vector<RefKernelEntry>& t) { (void)t; }

}  // namespace nnfuse
