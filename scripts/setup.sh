#!/usr/bin/env bash
# setup.sh: install tune's build dependencies (Debian/Ubuntu) and build it into build/.
# Idempotent: a second call only rebuilds what changed. Needs the CUDA toolkit
# (nvcc, NVRTC, CUPTI headers) under $CUDA_HOME or /usr/local/cuda; no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(cmake make gcc liblua5.4-dev libsqlite3-dev sqlite3 libjansson-dev libxxhash-dev python3
      libcurl4-openssl-dev)  # libcurl: tune-openai-proposer only (skipped without it)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cuda="${CUDA_HOME:-/usr/local/cuda}"
[ -f "$cuda/include/nvrtc.h" ] || { echo "setup: no CUDA toolkit at $cuda (set CUDA_HOME)" >&2; exit 1; }
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "setup: built build/tune"
