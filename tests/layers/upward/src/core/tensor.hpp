// A core-floor header that includes the floor above it: what layers.includes must refuse.
#pragma once
#include "../autograd/engine.hpp"
