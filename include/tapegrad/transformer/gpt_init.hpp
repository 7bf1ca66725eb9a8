// include/tapegrad/transformer/gpt_init.hpp
//
// nanoGPT's initialisation (its _init_weights and the scaled init of the residual projections
// that follows it) as a function of any module tree, so a model of one's own starts as the GPT
// does. In named_modules() order, from one Generator:
//   every Linear        weight ~ N(0, 0.02), bias = 0; a RESIDUAL PROJECTION (the last matrix of
//                       a branch added to the residual stream) ~ N(0, 0.02 / sqrt(2 n_layer))
//   every Embedding     weight ~ N(0, 0.02)        (nn::Embeddings' table too: it is one)
// The residual stream sums 2 n_layer branches (an attention and an MLP per block), so each of
// their projections starts sqrt(2 n_layer) times smaller (the GPT-2 paper, section 2.3). Norms
// are left as their constructors made them (weight 1, bias 0), as nanoGPT leaves them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/core/random.hpp"

namespace tapegrad::nn::transformer {

/// Initialises `model` as nanoGPT does (above). A Linear is a residual projection when the last
/// component of its name is one of `residual_projections`: nanoGPT's "c_proj" (the attention's and
/// the MLP's) and SwiGLU's "w2". ValueError for n_layer < 1. Draws under NoGradGuard.
void init_gpt_weights(Module& model, std::int64_t n_layer, Generator& generator,
                      const std::vector<std::string>& residual_projections = {"c_proj", "w2"});

}  // namespace tapegrad::nn::transformer
