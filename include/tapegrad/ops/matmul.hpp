// include/tapegrad/ops/matmul.hpp
//
// Matrix products, each on the engine TAPEGRAD_GEMM chooses (OpenBLAS's sgemm by default; see
// tapegrad/core/gemm_engine.hpp). A side that needs no gradient costs no work in backward.
#pragma once

#include "tapegrad/core/tensor.hpp"

namespace tapegrad::ops {

/// torch.matmul for two tensors of 2 or more dimensions: (..., n, k) @ (..., k, m) -> (..., n, m),
/// the batch dimensions (all but the last two) broadcast as torch.matmul broadcasts them, aligned
/// from the right, each pair equal or one of them 1: (2, 1, 4, 8) @ (3, 8, 5) -> (2, 3, 4, 5).
/// (..., n, k) @ (k, m) is one product, a's leading dimensions folded into the rows. A matrix
/// shared by several products (a batch dimension of 1, or a missing one) gets the sum of their
/// gradients. A size mismatch is ShapeError("mat1 and mat2 shapes cannot be multiplied (2x3 and
/// 4x5) | ..."), batch dims that do not broadcast ShapeError("The size of tensor a (2) must match
/// the size of tensor b (3) at non-singleton dimension 0 | ..."); 1-D operands are refused.
Tensor matmul(const Tensor& a, const Tensor& b);

/// y = x W^T + b: x (*, in), weight (out, in), bias (out) or undefined -> (*, out).
/// PyTorch's F.linear, as one op: dx = dy W, dW = dy^T x, db = sum of dy over leading dims.
/// A wrong last dim of x is ShapeError("mat1 and mat2 shapes cannot be multiplied ... | Linear 'out': ...").
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

/// y = x W^T + b + scaling (x_adapter A^T) B^T: a Linear with a LoRA adapter (PEFT's lora.Linear:
/// x_adapter is lora_dropout(x), x itself when nothing drops), A (r, in), B (out, r), as ONE op.
/// Its entry keeps the small x_adapter A^T (N, r), and for backward only what it reads: x if W
/// trains (never, for a frozen base), x_adapter if A trains (rounded to bf16 inside an
/// autocast::bf16 scope); composed of linear, mul and add ops, the tape would also keep three
/// (N, out) tensors a layer.
/// dB = s dy^T H, dA = (s dy B)^T x_adapter, dx_adapter = (s dy B) A, and linear's dx, dW, db.
Tensor lora_linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const Tensor& x_adapter, const Tensor& lora_a, const Tensor& lora_b,
                   float scaling);

}  // namespace tapegrad::ops
