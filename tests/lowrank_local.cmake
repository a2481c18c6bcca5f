# tests of the lowrank_local algorithms (PowerSGD, LAG, local SGD) and the LARS optimizer
foreach(t powersgd_test lag_test local_sgd_test lars_test)
  cedar_add_test(${t} SOURCES unit/${t}.cpp LIBS cedar_training)
  cedar_torch_pch(${t})
endforeach()

# Under mpirun -np 2 and 4: ranks agree where the algorithms say they must; bytes equal formulas.
add_executable(mpi_lowrank_local_tests mpi/mpi_test_main.cpp mpi/mpi_lowrank_local_test.cpp)
target_link_libraries(mpi_lowrank_local_tests PRIVATE cedar_training GTest::gtest)
cedar_torch_pch(mpi_lowrank_local_tests)
cedar_warnings(mpi_lowrank_local_tests)
cedar_add_mpi_test(mpi_lowrank_local_np2 EXE mpi_lowrank_local_tests NP 2 TIMEOUT 300)
cedar_add_mpi_test(mpi_lowrank_local_np4 EXE mpi_lowrank_local_tests NP 4 TIMEOUT 300)
