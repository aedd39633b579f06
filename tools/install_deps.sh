#!/bin/sh
# Installs what vit.h's build, tests and demo need and this machine lacks:
# Debian packages through apt-get (sudo when not root), then a venv made from
# Debian's python with --system-site-packages (so Debian's torch stays the
# one torch) holding the pinned pure-Python helpers of tools/requirements.txt;
# for `bench`, also build/bench-venv with bench/requirements.txt's pins.
# Usage: tools/install_deps.sh [test|demo|bench|cross|web|export]
set -eu
need=${1:-test}
pkgs="make gcc g++ clang libsimde-dev libstb-dev python3-venv python3-numpy python3-torch python3-torchvision"
case "$need" in
  demo) pkgs="$pkgs dataset-fashion-mnist" ;;
  bench) pkgs="$pkgs libopenblas-dev" ;;
  cross) pkgs="gcc-aarch64-linux-gnu qemu-user libc6-dev-arm64-cross" ;;
  web) pkgs="make libsimde-dev libstb-dev emscripten node-acorn dataset-fashion-mnist" ;;
  test) pkgs="$pkgs dataset-fashion-mnist python3-sklearn gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user mingw-w64 wine64 emscripten node-acorn chromium python3-pil cmake pkg-config libomp-dev python3-opencv python3-matplotlib" ;;
esac
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "installing:$missing"
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "apt-get not found: install these packages by hand:$missing" >&2
    exit 1
  fi
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
fi
case "$need" in cross | web) exit 0 ;; esac
# (Re)made when tools/requirements.txt changes: build/venv/requirements.txt
# holds the list it was made from. timm and transformers are the ground
# truth of the ViT families; --no-deps keeps Debian's torch the one torch.
if [ ! -x build/venv/bin/python ] || ! cmp -s tools/requirements.txt build/venv/requirements.txt ||
   ! build/venv/bin/python -c "import einops, torch, timm, transformers, pytorch_grad_cam, torchcam" 2>/dev/null; then
  echo "making build/venv (system site packages + tools/requirements.txt)"
  /usr/bin/python3 -m venv --system-site-packages build/venv
  build/venv/bin/pip install -q --no-deps -r tools/requirements.txt
  cp tools/requirements.txt build/venv/requirements.txt
fi
# The benchmark's peers (ONNX Runtime, OpenVINO with NNCF) in a venv of their own,
# without Debian's packages: they want a newer numpy than its torch.
# (Re)made when bench/requirements.txt changes, as build/venv is.
if [ "$need" = bench ] && { [ ! -x build/bench-venv/bin/python ] ||
    ! cmp -s bench/requirements.txt build/bench-venv/requirements.txt ||
    ! build/bench-venv/bin/python -c "import onnxruntime, openvino, onnx, nncf" 2>/dev/null; }; then
  echo "making build/bench-venv (bench/requirements.txt: onnxruntime, openvino, onnx, nncf)"
  rm -rf build/bench-venv
  /usr/bin/python3 -m venv build/bench-venv
  build/bench-venv/bin/pip install -q --no-deps -r bench/requirements.txt
  cp bench/requirements.txt build/bench-venv/requirements.txt
fi
