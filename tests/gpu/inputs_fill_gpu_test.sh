#!/usr/bin/env bash
# On a GPU: the worker's device fill of input tensors draws what the host fill draws
# (tests/gpu/inputs_fill_gpu.c says how close is close enough). Skipped (77) without a GPU.
RUNNER="${INPUTS_FILL_GPU:?set INPUTS_FILL_GPU to the inputs_fill_gpu binary}"
"$RUNNER"
