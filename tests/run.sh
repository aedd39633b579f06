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

# Functions share sh's globals: each uses its own variable names.
step() {
  s_name=$1; shift
  case "$s_name" in "${ONLY:-}"*) ;; *) return 0 ;; esac # ONLY=prefix runs a subset
  s_t0=$(date +%s)
  if "$@" > "build/log/$s_name.txt" 2>&1; then
    pass=$((pass + 1)); echo "ok    $s_name ($(tail -n 1 "build/log/$s_name.txt")) [$(($(date +%s) - s_t0)) s]"
  else
    fail=$((fail + 1)); failed_steps="$failed_steps $s_name"
    echo "FAIL  $s_name [$(($(date +%s) - s_t0)) s]"; tail -n 20 "build/log/$s_name.txt" | sed 's/^/      /'
  fi
}

# build CONFIG COMPILER FLAGS...: the test programs and the CLI.
build() {
  b_cfg=$1; b_cc=$2; shift 2
  mkdir -p "build/$b_cfg"
  for b_t in test_kernels test_kernels_seed test_modules test_errors test_maps test_naming test_registry test_families; do
    $b_cc $WARN "$@" -I. "tests/$b_t.c" -o "build/$b_cfg/$b_t" -lm || return 1
  done
  $b_cc $WARN "$@" -I. cli/vit.c -o "build/$b_cfg/vit" -lm
}

matrix() {
  m_cfg=$1; shift
  step "$m_cfg-build" build "$m_cfg" "$@"
  step "$m_cfg-kernels" "build/$m_cfg/test_kernels"
  step "$m_cfg-kernels-seed" "build/$m_cfg/test_kernels_seed"
  step "$m_cfg-modules" "build/$m_cfg/test_modules" tests/fixtures
  step "$m_cfg-errors" "build/$m_cfg/test_errors" tests/fixtures
  step "$m_cfg-maps" "build/$m_cfg/test_maps" tests/fixtures/maps "build/$m_cfg"
  step "$m_cfg-naming" "build/$m_cfg/test_naming" tests/fixtures/naming tests/fixtures
  step "$m_cfg-registry" "build/$m_cfg/test_registry" tests/fixtures
  step "$m_cfg-families" "build/$m_cfg/test_families" tests/fixtures/families
}

mkdir -p build/log
matrix native gcc -O2 -march=native -fopenmp
matrix avx2 gcc -O2 -mavx2 -mfma -fopenmp
matrix simde-portable gcc -O2 -DSIMDE_NO_NATIVE
matrix no-simd gcc -O2 -DVIT_NO_SIMD
matrix clang clang -O2 -march=native
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  matrix asan-ubsan clang -O0 -g -mavx2 -mfma -fsanitize=address,undefined -fno-sanitize-recover=all

# The examples, built and run on a fixture model and a fixture image.
step examples-build make -s examples CFLAGS="-O2 -march=native -fopenmp"
step example-sdpa build/examples/01_sdpa
step example-classify build/examples/02_classify tests/fixtures/vit_tv.safetensors tests/fixtures/maps/rgba.png --top 3 \
  --attention build/log/example_rollout.png
mkdir -p build/log/example_maps
step example-attention-png build/examples/03_attention_png tests/fixtures/vit_tv.safetensors tests/fixtures/maps/gray.png build/log/example_maps
# Maps of models with registers (timm's DINOv2), a distillation token, and a
# crop other than their size (transformers' DINOv2, prepared per its
# preprocessor_config.json, the position embedding resized), under
# ASan+UBSan.
attention_png_prefix() {
  clang -std=c99 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -I. examples/03_attention_png.c \
    -o build/log/03_attention_png_asan -lm || return 1
  for f in dinov2_reg4 deit_distilled hf_dinov2; do
    build/log/03_attention_png_asan tests/fixtures/families/$f/model.safetensors tests/fixtures/maps/rgba.png build/log/example_maps || return 1
  done
}
step example-attention-png-prefix attention_png_prefix
step example-tour build/examples/05_tour tests/fixtures/maps/rgba.png build/log/example_maps

# The shipped Fashion-MNIST models: vit.h's prediction for each of the
# 10,000 test images equals PyTorch's.
mkdir -p build/data
for f in t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [ -f "build/data/$f" ] || gzip -dc "/usr/share/datasets/fashion-mnist/$f.gz" > "build/data/$f"
done
for mdl in models/fashion_*.safetensors; do
  mname=$(basename "$mdl" .safetensors)
  step "$mname-eval" build/examples/04_fashion "$mdl" build/data --eval --preds "build/log/$mname.preds.npy"
  step "$mname-vs-pytorch" $PY tools/check_fashion.py "$mdl" "build/log/$mname.preds.npy"
done

# Threads: one model, four threads with their own arenas, ThreadSanitizer.
step tsan-build clang $WARN -O1 -g -fsanitize=thread -mavx2 -mfma -I. tests/test_threads.c -o build/test_threads -lm -lpthread
step tsan-threads env TSAN_OPTIONS=halt_on_error=1 build/test_threads tests/fixtures

# Fuzzing (libFuzzer + ASan + UBSan). The same tree gives the same result
# every run: each fuzzer replays its seed corpus and every input that once
# crashed, then tries a fixed number of mutations from a fixed seed with
# address-space randomisation off (with it on, pointer values reach
# libFuzzer's coverage features and the runs diverge). Where setarch cannot
# turn randomisation off, only the replay runs. `make fuzz` (FUZZ_SECONDS
# set) explores for that long from a random seed instead.
fuzz_norand=""
setarch "$(uname -m)" -R true 2>/dev/null && fuzz_norand="setarch $(uname -m) -R"
for fz in safetensors:300000 npy:100000 image:2000; do
  fz_runs=${fz#*:} fz=${fz%%:*}
  step "fuzz-$fz-build" clang -std=c99 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Wall -Wextra -Werror \
    -mavx2 -mfma -I. "fuzz/fuzz_$fz.c" -o "build/fuzz_$fz" -lm
  rm -rf "build/fuzzwork/$fz" && mkdir -p "build/fuzzwork/$fz" && cp "fuzz/corpus/$fz/"* "build/fuzzwork/$fz/"
  if [ -n "${FUZZ_SECONDS:-}" ]; then
    fz_how="-max_total_time=$FUZZ_SECONDS"
  elif [ -n "$fuzz_norand" ]; then
    fz_how="-seed=1 -runs=$fz_runs -reload=0"
  else
    fz_how="-runs=0"
  fi
  # shellcheck disable=SC2086
  step "fuzz-$fz" $fuzz_norand "build/fuzz_$fz" "build/fuzzwork/$fz" fuzz/regressions $fz_how -rss_limit_mb=2048 -artifact_prefix=build/
done

# Other platforms, running the same tests: AArch64 (NEON through SIMDe)
# under qemu, Windows (MinGW-w64) under wine, WebAssembly (SIMD128) under node.
XINC=build/xinc
mkdir -p $XINC build/aarch64 build/mingw build/wasm
ln -sfn /usr/include/simde $XINC/simde && ln -sfn /usr/include/stb $XINC/stb
cross() { # cross NAME RUNNER EXT COMPILER FLAGS...
  x_name=$1 x_run=$2 x_ext=$3 x_cc=$4; shift 4
  for x_t in test_kernels test_kernels_seed test_modules test_errors test_maps test_naming test_registry test_families; do
    step "$x_name-build-$x_t" $x_cc $WARN "$@" -isystem $XINC "tests/$x_t.c" -o "build/$x_name/$x_t$x_ext" -lm
  done
  step "$x_name-kernels" $x_run "build/$x_name/test_kernels$x_ext"
  step "$x_name-kernels-seed" $x_run "build/$x_name/test_kernels_seed$x_ext"
  step "$x_name-modules" $x_run "build/$x_name/test_modules$x_ext" tests/fixtures
  step "$x_name-errors" $x_run "build/$x_name/test_errors$x_ext" tests/fixtures
  step "$x_name-maps" $x_run "build/$x_name/test_maps$x_ext" tests/fixtures/maps "build/$x_name"
  step "$x_name-naming" $x_run "build/$x_name/test_naming$x_ext" tests/fixtures/naming tests/fixtures
  step "$x_name-registry" $x_run "build/$x_name/test_registry$x_ext" tests/fixtures
  step "$x_name-families" $x_run "build/$x_name/test_families$x_ext" tests/fixtures/families
}
cross aarch64 qemu-aarch64 "" aarch64-linux-gnu-gcc -O2 -static
export WINEDEBUG=-all WINEPREFIX="$PWD/build/wineprefix" NODE_PATH=/usr/share/nodejs
cross mingw wine .exe x86_64-w64-mingw32-gcc -O2 -mavx2 -mfma -D__USE_MINGW_ANSI_STDIO=1
cross wasm node .js emcc -O2 -msimd128 -sALLOW_MEMORY_GROWTH=1 -sNODERAWFS=1 -sSINGLE_FILE=1 -sENVIRONMENT=node
# The attention-map page (examples/web) in Debian's headless Chromium, served
# on 127.0.0.1: classes and probabilities as build/native/vit's, maps in the
# screenshots (build/log/web_*.png), bad files refused with a message.
step web-build make -s web
step web-chromium $PY tests/test_web.py build/web build/native/vit build/log

# The header as C99 and C++, and VIT_STATIC in two translation units.
step c99-static-2tu gcc $WARN -O1 tests/test_compile.c tests/test_compile2.c -I. -o build/test_compile -lm
step cxx-g++ g++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -Wno-psabi -O1 -mavx2 -mfma -x c++ tests/test_compile.c -x c++ tests/test_compile2.c -I. -o build/test_compile_cxx -lm
step cxx-clang++ clang++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -O1 -x c++ tests/test_compile.c -x c++ tests/test_compile2.c -I. -o build/test_compile_clang -lm
step compile-run build/test_compile
step options-compile gcc $WARN -O1 -DVIT_NO_IMAGE -DVIT_NO_PNG -DVIT_NO_STDIO -DVIT_NO_SIMD -DVIT_NO_THREADS "-DVIT_MALLOC(n)=malloc(n)" "-DVIT_FREE(p)=free(p)" \
  -include stdlib.h tests/test_compile.c tests/test_compile2.c -I. -o build/test_compile_options -lm
step options-run build/test_compile_options

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
# Checkpoints as timm and transformers save them (no vit.h metadata): the
# committed small cases are what tools/naming_reference.py writes today;
# ViT-Ti/16, S/16 and B/32 sized ones are made here (about 280 MB, redone
# when the tools change) and must match its PyTorch modules; `vit
# classify` runs one with its config.json and labels.
step naming-fixtures-drift $PY tools/naming_reference.py --check
# DINOv2, CLIP, SigLIP, DeiT distilled and the rest as timm 1.0.31 and
# transformers 4.48.3 make and save them: the committed small cases are
# what tools/families_reference.py writes today.
step families-fixtures-drift $PY tools/families_reference.py --check
naming_big() {
  if [ ! build/naming_big/MANIFEST -nt tools/naming_reference.py ] || [ ! build/naming_big/MANIFEST -nt tools/export.py ]; then
    rm -rf build/naming_big && $PY tools/naming_reference.py --big build/naming_big || return 1
  fi
  build/native/vit info build/naming_big/vit_s16_hf/model.safetensors && build/native/test_naming build/naming_big --cases-only
}
step naming-big naming_big
# The families at full size (DINOv2 ViT-S/14, CLIP ViT-B/16, SigLIP B/16,
# DeiT-S distilled; about 860 MB, redone when the tool changes): logits,
# features and tokens equal timm's, and a photo prepared as each
# config.json says equals timm's transform.
families_big() {
  if [ ! build/families_big/MANIFEST -nt tools/families_reference.py ]; then
    rm -rf build/families_big && $PY tools/families_reference.py --big build/families_big || return 1
  fi
  build/native/test_families build/families_big --cases-only
}
step families-big families_big
step naming-classify build/native/vit classify tests/fixtures/naming/hf_cls/model.safetensors tests/fixtures/maps/rgba.png --top 3
# `vit run --image-size`: the 32 px fixture ViT at 48 px equals torchvision's
# with interpolate_embeddings (the logits tools/maps_reference.py made).
image_size_run() {
  build/native/vit run tests/fixtures/vit_tv.safetensors tests/fixtures/maps/pos48.in.npy build/log/pos48.out.npy --image-size 48 &&
    $PY -c 'import sys, numpy as np; g, w = np.load(sys.argv[1]), np.load(sys.argv[2]); d = float(np.abs(g - w).max()); t = 1e-4 * max(1.0, float(np.abs(w).max())); print(f"max|diff| {d:.3g}, tolerance {t:.3g}"); sys.exit(d > t)' \
      build/log/pos48.out.npy tests/fixtures/maps/pos48.out.npy
}
step cli-image-size image_size_run
n=0
for spec in "torchvision:vit_b_32 --num-classes 7 --batch 1" \
            "torchvision:VisionTransformer:image_size=40,patch_size=10,num_layers=3,num_heads=5,hidden_dim=60,mlp_dim=70,num_classes=3 --batch 3" \
            "torchvision:VisionTransformer:image_size=24,patch_size=4,num_layers=1,num_heads=2,hidden_dim=18,mlp_dim=20,num_classes=4,representation_size=6" \
            "torchvision:VisionTransformer:image_size=16,patch_size=8,num_layers=2,num_heads=1,hidden_dim=9,mlp_dim=11,num_classes=5 --num-classes 0 --dtype F16" \
            "reference:seed001.VisionTransformer:image_size=21,patch_size=7,num_layers=2,num_heads=3,token_dim=15,mlp_dim=17,num_classes=4,in_channels=1" \
            "reference:seed004.ViT:in_channels=2,patch_size=5,emb_size=20,img_size=15,depth=2,n_classes=3,num_heads=4 --batch 3" \
            "nn:MultiheadAttention:embed_dim=30,num_heads=6,batch_first=True --tokens 13" \
            "timm:vit_small_patch14_reg4_dinov2:depth=2,img_size=56,embed_dim=36,num_heads=3 --num-classes 4 --batch 3" \
            "timm:vit_base_patch16_siglip_224:depth=2,img_size=48,embed_dim=40,num_heads=5 --num-classes 3" \
            "timm:deit_tiny_distilled_patch16_224:depth=2,img_size=32 --num-classes 5" \
            "timm:deit3_small_patch16_224:depth=2,img_size=48,embed_dim=48,num_heads=4 --num-classes 3" \
            "timm:vit_giant_patch14_dinov2:depth=1,img_size=28,embed_dim=48,num_heads=4 --num-classes 2 --batch 3" \
            "timm:vit_base_patch16_clip_quickgelu_224:depth=2,img_size=32,embed_dim=32,num_heads=2,global_pool=avg --num-classes 3" \
            "timm:vit_medium_patch16_gap_256:depth=2,img_size=32,embed_dim=48,num_heads=3 --num-classes 3"; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  step "roundtrip-$n-$(echo "$spec" | cut -d: -f2 | cut -d' ' -f1)" $PY tools/roundtrip.py $spec --vit build/native/vit
done
# export_module on classes typed into a user's own code (copies of the
# seeds', the original authors' layouts): `vit run` computes each one's
# forward, and what vit.h cannot compute is refused with a reason.
step export-classes $PY tools/test_export_classes.py --vit build/native/vit

echo
[ -z "$failed_steps" ] || echo "failed steps:$failed_steps (logs in build/log/)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
