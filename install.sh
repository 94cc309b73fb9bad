#!/usr/bin/env bash
# Install nnarray (editable) with the OpenCL extra plus any extras named in $1
# (e.g. `bash install.sh test`), then make sure OpenCL can really compile kernels here.
#
# The pocl wheel on PyPI is built on LLVM 14, which cannot name CPUs newer than itself
# (AMD Zen 5 fails every build with "unknown target CPU 'generic'"). Where that happens
# and apt is usable, Debian's pocl (LLVM 15, picks the target from CPU features) is added;
# nnarray's OpenCL backend skips devices that cannot compile, so either pocl may serve.
set -euo pipefail
cd "$(dirname "$0")"
export PIP_DISABLE_PIP_VERSION_CHECK=1

# `python` inside a virtual environment; plain `python3` where only that exists (Debian)
py=python
command -v python >/dev/null 2>&1 || py=python3
$py -m pip install -q -e ".[opencl${1:+,$1}]"

opencl_reason() {
    $py -c "import nnarray as n; print(n.backends.why_unavailable('opencl') or '')"
}

reason=$(opencl_reason)
if [ -n "$reason" ] && command -v apt-get >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo -n"
    echo "OpenCL is unusable ($reason); adding Debian's pocl-opencl-icd" >&2
    if $sudo apt-get update -qq && \
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq pocl-opencl-icd >/dev/null
    then
        reason=$(opencl_reason)
    fi
fi
if [ -n "$reason" ]; then
    echo "note: the opencl backend is unavailable here: $reason" >&2
fi
