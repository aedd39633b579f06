# vit.h - build, test, demo, bench. `make test` and `make demo` install what
# is missing (Debian/Ubuntu packages via apt-get, pinned helpers in build/venv).

CC      ?= cc
CFLAGS  ?= -O2 -march=native
WARN     = -std=c99 -Wall -Wextra -Wpedantic -Werror -Wno-psabi
PY       = build/venv/bin/python
BLAS_INC = -I/usr/include/$(shell gcc -dumpmachine)/openblas-pthread
EXAMPLES = $(patsubst examples/%.c,build/examples/%,$(wildcard examples/*.c))
FASHION  = /usr/share/datasets/fashion-mnist

.PHONY: all examples deps test test-all demo demo-explain bench fuzz export web web-serve clean

all: build/vit examples

build/vit: cli/vit.c vit.h
	@mkdir -p build
	$(CC) $(WARN) $(CFLAGS) -I. cli/vit.c -o $@ -lm

examples: $(EXAMPLES)

build/examples/%: examples/%.c vit.h
	@mkdir -p build/examples
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ -lm

deps:
	@tools/install_deps.sh test

# make test: this machine's whole build matrix, sanitizers, fuzzers' fixed
# runs and PyTorch checks; make test-all (CI's) adds the other platforms, the
# web page, the README's build lines, the package and the full-size models.
test: deps
	@tests/run.sh

test-all: deps
	@ALL=1 tests/run.sh

# The Fashion-MNIST test set, uncompressed for examples/04_fashion.c.
build/data/t10k-labels-idx1-ubyte:
	@tools/install_deps.sh demo
	@mkdir -p build/data
	gzip -dc $(FASHION)/t10k-images-idx3-ubyte.gz > build/data/t10k-images-idx3-ubyte
	gzip -dc $(FASHION)/t10k-labels-idx1-ubyte.gz > build/data/t10k-labels-idx1-ubyte

# Classify Fashion-MNIST test images with the shipped ViT and draw where it looked.
demo: build/data/t10k-labels-idx1-ubyte build/vit build/examples/04_fashion
	@mkdir -p build/demo
	@build/vit info models/fashion_vit.safetensors
	@echo
	@build/examples/04_fashion models/fashion_vit.safetensors build/data --eval --show 6 --out build/demo
	@echo
	@echo "Attention maps: build/demo/fashion_*.png (left: rollout through all layers; then each head of the last layer)."

# Why this class: a test image of two Fashion-MNIST items side by side, the
# map of each of its classes by two methods, and the pointing game on its
# first 100 composites (README.md's table: --count 1000).
demo-explain: build/data/t10k-labels-idx1-ubyte build/explain_pairs
	@build/explain_pairs models/pairs_vit.safetensors build/data --count 100 --show $(PAIR) --out build/demo-explain
	@echo
	@echo "Maps: build/demo-explain/pair_$(PAIR)_<class>.png (left: Chefer et al.'s relevance; right: grad rollout)."

PAIR ?= 0

build/explain_pairs: bench/explain_pairs.c vit.h
	@mkdir -p build
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ -lm

# A model for vit.h from PyTorch, e.g. ImageNet's ViT-B/16 with its class names:
#   make export SPEC=torchvision:vit_b_16 OUT=build/vit_b_16.safetensors ARGS="--weights IMAGENET1K_V1"
# (tools/export.py --help lists the rest; /usr/bin/python3 tools/export.py works too).
export: build/vit
	@test -n "$(SPEC)" -a -n "$(OUT)" || { echo 'usage: make export SPEC=torchvision:vit_b_16 OUT=build/vit_b_16.safetensors [ARGS="--weights IMAGENET1K_V1"]' >&2; exit 2; }
	@tools/install_deps.sh export
	$(PY) tools/export.py '$(SPEC)' '$(OUT)' $(ARGS)

# The attention-map page: vit.h compiled to WebAssembly (SIMD128), the page,
# the shipped model and ten Fashion-MNIST test images in build/web;
# `make web-serve` serves it at http://127.0.0.1:8000/ (examples/web).
WEB_FILES = $(patsubst examples/web/%,build/web/%,$(wildcard examples/web/*.html examples/web/*.js examples/web/*.css))
WEB_EXPORTS = -sEXPORTED_FUNCTIONS=_malloc,_free -sEXPORTED_RUNTIME_METHODS=FS,UTF8ToString,stringToUTF8

web: build/web/vit_web.js $(WEB_FILES) build/web/fashion_vit.safetensors build/web/samples/samples.json

build/web/vit_web.js: examples/web/vit_web.c vit.h
	@tools/install_deps.sh web
	@mkdir -p build/web build/xinc
	@ln -sfn /usr/include/simde build/xinc/simde && ln -sfn /usr/include/stb build/xinc/stb
	NODE_PATH=/usr/share/nodejs emcc $(WARN) -O2 -msimd128 -I. -isystem build/xinc $< -o $@ $(WEB_EXPORTS) \
	  -sMODULARIZE=1 -sEXPORT_NAME=createVitWeb -sENVIRONMENT=worker -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=2GB

build/web/%: examples/web/%
	@mkdir -p build/web
	cp $< $@

build/web/fashion_vit.safetensors: models/fashion_vit.safetensors
	@mkdir -p build/web
	cp $< $@

build/web/samples/samples.json: examples/web/make_samples.py models/fashion_vit.safetensors
	@tools/install_deps.sh web
	python3 examples/web/make_samples.py $(FASHION) models/fashion_vit.safetensors build/web/samples

web-serve: web
	python3 examples/web/serve.py build/web

# Ratios measured in one run; README.md shows the latest table and this command.
# compare.py --peers: ViT-B/16 in ONNX Runtime and OpenVINO (f32, bf16, and int8
# by NNCF; build/bench-venv, made by install_deps.sh bench) beside vit.h (f32,
# bf16, int8, and int8 with x on 7 bits: I8A7) and PyTorch, and a busy-core table; then timm's DINOv2 ViT-S/14 and
# CLIP ViT-B/16 the same way (PyTorch being timm), without the busy-core table, in
# about 10 minutes; then EVA-02 ViT-B/14, and DINOv2 ViT-S/14 at 518 px (1,370
# tokens: a pass at B = 8 takes seconds, PyTorch's most of a minute, hence two
# reps a round), about 10 and 20 minutes. vit.h, ONNX Runtime and OpenVINO load
# once a cell and alternate pass by pass. --profiles: after the ViT-B/16 and 518 px
# tables, vit.h's profile (build/profile_vit) and OpenVINO's performance counters
# (bench_peers.py --profile) of a pass at B = 1, one thread, each precision.
bench: deps build/vit
	@tools/install_deps.sh bench
	$(CC) $(WARN) -std=gnu99 $(CFLAGS) -DBENCH_OPENBLAS $(BLAS_INC) -I. bench/bench_kernels.c -o build/bench_kernels -lopenblas -lm
	$(CC) $(WARN) -D_POSIX_C_SOURCE=200809L $(CFLAGS) -I. bench/bench_vit.c -o build/bench_vit -lm
	$(CC) $(WARN) -D_POSIX_C_SOURCE=200809L $(CFLAGS) -I. bench/bench_explain.c -o build/bench_explain -lm
	$(CC) $(WARN) -D_POSIX_C_SOURCE=200809L $(CFLAGS) -I. bench/profile_vit.c -o build/profile_vit -lm
	build/bench_kernels 1
	build/bench_kernels 2
	$(PY) bench/compare.py
	$(PY) bench/compare.py --peers --rounds 3 --vit-dtypes F32,BF16,I8,I8A7 --profiles
	$(PY) bench/compare.py --peers --models DINOv2-S/14,CLIP-B/16 --rounds 2 --reps 2 --vit-dtypes F32,BF16,I8 --no-busy
	$(PY) bench/compare.py --peers --models EVA-02-B/14 --rounds 2 --reps 2 --vit-dtypes F32,BF16,I8 --no-busy
	$(PY) bench/compare.py --peers --models DINOv3-S/16 --rounds 2 --reps 2 --vit-dtypes F32,BF16,I8 --no-busy
	$(PY) bench/compare.py --peers --models DINOv2-S/14@518 --rounds 3 --reps 2 --vit-dtypes F32,BF16,I8,I8A7 --no-busy --profiles
	$(PY) bench/compare.py --modules
	build/bench_explain build/bench/ViT-B_16.safetensors --threads 1
	build/bench_explain build/bench/ViT-B_16.safetensors --threads 2

# Open-ended fuzzing from a random seed, FUZZ_SECONDS per parser (`make test`
# replays the corpus and a fixed-seed run only).
fuzz: deps
	FUZZ_SECONDS=$${FUZZ_SECONDS:-600} ONLY=fuzz tests/run.sh

clean:
	rm -rf build/native build/avx2 build/simde-portable build/no-simd build/clang build/asan-ubsan build/msan build/aarch64 \
	       build/mingw build/wasm build/web build/log build/vit build/examples build/test_* build/fuzz_* build/fuzzwork
