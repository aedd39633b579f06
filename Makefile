# vit.h - build, test, demo. `make test` and `make demo` install what is
# missing (Debian/Ubuntu packages via apt-get, pinned helpers in build/venv).

CC      ?= cc
CFLAGS  ?= -O2 -march=native -fopenmp
WARN     = -std=c99 -Wall -Wextra -Wpedantic -Werror -Wno-psabi
PY       = build/venv/bin/python

BLAS_INC = -I/usr/include/$(shell gcc -dumpmachine)/openblas-pthread

.PHONY: all deps test demo bench clean

all: build/vit

build/vit: cli/vit.c vit.h
	@mkdir -p build
	$(CC) $(WARN) $(CFLAGS) -I. cli/vit.c -o $@ -lm

deps:
	@tools/install_deps.sh test

test: deps
	@tests/run.sh

# For now: a small random torchvision ViT, exported by PyTorch and run by vit.h.
demo: deps build/vit
	@$(PY) tools/export.py torchvision:VisionTransformer:image_size=32,patch_size=8,num_layers=2,num_heads=3,hidden_dim=48,mlp_dim=96,num_classes=10 build/demo_vit.safetensors --seed 0
	@build/vit info build/demo_vit.safetensors
	@$(PY) tools/roundtrip.py torchvision:VisionTransformer:image_size=32,patch_size=8,num_layers=2,num_heads=3,hidden_dim=48,mlp_dim=96,num_classes=10 --vit build/vit

# Ratios measured in one run; README.md shows the latest table and this command.
bench: deps
	@tools/install_deps.sh bench
	$(CC) $(WARN) -std=gnu99 $(CFLAGS) -DBENCH_OPENBLAS $(BLAS_INC) -I. bench/bench_kernels.c -o build/bench_kernels -lopenblas -lm
	$(CC) $(WARN) -D_POSIX_C_SOURCE=200809L $(CFLAGS) -I. bench/bench_vit.c -o build/bench_vit -lm
	$(MAKE) build/vit
	build/bench_kernels 1
	build/bench_kernels 2
	$(PY) bench/compare.py

clean:
	rm -rf build/native build/avx2 build/simde-portable build/no-simd build/clang build/asan-ubsan build/log build/vit build/test_*
