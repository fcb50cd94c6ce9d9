#!/usr/bin/env bash
# Builds bench/wheels/: the Python packages bench/real_gpu.sh needs that a GPU machine without a package
# registry may lack (Textual, pydantic and their own needs, the NVML binding), at the versions installed
# here, as wheels for CPython 3.12 on x86-64 Linux. Run it here, where pip reaches a registry:
#
#     bash bench/real_gpu_prep.sh [PYTHON_VERSION]      # default 3.12, the GPU machine's python3
#
# bench/wheels/ is ignored by git; name it in the device run's `carry` (see bench/real_gpu.sh). About 6 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
python_version=${1:-3.12}
wheels=bench/wheels
packages=(
    textual rich markdown-it-py mdit-py-plugins mdurl platformdirs pygments typing-extensions
    pydantic pydantic-core annotated-types typing-inspection
    nvidia-ml-py
)
rm -rf "$wheels"
mkdir -p "$wheels"
for name in "${packages[@]}"; do
    version=$(python3 -c 'import sys; from importlib.metadata import version; print(version(sys.argv[1]))' "$name")
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$python_version" \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$wheels" "$name==$version"
done
ls "$wheels"
du -sh "$wheels"
