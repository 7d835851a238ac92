#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

void append_misc_kernels(std::vector<RefKernelEntry>& t) { (void)t; }

}  // namespace nnfuse
