# Tests of the sparsification algorithms (DGC, top-k, random-k, the sparse encoding).
cedar_add_test(sparsify_test SOURCES unit/topk_test.cpp LIBS cedar_algorithms)
cedar_torch_pch(sparsify_test)
cedar_add_test(dgc_test SOURCES unit/dgc_test.cpp LIBS cedar_algorithms)
cedar_torch_pch(dgc_test)

# The same multi-rank properties under mpirun -np 2 and 4.
cedar_add_mpi_tests(sparse_mpi_tests TESTS sparse_mpi_tests
  SOURCES mpi/sparse_mpi_test.cpp LIBS cedar_training cedar_algorithms)
