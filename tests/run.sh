#!/bin/sh
# The whole `make test`: every test program in every build of the matrix,
# then the checks that need PyTorch. Ends with "N passed, M failed".
# Usage: tests/run.sh   (from the repository root, after tools/install_deps.sh)
set -u
PY=build/venv/bin/python
WARN="-std=c99 -Wall -Wextra -Wpedantic -Werror -Wno-psabi"
pass=0
fail=0
failed_steps=""

step() {
  name=$1; shift
  if "$@" > "build/log/$name.txt" 2>&1; then
    pass=$((pass + 1)); echo "ok    $name ($(tail -n 1 "build/log/$name.txt"))"
  else
    fail=$((fail + 1)); failed_steps="$failed_steps $name"
    echo "FAIL  $name"; tail -n 20 "build/log/$name.txt" | sed 's/^/      /'
  fi
}

# build CONFIG COMPILER FLAGS...: the three test programs and the CLI.
build() {
  cfg=$1; cc=$2; shift 2
  mkdir -p "build/$cfg"
  for t in test_kernels test_kernels_seed test_modules test_errors test_maps; do
    $cc $WARN "$@" -I. "tests/$t.c" -o "build/$cfg/$t" -lm || return 1
  done
  $cc $WARN "$@" -I. cli/vit.c -o "build/$cfg/vit" -lm
}

matrix() {
  cfg=$1; shift
  step "$cfg-build" build "$cfg" "$@"
  step "$cfg-kernels" "build/$cfg/test_kernels"
  step "$cfg-kernels-seed" "build/$cfg/test_kernels_seed"
  step "$cfg-modules" "build/$cfg/test_modules" tests/fixtures
  step "$cfg-errors" "build/$cfg/test_errors" tests/fixtures
  step "$cfg-maps" "build/$cfg/test_maps" tests/fixtures/maps "build/$cfg"
}

mkdir -p build/log
matrix native gcc -O2 -march=native -fopenmp
matrix avx2 gcc -O2 -mavx2 -mfma -fopenmp
matrix simde-portable gcc -O2 -DSIMDE_NO_NATIVE
matrix no-simd gcc -O2 -DVIT_NO_SIMD
matrix clang clang -O2 -march=native
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  matrix asan-ubsan clang -O0 -g -mavx2 -mfma -fsanitize=address,undefined -fno-sanitize-recover=all

# The header as C99 and C++, and VIT_STATIC in two translation units.
step c99-static-2tu gcc $WARN -O1 tests/test_compile.c tests/test_compile2.c -I. -o build/test_compile -lm
step cxx-g++ g++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -Wno-psabi -O1 -mavx2 -mfma -x c++ tests/test_compile.c -x c++ tests/test_compile2.c -I. -o build/test_compile_cxx -lm
step cxx-clang++ clang++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -O1 -x c++ tests/test_compile.c -x c++ tests/test_compile2.c -I. -o build/test_compile_clang -lm
step compile-run build/test_compile

# PyTorch is the ground truth: the committed fixtures must be what the
# tools make today, ViT-B/16 must match at B=1 and B=3, and `vit run` must
# reproduce configurations no fixture covers.
step fixtures-drift $PY tools/check_fixtures.py
step maps-fixtures-drift $PY tools/maps_reference.py --check
big() {
  [ -f build/fixtures_big/MANIFEST ] || $PY tools/make_fixtures.py --big build/fixtures_big || return 1
  build/native/test_modules build/fixtures_big
}
step vit_b_16 big
n=0
for spec in "torchvision:vit_b_32 --num-classes 7 --batch 1" \
            "torchvision:VisionTransformer:image_size=40,patch_size=10,num_layers=3,num_heads=5,hidden_dim=60,mlp_dim=70,num_classes=3 --batch 3" \
            "torchvision:VisionTransformer:image_size=24,patch_size=4,num_layers=1,num_heads=2,hidden_dim=18,mlp_dim=20,num_classes=4,representation_size=6" \
            "torchvision:VisionTransformer:image_size=16,patch_size=8,num_layers=2,num_heads=1,hidden_dim=9,mlp_dim=11,num_classes=5 --num-classes 0 --dtype F16" \
            "reference:seed001.VisionTransformer:image_size=21,patch_size=7,num_layers=2,num_heads=3,token_dim=15,mlp_dim=17,num_classes=4,in_channels=1" \
            "reference:seed004.ViT:in_channels=2,patch_size=5,emb_size=20,img_size=15,depth=2,n_classes=3,num_heads=4 --batch 3" \
            "nn:MultiheadAttention:embed_dim=30,num_heads=6,batch_first=True --tokens 13"; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  step "roundtrip-$n-$(echo "$spec" | cut -d: -f2 | cut -d' ' -f1)" $PY tools/roundtrip.py $spec --vit build/native/vit
done

echo
[ -z "$failed_steps" ] || echo "failed steps:$failed_steps (logs in build/log/)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
