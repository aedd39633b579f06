# vit.h - build, test, demo, bench. `make test` and `make demo` install what
# is missing (Debian/Ubuntu packages via apt-get, pinned helpers in build/venv).

CC      ?= cc
CFLAGS  ?= -O2 -march=native -fopenmp
WARN     = -std=c99 -Wall -Wextra -Wpedantic -Werror -Wno-psabi
PY       = build/venv/bin/python
BLAS_INC = -I/usr/include/$(shell gcc -dumpmachine)/openblas-pthread
EXAMPLES = $(patsubst examples/%.c,build/examples/%,$(wildcard examples/*.c))
FASHION  = /usr/share/datasets/fashion-mnist

.PHONY: all examples deps test demo bench fuzz clean

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

test: deps
	@tests/run.sh

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

# Ratios measured in one run; README.md shows the latest table and this command.
# compare.py --peers: ViT-B/16 in ONNX Runtime and OpenVINO (build/bench-venv,
# made by install_deps.sh bench) beside vit.h and PyTorch, and a busy-core table.
bench: deps build/vit
	@tools/install_deps.sh bench
	$(CC) $(WARN) -std=gnu99 $(CFLAGS) -DBENCH_OPENBLAS $(BLAS_INC) -I. bench/bench_kernels.c -o build/bench_kernels -lopenblas -lm
	$(CC) $(WARN) -D_POSIX_C_SOURCE=200809L $(CFLAGS) -I. bench/bench_vit.c -o build/bench_vit -lm
	build/bench_kernels 1
	build/bench_kernels 2
	$(PY) bench/compare.py
	$(PY) bench/compare.py --peers --rounds 3
	$(PY) bench/compare.py --modules

# Open-ended fuzzing from a random seed, FUZZ_SECONDS per parser (`make test`
# replays the corpus and a fixed-seed run only).
fuzz: deps
	FUZZ_SECONDS=$${FUZZ_SECONDS:-600} ONLY=fuzz tests/run.sh

clean:
	rm -rf build/native build/avx2 build/simde-portable build/no-simd build/clang build/asan-ubsan build/aarch64 \
	       build/mingw build/wasm build/log build/vit build/examples build/test_* build/fuzz_* build/fuzzwork
