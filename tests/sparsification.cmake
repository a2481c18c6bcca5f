# tests of the sparsification algorithms
