# tests of the quantization algorithms
cedar_add_test(qsgd_test SOURCES unit/qsgd_test.cpp LIBS cedar_algorithms)
cedar_torch_pch(qsgd_test)
cedar_add_test(quantizers_test SOURCES unit/terngrad_test.cpp LIBS cedar_algorithms)
cedar_torch_pch(quantizers_test)
cedar_add_test(quantizer_kernels_test SOURCES unit/bit_packing_test.cpp LIBS cedar_algorithms)
cedar_torch_pch(quantizer_kernels_test)
cedar_add_test(counter_rng_test SOURCES unit/counter_rng_test.cpp LIBS cedar_algorithms)

# The same algorithms on real MPI ranks.
cedar_add_mpi_tests(quantization_mpi_tests TESTS quantization_mpi
  SOURCES mpi/quantization_mpi_test.cpp LIBS cedar_training)
