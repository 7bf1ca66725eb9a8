// include/tapegrad/nn/skip_init.hpp
//
// Building a model only to overwrite every weight: a loader of pretrained weights (GPT-2's 124 M
// parameters) would spend seconds drawing random numbers it throws away, and touch every page of
// memory twice. Within a SkipInitGuard's scope, Linear, Embedding, LayerNorm and the GPT skip
// their initialisation: their parameters are allocated but hold whatever the memory held, until
// the loader writes them. PyTorch's torch.nn.utils.skip_init and Hugging Face's no_init_weights
// do the same.
//
//     nn::SkipInitGuard skip;             // this thread only
//     GPT model(config);                  // allocated, not initialised
//     read_weights_into(model);           // every parameter written: nothing left undefined
//
// A model built under the guard must have every parameter written before it is used.
#pragma once

namespace tapegrad::nn {

class SkipInitGuard {
 public:
  SkipInitGuard();
  ~SkipInitGuard();
  SkipInitGuard(const SkipInitGuard&) = delete;
  SkipInitGuard& operator=(const SkipInitGuard&) = delete;
};

/// True within a SkipInitGuard's scope on this thread.
bool init_skipped();

}  // namespace tapegrad::nn
