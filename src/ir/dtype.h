// Element types: nnfuse/dtype.h (part of the public API).
#pragma once

#include "nnfuse/dtype.h"
