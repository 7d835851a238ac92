#include "ir/graph.h"
