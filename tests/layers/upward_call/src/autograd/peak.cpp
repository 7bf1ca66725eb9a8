// The autograd floor calls the declaration of the floor below it, whose body is a floor above.
#include "../core/product.hpp"

namespace planted {
float peak() { return product(2.0f, 3.0f); }
}
