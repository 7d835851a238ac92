// Tensor: nnfuse/tensor.h (part of the public API).
#pragma once

#include "ir/error.h"
#include "nnfuse/tensor.h"
