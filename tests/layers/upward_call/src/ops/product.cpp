// The definition, on the ops floor, of what the core floor's header declares.
#include "../core/product.hpp"

namespace planted {
float product(float a, float b) { return a * b; }
}
