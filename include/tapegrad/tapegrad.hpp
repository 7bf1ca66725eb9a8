// include/tapegrad/tapegrad.hpp: everything but tapegrad::distributed, for programs that want the
// whole library (the examples do). Each layer has its own umbrella header, which a program that
// links only that layer includes instead (docs/layers.md):
#pragma once

#include "tapegrad/core.hpp"
#include "tapegrad/nn.hpp"
#include "tapegrad/optim.hpp"
#include "tapegrad/io.hpp"
#include "tapegrad/data.hpp"
#include "tapegrad/transformer.hpp"
#include "tapegrad/pretrained.hpp"
