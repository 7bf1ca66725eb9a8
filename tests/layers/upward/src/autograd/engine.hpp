// The autograd floor of the planted tree.
#pragma once
