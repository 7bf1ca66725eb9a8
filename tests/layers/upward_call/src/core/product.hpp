// A core-floor header declaring a function that the ops floor defines: every include below runs
// down, yet the autograd floor's call of it runs up. What layers.calls must refuse.
#pragma once

namespace planted {
float product(float a, float b);
}
