# Tests of the sparsification algorithms (DGC, top-k, random-k, the sparse encoding).
cedar_add_test(sparsify_test SOURCES unit/sparsify_test.cpp LIBS cedar_algorithms)
cedar_torch_pch(sparsify_test)
cedar_add_test(dgc_test SOURCES unit/dgc_test.cpp LIBS cedar_algorithms)
cedar_torch_pch(dgc_test)

# The same multi-rank properties under mpirun -np 2 and 4.
add_executable(sparse_mpi_tests mpi/mpi_test_main.cpp mpi/sparse_mpi_test.cpp)
target_link_libraries(sparse_mpi_tests PRIVATE cedar_training cedar_algorithms GTest::gtest)
cedar_torch_pch(sparse_mpi_tests)
cedar_warnings(sparse_mpi_tests)
cedar_add_mpi_test(sparse_mpi_tests_np2 EXE sparse_mpi_tests NP 2 TIMEOUT 300)
cedar_add_mpi_test(sparse_mpi_tests_np4 EXE sparse_mpi_tests NP 4 TIMEOUT 300)
