# Helpers shared by every folder's CMakeLists.

# Warnings on for Cedar's own code (third-party headers are included as SYSTEM).
function(cedar_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
endfunction()

# One precompiled <torch/torch.h> built once (in cedar_torch_pch) and reused by every target
# that compiles LibTorch code with the same flags.
# CEDAR_PCH_VARIANT (a suffix, set in a folder whose code compiles with other flags) picks that
# folder's own precompiled headers (cedar_define_torch_pch(<suffix>)).
function(cedar_torch_pch target)
  if(TARGET cedar_torch_pch${CEDAR_PCH_VARIANT})
    target_precompile_headers(${target} REUSE_FROM cedar_torch_pch${CEDAR_PCH_VARIANT})
  endif()
endfunction()

# The same for targets whose sources need only tensors (<torch/types.h>, which holds
# <ATen/ATen.h>; no torch::nn, torch::optim or serialization): GCC compiles every inline function
# a precompiled header makes reachable, so the smaller header leaves it about a third of the work
# per translation unit (algorithms/lag.cpp at -O3: 10 s -> 3.7 s).
function(cedar_tensor_pch target)
  if(TARGET cedar_tensor_pch${CEDAR_PCH_VARIANT})
    target_precompile_headers(${target} REUSE_FROM cedar_tensor_pch${CEDAR_PCH_VARIANT})
  endif()
endfunction()

# Compiles a target's sources in batches of eight, each batch one translation unit (CMake's unity
# build): most of a LibTorch file's compile time is the precompiled header's inline functions,
# compiled once per translation unit (an empty file takes 7 s with <torch/torch.h>, 2.7 s with
# <torch/types.h>), so a target of many small files compiles in about half the time. Sources with
# their own compile options (the AVX2 kernels) stay separate. CEDAR_UNITY=OFF compiles file by
# file (e.g. to see which file a compile error is in).
option(CEDAR_UNITY "Compile the larger targets' sources in batches (unity build)" ON)
function(cedar_unity target)
  if(CEDAR_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

# Every test's environment: where the sources and the build are, and a temp folder of this build
# tree's own (gtest's TempDir() reads TEST_TMPDIR), so that files a test writes under a fixed name
# never meet those of another build tree or checkout (e.g. a database of a newer schema).
# OMP_NUM_THREADS=1: a test is given one processor (MPI and end-to-end tests one per rank, and
# `cedar` sets its own thread count from train.threads), so LibTorch's intra-op threads would only
# spin against the other tests ctest runs at once (a model test took 26 s with two threads beside
# a build and 6 s with one).
function(cedar_test_env out)
  file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/test_tmp)
  set(${out} "CEDAR_SOURCE_DIR=${PROJECT_SOURCE_DIR};CEDAR_BINARY_DIR=${PROJECT_BINARY_DIR};TEST_TMPDIR=${PROJECT_BINARY_DIR}/test_tmp;OMP_NUM_THREADS=1" PARENT_SCOPE)
endfunction()

# cedar_add_test(NAME sources... LIBS libs... [ARGS args...]): a GoogleTest executable registered
# with ctest (run with ARGS, e.g. a --gtest_filter).
function(cedar_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  cedar_warnings(${name})
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  cedar_test_env(env)
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "${env}"
    LABELS "unit;${T_LABELS}")
  if(T_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT})
  endif()
endfunction()

# cedar_add_mpi_test(NAME exe NP n [TIMEOUT s]): runs an existing executable on n MPI ranks.
function(cedar_add_mpi_test name)
  cmake_parse_arguments(T "" "EXE;NP;TIMEOUT" "ARGS" ${ARGN})
  add_test(NAME ${name}
    COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe --bind-to none
            ${MPIEXEC_NUMPROC_FLAG} ${T_NP} $<TARGET_FILE:${T_EXE}> ${T_ARGS})
  cedar_test_env(env)
  # A rank waiting for another yields its core rather than spinning on it (the 4-rank tests run
  # on 2 cores, and ctest runs tests side by side).
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "${env};OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_mpi_yield_when_idle=1"
    LABELS "mpi" PROCESSORS ${T_NP})
  if(T_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT})
  endif()
endfunction()

# cedar_add_mpi_tests(exe TESTS prefix [TENSOR_ONLY] SOURCES files... LIBS libs...): a GoogleTest
# executable of MPI tests (with the MPI test main) run on 2 and on 4 ranks as <prefix>_np2 and
# <prefix>_np4. TENSOR_ONLY: its sources need only <torch/types.h> (cedar_tensor_pch).
function(cedar_add_mpi_tests exe)
  cmake_parse_arguments(T "TENSOR_ONLY" "TESTS" "SOURCES;LIBS" ${ARGN})
  add_executable(${exe} ${T_SOURCES})
  target_link_libraries(${exe} PRIVATE ${T_LIBS} cedar_mpi_test_main GTest::gtest)
  if(T_TENSOR_ONLY)
    cedar_tensor_pch(${exe})
  else()
    cedar_torch_pch(${exe})
  endif()
  cedar_warnings(${exe})
  foreach(np 2 4)
    cedar_add_mpi_test(${T_TESTS}_np${np} EXE ${exe} NP ${np} TIMEOUT 300)
  endforeach()
endfunction()

# The precompiled LibTorch headers, each built once from an empty translation unit, with the
# compile options of the folder that calls this; cedar_define_torch_pch(<suffix>) defines a
# folder's own pair, cedar_torch_pch<suffix> and cedar_tensor_pch<suffix>.
function(cedar_define_torch_pch)
  set(suffix "${ARGV0}")
  add_library(cedar_torch_pch${suffix} STATIC ${PROJECT_SOURCE_DIR}/cmake/pch_anchor.cpp)
  target_link_libraries(cedar_torch_pch${suffix} PUBLIC torch)
  target_precompile_headers(cedar_torch_pch${suffix} PRIVATE <torch/torch.h>)
  cedar_warnings(cedar_torch_pch${suffix})
  add_library(cedar_tensor_pch${suffix} STATIC ${PROJECT_SOURCE_DIR}/cmake/pch_anchor.cpp)
  target_link_libraries(cedar_tensor_pch${suffix} PUBLIC torch)
  target_precompile_headers(cedar_tensor_pch${suffix} PRIVATE <torch/types.h>)
  cedar_warnings(cedar_tensor_pch${suffix})
endfunction()

# cedar_add_file_tests(exe SOURCES files... LIBS libs...): one GoogleTest executable registered as
# one ctest test per source file, named after the file (algorithms/topk_test.cpp: topk_test),
# which runs the test suites the file defines: the suite names of its TEST, TEST_F and TEST_P
# macros, read from the file (Suite.* and, for parameterized suites, */Suite.*). A suite defined in
# two files is an error, so that a failure names its file. <exe>_unassigned fails when a test
# belongs to no file (a test defined through a macro of its own would never run). Every source
# is a configure dependency: a suite added to a file is found at the next build. Each file is its
# own translation unit (no unity batches): test files define helpers of the same names in their
# anonymous namespaces, and a file added to the folder would regroup every batch after it (one
# file of ~5 s compiles at each edit instead of a batch of eight).
function(cedar_add_file_tests exe)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${exe} ${T_SOURCES})
  target_link_libraries(${exe} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  cedar_tensor_pch(${exe})
  cedar_warnings(${exe})
  cedar_test_env(env)
  set(every "")
  set(seen_suites "")
  set(id "[A-Za-z_][A-Za-z0-9_]*")
  foreach(source ${T_SOURCES})
    get_filename_component(name ${source} NAME_WE)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${source})
    file(READ ${source} text)
    string(REGEX MATCHALL "(^|[^A-Za-z0-9_])TEST(_F|_P)?\\([ \t\r\n]*${id}[ \t\r\n]*," macros
      "${text}")
    set(suites "")
    foreach(m ${macros})
      string(REGEX REPLACE ".*TEST(_F|_P)?\\([ \t\r\n]*(${id}).*" "\\2" suite "${m}")
      list(APPEND suites ${suite})
    endforeach()
    list(REMOVE_DUPLICATES suites)
    if(NOT suites)
      message(FATAL_ERROR "${source} defines no TEST, TEST_F or TEST_P suite")
    endif()
    set(filter "")
    foreach(suite ${suites})
      if(suite IN_LIST seen_suites)
        message(FATAL_ERROR "test suite ${suite} of ${source} is defined by another file of ${exe} "
          "too: each file's ctest test runs its own suites, so give it a name of its own")
      endif()
      list(APPEND seen_suites ${suite})
      if(filter)
        string(APPEND filter ":")
      endif()
      string(APPEND filter "${suite}.*:*/${suite}.*")
    endforeach()
    add_test(NAME ${name} COMMAND ${exe} --gtest_filter=${filter})
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}" LABELS "unit;${exe}")
    if(every)
      string(APPEND every ":")
    endif()
    string(APPEND every "${filter}")
  endforeach()
  add_test(NAME ${exe}_unassigned COMMAND ${exe} --gtest_filter=-${every})
  set_tests_properties(${exe}_unassigned PROPERTIES ENVIRONMENT "${env}" LABELS "unit;${exe}"
    PASS_REGULAR_EXPRESSION "Running 0 tests from 0 test suites")
endfunction()
