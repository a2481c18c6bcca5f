#pragma once
// The compressors that algorithms build on, declared once: the paper files build their algorithms
// on them, and the benchmarks, tests and fuzz targets drive an encoding directly. Each is defined
// in its codec file (qsgd_codec.cpp, sign_codec.cpp, fp16_codec.cpp, identity_codec.cpp,
// natural_codec.cpp, onebit_codec.cpp, eightbit_codec.cpp), which includes this header; the sparse
// ones are topk_codec.h and randomk_codec.h. codec_registry.h names them all.
#include <cstdint>
#include <memory>

#include "algorithms/codecs/compressor.h"

namespace cedar {

// QSGD (Alistarh et al. 2017): `bits`-bit stochastic levels per bucket of `bucket_size` values,
// scaled by the bucket's 2-norm, or its max-norm with `max_norm`.
std::unique_ptr<Compressor> make_qsgd_compressor(int bits, int64_t bucket_size, bool max_norm);
// signSGD (Bernstein et al. 2018): one bit per value.
std::unique_ptr<Compressor> make_sign_compressor();
// EF-signSGD (Karimireddy et al. 2019): one bit per value and the tensor's mean magnitude.
std::unique_ptr<Compressor> make_scaled_sign_compressor();
// fp16: each value as an IEEE half.
std::unique_ptr<Compressor> make_fp16_compressor();
// identity: each value as its fp32 bytes (lossless).
std::unique_ptr<Compressor> make_identity_compressor();
// Natural compression (Horváth et al. 2019): each value rounded stochastically to a power of two,
// sign and exponent in 9 bits (natural_codec.h).
std::unique_ptr<Compressor> make_natural_compressor();
// 1-bit SGD (Seide et al. 2014): one bit per value, split at 0, decoded to the mean of its side
// (onebit_codec.h).
std::unique_ptr<Compressor> make_onebit_compressor();
// GRACE's 8-bit quantization: sign and one of 127 fixed magnitudes times the tensor's max |x|
// in one byte per value (eightbit_codec.h).
std::unique_ptr<Compressor> make_eightbit_compressor();

}  // namespace cedar
