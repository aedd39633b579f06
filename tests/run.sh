#!/bin/sh
# `make test`: every test program in every build of this machine's matrix
# (native, AVX2, SIMDe portable, no SIMD, clang, ASan+UBSan, MSan, TSan),
# the fuzzers' fixed runs, the examples and the checks that need PyTorch.
# `make test-all` (ALL=1, what CI runs) adds the other platforms (AArch64
# under qemu, Windows under wine, WebAssembly under node), the web page in
# Chromium, the README's own build lines, the CMake and pkg-config package,
# tools/export.py's pretrained weights and the full-size PyTorch models
# (ViT-B/16, DINOv2, CLIP, SigLIP ...). Ends with "N passed, M failed".
# Usage: [ALL=1] tests/run.sh   (from the repository root, after tools/install_deps.sh)
set -u
ALL=${ALL:-}
all() { [ -n "$ALL" ]; } # make test-all's part
PY=build/venv/bin/python
WARN="-std=c99 -Wall -Wextra -Wpedantic -Werror -Wno-psabi"
pass=0
fail=0
failed_steps=""
mkdir -p build/log
: > build/log/step-times.txt
t_start=$(date +%s)

# Functions share sh's globals: each uses its own variable names.
# run_step NAME CMD...: CMD's output in build/log/NAME.txt, then its status
# and seconds in build/log/NAME.rc; report NAME prints its line and counts it.
run_step() {
  r_name=$1; shift
  r_t0=$(date +%s)
  "$@" > "build/log/$r_name.txt" 2>&1
  echo "$? $(($(date +%s) - r_t0))" > "build/log/$r_name.rc"
}
report() {
  read -r rp_rc rp_dt < "build/log/$1.rc"
  if [ "$rp_rc" -eq 0 ]; then
    pass=$((pass + 1)); echo "ok    $1 ($(tail -n 1 "build/log/$1.txt")) [$rp_dt s]"
  else
    fail=$((fail + 1)); failed_steps="$failed_steps $1"
    echo "FAIL  $1 [$rp_dt s]"; tail -n 20 "build/log/$1.txt" | sed 's/^/      /'
  fi
  echo "$rp_dt $1" >> build/log/step-times.txt
}
# step NAME CMD...: one step, now. pstep NAME CMD...: one in the background
# (JOBS at a time; CMD must not use bg itself), reported by psteps_done in
# the order started.
step() {
  s_name=$1; shift
  case "$s_name" in "${ONLY:-}"*) ;; *) return 0 ;; esac # ONLY=prefix runs a subset
  run_step "$s_name" "$@"
  report "$s_name"
}
p_names=""
pstep() {
  p_name=$1; shift
  case "$p_name" in "${ONLY:-}"*) ;; *) return 0 ;; esac
  bg run_step "$p_name" "$@"
  p_names="$p_names $p_name"
}
psteps_done() {
  bg_wait
  for pd in $p_names; do report "$pd"; done
  p_names=""
}

# bg CMD...: CMD in the background, at most JOBS (the cores) at once, the
# next started as soon as any of them ends (each job leaves a mark in
# build/log/bg when done: sh has no `wait -n`, and a finished child not yet
# waited for still answers kill -0); bg_wait waits for the rest and fails
# when any failed.
JOBS=$(nproc 2>/dev/null || echo 2)
bg_pids="" bg_rc=0 bg_n=0
rm -rf build/log/bg && mkdir -p build/log/bg
bg() {
  bg_n=$((bg_n + 1))
  { "$@"; bgj_rc=$?; : > "build/log/bg/$bg_n"; exit $bgj_rc; } &
  bg_pids="$bg_pids $!:$bg_n"
  # shellcheck disable=SC2086
  set -- $bg_pids
  while [ $# -ge "$JOBS" ]; do
    bg_reap || sleep 0.05
    # shellcheck disable=SC2086
    set -- $bg_pids
  done
}
bg_reap() { # waits for one job that has left its mark, if any
  br_left=""
  br_done=1
  for br_j in $bg_pids; do
    if [ "$br_done" = 1 ] && [ -f "build/log/bg/${br_j#*:}" ]; then
      wait "${br_j%:*}" || bg_rc=1
      rm -f "build/log/bg/${br_j#*:}"
      br_done=0
    else
      br_left="$br_left $br_j"
    fi
  done
  bg_pids=$br_left
  return $br_done
}
bg_wait() {
  for bw_p in $bg_pids; do wait "${bw_p%:*}" || bg_rc=1; rm -f "build/log/bg/${bw_p#*:}"; done
  bw_rc=$bg_rc bg_pids="" bg_rc=0
  return $bw_rc
}

# The test programs, one a line: the name (tests/test_NAME.c) and its
# arguments, @ standing for the build's folder (where the program writes
# its files: two builds' quant, writing build/packed_load.safetensors at
# once, failed a CI run); after a short first one
# (under wine it runs alone), the longest first, so that no long one starts
# last while the other core has nothing left (ASan's quant takes 15-20 s).
# Those named in INTERNAL reach inside the implementation and are compiled
# together with it, in tests/test_internal.c (run as test_internal NAME
# ARGS...); the others link the build's vit.o.
TESTS="kernels_seed
quant @
kernels
families tests/fixtures/families
reverse tests/fixtures
errors tests/fixtures @
maps tests/fixtures/maps @
modules tests/fixtures
naming tests/fixtures/naming tests/fixtures
registry tests/fixtures"
INTERNAL="errors kernels quant maps reverse"
LINKED=$(echo "$TESTS" | while read -r t_name _; do
  case " $INTERNAL " in *" $t_name "*) ;; *) echo "$t_name" ;; esac
done)

# The native build (and the cross ones) compiles vit.h's implementation
# twice, on two cores at once: once alone into build/NAME/vit.o, as a user's
# build has it (its defaults; the manners step wants it silent), once in
# tests/test_internal.c. The other test programs, the CLI (build/NAME/vit)
# and examples/04_fashion link vit.o: compiled with
# -DVIT_IMPLEMENTATION_INCLUDED, their own "#define VIT_IMPLEMENTATION" finds
# the implementation's guard set and includes the declarations only (each
# file still builds as a program of its own). The other builds here (ONE_OBJ)
# compile it once: build/NAME/vit.o is tests/test_internal.c without its main
# (the implementation with test_internal's smaller blocking thresholds, every
# path the same bits), which test_internal's main and the rest link. Their
# second compile had been about 70 s of make test's CPU (a Zen 3: 25 s ASan's,
# 25 s SIMDe portable's), on two cores that the lane and the steps keep busy.
# LINK_FLAGS: flags for linking only (emcc's -s settings).
LINK_FLAGS=""
link() { # link NAME EXT CC FLAGS... -- SOURCE OUT: SOURCE compiled and linked with build/NAME/vit.o
  l_name=$1 l_ext=$2 l_cc=$3; shift 3
  l_flags=""
  while [ "$1" != -- ]; do l_flags="$l_flags $1"; shift; done
  # shellcheck disable=SC2086
  $l_cc $WARN $l_flags -DVIT_IMPLEMENTATION_INCLUDED -I. "$2" "build/$l_name/vit.o" -o "$3$l_ext" $LINK_FLAGS -lm
}
vit_object() { # vit_object NAME CC FLAGS...: the implementation alone into build/NAME/vit.o
  vo_name=$1 vo_cc=$2; shift 2
  mkdir -p "build/$vo_name"
  # shellcheck disable=SC2086
  # what the compiler printed kept apart too: header-manners wants nothing from the native and AVX2 ones
  $vo_cc $WARN "$@" -x c -DVIT_IMPLEMENTATION -c vit.h -o "build/$vo_name/vit.o" 2> "build/$vo_name/vit.o.txt"
  vo_rc=$?
  cat "build/$vo_name/vit.o.txt"
  return $vo_rc
}
build() { # build NAME EXT CC FLAGS...
  b_name=$1 b_ext=$2 b_cc=$3; shift 3
  mkdir -p "build/$b_name"
  if [ -n "$ONE_OBJ" ]; then
    # shellcheck disable=SC2086
    $b_cc $WARN "$@" -DTEST_INTERNAL_NO_MAIN -I. -c tests/test_internal.c -o "build/$b_name/vit.o" || return 1
    # shellcheck disable=SC2086
    bg $b_cc $WARN "$@" -DTEST_INTERNAL_MAIN_ONLY tests/test_internal.c "build/$b_name/vit.o" \
      -o "build/$b_name/test_internal$b_ext" $LINK_FLAGS -lm
  else
    # shellcheck disable=SC2086
    bg $b_cc $WARN "$@" -I. tests/test_internal.c -o "build/$b_name/test_internal$b_ext" $LINK_FLAGS -lm
    vit_object "$b_name" "$b_cc" "$@" || { bg_wait; return 1; }
  fi
  for b_t in $LINKED; do
    bg link "$b_name" "$b_ext" "$b_cc" "$@" -- "tests/test_$b_t.c" "build/$b_name/test_$b_t"
  done
  bg link "$b_name" "$b_ext" "$b_cc" "$@" -- cli/vit.c "build/$b_name/vit"
  bg link "$b_name" "$b_ext" "$b_cc" "$@" -- examples/04_fashion.c "build/$b_name/04_fashion"
  bg_wait && echo "${ONE_OBJ:+one compile: }vit.o, test_internal and $(echo $LINKED | wc -w) test programs, the CLI and 04_fashion"
}
# config NAME RUNNER EXT CC FLAGS...: build NAME, then run its test programs
# (under RUNNER: qemu, wine, node, or "" for this machine), two at a time;
# under wine the first alone (wine makes its prefix there).
config() {
  c_name=$1 c_run=$2 c_ext=$3; shift 3
  step "$c_name-build" build "$c_name" "$c_ext" "$@"
  c_how=pstep
  [ "$c_run" = wine ] && c_how=step
  while read -r c_t c_args; do
    c_prog="build/$c_name/test_$c_t$c_ext"
    case " $INTERNAL " in *" $c_t "*) c_prog="build/$c_name/test_internal$c_ext $c_t" ;; esac
    # shellcheck disable=SC2086,SC2046
    $c_how "$c_name-$(echo "$c_t" | tr _ -)" $c_run $c_prog $(echo "$c_args" | sed "s|@|build/$c_name|g") < /dev/null
    c_how=pstep
  done <<EOF
$TESTS
EOF
  psteps_done
}

# The lane: the compiles whose programs no step runs before the fuzzers (on a Zen 3 about 200 s of CPU, each on one
# core: the fuzzers', MSan's and TSan's objects, the AVX2 object where -march=native is one, -O3's and the -O1 and
# AVX-512 subsets' test_internal), one after another in the background from the start, a third process beside the
# JOBS-wide steps: the cores then have work in every step that leaves one idle (a build's last link, the AVX2
# object alone, ASan's longest test). The lane runs no bg: its pool belongs to this shell. Each compile's output
# and status wait in build/log/lane/NAME for the step that uses it (lane_wait NAME), which reports it; a step
# that ONLY= leaves out starts no compile.
LANE=build/log/lane
rm -rf "$LANE" && mkdir -p "$LANE"
lane_item() { # lane_item STEP NAME CMD...: CMD run for STEP (skipped when ONLY= leaves STEP out)
  li_step=$1 li_name=$2; shift 2
  case "$li_step" in "${ONLY:-}"*) ;; *) return 0 ;; esac
  "$@" > "$LANE/$li_name.txt" 2>&1
  echo $? > "$LANE/$li_name.tmp" && mv "$LANE/$li_name.tmp" "$LANE/$li_name.rc"
}
lane_wait() { # lane_wait NAME: waits for the lane's NAME, prints what it printed, returns its status
  while [ ! -f "$LANE/$1.rc" ]; do sleep 0.2; done
  cat "$LANE/$1.txt"
  return "$(cat "$LANE/$1.rc")"
}

# The sanitizers' own builds: the fuzzers' object with libFuzzer + ASan + UBSan; tests/test_internal.c without its
# main with MemorySanitizer (its one compile of the implementation: the MSan fuzzers link it,
# -fsanitize=fuzzer-no-link leaving the fuzzer runtime to their link), then test_internal's main; test_threads with
# ThreadSanitizer (one model, four threads with their own arenas). The fuzz-build step links the fuzzers to them.
# (ONLY=msan and ONLY=tsan run on what the last fuzz-build made.)
# The fuzzers (fuzz/fuzz_NAME.c) and the mutations each tries in `make test` (below); those MemorySanitizer runs too.
# quant: a BF16/I8 file loaded packed from a file against the same bytes from memory, with huge inputs
# (fuzz/make_quant_corpus.sh remakes its corpus).
FUZZERS="safetensors:100000 npy:40000 image:20000 cli:50000 quant:1500"
MSAN_FUZZERS="safetensors npy image quant"
FUZZ_WARN="-std=c99 -Wall -Wextra -Werror"
# -gline-tables-only: the reports' stacks keep their files and lines, without the rest of -g's debug information
# (the fuzzers' compile of vit.h on a Zen 3: 64-66 s of CPU with -g, 53-56 s with line tables, 43-49 s with none)
SAN_G=-gline-tables-only
FUZZ_ASAN="$FUZZ_WARN -O1 $SAN_G -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -mavx2 -mfma"

MSAN="-O1 $SAN_G -fsanitize=memory -mavx2 -mfma"
msan_build() {
  # shellcheck disable=SC2086
  clang $WARN $MSAN -fsanitize=fuzzer-no-link -DTEST_INTERNAL_NO_MAIN -I. -c tests/test_internal.c -o build/msan/fuzz_vit.o &&
    clang $WARN $MSAN -DTEST_INTERNAL_MAIN_ONLY tests/test_internal.c build/msan/fuzz_vit.o -o build/msan/test_internal -lm
}

# The AVX2 build where -march=native already is one: on a CPU with no AVX-512, AVX-VNNI or AMX (a Zen 3, say),
# -march=native adds nothing that vit.h's kernels or SIMDe's use past AVX2 and FMA (BMI, F16C, LZCNT ...), and the
# AVX2 build's tests would repeat the native build's (about 50 s of CPU): then only its vit.o is compiled (the
# manners step links it, and wants it silent), its tests and Fashion-MNIST runs left to the native build.
AVX2_SAME=""
gcc -march=native -dM -E - < /dev/null | grep -qE '#define __(AVX512[A-Z0-9_]*|AVXVNNI|AMX_[A-Z0-9_]*)__ 1' ||
  AVX2_SAME=1
# Nothing printed by the implementation at -O3 either (AVX-512 with BF16 and VNNI, compiled only: GCC 12's inlining
# there had found four warnings -O2 does not, and users' -Werror builds failed).
o3_compile() {
  # shellcheck disable=SC2086
  gcc $WARN -O3 -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16 -mfma -DVIT_IMPLEMENTATION \
    -I. -x c -c vit.h -o /dev/null
}
# shellcheck disable=SC2086
lane() {
  mkdir -p build/msan
  # the longest first (on a Zen 3 about 55 s, then 40 + 1 and 19)
  lane_item fuzz-build fuzz-asan clang $FUZZ_ASAN -x c -DVIT_IMPLEMENTATION -c vit.h -o build/fuzz_vit.o
  lane_item fuzz-build msan msan_build
  lane_item fuzz-build tsan clang $WARN -O1 $SAN_G -fsanitize=thread -mavx2 -mfma -I. tests/test_threads.c -o build/test_threads -lm -lpthread
  [ -z "$AVX2_SAME" ] || lane_item avx2-build avx2 vit_object avx2 gcc -O2 -mavx2 -mfma -Wpsabi
  lane_item o3-silent o3 o3_compile
  lane_item quant-O1 quant-O1 gcc $WARN -O1 -march=native -I. tests/test_internal.c -o build/test_internal_O1 -lm
  for ln_m in skylake-avx512 cascadelake; do
    lane_item avx512-subsets "$ln_m" gcc $WARN -O1 -march=$ln_m -I. tests/test_internal.c -o "build/test_internal_$ln_m" -lm
  done
}
lane &
lane_pid=$!

NATIVE="gcc -O2 -march=native"
# -march=native: the BF16 and I8 dot-product kernels this CPU runs (vdpbf16ps, vpdpbusd) under the sanitizers
# too, and where it has none, the ones it does run
ASAN="clang -O0 -g -march=native -fsanitize=address,undefined -fno-sanitize-recover=all"
ONE_OBJ=
# shellcheck disable=SC2086
# -Wpsabi (WARN turns it off for the builds without AVX): the native and AVX2 builds must print no ABI note
config native "" "" $NATIVE -Wpsabi
if [ -z "$AVX2_SAME" ]; then
  config avx2 "" "" gcc -O2 -mavx2 -mfma -Wpsabi
fi
ONE_OBJ=1
config simde-portable "" "" gcc -O2 -DSIMDE_NO_NATIVE
config no-simd "" "" gcc -O2 -DVIT_NO_SIMD
# clang without the AMX tiles: the vdpbf16ps and vpdpbusd tiles on every product, as on a CPU without AMX
config clang "" "" clang -O1 -march=native -DVIT_NO_AMX
# shellcheck disable=SC2086
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 config asan-ubsan "" "" $ASAN
ONE_OBJ=
# Saving on a real full disk: a 256 KB tmpfs in a private mount namespace,
# filled to its last byte; the previous .npy and PNG must survive. Where no
# mount namespace can be made, the step says so (test_errors' file-size
# limit and /dev/full cases ran in every build above).
full_disk() {
  unshare -rm true 2>/dev/null || { echo "skipped: unshare -rm cannot make a mount namespace here"; return 0; }
  fd_dir=$(mktemp -d) || return 1
  unshare -rm sh -c 'mount -t tmpfs -o size=256k vit-full "$1" && "$2" errors tests/fixtures --full-disk "$1"' sh "$fd_dir" build/asan-ubsan/test_internal
  fd_rc=$?
  rmdir "$fd_dir"
  return $fd_rc
}
step asan-ubsan-full-disk full_disk

# The examples, built against the native build's vit.o (03_attention_png
# also against asan-ubsan's) and run on a fixture model and a fixture image.
examples_build() {
  mkdir -p build/examples
  for eb in examples/*.c; do
    # shellcheck disable=SC2086
    bg link native "" $NATIVE -- "$eb" "build/examples/$(basename "$eb" .c)"
  done
  # shellcheck disable=SC2086
  bg link asan-ubsan "" $ASAN -- examples/03_attention_png.c build/asan-ubsan/03_attention_png
  bg_wait && echo "$(ls examples/*.c | wc -l) examples, and 03_attention_png with ASan+UBSan"
}
step examples-build examples_build
step example-sdpa build/examples/01_sdpa
step example-classify build/examples/02_classify tests/fixtures/vit_tv.safetensors tests/fixtures/maps/rgba.png --top 3 \
  --attention build/log/example_rollout.png
step example-classify-cases tests/classify_example.sh build/examples/02_classify build/native/vit $PY build/log/example_classify
# 03 and 05 make their output folders: each starts missing.
rm -rf build/log/example_maps build/log/example_tour
step example-attention-png build/examples/03_attention_png tests/fixtures/vit_tv.safetensors tests/fixtures/maps/gray.png build/log/example_maps
# Maps of models with registers (timm's DINOv2), a distillation token, and a
# crop other than their size (transformers' DINOv2, prepared per its
# preprocessor_config.json, the position embedding resized), under
# ASan+UBSan.
attention_png_prefix() {
  for f in dinov2_reg4 deit_distilled hf_dinov2; do
    build/asan-ubsan/03_attention_png tests/fixtures/families/$f/model.safetensors tests/fixtures/maps/rgba.png build/log/example_maps || return 1
  done
}
step example-attention-png-prefix attention_png_prefix
step example-tour build/examples/05_tour tests/fixtures/maps/rgba.png build/log/example_tour
step example-outputs tests/example_outputs.sh build/examples build/log/example_outputs
# vit.pc and CMakeLists.txt used as a project that vendors vit.h would.
all && step package-pkgconfig-cmake tests/package.sh build/log/package

# The shipped Fashion-MNIST models: vit.h's prediction for each of the
# 10,000 test images equals PyTorch's.
mkdir -p build/data
for f in t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [ -f "build/data/$f" ] || gzip -dc "/usr/share/datasets/fashion-mnist/$f.gz" > "build/data/$f"
done
for mdl in models/fashion_*.safetensors; do
  mname=$(basename "$mdl" .safetensors)
  pstep "$mname-eval" build/examples/04_fashion "$mdl" build/data --eval --preds "build/log/$mname.preds.npy"
done
psteps_done
for mdl in models/fashion_*.safetensors; do
  mname=$(basename "$mdl" .safetensors)
  pstep "$mname-vs-pytorch" $PY tools/check_fashion.py "$mdl" "build/log/$mname.preds.npy"
done
# The same models as BF16 and I8 files (tools/export.py --from), in every
# build that runs them: top-1 agreement with the F32 file's predictions >=
# 99.5% (BF16) and >= 99% (I8, and I8A7: I8 with x on 7 bits), accuracy at
# most 0.3 points lower.
fashion_dtype() { # fashion_dtype MODEL DTYPE MIN_AGREE TAG 04_FASHION-COMMAND...
  fd_m=$1 fd_n=$(basename "$1" .safetensors) fd_d=$2 fd_min=$3 fd_tag=$4; shift 4
  fd_file="build/log/$fd_n.$fd_d.safetensors"
  if [ "$fd_d" = I8A7 ]; then fd_how="--dtype I8 --activation-bits 7"; else fd_how="--dtype $fd_d"; fi
  # shellcheck disable=SC2086
  { [ "$fd_file" -nt tools/export.py ] && [ "$fd_file" -nt "$fd_m" ]; } || $PY tools/export.py --from "$fd_m" $fd_how "$fd_file" || return 1
  # shellcheck disable=SC2086
  "$@" "$fd_file" build/data --eval --preds "build/log/$fd_n.$fd_d.$fd_tag.preds.npy" ${FD_COUNT:+--count $FD_COUNT} &&
    $PY tools/check_precision.py preds "build/log/$fd_n.preds.npy" "build/log/$fd_n.$fd_d.$fd_tag.preds.npy" --min-agree "$fd_min" --max-drop 0.3
}
for mdl in models/fashion_*.safetensors; do
  mname=$(basename "$mdl" .safetensors)
  pstep "$mname-bf16" fashion_dtype "$mdl" BF16 0.995 native build/examples/04_fashion
  pstep "$mname-i8" fashion_dtype "$mdl" I8 0.99 native build/examples/04_fashion
  pstep "$mname-i8a7" fashion_dtype "$mdl" I8A7 0.99 native build/examples/04_fashion
done
psteps_done
# ... and the ViT's from the same files in the other builds here (the
# cross builds below run it too; under VIT_NO_SIMD the products are their
# _ref, which test_quant holds equal to every fast path, and a 10,000-image
# run would take minutes). The SIMDe-portable build runs the AVX-512
# build's kernels through SIMDe's C (test_quant holds them equal to their
# _ref on every shape): the first 2000 images there.
fd_cfgs="avx2 simde-portable"
[ -n "$AVX2_SAME" ] && fd_cfgs=simde-portable
for cfg in $fd_cfgs; do
  [ "$cfg" = simde-portable ] && FD_COUNT=2000 || FD_COUNT=
  pstep "fashion_vit-bf16-$cfg" fashion_dtype models/fashion_vit.safetensors BF16 0.995 "$cfg" "build/$cfg/04_fashion"
  pstep "fashion_vit-i8-$cfg" fashion_dtype models/fashion_vit.safetensors I8 0.99 "$cfg" "build/$cfg/04_fashion"
  pstep "fashion_vit-i8a7-$cfg" fashion_dtype models/fashion_vit.safetensors I8A7 0.99 "$cfg" "build/$cfg/04_fashion"
done
FD_COUNT=
psteps_done

fuzzers_link() { # fuzzers_link DIR "NAMES" FLAGS...: each fuzzer linked to DIR/fuzz_vit.o
  fl_dir=$1 fl_names=$2; shift 2
  for fl in $fl_names; do
    bg clang "$@" -DVIT_IMPLEMENTATION_INCLUDED -I. "fuzz/fuzz_${fl%%:*}.c" "$fl_dir/fuzz_vit.o" -o "$fl_dir/fuzz_${fl%%:*}" -lm
  done
}
sanitizer_builds() { # the objects the lane compiled, then the fuzzers linked to them
  lane_wait fuzz-asan && lane_wait msan && lane_wait tsan || return 1
  # shellcheck disable=SC2086
  fuzzers_link build "$FUZZERS" $FUZZ_ASAN
  # shellcheck disable=SC2086
  fuzzers_link build/msan "$MSAN_FUZZERS" $FUZZ_WARN $MSAN -fsanitize=fuzzer
  bg_wait && echo "$(echo $FUZZERS | wc -w) fuzzers (ASan), $(echo $MSAN_FUZZERS | wc -w) (MSan), test_threads, test_internal (MSan)"
}
step fuzz-build sanitizer_builds
pstep tsan-threads env TSAN_OPTIONS=halt_on_error=1 build/test_threads tests/fixtures

# Fuzzing (libFuzzer + ASan + UBSan). The same tree gives the same result
# every run: each fuzzer replays its seed corpus and every input that once
# crashed, then tries a fixed number of mutations from a fixed seed with
# address-space randomisation off (with it on, pointer values reach
# libFuzzer's coverage features and the runs diverge). Where setarch cannot
# turn randomisation off, only the replay runs. `make fuzz` (FUZZ_SECONDS
# set) explores for that long from a random seed instead.
fuzz_norand=""
setarch "$(uname -m)" -R true 2>/dev/null && fuzz_norand="setarch $(uname -m) -R"
for fz in $FUZZERS; do
  fz_runs=${fz#*:} fz=${fz%%:*}
  rm -rf "build/fuzzwork/$fz" && mkdir -p "build/fuzzwork/$fz" && cp "fuzz/corpus/$fz/"* "build/fuzzwork/$fz/"
  if [ -n "${FUZZ_SECONDS:-}" ]; then
    fz_how="-max_total_time=$FUZZ_SECONDS"
  elif [ -n "$fuzz_norand" ]; then
    fz_how="-seed=1 -runs=$fz_runs -reload=0"
  else
    fz_how="-runs=0"
  fi
  # shellcheck disable=SC2086
  pstep "fuzz-$fz" $fuzz_norand "build/fuzz_$fz" "build/fuzzwork/$fz" fuzz/regressions $fz_how -rss_limit_mb=2048 -artifact_prefix=build/
done

# MemorySanitizer on the image and loader paths and the reverse pass: test_maps, test_errors and test_reverse,
# then each fuzzer replaying its corpus and fuzz/regressions (fuzz_image and
# test_maps check every decoded pixel is initialised).
pstep msan-maps build/msan/test_internal maps tests/fixtures/maps build/msan
pstep msan-errors build/msan/test_internal errors tests/fixtures build/msan
pstep msan-reverse build/msan/test_internal reverse tests/fixtures
for fz in $MSAN_FUZZERS; do
  pstep "msan-fuzz-$fz" "build/msan/fuzz_$fz" -runs=0 "fuzz/corpus/$fz" fuzz/regressions
done
psteps_done

if all; then
# Other platforms, running the same tests: AArch64 (NEON through SIMDe)
# under qemu, Windows (MinGW-w64) under wine, WebAssembly (SIMD128) under node.
XINC=build/xinc
mkdir -p $XINC
ln -sfn /usr/include/simde $XINC/simde && ln -sfn /usr/include/stb $XINC/stb
# cross NAME RUNNER EXT COMPILER FLAGS...: config NAME, then the Fashion-MNIST
# ViT as BF16 and I8 (in the background: psteps_done reports them).
cross() {
  x_name=$1 x_run=$2 x_ext=$3
  config "$@"
  # Under qemu a 10,000-image run takes minutes: the first 500 there (the
  # products are test_quant's, on every shape; this is the model end to end).
  [ "$x_name" = aarch64 ] && FD_COUNT=500 || FD_COUNT=
  pstep "$x_name-fashion_vit-bf16" fashion_dtype models/fashion_vit.safetensors BF16 0.995 "$x_name" $x_run "build/$x_name/04_fashion$x_ext"
  pstep "$x_name-fashion_vit-i8" fashion_dtype models/fashion_vit.safetensors I8 0.99 "$x_name" $x_run "build/$x_name/04_fashion$x_ext"
}
cross aarch64 qemu-aarch64 "" aarch64-linux-gnu-gcc -O2 -static -isystem $XINC
# ARMv8.2's sdot: the I8 products' NEON dot-product kernel, and the I8
# attention's q kᵀ on it (vit__att_mode 3): test_quant and test_kernels
# built with it, then run.
dotprod() {
  for dq_t in quant kernels; do
    aarch64-linux-gnu-gcc $WARN -O2 -static -march=armv8.2-a+dotprod -isystem $XINC tests/test_$dq_t.c -o build/aarch64/test_${dq_t}_dotprod -lm &&
      qemu-aarch64 build/aarch64/test_${dq_t}_dotprod build/aarch64 || return 1
  done
}
pstep aarch64-dotprod dotprod
psteps_done
export WINEDEBUG=-all WINEPREFIX="$PWD/build/wineprefix" NODE_PATH=/usr/share/nodejs
# One wineserver for every wine step, stopped when they are done. Left to
# itself, each program's server exits a moment after the last program; one
# that starts in that moment finds it closing ("wine client error:0: recvmsg:
# Connection reset by peer": a CI run's mingw-fashion_vit-i8 failed so, in 0 s).
mkdir -p "$WINEPREFIX" && wineserver -p
cross mingw wine .exe x86_64-w64-mingw32-gcc -O2 -mavx2 -mfma -D__USE_MINGW_ANSI_STDIO=1 -isystem $XINC
psteps_done
wineserver -k
LINK_FLAGS="-sALLOW_MEMORY_GROWTH=1 -sNODERAWFS=1 -sSINGLE_FILE=1 -sENVIRONMENT=node"
cross wasm node .js emcc -O2 -msimd128 -isystem $XINC
psteps_done
LINK_FLAGS=""
# The attention-map page (examples/web) in Debian's headless Chromium, served
# on 127.0.0.1: classes and probabilities as build/native/vit's, maps in the
# screenshots (build/log/web_*.png), bad files refused with a message.
step web-build make -s web
step web-chromium $PY tests/test_web.py build/web build/native/vit build/log

# README.md's own lines as they stand (tests/readme.sh): its classify.c with
# -Werror and ASan+UBSan, then each group of its build block (Linux gcc and
# clang, MinGW-w64 + wine, emcc + node, AArch64 + qemu) in a clean folder,
# two at a time (the snippet makes the model they share).
step readme-snippet tests/readme.sh snippet build/native/vit $PY
rd_n=$(tests/readme.sh groups)
rd_k=1
while [ "$rd_k" -le "$rd_n" ]; do
  pstep "readme-$(tests/readme.sh name "$rd_k")" tests/readme.sh build "$rd_k" build/native/vit $PY
  rd_k=$((rd_k + 1))
done
psteps_done
fi

# The header as C99 and C++, and VIT_STATIC in two translation units.
step c99-static-2tu gcc $WARN -O1 tests/test_compile.c tests/test_compile2.c -I. -o build/test_compile -lm
step cxx-g++ g++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -Wno-psabi -O1 -mavx2 -mfma -x c++ tests/test_compile.c -x c++ tests/test_compile2.c -I. -o build/test_compile_cxx -lm
step cxx-clang++ clang++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -O1 -x c++ tests/test_compile.c -x c++ tests/test_compile2.c -I. -o build/test_compile_clang -lm
step compile-run build/test_compile
step options-compile gcc $WARN -O1 -DVIT_NO_IMAGE -DVIT_NO_PNG -DVIT_NO_STDIO -DVIT_NO_SIMD -DVIT_NO_THREADS "-DVIT_MALLOC(n)=malloc(n)" "-DVIT_FREE(p)=free(p)" \
  -include stdlib.h tests/test_compile.c tests/test_compile2.c -I. -o build/test_compile_options -lm
step options-run build/test_compile_options
# The header's manners: the thread-count API with and without threads; the
# including file's own warnings still reported after the implementation
# (gcc, clang, g++); nothing printed by an x86 build with AVX2 or
# -march=native (the native and AVX2 builds' vit.o, compiled at -O2 with
# -Wpsabi; GCC 12's one psabi note without AVX is documented); -O3's below.
manners() {
  link avx2 "" gcc -O2 -mavx2 -mfma -- tests/test_manners.c build/test_manners || return 1
  # -Wunused-function after the implementation: clang reports it without code generation, gcc and g++ do not; gcc's
  # is the one-thread program's own compile (every other warning still an error there)
  # shellcheck disable=SC2086
  bg sh -c '"$@" > build/log/manners-unused1.txt 2>&1 || { cat build/log/manners-unused1.txt; exit 1; }' sh gcc $WARN \
    -Wno-error=unused-function -O0 -mavx2 -mfma -DVIT_NO_THREADS -DMANNERS_UNUSED -I. tests/test_manners.c -o build/test_manners_one -lm
  mn_k=1
  for mn_cc in clang "g++ -x c++"; do
    mn_k=$((mn_k + 1))
    [ "$mn_cc" = clang ] && mn_o=-fsyntax-only || mn_o="-O0 -c -o build/log/manners-unused$mn_k.o"
    # shellcheck disable=SC2086
    bg sh -c '$1 -Wall $2 -mavx2 -mfma -DMANNERS_UNUSED -I. tests/test_manners.c > "$3.txt" 2>&1; :' sh "$mn_cc" "$mn_o" \
      build/log/manners-unused$mn_k
  done
  bg_wait || return 1
  build/test_manners 2 && build/test_manners_one 1 || return 1
  mn_k=0
  for mn_cc in gcc clang "g++ -x c++"; do
    mn_k=$((mn_k + 1))
    grep -q "unused_after_vit.*-Wunused-function" build/log/manners-unused$mn_k.txt ||
      { echo "$mn_cc: the file's -Wunused-function was lost:"; cat build/log/manners-unused$mn_k.txt; return 1; }
  done
  for mn_b in native avx2; do
    [ -f "build/$mn_b/vit.o.txt" ] || { echo "build/$mn_b/vit.o.txt is missing: the $mn_b build runs first"; return 1; }
    [ ! -s "build/$mn_b/vit.o.txt" ] || { echo "the $mn_b build's vit.o (gcc -O2) printed:"; cat "build/$mn_b/vit.o.txt"; return 1; }
  done
  echo "threads API with and without threads; the file's warnings kept; AVX builds silent"
}
avx2_object() {
  lane_wait avx2 && echo "vit.o only: -march=native here is an AVX2 build (no AVX-512, AVX-VNNI or AMX)"
}
[ -z "$AVX2_SAME" ] || step avx2-build avx2_object
step header-manners manners
# The layout's one hard rule (.clang-format): no line over 120 columns in C.
columns() {
  co_long=$(awk 'length > 120 { print FILENAME ":" FNR ": " length " columns" }' vit.h cli/*.c tests/*.c examples/*.c examples/web/*.c bench/*.c bench/*.h fuzz/*.c 2>/dev/null)
  [ -z "$co_long" ] || { echo "$co_long"; return 1; }
  echo "every line of the C sources within 120 columns"
}
step columns columns

# -O3's compile (the lane's o3, o3_compile above) printed nothing.
o3_silent() {
  lane_wait o3 > build/log/o3.out || { cat build/log/o3.out; return 1; }
  [ ! -s build/log/o3.out ] || { cat build/log/o3.out; return 1; }
  echo "the implementation at -O3 (gcc, AVX-512) prints nothing"
}
pstep o3-silent o3_silent
# The BF16 and I8 products at -O1 (where this CPU has AMX, its tiles): GCC 12's _tile_loadconfig tells it 8 bytes
# are read, and a tile configuration built on the stack lost stores there and faulted. Beside the Python steps.
quant_O1() { lane_wait quant-O1 && mkdir -p build/O1 && build/test_internal_O1 quant build/O1; }
pstep quant-O1 quant_O1
# AVX-512 without BF16 (Skylake-X: the wide F32 tile, BF16 and I8 on widened panels) and with VNNI but without
# BF16 (Cascade Lake: the wide I8 tile too), which -march=native here does not build: compiled always, their
# products' and kernels' tests run where this CPU has the instructions.
avx512_subsets() {
  for as_m in skylake-avx512 cascadelake; do
    lane_wait $as_m || return 1
    as_need="avx512f avx512bw avx512dq avx512vl"
    [ $as_m = cascadelake ] && as_need="$as_need avx512_vnni"
    as_run=1
    for as_f in $as_need; do grep -qw "$as_f" /proc/cpuinfo 2>/dev/null || as_run=0; done
    if [ $as_run = 1 ]; then
      mkdir -p "build/$as_m" && build/test_internal_$as_m quant "build/$as_m" > build/log/quant_$as_m.txt &&
        build/test_internal_$as_m kernels > build/log/kernels_$as_m.txt ||
        { tail -n 20 build/log/quant_$as_m.txt build/log/kernels_$as_m.txt; return 1; }
      echo "$as_m: quant and kernels pass"
    else
      echo "$as_m: built; this CPU lacks its instructions, not run"
    fi
  done
}
pstep avx512-subsets avx512_subsets
# PyTorch is the ground truth: the committed fixtures must be what the
# tools make today, ViT-B/16 must match at B=1 and B=3, and `vit run` must
# reproduce configurations no fixture covers. Two steps at a time from here.
pstep fixtures-drift $PY tools/check_fixtures.py
pstep maps-fixtures-drift $PY tools/maps_reference.py --check
# vit__v_gelu's erf: its coefficients evaluated in float32 as vit.h does, within the 3.8e-7 its comment says
pstep gelu-erf-fit $PY tools/fit_erf.py --check
# and AVX-512's table of cubics (vit__gelu_tab): within 3e-7 max(1, |x|) of erff's GELU (its tool's bound)
pstep gelu-table-fit $PY tools/fit_gelu.py --check
# vit__v_exp2's polynomial (the f32 attention's exponentials) the same way: within 1.5 ulp
pstep exp2-fit $PY tools/fit_exp2.py --check
big() {
  [ -f build/fixtures_big/MANIFEST ] || $PY tools/make_fixtures.py --big build/fixtures_big || return 1
  build/native/test_modules build/fixtures_big
}
# BF16 and I8 files of the same weights (tools/export.py --from): the logits
# within relative L2 1.5e-2 (BF16) and 3e-2 (I8) of PyTorch's in F32.
big_dtype() { # big_dtype DTYPE BOUND
  [ -f build/fixtures_big/MANIFEST ] || return 1
  $PY tools/export.py --from build/fixtures_big/vit_b16.safetensors --dtype "$1" "build/fixtures_big/vit_b16.$1.safetensors" &&
    build/native/vit info "build/fixtures_big/vit_b16.$1.safetensors" | grep "dense layers kept in $1" &&
    build/native/vit run "build/fixtures_big/vit_b16.$1.safetensors" build/fixtures_big/vit_b16_b3.in.npy "build/log/vit_b16.$1.out.npy" &&
    $PY tools/check_precision.py logits build/fixtures_big/vit_b16_b3.out.npy "build/log/vit_b16.$1.out.npy" --max-rel-l2 "$2"
}
# Checkpoints as timm and transformers save them (no vit.h metadata): the
# committed small cases are what tools/naming_reference.py writes today;
# ViT-Ti/16, S/16 and B/32 sized ones are made here (about 280 MB, redone
# when the tools change) and must match its PyTorch modules; `vit
# classify` runs one with its config.json and labels.
pstep naming-fixtures-drift $PY tools/naming_reference.py --check
# DINOv2, CLIP, SigLIP, DeiT distilled, BEiT and the rest as timm 1.0.31 and
# transformers 4.48.3 make and save them: the committed small cases are
# what tools/families_reference.py writes today.
pstep families-fixtures-drift $PY tools/families_reference.py --check
pstep explain-fixtures-drift $PY tools/explain_reference.py --check
psteps_done
# BEiT (timm's and transformers'), Data2Vec vision, EVA-02, EVA-01 giant, DINOv3, PE core and the RoPE ViTs as
# BF16 and I8 files (tools/export.py --from, its config.json beside): the relative position bias tables, q and v
# biases, gammas and learned rotary frequencies read as F32, the dense layers kept (EVA-02's and transformers'
# separate q, k, v and EVA-02's SwiGLU
# halves stacked in their dtype, and the patch embedding's kernel); the logits within relative L2 1.5e-2
# (BF16) and 3.5e-2 (I8) of timm's in F32. The I8 files' patch embedding in int8 (0.5.15) moved them from
# 1.1-2.0e-2 to 1.1-2.8e-2 (measured over 1e-6 perturbations of the kernel, which redraw the quantisation
# noise downstream). EVA-02 B's I8 gets 6e-2: 4 patches of 588 pixels, its LayerNorm inside the SwiGLU
# scaling the noise up (3.1e-2 with the kernel F32, of which timm itself on the dequantised weights has
# 2.6e-2; the kernel alone in I8 2.5e-2; both 4.3-5.2e-2). I8's attention takes P V in int8 too since 0.5.33
# (vit__att_p8_rows): over 12 draws of the input perturbed by 1e-5, BEiT v2 (shared bias) 0.033 median, 0.0365
# max before, 0.0365 and 0.0436 after; BEiT 0.011 -> 0.012, transformers' BEiT 0.0117 -> 0.0132, EVA-02 CLIP
# 0.019 -> 0.024, BEiT SwiGLU 0.0195 -> 0.017 (medians), so BEiT v2's bound is 4.5e-2.
families_dtype() { # families_dtype CASE DTYPE BOUND
  fq_dir=build/families_dtype/$1.$2
  mkdir -p "$fq_dir" && cp "tests/fixtures/families/$1/config.json" "$fq_dir/" &&
    $PY tools/export.py --from "tests/fixtures/families/$1/model.safetensors" --dtype "$2" "$fq_dir/model.safetensors" &&
    build/native/vit info "$fq_dir/model.safetensors" | grep "dense layers kept in $2" &&
    build/native/vit run "$fq_dir/model.safetensors" "tests/fixtures/families/$1.in3.npy" "build/log/$1.$2.out.npy" &&
    $PY tools/check_precision.py logits "tests/fixtures/families/$1.logits3.npy" "build/log/$1.$2.out.npy" --max-rel-l2 "$3"
}
for fq_case in beit:3.5e-2 beitv2_shared:4.5e-2 beit_swiglu:3.5e-2 hf_beit:3.5e-2 hf_data2vec:3.5e-2 eva02:3.5e-2 \
  eva02_base:6e-2 eva02_clip:3.5e-2 eva_giant:3.5e-2 dinov3:3.5e-2 pe_core:3.5e-2 rope_axial:3.5e-2 rope_mixed:3.5e-2; do
  pstep "families-${fq_case%%:*}-bf16" families_dtype "${fq_case%%:*}" BF16 1.5e-2
  pstep "families-${fq_case%%:*}-i8" families_dtype "${fq_case%%:*}" I8 "${fq_case#*:}"
done
psteps_done
# Every name in timm.list_models() and every transformers model_type against
# vit.h's table of architectures: what vit.h runs is timm's VisionTransformer
# with features it has, at timm's LayerNorm eps and activation; the rest is
# refused by name.
step timm-architectures $PY tools/arch_reference.py --vit build/native/vit
naming_big() {
  if [ ! build/naming_big/MANIFEST -nt tools/naming_reference.py ] || [ ! build/naming_big/MANIFEST -nt tools/export.py ]; then
    rm -rf build/naming_big && $PY tools/naming_reference.py --big build/naming_big || return 1
  fi
  build/native/vit info build/naming_big/vit_s16_hf/model.safetensors && build/native/test_naming build/naming_big --cases-only
}
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
if all; then
  pstep vit_b_16 big
  pstep naming-big naming_big
  pstep families-big families_big
  psteps_done
  pstep vit_b_16-bf16 big_dtype BF16 1.5e-2
  pstep vit_b_16-i8 big_dtype I8 3e-2
fi
pstep naming-classify build/native/vit classify tests/fixtures/naming/hf_cls/model.safetensors tests/fixtures/maps/rgba.png --top 3
# `vit run --image-size`: the 32 px fixture ViT at 48 px equals torchvision's
# with interpolate_embeddings (the logits tools/maps_reference.py made).
image_size_run() {
  build/native/vit run tests/fixtures/vit_tv.safetensors tests/fixtures/maps/pos48.in.npy build/log/pos48.out.npy --image-size 48 &&
    $PY -c 'import sys, numpy as np; g, w = np.load(sys.argv[1]), np.load(sys.argv[2]); d = float(np.abs(g - w).max()); t = 1e-4 * max(1.0, float(np.abs(w).max())); print(f"max|diff| {d:.3g}, tolerance {t:.3g}"); sys.exit(d > t)' \
      build/log/pos48.out.npy tests/fixtures/maps/pos48.out.npy
}
pstep cli-image-size image_size_run
# The vit command: usage errors, bounds, escaping, classify and maps (tests/cli.sh).
pstep cli-args tests/cli.sh build/native/vit $PY build/log/cli
pstep cli-args-asan env ASAN_OPTIONS=detect_leaks=1 tests/cli.sh build/asan-ubsan/vit $PY build/log/cli-asan
# vit maps --method: every method, classes by number and label, a direction, bad requests (tests/explain_cli.sh).
pstep cli-explain tests/explain_cli.sh build/native/vit $PY build/log/cli-explain
# make demo-explain's program (bench/explain_pairs.c) on the shipped two-item model: the pointing game on
# a few composites, the demo's PNGs, its composites as tools/train_fashion.py makes them (tests/explain_pairs.sh).
explain_pairs() {
  # shellcheck disable=SC2086
  link native "" $NATIVE -D_POSIX_C_SOURCE=200809L -- bench/explain_pairs.c build/explain_pairs &&
    tests/explain_pairs.sh build/explain_pairs $PY build/log/explain_pairs
}
pstep explain-pairs explain_pairs
# tools/export.py: pretrained weights from torch hub's cache, ImageNet's
# labels, untrained exports flagged, make export (tests/export_weights.sh).
all && pstep export-weights tests/export_weights.sh build/native/vit $PY build/log/export
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
  pstep "roundtrip-$n-$(echo "$spec" | cut -d: -f2 | cut -d' ' -f1)" $PY tools/roundtrip.py $spec --vit build/native/vit
done
# export_module on classes typed into a user's own code (copies of the
# seeds', the original authors' layouts): `vit run` computes each one's
# forward, and what vit.h cannot compute is refused with a reason.
pstep export-classes $PY tools/test_export_classes.py --vit build/native/vit
psteps_done

wait "$lane_pid"
echo
[ -z "$failed_steps" ] || echo "failed steps:$failed_steps (logs in build/log/)"
times > build/log/times.txt # the second line: the steps' CPU time, user and system
echo "total $(($(date +%s) - t_start)) s ($(awk 'NR == 2 { split($1, u, "m"); split($2, s, "m"); printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' \
  build/log/times.txt) s of CPU); the five slowest steps:"
sort -rn build/log/step-times.txt | head -n 5 | awk '{ printf "  %5d s  %s\n", $1, $2 }'
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
