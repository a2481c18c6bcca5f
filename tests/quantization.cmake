# tests of the quantization algorithms
