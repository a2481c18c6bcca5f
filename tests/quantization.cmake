# tests of the quantization algorithms
cedar_add_test(qsgd_test SOURCES unit/qsgd_test.cpp LIBS cedar_algorithms)
cedar_torch_pch(qsgd_test)
cedar_add_test(quantizers_test SOURCES unit/quantizers_test.cpp LIBS cedar_algorithms)
cedar_torch_pch(quantizers_test)
cedar_add_test(quantizer_kernels_test SOURCES unit/quantizer_kernels_test.cpp LIBS cedar_algorithms)
cedar_torch_pch(quantizer_kernels_test)
cedar_add_test(counter_rng_test SOURCES unit/counter_rng_test.cpp LIBS cedar_algorithms)

# The same algorithms on real MPI ranks.
add_executable(quantization_mpi_tests mpi/mpi_test_main.cpp mpi/quantization_mpi_test.cpp)
target_link_libraries(quantization_mpi_tests PRIVATE cedar_training GTest::gtest)
cedar_torch_pch(quantization_mpi_tests)
cedar_warnings(quantization_mpi_tests)
cedar_add_mpi_test(quantization_mpi_np2 EXE quantization_mpi_tests NP 2 TIMEOUT 300)
cedar_add_mpi_test(quantization_mpi_np4 EXE quantization_mpi_tests NP 4 TIMEOUT 300)
