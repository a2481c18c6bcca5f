# The codec and exchange sources, relative to algorithms/: one list for cedar_algorithms and for
# the fuzz targets (fuzz/CMakeLists.txt), so that a new kernel file reaches both builds. Codecs
# encode and decode (the sparse encoding and its selections included); exchange moves encodings
# between ranks and keeps error-feedback memories. Neither includes a paper file (the layer check,
# scripts/check_layers.py, says so for codecs/).
set(CEDAR_CODEC_SOURCES
  codecs/compressor.cpp
  codecs/simd.cpp
  codecs/abs_sum.cpp
  codecs/bit_packing.cpp
  codecs/counter_rng.cpp
  codecs/random_subset.cpp
  codecs/qsgd_codec.cpp
  codecs/qsgd_encode.cpp
  codecs/qsgd_decode.cpp
  codecs/terngrad_codec.cpp
  codecs/simd_avx2.cpp
  codecs/qsgd_avx2.cpp
  codecs/terngrad_avx2.cpp
  codecs/sign_codec.cpp
  codecs/sign_arithmetic.cpp
  codecs/two_level_sign_compressor.cpp
  codecs/half.cpp
  codecs/fp16_codec.cpp
  codecs/identity_codec.cpp
  codecs/natural_codec.cpp
  codecs/onebit_codec.cpp
  codecs/eightbit_codec.cpp
  codecs/generic_bits.cpp
  codecs/generic_quantizers.cpp
  codecs/generic_signs.cpp
  codecs/sparse_codec.cpp
  codecs/sparse_scatter.cpp
  codecs/magnitude_scan.cpp
  codecs/magnitude_topk.cpp
  codecs/magnitude_topk_generic.cpp
  codecs/topk_codec.cpp
  codecs/randomk_codec.cpp
  codecs/dgc_select.cpp
  codecs/codec_registry.cpp)
set(CEDAR_EXCHANGE_SOURCES
  exchange/error_feedback.cpp
  exchange/compressed_exchange.cpp
  exchange/sparse_exchange.cpp
  exchange/global_topk.cpp
  exchange/onebit_allreduce.cpp)

# The AVX2 kernels (codecs/avx2_kernels.h) are compiled for AVX2 with AES and VAES and run only on
# CPUs that have them (chosen at run time); they include no LibTorch header, so they skip the
# precompiled one, which is built for the baseline instruction set, and each stays its own
# translation unit. `root` is the folder the
# relative paths above start from, as the calling CMakeLists.txt names its sources.
function(cedar_avx2_source_properties root)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64" AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    set(files)
    foreach(f codecs/simd_avx2.cpp codecs/qsgd_avx2.cpp codecs/terngrad_avx2.cpp)
      list(APPEND files ${root}${f})
    endforeach()
    set_source_files_properties(${files}
      PROPERTIES COMPILE_OPTIONS "-mavx2;-maes;-mvaes" SKIP_PRECOMPILE_HEADERS ON
      SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()
